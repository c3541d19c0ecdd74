#include "watchdog/hang/bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "common/file_reader.h"
#include "tests/unit/common/temp_dir.h"
#include "tests/unit/test_paths.h"
#include "watchdog/hang/collectors.h"

using namespace sl::hang;
namespace fs = std::filesystem;

namespace {

using sl::testing::TempDir;

// Every file of the .tar.gz, decompressed, concatenated.
std::string TarContents(const std::string& path, std::vector<std::string>* names) {
  archive* a = archive_read_new();
  archive_read_support_filter_gzip(a);
  archive_read_support_format_tar(a);
  std::string all;
  if (archive_read_open_filename(a, path.c_str(), 10240) == ARCHIVE_OK) {
    archive_entry* e;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
      names->push_back(archive_entry_pathname(e));
      char buf[4096];
      la_ssize_t n;
      while ((n = archive_read_data(a, buf, sizeof(buf))) > 0) all.append(buf, n);
    }
  }
  archive_read_free(a);
  return all;
}

}  // namespace

TEST_CASE("a finished bundle has its final names, 0600/0700 modes and a matching tar.gz") {
  std::string run = TempDir();
  Redactor r(sl::Environment{{"HF_TOKEN", "hf_planted_value_77"}});
  auto b = Bundle::Create(run, "hang-test", &r);
  REQUIRE(b.ok());
  auto& bundle = **b;
  CHECK(fs::exists(run + "/.hang-test.partial"));
  REQUIRE(bundle.WriteFile("output/stdout.tail", "hello hf_planted_value_77\n").ok());
  REQUIRE(bundle.WriteFile("summary.md", "# ok\n").ok());
  REQUIRE(bundle.Finish().ok());
  CHECK_FALSE(fs::exists(run + "/.hang-test.partial"));
  CHECK(fs::is_directory(run + "/hang-test"));
  CHECK(fs::exists(run + "/hang-test.tar.gz"));
  struct stat st {};
  stat((run + "/hang-test").c_str(), &st);
  CHECK((st.st_mode & 0777) == 0700);
  stat((run + "/hang-test/output").c_str(), &st);
  CHECK((st.st_mode & 0777) == 0700);
  stat((run + "/hang-test/output/stdout.tail").c_str(), &st);
  CHECK((st.st_mode & 0777) == 0600);
  stat((run + "/hang-test.tar.gz").c_str(), &st);
  CHECK((st.st_mode & 0777) == 0600);
  std::vector<std::string> names;
  std::string all = TarContents(run + "/hang-test.tar.gz", &names);
  CHECK(std::find(names.begin(), names.end(), "hang-test/output/stdout.tail") != names.end());
  CHECK(all.find("hello <redacted>") != std::string::npos);
  CHECK(all.find("hf_planted_value_77") == std::string::npos);
  fs::remove_all(run);
}

TEST_CASE("a failed write keeps the bundle partial and Finish says which file") {
  std::string run = TempDir();
  auto b = Bundle::Create(run, "hang-x", nullptr);
  REQUIRE(b.ok());
  REQUIRE((*b)->WriteFile("node", "a file where a directory is needed").ok());
  CHECK_FALSE((*b)->WriteFile("node/host.json", "{}").ok());
  auto f = (*b)->Finish();
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().message.find("node") != std::string::npos);
  CHECK_FALSE(fs::exists(run + "/hang-x"));
  CHECK_FALSE(fs::exists(run + "/hang-x.tar.gz"));
  CHECK(fs::exists(run + "/.hang-x.partial"));
  fs::remove_all(run);
}

TEST_CASE("writes after Close are refused so a late collector cannot touch a finished bundle") {
  std::string run = TempDir();
  auto b = Bundle::Create(run, "hang-y", nullptr);
  REQUIRE(b.ok());
  (*b)->Close();
  CHECK_FALSE((*b)->WriteFile("late.txt", "x").ok());
  CHECK_FALSE(fs::exists(run + "/.hang-y.partial/late.txt"));
  fs::remove_all(run);
}

TEST_CASE("a missing run directory gives an error naming the path and the fix") {
  auto b = Bundle::Create("/nonexistent/run", "hang-z", nullptr);
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().message.find("/nonexistent/run/.hang-z.partial") != std::string::npos);
  CHECK_FALSE(b.error().fix.empty());
}

TEST_CASE("a collector past its deadline is recorded as timeout and does not hold the capture") {
  std::string run = TempDir();
  auto created = Bundle::Create(run, "hang-t", nullptr);
  REQUIRE(created.ok());
  std::shared_ptr<Bundle> bundle(std::move(created).value().release());
  static const Collector kSlow[] = {
      {"slow", "sleeps", std::chrono::milliseconds(200),
       [](const CaptureContext&, Bundle& b) {
         std::this_thread::sleep_for(std::chrono::milliseconds(1500));
         CollectorOutcome o;
         (void)b.WriteFile("late.txt", "late");
         return o;
       }},
      {"fast", "writes", std::chrono::milliseconds(1000),
       [](const CaptureContext&, Bundle& b) {
         CollectorOutcome o;
         o.bytes = *b.WriteFile("fast.txt", "ok");
         return o;
       }},
  };
  auto ctx = std::make_shared<CaptureContext>();
  auto t0 = std::chrono::steady_clock::now();
  auto j = RunCollectors(kSlow, ctx, bundle);
  bundle->Close();
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
          .count();
  CHECK(ms < 1200);
  CHECK(j[0]["status"] == "timeout");
  CHECK(j[1]["status"] == "ok");
  CHECK(j[1]["bytes"] == 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(1600));
  CHECK_FALSE(fs::exists(run + "/.hang-t.partial/late.txt"));
  fs::remove_all(run);
}

TEST_CASE("IB counter deltas list grown error counters") {
  CounterSnapshot a{{"mlx5_0:1/counters/link_downed", 1}, {"mlx5_0:1/counters/port_xmit_data", 10}};
  CounterSnapshot b{{"mlx5_0:1/counters/link_downed", 3}, {"mlx5_0:1/counters/port_xmit_data", 99}};
  auto j = IbCounterDeltas(a, b);
  REQUIRE(j["error_deltas"].size() == 1);
  CHECK(j["error_deltas"][0]["counter"] == "link_downed");
  CHECK(j["error_deltas"][0]["delta"] == 2);
  CHECK(j["ports"]["mlx5_0:1"]["counters/port_xmit_data"]["delta"] == 89);
}

TEST_CASE("kernel log filter keeps fabric/GPU records since job start only") {
  std::string kmsg =
      "4,100,1000000,-;mlx5_core 0000:17:00.0: Link down\n"
      "4,101,5000000,-;mlx5_core 0000:17:00.0: Link down\n"
      "4,102,6000000,-;EXT4-fs (sda1): mounted\n"
      "3,103,7000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid=123, GPU has fallen off the bus.\n";
  std::string out = FilterKernelLog(kmsg, 2000000);
  CHECK(out.find("Link down") != std::string::npos);
  CHECK(out.find("[    1.000000]") == std::string::npos);
  CHECK(out.find("EXT4") == std::string::npos);
  CHECK(out.find("Xid") != std::string::npos);
}

TEST_CASE("the kernel_log collector says when /dev/kmsg held more than it read") {
  const std::string r1 = "3,1,1000000,-;mlx5_core 0000:41:00.0: cmd_work_handler timeout\n";
  const std::string r2 = "3,2,2000000,-;NVRM: Xid (PCI:0000:41:00): 79, GPU has fallen off\n";
  auto mem = std::make_shared<sl::MemFileReader>();
  mem->AddFile("/dev/kmsg", r1 + r2);
  const Collector* kernel = nullptr;
  for (const auto& c : Collectors()) {
    if (std::string(c.id) == "kernel_log") kernel = &c;
  }
  REQUIRE(kernel != nullptr);
  for (std::size_t limit : {r1.size() + r2.size() + 100, r1.size() + 10}) {
    const std::string run = TempDir();
    CaptureContext ctx;
    ctx.fs = mem;
    ctx.kmsg_max_bytes = limit;
    auto b = Bundle::Create(run, "hang-k", nullptr);
    REQUIRE(b.ok());
    CollectorOutcome o = kernel->fn(ctx, **b);
    CHECK(o.status == "ok");
    std::string text;
    for (const auto& e : fs::recursive_directory_iterator(run)) {
      if (e.path().filename() == "kernel.log") {
        std::ifstream in(e.path());
        text.assign(std::istreambuf_iterator<char>(in), {});
      }
    }
    INFO(text);
    CHECK(text.find("cmd_work_handler") != std::string::npos);
    if (limit > r1.size() + r2.size()) {
      CHECK(o.details.count("truncated") == 0);
      CHECK(text.find("Xid") != std::string::npos);
      CHECK(text.find("held more than") == std::string::npos);
    } else {
      CHECK(o.details.value("truncated", false));
      CHECK(o.details.value("bytes_read", std::size_t{0}) == r1.size());
      CHECK(text.find("Xid") == std::string::npos);  // the cut record is not half-copied
      CHECK(text.find("/dev/kmsg held more than the " + std::to_string(r1.size()) +
                      " bytes read") != std::string::npos);
    }
    fs::remove_all(run);
  }
}

TEST_CASE("rank processes are found by RANK in their environment, forked workers skipped") {
  sl::MemFileReader fsr;
  fsr.AddFile("/proc/10/stat", "10 (torchrun) S 1 10 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 100 0 0");
  fsr.AddFile("/proc/11/stat", "11 (python) S 10 11 11 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 100 0 0");
  fsr.AddFile("/proc/12/stat", "12 (python) S 11 11 11 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 100 0 0");
  fsr.AddFile("/proc/11/environ", std::string("RANK=3\0LOCAL_RANK=1\0", 20));
  fsr.AddFile("/proc/12/environ", std::string("RANK=3\0LOCAL_RANK=1\0", 20));
  fsr.AddFile("/proc/10/environ", std::string("PATH=/bin\0", 10));
  auto ranks = FindRanks(fsr, {10, 11, 12});
  REQUIRE(ranks.size() == 1);
  CHECK(ranks[0].pid == 11);
  CHECK(ranks[0].rank == 3);
  CHECK(ranks[0].local_rank == 1);
}

TEST_CASE("kernel log filter reads records with the kmsg parser: escapes decoded") {
  // "\x20" is /dev/kmsg's escape of a byte; dictionary lines are not records.
  std::string kmsg =
      "4,100,3000000,-;mlx5_core 0000:17:00.0:\\x20Link down\n"
      " DEVICE=+pci:0000:17:00.0\n"
      "6,102,5000000,-;systemd[1]: Started Session\n";
  std::string out = FilterKernelLog(kmsg, 2000000);
  CHECK(out.find("0000:17:00.0: Link down") != std::string::npos);
  CHECK(out.find("DEVICE=") == std::string::npos);
  CHECK(out.find("Session") == std::string::npos);
  CHECK(out.find("[    3.000000]") != std::string::npos);
}

TEST_CASE("a symlink planted at the archive's partial name is never written through") {
  std::string run = TempDir();
  const std::string victim = run + "-victim";
  { std::ofstream(victim) << "precious"; }
  REQUIRE(symlink(victim.c_str(), (run + "/.hang-t.tar.gz.partial").c_str()) == 0);
  auto b = Bundle::Create(run, "hang-t", nullptr);
  REQUIRE(b.ok());
  REQUIRE((*b)->WriteFile("summary.md", "# ok\n").ok());
  CHECK_FALSE((*b)->Finish().ok());
  std::ifstream in(victim);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "precious");
  CHECK_FALSE(fs::exists(run + "/hang-t.tar.gz"));
  fs::remove_all(run);
  fs::remove(victim);
}

TEST_CASE(
    "a bundle file written twice is replaced, and a planted link at its name is not followed") {
  std::string run = TempDir();
  const std::string victim = run + "-victim";
  { std::ofstream(victim) << "precious"; }
  auto b = Bundle::Create(run, "hang-u", nullptr);
  REQUIRE(b.ok());
  REQUIRE(symlink(victim.c_str(), ((*b)->partial_dir() + "/summary.md").c_str()) == 0);
  REQUIRE((*b)->WriteFile("summary.md", "# one\n").ok());
  REQUIRE((*b)->WriteFile("summary.md", "# two\n").ok());
  std::ifstream in(victim);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "precious");
  std::ifstream out((*b)->partial_dir() + "/summary.md");
  CHECK(std::string(std::istreambuf_iterator<char>(out), {}) == "# two\n");
  fs::remove_all(run);
  fs::remove(victim);
}

namespace {

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

void MakeOld(const std::string& path) {
  struct timespec old[2] = {{::time(nullptr) - 3600, 0}, {::time(nullptr) - 3600, 0}};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), old, AT_SYMLINK_NOFOLLOW) == 0);
}

}  // namespace

TEST_CASE("NCCL_DEBUG_FILE is expanded as NCCL does: %h short host, %p pid, %% and others kept") {
  CHECK(ExpandNcclDebugFile("/r/nccl.%h.%p.log", "gpu7.cluster.example", 812) ==
        "/r/nccl.gpu7.812.log");
  CHECK(ExpandNcclDebugFile("a%%b%xc%", "h", 1) == "a%b%xc%");
}

TEST_CASE("the nccl_debug collector takes only this job's fresh regular files, never others'") {
  const std::string run = TempDir();     // the run directory
  const std::string shared = TempDir();  // a /tmp-like place others write to
  const pid_t rank_pid = ::getpid();     // a live process of our user, as a rank would be
  const pid_t other_pid = 4000001;       // a pid of this job's launcher (descendant)
  auto ctx = std::make_shared<CaptureContext>();
  ctx->host = "gpu7.cluster";
  ctx->run_dir = run;
  ctx->start_wall = std::chrono::system_clock::now();
  ctx->job_uid = ::geteuid();
  ctx->fs = std::make_shared<sl::RootedFileReader>("");
  const std::string pattern = shared + "/nccl.%h.%p.log";
  ctx->job_env = {{"NCCL_DEBUG_FILE", pattern}};
  ctx->descendants = {other_pid};
  ctx->ranks.push_back({rank_pid, 0, 0, {{"NCCL_DEBUG_FILE", pattern}}});
  ctx->ranks.push_back({rank_pid, 1, 1, {{"NCCL_DEBUG_FILE", "/etc/passwd"}}});
  WriteText(shared + "/nccl.gpu7." + std::to_string(rank_pid) + ".log", "NCCL INFO ours\n");
  WriteText(shared + "/nccl.gpu7." + std::to_string(other_pid) + ".log", "NCCL INFO launcher\n");
  WriteText(shared + "/nccl.gpu7.999.log", "another job's log\n");  // not one of our pids
  WriteText(shared + "/nccl.gpu7.4000002.log", "");
  WriteText(run + "/nccl.extra.log", "NCCL INFO in the run dir\n");
  WriteText(run + "/nccl.old.log", "from before the job\n");
  MakeOld(run + "/nccl.old.log");
  // A link at one of our names, pointing at a file of the system.
  ctx->descendants.push_back(4000003);
  REQUIRE(::symlink("/etc/hostname", (shared + "/nccl.gpu7.4000003.log").c_str()) == 0);
  // A fresh file of ours, but given to another user (when we can: root).
  ctx->descendants.push_back(4000004);
  const std::string foreign = shared + "/nccl.gpu7.4000004.log";
  WriteText(foreign, "someone else's\n");
  const bool chowned = ::chown(foreign.c_str(), 65534, 65534) == 0;

  const Collector* nccl = nullptr;
  for (const auto& c : Collectors()) {
    if (std::string(c.id) == "nccl_debug") nccl = &c;
  }
  REQUIRE(nccl != nullptr);
  auto b = Bundle::Create(run, "hang-n", nullptr);
  REQUIRE(b.ok());
  CollectorOutcome o = nccl->fn(*ctx, **b);
  std::set<std::string> files(o.files.begin(), o.files.end());
  const std::string mine = "nccl/nccl.gpu7." + std::to_string(rank_pid) + ".log";
  CHECK(files.count(mine) == 1);
  CHECK(files.count("nccl/nccl.gpu7." + std::to_string(other_pid) + ".log") == 1);
  CHECK(files.count("nccl/nccl.extra.log") == 1);
  CHECK(files.count("nccl/nccl.gpu7.999.log") == 0);
  CHECK(files.count("nccl/nccl.old.log") == 0);
  CHECK(files.count("nccl/passwd") == 0);
  CHECK(files.count("nccl/nccl.gpu7.4000003.log") == 0);
  if (chowned) CHECK(files.count("nccl/nccl.gpu7.4000004.log") == 0);
  CHECK(o.status == "ok");
  fs::remove_all(run);
  fs::remove_all(shared);
}

TEST_CASE("copying a host file follows no link and refuses a FIFO, a regular file's tail is kept") {
  std::string run = TempDir();
  auto b = Bundle::Create(run, "hang-c", nullptr);
  REQUIRE(b.ok());
  const std::string link = run + "-fr_rank_0";
  REQUIRE(symlink("/etc/hostname", link.c_str()) == 0);
  CHECK_FALSE((*b)->CopyFile("fr/fr_rank_0.pkl", link).ok());
  CHECK_FALSE(fs::exists((*b)->partial_dir() + "/fr/fr_rank_0.pkl"));
  const std::string fifo = run + "-fifo";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_FALSE((*b)->CopyFile("fr/fifo", fifo).ok());  // returns at once, no reader needed
  const std::string real = run + "-real";
  WriteText(real, "0123456789");
  auto r = (*b)->CopyFile("fr/real", real, 4);
  REQUIRE(r.ok());
  CHECK(*r == 4);
  std::ifstream in((*b)->partial_dir() + "/fr/real");
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "6789");
  fs::remove_all(run);
  fs::remove(link);
  fs::remove(fifo);
  fs::remove(real);
}

TEST_CASE("SigCgt says which signals a process catches") {
  const std::string status =
      "Name:\tpython3\nSigBlk:\t0000000000000000\nSigCgt:\t0000010100004802\n";
  CHECK(CatchesSignal(status, 41));  // bit 40
  CHECK(CatchesSignal(status, 2));   // SIGINT, bit 1
  CHECK_FALSE(CatchesSignal(status, 40));
  CHECK_FALSE(CatchesSignal(status, 10));
  CHECK_FALSE(CatchesSignal("Name:\tsleep\n", 41));
  CHECK_FALSE(CatchesSignal(status, 0));
}

namespace {

// Starts `argv` with `env` (NAME=VALUE) in a new process; the caller kills and reaps it.
pid_t StartWith(std::vector<std::string> argv, std::vector<std::string> env) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> a, e;
    for (auto& s : argv) a.push_back(s.data());
    for (auto& s : env) e.push_back(s.data());
    a.push_back(nullptr);
    e.push_back(nullptr);
    execve(a[0], a.data(), e.data());
    _exit(127);
  }
  return pid;
}

bool Alive(pid_t pid) {
  int st = 0;
  return waitpid(pid, &st, WNOHANG) == 0;
}

}  // namespace

TEST_CASE("python_stacks signals only ranks that registered and collects their faulthandler dump") {
  const std::string run = TempDir();
  const std::string stacks_dir = run + "/pystacks";
  const int sig = SIGRTMIN + 7;
  const std::string site = SL_FIXTURES_DIR + "/../../watchdog/hang/python";
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "PYTHONPATH=" + site,
                                  "SAFE_LAUNCH_PYSTACKS_DIR=" + stacks_dir,
                                  "SAFE_LAUNCH_PYSTACKS_SIGNAL=" + std::to_string(sig)};
  pid_t py = StartWith({"/usr/bin/python3", "-c", "import time\ntime.sleep(60)\n"}, env);
  // Not Python: it cannot register; a planted registration file must not get it signalled
  // (the real-time signal would kill it).
  pid_t sh = StartWith({"/bin/sleep", "60"}, env);
  REQUIRE(py > 0);
  REQUIRE(sh > 0);
  const std::string py_file = stacks_dir + "/pid_" + std::to_string(py) + ".txt";
  for (int i = 0; i < 200 && !fs::exists(py_file); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(fs::exists(py_file));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // registered after the header
  std::ofstream(stacks_dir + "/pid_" + std::to_string(sh) + ".txt") << "# planted\n";

  CaptureContext ctx;
  ctx.fs = std::make_shared<sl::RootedFileReader>("/");
  ctx.job_uid = geteuid();
  sl::Environment renv = {{"SAFE_LAUNCH_PYSTACKS_DIR", stacks_dir},
                          {"SAFE_LAUNCH_PYSTACKS_SIGNAL", std::to_string(sig)}};
  ctx.ranks = {RankProc{py, 0, 0, renv}, RankProc{sh, 1, 1, renv}, RankProc{py, 2, 2, {}}};
  const Collector* c = nullptr;
  for (const auto& x : Collectors()) {
    if (std::string(x.id) == "python_stacks") c = &x;
  }
  REQUIRE(c != nullptr);
  auto b = Bundle::Create(run, "hang-py", nullptr);
  REQUIRE(b.ok());
  CollectorOutcome o = c->fn(ctx, **b);
  INFO(o.details.dump());
  CHECK(o.status == "ok");
  REQUIRE(o.files.size() == 1);
  CHECK(o.files[0] == "stacks/rank_0_pid_" + std::to_string(py) + ".py.txt");
  const auto& ranks = o.details["ranks"];
  REQUIRE(ranks.size() == 3);
  CHECK(ranks[0]["status"] == "not_signalled");  // the sleep: its file, but no handler
  CHECK(ranks[1]["status"] == "not_enabled");    // no variables
  CHECK(ranks[2]["status"] == "ok");
  CHECK(Alive(py));
  CHECK(Alive(sh));
  std::ifstream in(run + "/.hang-py.partial/" + o.files[0]);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  CHECK(text.find("# safe-launch python stacks: pid=" + std::to_string(py)) == 0);
  CHECK(text.find("(most recent call first):") != std::string::npos);
  CHECK(text.find("line 2 in <module>") != std::string::npos);
  kill(py, SIGKILL);
  kill(sh, SIGKILL);
  waitpid(py, nullptr, 0);
  waitpid(sh, nullptr, 0);
  fs::remove_all(run);
}
