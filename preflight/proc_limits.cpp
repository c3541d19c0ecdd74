#include "preflight/proc_limits.h"

namespace sl::preflight {

std::optional<ProcLimit> ReadProcLimitRow(const FileReader& fs, std::string_view row,
                                          std::string_view what, Finding* f) {
  auto text = fs.ReadFile("/proc/self/limits");
  if (!text.ok()) {
    f->outcome = Outcome::kError;
    f->message = "cannot read " + std::string(what) + ": " + text.error().Describe();
    f->next_step = text.error().fix.empty() ? "check that /proc is mounted" : text.error().fix;
    f->With("/proc/self/limits", text.error().message);
    return std::nullopt;
  }
  auto found = FindLimit(*text, row);
  if (!found.ok()) {
    f->outcome = Outcome::kError;
    f->message = "malformed " + fs.HostPath("/proc/self/limits") +
                 (found.error().where.empty() ? "" : ":" + found.error().where) + ": " +
                 found.error().message;
    f->next_step = "check that /proc/self/limits is the kernel's file (procfs mounted on /proc)";
    return std::nullopt;
  }
  f->With("/proc/self/limits", found->raw);
  return *found;
}

}  // namespace sl::preflight
