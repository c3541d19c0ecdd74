#include "common/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/file_writer.h"
#include "common/timed_read.h"
#include "tests/unit/common/temp_dir.h"

namespace {

using sl::testing::TempDir;

void Put(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

constexpr uid_t kNobody = 65534;

}  // namespace

TEST_CASE("a FIFO, /dev/zero and a link are refused at once, never read") {
  const std::string d = TempDir();
  REQUIRE(::mkfifo((d + "/fr_rank_1").c_str(), 0600) == 0);
  REQUIRE(::symlink("/dev/zero", (d + "/fr_rank_2").c_str()) == 0);
  Put(d + "/real", "x");
  REQUIRE(::symlink((d + "/real").c_str(), (d + "/link").c_str()) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto fifo = sl::ReadInputFile(d + "/fr_rank_1", sl::InputRule::Named(sl::InputKind::kDump));
  REQUIRE(!fifo.ok());
  CHECK_THAT(fifo.error().message, Catch::Contains("FIFO"));
  auto zero = sl::ReadInputFile(d + "/fr_rank_2", sl::InputRule::Named(sl::InputKind::kDump));
  REQUIRE(!zero.ok());
  CHECK_THAT(zero.error().message, Catch::Contains("symbolic link"));
  auto dev = sl::ReadInputFile("/dev/zero", sl::InputRule::Named(sl::InputKind::kDump));
  REQUIRE(!dev.ok());
  CHECK_THAT(dev.error().message, Catch::Contains("device"));
  CHECK(!sl::ReadInputFile(d + "/link", sl::InputRule::Named(sl::InputKind::kLog)).ok());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  std::filesystem::remove_all(d);
}

TEST_CASE("a sparse file over its kind's cap is refused by its size before a byte is read") {
  const std::string d = TempDir();
  const std::string p = d + "/fr_rank_0";
  Put(p, "");
  REQUIRE(::truncate(p.c_str(), off_t(30) << 30) == 0);  // 30 GB, no blocks
  auto r = sl::ReadInputFile(p, sl::InputRule::Named(sl::InputKind::kDump));
  REQUIRE(!r.ok());
  CHECK_THAT(r.error().message, Catch::Contains("cap"));
  sl::InputRule small = sl::InputRule::Named(sl::InputKind::kManifest);
  small.max_bytes = 4;
  Put(d + "/m", "12345");
  CHECK(!sl::ReadInputFile(d + "/m", small).ok());
  small.max_bytes = 5;
  CHECK(*sl::ReadInputFile(d + "/m", small) == "12345");
  std::filesystem::remove_all(d);
}

TEST_CASE("a file read into an uninitialised buffer has its bytes, and the caps of ReadAll") {
  const std::string d = TempDir();
  std::string big(3u << 20, '\0');  // three of the helper's 1 MiB reads
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>((i * 131 + i / 7) & 0xff);
  Put(d + "/fr_rank_0", big);
  auto r = sl::ReadInputFileBytes(d + "/fr_rank_0", sl::InputRule::Named(sl::InputKind::kDump));
  REQUIRE(r.ok());
  CHECK(r->view() == big);
  sl::InputRule rule;
  rule.kind = sl::InputKind::kDump;
  auto under = sl::ReadInputUnderBytes(d, "fr_rank_0", rule);
  REQUIRE(under.ok());
  CHECK(under->view() == big);
  Put(d + "/empty", "");
  auto empty = sl::ReadInputFileBytes(d + "/empty", sl::InputRule::Named(sl::InputKind::kDump));
  REQUIRE(empty.ok());
  CHECK(empty->size == 0);
  sl::InputRule small = sl::InputRule::Named(sl::InputKind::kManifest);
  small.max_bytes = 4;
  Put(d + "/m", "12345");
  CHECK(!sl::ReadInputFileBytes(d + "/m", small).ok());
  REQUIRE(::mkfifo((d + "/fifo").c_str(), 0600) == 0);
  CHECK(!sl::ReadInputFileBytes(d + "/fifo", sl::InputRule::Named(sl::InputKind::kDump)).ok());
  // A file that grows after it was opened (its size taken): the buffer grows, no byte is lost.
  auto f = sl::OpenInput(d + "/m", sl::InputRule::Named(sl::InputKind::kDump));
  REQUIRE(f.ok());
  std::ofstream(d + "/m", std::ios::app) << std::string(200000, 'y');
  auto grown = f->ReadAllBytes();
  REQUIRE(grown.ok());
  CHECK(grown->view() == "12345" + std::string(200000, 'y'));
  std::filesystem::remove_all(d);
}

TEST_CASE("the walk lists regular files only and never leaves its root through a link") {
  const std::string d = TempDir();
  std::filesystem::create_directories(d + "/n1/fr");
  Put(d + "/n1/fr/fr_rank_0", "dump");
  Put(d + "/n1/log.txt", "line");
  REQUIRE(::symlink("/", (d + "/n1/root").c_str()) == 0);
  REQUIRE(::symlink("/proc/self/fd", (d + "/fds").c_str()) == 0);
  REQUIRE(::symlink("/etc/passwd", (d + "/n1/fr/fr_rank_9").c_str()) == 0);
  REQUIRE(::mkfifo((d + "/n1/fr/fr_rank_1").c_str(), 0600) == 0);
  auto w = sl::WalkInputs(d);
  REQUIRE(w.ok());
  std::vector<std::string> rels;
  for (const auto& f : w->files) rels.push_back(f.rel);
  CHECK(rels == std::vector<std::string>{"n1/fr/fr_rank_0", "n1/log.txt"});
  CHECK(w->skipped.size() == 4);
  // Reading below the root does not follow a directory link either.
  sl::InputRule rule;
  CHECK(!sl::ReadInputUnder(d, "n1/root/etc/passwd", rule).ok());
  CHECK(!sl::ReadInputUnder(d, "../etc/passwd", rule).ok());
  CHECK(*sl::ReadInputUnder(d, "n1/fr/fr_rank_0", rule) == "dump");
  std::filesystem::remove_all(d);
}

TEST_CASE("another user's file in a walked tree is skipped, named explicitly it is read") {
  if (::geteuid() != 0) {
    WARN("not root: cannot give a file to another user; not checked here (CI runs as root)");
    return;
  }
  const std::string d = TempDir();
  Put(d + "/mine.log", "a");
  Put(d + "/theirs.log", "b");
  REQUIRE(::chown((d + "/theirs.log").c_str(), kNobody, kNobody) == 0);
  auto w = sl::WalkInputs(d);
  REQUIRE(w.ok());
  REQUIRE(w->files.size() == 1);
  CHECK(w->files[0].rel == "mine.log");
  REQUIRE(w->skipped.size() == 1);
  CHECK_THAT(w->skipped[0], Catch::Contains("owned by uid 65534"));
  sl::InputRule walked;
  walked.trusted_uid = w->owner;
  CHECK(!sl::ReadInputUnder(d, "theirs.log", walked).ok());
  CHECK(*sl::ReadInputFile(d + "/theirs.log", sl::InputRule::Named(sl::InputKind::kLog)) == "b");
  // A tree owned by another user (root diagnosing a user's run): its owner's files and the
  // caller's are read, a third user's is not.
  REQUIRE(::chown(d.c_str(), kNobody, kNobody) == 0);
  Put(d + "/third.log", "c");
  REQUIRE(::chown((d + "/third.log").c_str(), 4243, 4243) == 0);
  auto w2 = sl::WalkInputs(d);
  REQUIRE(w2.ok());
  REQUIRE(w2->files.size() == 2);
  CHECK(w2->files[0].rel == "mine.log");
  CHECK(w2->files[1].rel == "theirs.log");
  REQUIRE(w2->skipped.size() == 1);
  CHECK_THAT(w2->skipped[0], Catch::Contains("uid 4243"));
  std::filesystem::remove_all(d);
}

TEST_CASE("an unreadable directory in a walk is said, not passed over in silence") {
  const std::string d = TempDir();
  std::filesystem::create_directories(d + "/n2");
  Put(d + "/n2/log.txt", "x");
  ::chmod((d + "/n2").c_str(), 0);
  // As root the mode does not stop us: walk as nobody in a child.
  pid_t pid = ::fork();
  if (pid == 0) {
    ::chmod(d.c_str(), 0755);
    if (::geteuid() == 0) {
      ::chown(d.c_str(), kNobody, kNobody);
      if (::setgid(kNobody) != 0 || ::setuid(kNobody) != 0) _exit(3);
    }
    auto w = sl::WalkInputs(d);
    _exit(w.ok() && w->unreadable_dirs.size() == 1 && w->files.empty() ? 0 : 1);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  ::chmod((d + "/n2").c_str(), 0700);
  std::filesystem::remove_all(d);
}

TEST_CASE("four processes appending 500 records each keep all 2000, whole and in order") {
  const std::string d = TempDir();
  const std::string p = d + "/history.jsonl";
  std::vector<pid_t> kids;
  for (int w = 0; w < 4; ++w) {
    pid_t pid = ::fork();
    if (pid == 0) {
      // Records of 10 KiB: more than a pipe's atomic write, as a history line with per-node
      // sweeps is.
      for (int i = 0; i < 500; ++i) {
        std::string rec = "{\"w\": " + std::to_string(w) + ", \"i\": " + std::to_string(i) +
                          ", \"pad\": \"" + std::string(10000, 'a' + w) + "\"}\n";
        if (!sl::AppendRecord(p, rec, 0644).ok()) _exit(1);
      }
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int st = 0;
    ::waitpid(k, &st, 0);
    CHECK(WEXITSTATUS(st) == 0);
  }
  std::ifstream in(p);
  std::string line;
  int n = 0;
  std::vector<int> last(4, -1);
  while (std::getline(in, line)) {
    ++n;
    REQUIRE(line.size() > 10000);
    const int w = line[6] - '0';
    REQUIRE(w >= 0);
    REQUIRE(w < 4);
    const int i = std::stoi(line.substr(line.find("\"i\": ") + 5));
    CHECK(i == last[w] + 1);
    last[w] = i;
    CHECK(line.find(std::string(10000, 'a' + w)) != std::string::npos);
  }
  CHECK(n == 2000);
  std::filesystem::remove_all(d);
}

TEST_CASE("an append never writes through a planted link and adds a missing newline first") {
  const std::string d = TempDir();
  Put(d + "/secret", "root only\n");
  REQUIRE(::symlink((d + "/secret").c_str(), (d + "/history.jsonl").c_str()) == 0);
  CHECK(!sl::AppendRecord(d + "/history.jsonl", "{}\n", 0644).ok());
  std::ifstream s(d + "/secret");
  std::string all((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
  CHECK(all == "root only\n");
  Put(d + "/h", "{\"torn\": 1}");
  REQUIRE(sl::AppendRecord(d + "/h", "{\"next\": 2}", 0644).ok());
  std::ifstream h(d + "/h");
  std::string text((std::istreambuf_iterator<char>(h)), std::istreambuf_iterator<char>());
  CHECK(text == "{\"torn\": 1}\n{\"next\": 2}\n");
  std::filesystem::remove_all(d);
}

namespace {

// A FIFO with a writer that never writes: a read() on it really blocks in the kernel, as one
// on a hard-mounted NFS file whose server went away does. No regular file can be made to block
// here (no FUSE, no NFS), so the FIFO goes in through InputFile's descriptor constructor (the
// seam behind OpenInput's regular-file check). Returns {read fd, write fd}.
std::pair<int, int> SilentFifo(const std::string& path) {
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  int r = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  int w = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(r >= 0);
  REQUIRE(w >= 0);
  ::fcntl(r, F_SETFL, ::fcntl(r, F_GETFL) & ~O_NONBLOCK);
  return {r, w};
}

bool StuckReadsBecome(int n) {
  for (int i = 0; i < 200 && sl::StuckReads() != n; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return sl::StuckReads() == n;
}

}  // namespace

TEST_CASE("a read that blocks in the kernel ends at its deadline, and its helper is given back") {
  const std::string d = TempDir();
  auto [r, w] = SilentFifo(d + "/stuck");
  sl::InputRule rule = sl::InputRule::Named(sl::InputKind::kManifest);
  rule.deadline = std::chrono::milliseconds(300);
  sl::InputFile f(r, 0, d + "/stuck", rule);
  const auto t0 = std::chrono::steady_clock::now();
  char buf[64];
  auto got = f.Read(buf, sizeof buf);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(!got.ok());
  CHECK(took >= 0.25);
  CHECK(took < 2.0);
  CHECK(got.error().message.find("timed out reading after 0.") != std::string::npos);
  CHECK(got.error().where == d + "/stuck");
  CHECK(got.error().fix.find("local disk") != std::string::npos);
  CHECK(f.fd() == -1);  // the stuck helper owns the descriptor now
  CHECK(sl::StuckReads() == 1);
  // The helper is named (a thread count, a look at /proc/PID/task, tells it from the caller's).
  std::size_t named = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(e.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name == sl::kTimedReadThreadName) ++named;
  }
  CHECK(named >= 1);
  // The read returns at last: the helper closes the descriptor and goes back to work.
  REQUIRE(::write(w, "x", 1) == 1);
  CHECK(StuckReadsBecome(0));
  ::close(w);
  std::filesystem::remove_all(d);
}

TEST_CASE("at most kMaxStuckReads reads may be stuck, the next is refused at once") {
  const std::string d = TempDir();
  std::vector<int> writers;
  const auto deadline = [] {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
  };
  char buf[8];
  for (int i = 0; i < sl::kMaxStuckReads; ++i) {
    auto [r, w] = SilentFifo(d + "/f" + std::to_string(i));
    writers.push_back(w);
    auto got = sl::TimedRead(r, buf, sizeof buf, deadline());
    REQUIRE(got.ok());
    CHECK(got->timed_out);
  }
  CHECK(sl::StuckReads() == sl::kMaxStuckReads);
  auto [r, w] = SilentFifo(d + "/one-more");
  const auto t0 = std::chrono::steady_clock::now();
  auto refused = sl::TimedRead(r, buf, sizeof buf, deadline() + std::chrono::seconds(5));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
  REQUIRE(!refused.ok());
  CHECK(refused.error().message.find("reads are stuck already") != std::string::npos);
  ::close(r);
  ::close(w);
  for (int fd : writers) REQUIRE(::write(fd, "x", 1) == 1);
  CHECK(StuckReadsBecome(0));
  for (int fd : writers) ::close(fd);
  // Back to normal: a read that answers is read.
  const std::string plain = d + "/plain";
  Put(plain, "hello\n");
  auto text = sl::ReadInputFile(plain, sl::InputRule::Named(sl::InputKind::kLog));
  REQUIRE(text.ok());
  CHECK(*text == "hello\n");
  std::filesystem::remove_all(d);
}

// The log reader lends its buffer to the helper (no copy through the helper's own): the bytes
// land where asked, and a read abandoned at its deadline keeps that buffer alive until it
// returns, so the late bytes go to memory the caller has given up, never to freed memory.
TEST_CASE(
    "a read into a shared buffer lands in place, and abandoned, the helper keeps the buffer") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  REQUIRE(::write(p[1], "abc", 3) == 3);
  std::shared_ptr<char[]> buf(new char[8]());
  auto got =
      sl::TimedRead(p[0], buf, 2, 6, std::chrono::steady_clock::now() + std::chrono::seconds(5));
  REQUIRE(got.ok());
  CHECK(!got->timed_out);
  REQUIRE(got->bytes == 3);
  CHECK(std::string(buf.get(), 5) == std::string("\0\0abc", 5));
  ::close(p[0]);
  ::close(p[1]);

  const std::string d = TempDir();
  auto [r, w] = SilentFifo(d + "/stuck");
  sl::InputRule rule = sl::InputRule::Named(sl::InputKind::kLog);
  rule.deadline = std::chrono::milliseconds(100);
  sl::InputFile f(r, 0, d + "/stuck", rule);
  std::weak_ptr<char[]> lent;
  {
    std::shared_ptr<char[]> mine(new char[64]);
    lent = mine;
    auto late = f.Read(mine, 0, 64);
    REQUIRE(!late.ok());
    CHECK(late.error().message.find("timed out reading after 0.") != std::string::npos);
    CHECK(f.fd() == -1);
  }
  CHECK(!lent.expired());  // the caller let go; the stuck read still holds it
  REQUIRE(::write(w, "x", 1) == 1);
  CHECK(StuckReadsBecome(0));
  for (int i = 0; i < 200 && !lent.expired(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(lent.expired());  // ... until its read returned
  ::close(w);
  std::filesystem::remove_all(d);
}

// The post-mortem's diagnosis runs in a forked child of the multi-threaded supervisor: the
// parent's idle helper is not there, and a read handed to it would wait out its deadline.
TEST_CASE("a forked child's timed reads do not wait for the parent's helper threads") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  REQUIRE(::write(p[1], "ab", 2) == 2);
  char buf[4] = {};
  auto first = sl::TimedRead(
      p[0], buf, 1,
      std::chrono::steady_clock::now() + std::chrono::seconds(5));  // leaves a helper idle
  REQUIRE(first.ok());
  REQUIRE(first->bytes == 1);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const auto start = std::chrono::steady_clock::now();
    auto got = sl::TimedRead(p[0], buf, 1, start + std::chrono::seconds(3));
    const bool ok = got.ok() && !got->timed_out && got->bytes == 1 && buf[0] == 'b' &&
                    std::chrono::steady_clock::now() - start < std::chrono::seconds(1);
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  ::close(p[0]);
  ::close(p[1]);
}
