#include "preflight/proc_limits.h"

namespace sl::preflight {

std::optional<ProcLimit> LimitRow(const Fact<ProcLimit>& row, std::string_view what, Finding* f) {
  if (row.unreadable) {
    f->outcome = Outcome::kError;
    f->code = f->check_id + "/limits_unreadable";
    f->message = "cannot read " + std::string(what) + ": " + row.error.Describe();
    f->next_step = row.error.fix.empty() ? "check that /proc is mounted" : row.error.fix;
    f->With(row.path, row.error.message);
    return std::nullopt;
  }
  if (!row.ok()) {
    f->outcome = Outcome::kError;
    f->code = f->check_id + "/limits_malformed";
    f->message = "malformed " + row.error.where + ": " + row.error.message;
    f->next_step = "check that /proc/self/limits is the kernel's file (procfs mounted on /proc)";
    return std::nullopt;
  }
  f->With(row.path, row.raw);
  return *row;
}

}  // namespace sl::preflight
