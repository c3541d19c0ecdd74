#include "watchdog/hang/peer_events.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "common/file_writer.h"
#include "common/input_file.h"
#include "common/json_text.h"

namespace sl::hang {

namespace {

constexpr const char* kSchema = "safe-launch.peer-event/1";

std::string Errno(int err) { return std::strerror(err); }

// A name a node may have in a file name: letters, digits, '.', '-', '_' (anything else becomes
// '_'), so a node name cannot put a '/' into the path.
std::string FileSafe(std::string_view name) {
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || out[0] == '.') out.insert(out.begin(), '_');
  return out.substr(0, 64);
}

// Opens a directory without following a link at its last component.
int OpenDirNoFollow(const std::string& dir) {
  return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

std::string TimeText(double t) {
  char buf[48];
  std::time_t secs = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// One candidate event file: the input reader's rules (a regular file, no link, at most
// kMaxEventBytes), and owned by `uid` alone: the run root may be group-writable, and nobody else
// may make us capture or change our verdict.
Result<std::string> ReadTrusted(const std::string& dir, const char* name, uid_t uid) {
  InputRule rule;
  rule.kind = InputKind::kEvent;
  rule.max_bytes = kMaxEventBytes;
  rule.trusted_uid = uid;
  auto f = OpenInputUnder(dir, name, rule);
  if (!f.ok()) return f.error();
  struct stat st {};
  if (::fstat(f->fd(), &st) != 0 || st.st_uid != uid) {
    return MakeError(fmt::format("owned by uid {}, not {}", st.st_uid, uid));
  }
  return f->ReadAll();
}

}  // namespace

Launch LaunchOf(const Environment& env) {
  auto get = [&](std::string_view name) { return Lookup(env, name).value_or(""); };
  Launch l;
  for (std::string_view v : {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "FLUX_JOB_ID"}) {
    if (l.job_id = get(v); !l.job_id.empty()) break;
  }
  const std::string restart = get("SLURM_RESTART_COUNT");
  l.restart = 0;
  for (char c : restart) {
    if (c < '0' || c > '9' || l.restart > (1 << 26)) {
      l.restart = -1;
      break;
    }
    l.restart = l.restart * 10 + (c - '0');
  }
  l.launch_id = get("SAFE_LAUNCH_LAUNCH_ID");
  if (l.launch_id.empty()) {
    // What every node of one launch shares and the next launch does not: the srun step, and
    // torchrun's rendezvous (its id, else its endpoint).
    std::vector<std::string> parts;
    // (MASTER_ADDR/PORT are left out: scripts set them per node as often as not.)
    for (std::string_view v :
         {"SLURM_STEP_ID", "TORCHELASTIC_RUN_ID", "PET_RDZV_ID", "PET_RDZV_ENDPOINT"}) {
      if (std::string x = get(v); !x.empty()) parts.push_back(std::string(v) + "=" + x);
    }
    for (const auto& p : parts) l.launch_id += (l.launch_id.empty() ? "" : ",") + p;
  }
  return l;
}

std::string LaunchText(const Launch& l) {
  return fmt::format("job {} restart {} launch {}", l.job_id.empty() ? "-" : l.job_id, l.restart,
                     l.launch_id.empty() ? "-" : l.launch_id);
}

std::string EventJson(const PeerEvent& e) {
  nlohmann::json j;
  j["schema"] = kSchema;
  j["kind"] = e.kind;
  j["node"] = e.node;
  j["time_unix"] = e.time_unix;
  j["time_utc"] = e.time_utc.empty() ? TimeText(e.time_unix) : e.time_utc;
  j["trigger"] = e.trigger;
  j["category"] = e.category;
  j["severity"] = e.severity;
  j["headline"] = e.headline;
  j["rank"] = e.rank ? nlohmann::json(*e.rank) : nlohmann::json();
  j["exit_status"] = e.exit_status ? nlohmann::json(*e.exit_status) : nlohmann::json();
  j["first_error"] = e.first_error;
  j["launch"] = {{"job_id", e.launch.job_id},
                 {"restart", e.launch.restart},
                 {"launch_id", e.launch.launch_id}};
  return JsonText(j);
}

Result<PeerEvent> ParseEvent(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return MakeError("not a JSON object");
  if (j.value("schema", "") != kSchema) return MakeError("not a safe-launch peer event");
  PeerEvent e;
  auto str = [&](const char* k) {
    auto it = j.find(k);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  e.kind = str("kind");
  if (e.kind != "hang" && e.kind != "failure") return MakeError("unknown kind '" + e.kind + "'");
  e.node = str("node");
  if (e.node.empty()) return MakeError("no node");
  auto t = j.find("time_unix");
  if (t == j.end() || !t->is_number()) return MakeError("no time_unix");
  e.time_unix = t->get<double>();
  e.time_utc = str("time_utc");
  e.trigger = str("trigger");
  e.category = str("category");
  e.severity = str("severity");
  e.headline = str("headline");
  e.first_error = str("first_error");
  if (auto r = j.find("rank"); r != j.end() && r->is_number_integer()) e.rank = r->get<int>();
  if (auto s = j.find("exit_status"); s != j.end() && s->is_number_integer())
    e.exit_status = s->get<int>();
  if (auto l = j.find("launch"); l != j.end() && l->is_object()) {
    auto text = [&](const char* k) {
      auto it = l->find(k);
      return it != l->end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    e.launch.job_id = text("job_id");
    e.launch.launch_id = text("launch_id");
    if (auto r = l->find("restart"); r != l->end() && r->is_number_integer()) {
      const auto v = r->get<std::int64_t>();
      e.launch.restart = v >= 0 && v < (1 << 30) ? static_cast<int>(v) : -1;
    }
  }
  return e;
}

Status EnsureEventsDir(const std::string& dir, uid_t uid) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return MakeError(fmt::format("cannot create {}: {}", dir, Errno(errno)));
  }
  int fd = OpenDirNoFollow(dir);
  if (fd < 0) return MakeError(fmt::format("cannot open {}: {}", dir, Errno(errno)));
  struct stat st {};
  int rc = ::fstat(fd, &st);
  ::close(fd);
  if (rc != 0) return MakeError(fmt::format("cannot stat {}: {}", dir, Errno(errno)));
  if (st.st_uid != uid) {
    return MakeError(fmt::format("{} is owned by uid {}, not {}: not trusted", dir, st.st_uid, uid),
                     "", "remove it, or give each job a run root of its own");
  }
  return OkStatus();
}

Result<std::string> WriteEvent(const std::string& dir, const PeerEvent& event) {
  const std::string stem = fmt::format("{}-{}-", event.kind, FileSafe(event.node));
  // Written under a dot name (readers skip those), then renamed: no reader sees half of it.
  auto tmp = WriteUniqueFile(dir, "." + stem, ".json", EventJson(event) + "\n");
  if (!tmp.ok()) return tmp.error();
  const std::string base = tmp->substr(tmp->rfind('/') + 1);
  const std::string final_name = base.substr(1);
  int dfd = OpenDirNoFollow(dir);
  if (dfd < 0) return MakeError(fmt::format("cannot open {}: {}", dir, Errno(errno)));
  int rc = ::renameat(dfd, base.c_str(), dfd, final_name.c_str());
  int err = errno;
  if (rc != 0) ::unlinkat(dfd, base.c_str(), 0);
  ::close(dfd);
  if (rc != 0) return MakeError(fmt::format("cannot rename {}: {}", *tmp, Errno(err)));
  return dir + "/" + final_name;
}

std::vector<PeerEvent> ReadEvents(const std::string& dir, uid_t uid,
                                  std::vector<std::string>* rejected,
                                  std::set<std::string>* known) {
  std::vector<PeerEvent> events;
  int dfd = OpenDirNoFollow(dir);
  if (dfd < 0) return events;
  DIR* d = ::fdopendir(dfd);
  if (!d) {
    ::close(dfd);
    return events;
  }
  while (dirent* ent = ::readdir(d)) {
    const char* name = ent->d_name;
    if (name[0] == '.') continue;  // ., .., and posts being written
    // Event files are renamed into place whole and never change: one look per name.
    if (known != nullptr && !known->insert(name).second) continue;
    auto text = ReadTrusted(dir, name, uid);
    Result<PeerEvent> e = text.ok() ? ParseEvent(*text) : Result<PeerEvent>(text.error());
    if (!e.ok()) {
      if (rejected) rejected->push_back(fmt::format("{}: {}", name, e.error().message));
      continue;
    }
    e->file = dir + "/" + name;
    events.push_back(std::move(*e));
  }
  ::closedir(d);
  std::sort(events.begin(), events.end(),
            [](const PeerEvent& a, const PeerEvent& b) { return a.time_unix < b.time_unix; });
  return events;
}

FailureFacts FailureFromOutput(const std::vector<std::string>& lines) {
  FailureFacts f;
  static const std::regex kRank(R"(^\s*rank\s*:\s*(\d+)\s*\(local_rank)");
  // A Python exception line: a dotted name ending in Error/Exception/Interrupt, then ": text".
  // torch >= 2.4 prefixes a rank's lines with "[rankN]:".
  static const std::regex kException(
      R"(^\s*(\[rank(\d+)\]:\s*)?([A-Za-z_][\w.]*(Error|Exception|Interrupt))(:.*)?$)");
  std::smatch m;
  std::optional<int> prefixed_rank;
  for (const std::string& line : lines) {
    if (!f.rank && std::regex_search(line, m, kRank)) f.rank = std::stoi(m[1].str());
    if (f.first_error.empty() && line.find("ChildFailedError") == std::string::npos &&
        std::regex_match(line, m, kException)) {
      f.first_error = line.substr(line.find_first_not_of(" \t"));
      if (m[2].matched) prefixed_rank = std::stoi(m[2].str());
    }
  }
  if (!f.rank) f.rank = prefixed_rank;
  if (f.first_error.empty()) {
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      if (it->find_first_not_of(" \t\r") != std::string::npos) {
        f.first_error = *it;
        break;
      }
    }
  }
  if (f.first_error.size() > 400) f.first_error.resize(400);
  return f;
}

bool IsRootFailure(const PeerEvent& e) { return e.kind == "failure" && e.severity != "hang"; }

std::string PeerHangHeadline(const PeerEvent& e) {
  std::string out = fmt::format("hang detected on node {} at {}", e.node,
                                e.time_utc.empty() ? TimeText(e.time_unix) : e.time_utc);
  if (!e.trigger.empty()) out += fmt::format(" ({})", e.trigger);
  return out + "; captured here on peer notice";
}

std::string PeerFailureHeadline(const PeerEvent& e) {
  std::string who =
      e.rank ? fmt::format("node {} rank {}", e.node, *e.rank) : fmt::format("node {}", e.node);
  std::string status = e.exit_status ? fmt::format("exit {} ", *e.exit_status) : std::string();
  std::string out = fmt::format("{} failed first ({}at {})", who, status,
                                e.time_utc.empty() ? TimeText(e.time_unix) : e.time_utc);
  if (!e.first_error.empty()) out += ": " + e.first_error;
  return out;
}

PeerBundles ScanPeerBundles(const std::string& job_root, const std::string& self_dir, uid_t uid) {
  PeerBundles out;
  int rfd = OpenDirNoFollow(job_root);
  if (rfd < 0) return out;
  DIR* d = ::fdopendir(rfd);
  if (!d) {
    ::close(rfd);
    return out;
  }
  while (dirent* ent = ::readdir(d)) {
    std::string name = ent->d_name;
    if (name.empty() || name[0] == '.' || name == self_dir) continue;
    struct stat st {};
    if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISDIR(st.st_mode) || st.st_uid != uid) continue;
    out.nodes.push_back(name);
    int nfd = ::openat(::dirfd(d), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (nfd < 0) continue;
    DIR* nd = ::fdopendir(nfd);
    if (!nd) {
      ::close(nfd);
      continue;
    }
    while (dirent* b = ::readdir(nd)) {
      std::string_view bn = b->d_name;
      bool bundle = bn.rfind("hang-", 0) == 0 || bn.rfind("failure-", 0) == 0;
      struct stat bs {};
      // The final name of the directory means complete (bundles are renamed into it last).
      if (bundle && bn.find(".tar.gz") == std::string_view::npos &&
          ::fstatat(::dirfd(nd), b->d_name, &bs, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(bs.st_mode)) {
        out.complete.push_back(name);
        break;
      }
    }
    ::closedir(nd);
  }
  ::closedir(d);
  std::sort(out.nodes.begin(), out.nodes.end());
  std::sort(out.complete.begin(), out.complete.end());
  return out;
}

// ---- the channel ----

struct PeerChannel::State {
  Options options;
  mutable std::mutex mu;
  std::condition_variable cv;       // work queued, stop asked
  std::condition_variable done_cv;  // a post or a task finished, the worker exited
  std::deque<std::function<void()>> work;
  std::uint64_t queued = 0, finished = 0;  // work items, for Flush
  bool stop = false, exited = false;
  std::vector<PeerEvent> events;  // from other nodes, oldest first
  std::set<std::string> seen;     // files taken
  std::set<std::string> known;    // names looked at by a poll (ReadEvents' incremental set)
  std::size_t other_launches = 0;
  std::string last_error;
  std::string busy_with;  // "" when idle
  std::chrono::steady_clock::time_point busy_since{};

  void SetBusy(std::string what) {
    std::lock_guard lock(mu);
    busy_with = std::move(what);
    busy_since = std::chrono::steady_clock::now();
  }

  void Poll() {
    SetBusy("polling " + options.dir);
    // `known` is touched by this worker thread only.
    std::vector<PeerEvent> got = ReadEvents(options.dir, options.uid, nullptr, &known);
    std::lock_guard lock(mu);
    busy_with.clear();
    for (auto& e : got) {
      if (e.node == options.self_node || seen.count(e.file)) continue;
      seen.insert(e.file);
      if (options.not_before_unix > 0 && e.time_unix < options.not_before_unix) continue;
      if (!(e.launch == options.launch)) {
        ++other_launches;  // a requeue's, a re-run's, an earlier step's: not ours
        continue;
      }
      events.push_back(std::move(e));
    }
    std::stable_sort(events.begin(), events.end(), [](const PeerEvent& a, const PeerEvent& b) {
      return a.time_unix < b.time_unix;
    });
  }

  void Loop() {
    auto next_poll = std::chrono::steady_clock::now();
    std::unique_lock lock(mu);
    while (!stop) {
      if (!work.empty()) {
        auto job = std::move(work.front());
        work.pop_front();
        busy_with = "waiting on " + options.dir;
        busy_since = std::chrono::steady_clock::now();
        lock.unlock();
        job();
        lock.lock();
        busy_with.clear();
        ++finished;
        done_cv.notify_all();
        continue;
      }
      if (std::chrono::steady_clock::now() >= next_poll) {
        lock.unlock();
        Poll();
        lock.lock();
        next_poll = std::chrono::steady_clock::now() + options.poll;
        continue;
      }
      cv.wait_until(lock, next_poll, [&] { return stop || !work.empty(); });
    }
    exited = true;
    done_cv.notify_all();
  }
};

PeerChannel::PeerChannel(Options options) : state_(std::make_shared<State>()) {
  state_->options = std::move(options);
  // The thread holds the state: a worker stuck on a dead file system outlives the channel safely.
  std::thread([s = state_] { s->Loop(); }).detach();
}

PeerChannel::~PeerChannel() {
  std::unique_lock lock(state_->mu);
  state_->stop = true;
  state_->cv.notify_all();
  state_->done_cv.wait_for(lock, std::chrono::seconds(1), [&] { return state_->exited; });
}

void PeerChannel::Post(PeerEvent event) {
  std::weak_ptr<State> weak = state_;
  event.launch = state_->options.launch;
  std::lock_guard lock(state_->mu);
  state_->work.push_back([weak, event = std::move(event)] {
    auto s = weak.lock();
    if (!s) return;
    s->SetBusy("posting an event into " + s->options.dir);
    auto ok = EnsureEventsDir(s->options.dir, s->options.uid);
    Result<std::string> written =
        ok.ok() ? WriteEvent(s->options.dir, event) : Result<std::string>(ok.error());
    std::lock_guard l(s->mu);
    s->busy_with.clear();
    if (!written.ok()) {
      s->last_error = written.error().Describe();
    } else {
      s->seen.insert(*written);  // our own, never taken as a peer's
    }
  });
  ++state_->queued;
  state_->cv.notify_all();
}

bool PeerChannel::Flush(std::chrono::milliseconds deadline) {
  std::unique_lock lock(state_->mu);
  const std::uint64_t target = state_->queued;
  return state_->done_cv.wait_for(lock, deadline,
                                  [&] { return state_->finished >= target || state_->exited; });
}

bool PeerChannel::RunOnWorker(std::function<void()> task, std::chrono::milliseconds deadline) {
  auto done = std::make_shared<bool>(false);
  std::unique_lock lock(state_->mu);
  state_->work.push_back([task = std::move(task), done, weak = std::weak_ptr<State>(state_)] {
    task();
    if (auto s = weak.lock()) {
      std::lock_guard l(s->mu);
      *done = true;
    }
  });
  ++state_->queued;
  state_->cv.notify_all();
  return state_->done_cv.wait_for(lock, deadline, [&] { return *done; });
}

bool PeerChannel::PollNow(std::chrono::milliseconds deadline) {
  return RunOnWorker(
      [weak = std::weak_ptr<State>(state_)] {
        if (auto s = weak.lock()) s->Poll();
      },
      deadline);
}

std::vector<PeerEvent> PeerChannel::Events() const {
  std::lock_guard lock(state_->mu);
  return state_->events;
}

std::optional<PeerEvent> PeerChannel::First(std::string_view kind) const {
  std::lock_guard lock(state_->mu);
  for (const auto& e : state_->events) {
    if (e.kind == kind) return e;
  }
  return std::nullopt;
}

std::size_t PeerChannel::OtherLaunches() const {
  std::lock_guard lock(state_->mu);
  return state_->other_launches;
}

std::string PeerChannel::Stuck() const {
  std::lock_guard lock(state_->mu);
  if (state_->busy_with.empty()) return "";
  auto for_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - state_->busy_since);
  if (for_ms < state_->options.stuck_after) return "";
  return fmt::format("{} for {:.1f} s", state_->busy_with, for_ms.count() / 1000.0);
}

const std::string& PeerChannel::dir() const { return state_->options.dir; }

std::string PeerChannel::LastError() const {
  std::lock_guard lock(state_->mu);
  return state_->last_error;
}

}  // namespace sl::hang
