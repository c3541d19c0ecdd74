#include "watchdog/process_tree.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/strings.h"

namespace sl::watchdog {

Result<ProcStat> ParseProcStat(std::string_view text, std::string_view where) {
  // "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
  //  stime cutime cstime priority nice num_threads itrealvalue starttime ...". comm is any bytes
  //  (a process can name itself "a) R 1 (b"), so split at the LAST ')'.
  const auto open = text.find('(');
  const auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return MakeError("malformed stat line (no '(comm)')", std::string(where));
  }
  ProcStat st;
  auto pid = ParseInt(Trim(text.substr(0, open)), "pid");
  if (!pid.ok()) return MakeError("malformed stat line (bad pid)", std::string(where));
  st.pid = static_cast<pid_t>(*pid);
  st.comm = std::string(text.substr(open + 1, close - open - 1));
  const auto fields = Split(text.substr(close + 1), ' ');
  // fields[0] = state (field 3), fields[1] = ppid (4), [2] pgrp (5), [3] session (6),
  // [19] starttime (22).
  if (fields.size() < 20 || fields[0].size() != 1) {
    return MakeError("malformed stat line (too few fields)", std::string(where));
  }
  st.state = fields[0][0];
  auto ppid = ParseInt(fields[1], "ppid");
  auto pgrp = ParseInt(fields[2], "pgrp");
  auto session = ParseInt(fields[3], "session");
  auto start = ParseUint(fields[19], "starttime");
  if (!ppid.ok() || !pgrp.ok() || !session.ok() || !start.ok()) {
    return MakeError("malformed stat line (bad number)", std::string(where));
  }
  st.ppid = static_cast<pid_t>(*ppid);
  st.pgrp = static_cast<pid_t>(*pgrp);
  st.session = static_cast<pid_t>(*session);
  st.start_time = *start;
  return st;
}

std::vector<ProcStat> ListProcesses(const FileReader& reader, std::string_view proc_dir) {
  std::vector<ProcStat> out;
  auto names = reader.ListDir(proc_dir);
  if (!names.ok()) return out;
  for (const auto& name : *names) {
    if (name.empty() ||
        !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    const std::string path = JoinPath(JoinPath(proc_dir, name), "stat");
    auto text = reader.ReadFile(path, 4096);
    if (!text.ok()) continue;  // exited between listing and reading
    auto st = ParseProcStat(*text, path);
    if (st.ok()) out.push_back(std::move(*st));
  }
  return out;
}

std::vector<pid_t> DescendantsOf(const std::vector<ProcStat>& procs, pid_t root,
                                 const std::vector<pid_t>& exclude) {
  std::multimap<pid_t, pid_t> children;  // ppid -> pid
  for (const auto& p : procs) children.emplace(p.ppid, p.pid);
  std::set<pid_t> skip(exclude.begin(), exclude.end());
  std::vector<pid_t> out;
  std::vector<pid_t> frontier{root};
  std::set<pid_t> seen{root};  // guards against a corrupt (cyclic) table
  // Breadth-first, so parents come before their children.
  for (std::size_t i = 0; i < frontier.size(); ++i) {
    auto [lo, hi] = children.equal_range(frontier[i]);
    for (auto it = lo; it != hi; ++it) {
      const pid_t child = it->second;
      if (skip.count(child) || !seen.insert(child).second) continue;
      out.push_back(child);
      frontier.push_back(child);
    }
  }
  return out;
}

std::vector<pid_t> LiveDescendants(pid_t root, const std::vector<pid_t>& exclude) {
  static const RootedFileReader kProc("/");
  auto procs = ListProcesses(kProc, "/proc");
  std::vector<pid_t> all = DescendantsOf(procs, root, exclude);
  std::set<pid_t> zombies;
  for (const auto& p : procs) {
    if (p.state == 'Z' || p.state == 'X') zombies.insert(p.pid);
  }
  std::vector<pid_t> live;
  for (pid_t pid : all) {
    if (!zombies.count(pid)) live.push_back(pid);
  }
  return live;
}

}  // namespace sl::watchdog
