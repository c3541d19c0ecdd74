#include "diagnose/log_reader.h"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>
#include <sys/stat.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

namespace sl::diagnose {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Consumes `n` digits at s[*i]; false (and *i unchanged) when they are not there.
bool Digits(std::string_view s, std::size_t* i, std::size_t n) {
  if (*i + n > s.size()) return false;
  for (std::size_t k = 0; k < n; ++k) {
    if (!IsDigit(s[*i + k])) return false;
  }
  *i += n;
  return true;
}

bool Char(std::string_view s, std::size_t* i, char c) {
  if (*i < s.size() && s[*i] == c) {
    ++*i;
    return true;
  }
  return false;
}

// "2024-01-02T03:04:05.123456+00:00" (or a space for the T), optionally in brackets, as k8s,
// fluentd, Python logging and most collectors write it. Returns the length, 0 when none.
std::size_t IsoStamp(std::string_view s) {
  std::size_t i = 0;
  const bool bracket = Char(s, &i, '[');
  if (!Digits(s, &i, 4) || !Char(s, &i, '-') || !Digits(s, &i, 2) || !Char(s, &i, '-') ||
      !Digits(s, &i, 2)) {
    return 0;
  }
  if (!Char(s, &i, 'T') && !Char(s, &i, ' ')) return 0;
  if (!Digits(s, &i, 2) || !Char(s, &i, ':') || !Digits(s, &i, 2) || !Char(s, &i, ':') ||
      !Digits(s, &i, 2)) {
    return 0;
  }
  if (Char(s, &i, '.') || Char(s, &i, ',')) {
    while (i < s.size() && IsDigit(s[i])) ++i;
  }
  if (!Char(s, &i, 'Z') && i < s.size() && (s[i] == '+' || s[i] == '-')) {
    std::size_t j = i + 1;
    if (Digits(s, &j, 2)) {
      Char(s, &j, ':');
      if (Digits(s, &j, 2)) i = j;
    }
  }
  if (bracket && !Char(s, &i, ']')) return 0;
  return i;
}

// "Dec  1 10:00:00 " (syslog, journalctl short). Returns the length, 0 when none.
std::size_t SyslogStamp(std::string_view s) {
  if (s.size() < 16 || !std::isupper(static_cast<unsigned char>(s[0])) ||
      !std::islower(static_cast<unsigned char>(s[1])) ||
      !std::islower(static_cast<unsigned char>(s[2])) || s[3] != ' ') {
    return 0;
  }
  std::size_t i = 4;
  if (s[i] == ' ') ++i;
  if (!Digits(s, &i, 1)) return 0;
  if (i < s.size() && IsDigit(s[i])) ++i;
  if (!Char(s, &i, ' ') || !Digits(s, &i, 2) || !Char(s, &i, ':') || !Digits(s, &i, 2) ||
      !Char(s, &i, ':') || !Digits(s, &i, 2)) {
    return 0;
  }
  return i;
}

// After a syslog stamp: "host prog[pid]: " -> its length, 0 when the two tokens are not there.
std::size_t SyslogSource(std::string_view s) {
  const std::size_t host_end = s.find(' ');
  if (host_end == 0 || host_end == std::string_view::npos || host_end > 64) return 0;
  const std::size_t prog_end = s.find(' ', host_end + 1);
  if (prog_end == std::string_view::npos || prog_end - host_end > 64) return 0;
  if (s[prog_end - 1] != ':') return 0;
  return prog_end + 1;
}

// "[ 1234.567890]" (dmesg). Returns the length, 0 when none.
std::size_t DmesgStamp(std::string_view s) {
  std::size_t i = 0;
  if (!Char(s, &i, '[')) return 0;
  while (i < s.size() && s[i] == ' ') ++i;
  const std::size_t digits = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  if (i == digits || !Char(s, &i, '.')) return 0;
  while (i < s.size() && IsDigit(s[i])) ++i;
  return Char(s, &i, ']') ? i : 0;
}

// "[rank3]:" / "[default3]:" (torchrun's --tee / log prefix) -> length and the rank.
std::size_t RankTag(std::string_view s, std::string* rank) {
  for (std::string_view tag : {"[rank", "[default"}) {
    if (s.substr(0, tag.size()) != tag) continue;
    std::size_t i = tag.size();
    const std::size_t start = i;
    while (i < s.size() && IsDigit(s[i]) && i - start < 7) ++i;
    if (i == start || !Char(s, &i, ']') || !Char(s, &i, ':')) return 0;
    *rank = std::string(s.substr(start, i - 2 - start));
    return i;
  }
  return 0;
}

// srun -l / --label: "12: " in front of every task's line.
std::size_t SrunLabel(std::string_view s, std::string* rank) {
  std::size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  const std::size_t start = i;
  while (i < s.size() && IsDigit(s[i]) && i - start < 7) ++i;
  if (i == start || !Char(s, &i, ':') || !Char(s, &i, ' ')) return 0;
  *rank = std::string(s.substr(start, i - 2 - start));
  return i;
}

bool PodChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

// "worker-1  | " (docker compose, stern) or "[pod/name/container] " (kubectl logs --prefix).
std::size_t PodTag(std::string_view s, std::string* pod) {
  if (s.substr(0, 5) == "[pod/") {
    const std::size_t end = s.find(']');
    if (end == std::string_view::npos || end > 256) return 0;
    *pod = std::string(s.substr(5, end - 5));
    return end + 1;
  }
  std::size_t i = 0;
  while (i < s.size() && i < 64 && PodChar(s[i])) ++i;
  if (i == 0 || i == s.size() || !std::isalpha(static_cast<unsigned char>(s[0]))) return 0;
  const std::size_t name_end = i;
  while (i < s.size() && s[i] == ' ') ++i;
  if (i + 1 >= s.size() || s[i] != '|' || s[i + 1] != ' ') return 0;
  *pod = std::string(s.substr(0, name_end));
  return i + 2;
}

// Open MPI's --tag-output: "[1,3]<stdout>:" / "[1,3]<stderr>:" ([jobid,rank]<stream>:).
std::size_t MpiTag(std::string_view s, std::string* rank) {
  std::size_t i = 0;
  if (!Char(s, &i, '[')) return 0;
  const std::size_t job = i;
  while (i < s.size() && IsDigit(s[i]) && i - job < 10) ++i;
  if (i == job || !Char(s, &i, ',')) return 0;
  const std::size_t start = i;
  while (i < s.size() && IsDigit(s[i]) && i - start < 7) ++i;
  if (i == start) return 0;
  const std::size_t end = i;
  if (!Char(s, &i, ']')) return 0;
  for (std::string_view stream : {"<stdout>:", "<stderr>:", "<stddiag>:"}) {
    if (s.substr(i, stream.size()) == stream) {
      *rank = std::string(s.substr(start, end - start));
      return i + stream.size();
    }
  }
  return 0;
}

// Ray's worker-log prefix: "(RayWorkerWrapper pid=263, ip=10.0.16.95) ", "(pid=776) ".
std::size_t RayTag(std::string_view s) {
  if (s.empty() || s[0] != '(') return 0;
  const std::size_t close = s.find(')');
  if (close == std::string_view::npos || close > 160) return 0;
  const std::string_view inner = s.substr(1, close - 1);
  const std::size_t pid = inner.find("pid=");
  if (pid == std::string_view::npos || (pid > 0 && inner[pid - 1] != ' ')) return 0;
  std::size_t i = pid + 4;
  const std::size_t digits = i;
  while (i < inner.size() && IsDigit(inner[i])) ++i;
  if (i == digits || (i < inner.size() && inner.substr(i, 2) != ", ")) return 0;
  for (char c : inner.substr(0, pid)) {
    if (!PodChar(c) && c != ' ' && c != ':' && c != '+') return 0;
  }
  return close + 1;
}

// NCCL's own "host:pid:tid [dev] " prefix at the start of `s` (the shape, not its values).
bool NcclPrefixAt(std::string_view s) {
  const std::size_t sp = s.find(' ');
  if (sp == std::string_view::npos || sp == 0 || sp > 128 || s.substr(sp + 1, 1) != "[") {
    return false;
  }
  const std::string_view head = s.substr(0, sp);
  const std::size_t c2 = head.rfind(':');
  const std::size_t c1 = c2 == std::string_view::npos || c2 == 0 ? c2 : head.rfind(':', c2 - 1);
  if (c1 == std::string_view::npos || c2 == std::string_view::npos || c1 == 0) return false;
  auto all_digits = [](std::string_view d) {
    return !d.empty() && std::all_of(d.begin(), d.end(), IsDigit);
  };
  return all_digits(head.substr(c1 + 1, c2 - c1 - 1)) && all_digits(head.substr(c2 + 1));
}

// A host label in front of NCCL's own prefix, as pdsh, clush and `mpirun --tag-output`-like
// wrappers print it: "gpu07: gpu07:1234:1250 [3] NCCL INFO ...". Only before NCCL's prefix: a
// bare "word: " is how most error lines start ("RuntimeError: ...").
std::size_t HostLabel(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && i < 64 && PodChar(s[i])) ++i;
  if (i == 0 || s.substr(i, 2) != ": ") return 0;
  std::size_t j = i + 2;
  while (j < s.size() && s[j] == ' ') ++j;
  return NcclPrefixAt(s.substr(j)) ? j : 0;
}

// What a paste adds in front of every line: Markdown indentation and quote marks ("> ").
std::size_t PasteMarks(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '>')) {
    if (s[i] == '>' && i + 1 < s.size() && s[i + 1] != ' ' && s[i + 1] != '>') break;
    ++i;
  }
  return i;
}

// Separators collectors leave between a prefix and the line: spaces, tabs, "|", "stdout F"
// (the CRI log format of Kubernetes nodes: stream and partial/full tag).
std::size_t Separators(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  if (s.substr(i, 2) == "| ") i += 2;
  for (std::string_view cri : {"stdout F ", "stderr F ", "stdout P ", "stderr P "}) {
    if (s.substr(i, cri.size()) == cri) i += cri.size();
  }
  return i;
}

}  // namespace

std::string_view StripCollectorPrefixes(std::string_view line, LinePrefix* prefix) {
  for (int round = 0; round < 8 && !line.empty(); ++round) {
    std::size_t n = 0;
    if ((n = IsoStamp(line)) != 0 || (n = DmesgStamp(line)) != 0) {
      if (prefix->timestamp.empty()) prefix->timestamp = std::string(line.substr(0, n));
    } else if ((n = SyslogStamp(line)) != 0) {
      if (prefix->timestamp.empty()) prefix->timestamp = std::string(line.substr(0, n));
      n += Separators(line.substr(n));
      n += SyslogSource(line.substr(n));
    } else if ((n = RankTag(line, &prefix->rank)) == 0 &&
               (n = SrunLabel(line, &prefix->rank)) == 0 &&
               (n = MpiTag(line, &prefix->rank)) == 0 && (n = PodTag(line, &prefix->pod)) == 0 &&
               (n = RayTag(line)) == 0 && (n = HostLabel(line)) == 0 &&
               (n = PasteMarks(line)) == 0) {
      break;
    }
    n += Separators(line.substr(n));
    line.remove_prefix(std::min(n, line.size()));
  }
  return line;
}

namespace {

// Length of the valid UTF-8 sequence at s[i], 0 when the bytes there are not one (RFC 3629:
// no overlongs, no surrogates, nothing above U+10FFFF).
std::size_t Utf8Length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(1) < lo || b(1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (b(k) < 0x80 || b(k) > 0xBF) return 0;
  }
  return n;
}

// Length of the ANSI escape sequence at s[i] (s[i] == ESC): CSI "ESC [ params final", OSC
// "ESC ] ... BEL|ESC \", else ESC and one byte. Never past the end of the line.
std::size_t EscapeLength(std::string_view s, std::size_t i) {
  std::size_t j = i + 1;
  if (j >= s.size()) return 1;
  if (s[j] == '[') {
    ++j;
    while (j < s.size() && static_cast<unsigned char>(s[j]) >= 0x20 &&
           static_cast<unsigned char>(s[j]) <= 0x3F) {
      ++j;
    }
    if (j < s.size() && static_cast<unsigned char>(s[j]) >= 0x40 &&
        static_cast<unsigned char>(s[j]) <= 0x7E) {
      ++j;
    }
    return j - i;
  }
  if (s[j] == ']') {
    while (j < s.size() && s[j] != '\a' && s[j] != '\n' && !(s[j] == '\x1b' && j + 1 < s.size())) {
      ++j;
    }
    if (j < s.size() && s[j] == '\a') ++j;
    if (j + 1 < s.size() && s[j] == '\x1b' && s[j + 1] == '\\') j += 2;
    return j - i;
  }
  return s[j] == '\n' ? 1 : 2;
}

#if defined(__SSE2__)
// The bytes of `v` that need a look (a bit each): all but printable ASCII, '\n' and '\t'.
inline int NeedsLook(__m128i v) {
  const __m128i space = _mm_set1_epi8(0x20), del = _mm_set1_epi8(0x7F);
  const __m128i nl = _mm_set1_epi8('\n'), tab = _mm_set1_epi8('\t');
  // Signed compare: bytes >= 0x80 are negative, so "below space" takes them in too.
  const __m128i low = _mm_andnot_si128(_mm_or_si128(_mm_cmpeq_epi8(v, nl), _mm_cmpeq_epi8(v, tab)),
                                       _mm_cmplt_epi8(v, space));
  return _mm_movemask_epi8(_mm_or_si128(low, _mm_cmpeq_epi8(v, del)));
}
#endif

// CleanBytes into `out`, which has room for in.size() bytes (cleaning never adds any); returns
// how many it wrote. One pass: 16 bytes at a time (SSE2, in every x86-64) are copied while they
// pass as they are; a byte that needs a look is handled on its own.
std::size_t CleanInto(std::string_view in, char* out, std::size_t* replaced) {
  const char* d = in.data();
  const std::size_t n = in.size();
  std::size_t i = 0, o = 0;
  while (i < n) {
#if defined(__SSE2__)
    // Room to store 16 at `o`: o <= i, and 16 more bytes of `in` are there.
    while (i + 16 <= n) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + o), v);
      if (const int look = NeedsLook(v); look != 0) {
        const std::size_t k = static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(look)));
        i += k;
        o += k;
        break;
      }
      i += 16;
      o += 16;
    }
#endif
    while (i < n) {
      const unsigned char c = static_cast<unsigned char>(d[i]);
      if ((c < 0x20 && c != '\n' && c != '\t') || c >= 0x7F) break;
      out[o++] = d[i++];
#if defined(__SSE2__)
      if (i + 16 <= n) break;  // back to 16 at a time (it stops again at once if need be)
#endif
    }
    if (i >= n) break;
    const unsigned char c = static_cast<unsigned char>(d[i]);
    if ((c >= 0x20 && c < 0x7F) || c == '\n' || c == '\t') continue;
    if (c == 0x1B) {
      i += EscapeLength(in, i);
    } else if (c == '\r') {
      if (i + 1 >= n || d[i + 1] != '\n') out[o++] = ' ';
      ++i;
    } else if (c >= 0x80) {
      if (const std::size_t len = Utf8Length(in, i); len != 0) {
        std::memcpy(out + o, d + i, len);
        o += len;
        i += len;
      } else {
        out[o++] = '?';
        ++*replaced;
        ++i;
      }
    } else {  // other control bytes (NUL, backspace, DEL)
      out[o++] = '?';
      ++*replaced;
      ++i;
    }
  }
  return o;
}

}  // namespace

std::size_t CleanBytes(std::string_view in, std::string* out) {
  std::size_t replaced = 0;
  const std::size_t had = out->size();
  out->resize(had + in.size());
  out->resize(had + CleanInto(in, out->data() + had, &replaced));
  return replaced;
}

LogLineBlocks::LogLineBlocks(BlockFn on_block)
    : on_block_(std::move(on_block)),
      lines_({kMaxLine, LineAssembler::LongLine::kCut, /*cr_ends_line=*/true},
             [this](std::string_view text) {
               // Whole lines: "\r\n" becomes '\n' here, escapes never reach past a line end.
               if (block_size_ + text.size() > block_room_) {
                 const std::size_t room = std::max(2 * block_room_, block_size_ + text.size());
                 std::unique_ptr<char[]> bigger(new char[room]);
                 if (block_size_ > 0) std::memcpy(bigger.get(), block_.get(), block_size_);
                 block_ = std::move(bigger);
                 block_room_ = room;
               }
               std::size_t replaced = 0;
               block_size_ += CleanInto(text, block_.get() + block_size_, &replaced);
               replaced_ += replaced;
               if (block_size_ >= kBlock) Flush();
             }) {}

void LogLineBlocks::Flush() {
  if (block_size_ > 0) on_block_(std::string_view(block_.get(), block_size_), block_first_);
  block_size_ = 0;
  block_first_ = lines_.lines() + 1;
}

void LogLineBlocks::Finish() {
  lines_.Finish();
  Flush();
}

std::string TorchErrorFileText(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{') return "";
  // torch.distributed.elastic's ErrorHandler writes {"message": {"message": "...", "extraInfo":
  // {"py_callstack": "...", "timestamp": "..."}}}; older releases and users' own handlers put a
  // plain string in "message".
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("message")) return "";
  const nlohmann::json& m = j["message"];
  std::string out;
  auto add = [&out](const nlohmann::json& v) {
    if (v.is_string()) out += v.get<std::string>() + "\n";
  };
  if (m.is_string()) {
    add(m);
  } else if (m.is_object()) {
    add(m.value("message", nlohmann::json()));
    if (m.contains("extraInfo") && m["extraInfo"].is_object()) {
      add(m["extraInfo"].value("py_callstack", nlohmann::json()));
    }
  }
  return out;
}

namespace {

constexpr std::size_t kReadChunk = 1 << 20;
// Error files are a few KiB; anything this large is a log that happens to start with '{'.
constexpr std::size_t kMaxErrorFile = 8 << 20;

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsArchiveName(std::string_view name) {
  return EndsWith(name, ".tar.gz") || EndsWith(name, ".tgz") || EndsWith(name, ".tar") ||
         EndsWith(name, ".tar.xz") || EndsWith(name, ".tar.zst");
}

// A NUL in the first bytes: pickles (Flight Recorder dumps), core files, binaries.
bool LooksBinary(std::string_view head) { return head.find('\0') != std::string_view::npos; }

// Where a file's bytes come from: stdin (fread) or an InputFile (checked, capped, deadline).
class Source {
 public:
  explicit Source(std::FILE* f) : stdio_(f) {}
  explicit Source(InputFile* f) : file_(f) {}
  // Fills `buf` (`n` bytes) as far as the source goes; 0 at the end, an error for the file. A
  // file is read straight into `buf` (shared with the reading thread: after an error, `buf` is
  // not to be used again).
  Result<std::size_t> Fill(const std::shared_ptr<char[]>& buf, std::size_t n) {
    std::size_t used = 0;
    while (used < n) {
      std::size_t got = 0;
      if (stdio_ != nullptr) {
        got = std::fread(buf.get() + used, 1, n - used, stdio_);
      } else {
        auto r = file_->Read(buf, used, n - used);
        if (!r.ok()) return r.error();
        got = *r;
      }
      if (got == 0) break;
      used += got;
    }
    return used;
  }

 private:
  std::FILE* stdio_ = nullptr;
  InputFile* file_ = nullptr;
};

// Streams a file to the sink; a small file that is a torchrun error file is handed over as its
// message instead.
void StreamFile(Source src, const std::string& name, InputSink& sink, InputStats* stats,
                bool check_binary) {
  const std::shared_ptr<char[]> buf(new char[kReadChunk]);
  auto got = src.Fill(buf, kReadChunk);
  if (!got.ok()) {
    stats->skipped.push_back(name + ": " + got.error().message);
    return;
  }
  std::size_t n = *got;
  std::string_view first(buf.get(), n);
  if (check_binary && LooksBinary(first.substr(0, 4096))) {
    ++stats->binary;
    return;
  }
  ++stats->files;
  sink.BeginFile(name);
  if (n < kReadChunk && n <= kMaxErrorFile) {
    if (std::string msg = TorchErrorFileText(first); !msg.empty()) {
      stats->bytes += n;
      sink.Bytes(msg);
      sink.EndFile();
      return;
    }
  }
  while (n > 0) {
    stats->bytes += n;
    sink.Bytes(std::string_view(buf.get(), n));
    got = src.Fill(buf, kReadChunk);
    if (!got.ok()) {
      stats->skipped.push_back(name + ": cut short (" + got.error().message + ")");
      break;
    }
    n = *got;
  }
  sink.EndFile();
}

std::string ArchiveError(archive* a) {
  const char* e = archive_error_string(a);
  return e != nullptr ? e : "read error";
}

std::string EntryName(archive_entry* entry) {
  const char* p = archive_entry_pathname(entry);
  return p != nullptr ? p : "?";
}

struct ArchiveCloser {
  void operator()(archive* a) const { archive_read_free(a); }
};

// A .tar(.gz) walked member by member, or a lone .gz decompressed (raw format), from a file that
// passed the input checks. What it decompresses to is capped and under the file's deadline too
// (a gzip bomb is cut, not followed to the end of the disk).
Status StreamArchive(InputFile& file, bool raw, InputSink& sink, InputStats* stats) {
  const std::string& path = file.display();
  std::unique_ptr<archive, ArchiveCloser> a(archive_read_new());
  archive_read_support_filter_all(a.get());
  if (raw) {
    archive_read_support_format_raw(a.get());
  } else {
    archive_read_support_format_all(a.get());
  }
  if (archive_read_open_fd(a.get(), file.fd(), kReadChunk) != ARCHIVE_OK) {
    return MakeError(fmt::format("cannot open {}: {}", path, ArchiveError(a.get())), path);
  }
  const auto deadline = std::chrono::steady_clock::now() + InputDeadline(InputKind::kLog);
  const std::uint64_t cap = InputCap(InputKind::kLog);
  std::uint64_t total = 0;
  std::string buf(kReadChunk, '\0');
  archive_entry* entry = nullptr;
  while (archive_read_next_header(a.get(), &entry) == ARCHIVE_OK) {
    if (!raw && archive_entry_filetype(entry) != AE_IFREG) continue;
    const std::string name = raw ? path : path + ":" + EntryName(entry);
    la_ssize_t n = archive_read_data(a.get(), buf.data(), buf.size());
    if (n < 0) {
      stats->skipped.push_back(name + ": " + ArchiveError(a.get()));
      continue;
    }
    std::string_view first(buf.data(), static_cast<std::size_t>(n));
    if (LooksBinary(first.substr(0, 4096))) {
      ++stats->binary;
      continue;
    }
    ++stats->files;
    sink.BeginFile(name);
    std::string msg;
    if (static_cast<std::size_t>(n) < buf.size()) msg = TorchErrorFileText(first);
    if (!msg.empty()) {
      stats->bytes += n;
      sink.Bytes(msg);
    } else {
      while (n > 0) {
        stats->bytes += n;
        total += static_cast<std::uint64_t>(n);
        sink.Bytes(std::string_view(buf.data(), static_cast<std::size_t>(n)));
        if (total > cap || std::chrono::steady_clock::now() > deadline) {
          stats->skipped.push_back(name + ": cut short (past the archive's size or time cap)");
          sink.EndFile();
          return OkStatus();
        }
        n = archive_read_data(a.get(), buf.data(), buf.size());
      }
      if (n < 0) stats->skipped.push_back(name + ": cut short (" + ArchiveError(a.get()) + ")");
    }
    sink.EndFile();
  }
  return OkStatus();
}

Status StreamOpened(InputFile& f, bool check_binary, InputSink& sink, InputStats* stats) {
  const std::string& path = f.display();
  if (IsArchiveName(path)) return StreamArchive(f, false, sink, stats);
  if (EndsWith(path, ".gz")) return StreamArchive(f, true, sink, stats);
  StreamFile(Source(&f), path, sink, stats, check_binary);
  return OkStatus();
}

}  // namespace

Status ReadInput(const std::string& input, InputSink& sink, InputStats* stats,
                 std::FILE* stdin_stream) {
  if (input == "-") {
    StreamFile(Source(stdin_stream), "-", sink, stats, /*check_binary=*/false);
    return OkStatus();
  }
  struct stat st {};
  if (::stat(input.c_str(), &st) != 0) {
    return MakeError(fmt::format("cannot read {}: {}", input, std::strerror(errno)), input);
  }
  if (!S_ISDIR(st.st_mode)) {
    // A file the user named: read whoever owns it, but only a regular file, capped.
    auto f = OpenInput(input, InputRule::Named(InputKind::kLog));
    if (!f.ok())
      return MakeError(fmt::format("cannot read {}: {}", input, f.error().message), input);
    return StreamOpened(*f, /*check_binary=*/false, sink, stats);
  }
  // A bundle or run directory: every regular file below it (the one walk), in a stable order.
  auto walk = WalkInputs(input, LogWalkOptions());
  if (!walk.ok()) {
    return MakeError(fmt::format("cannot read {}: {}", input, walk.error().message), input);
  }
  for (const std::string& d : walk->unreadable_dirs) {
    stats->skipped.push_back(d + " (directory not read)");
    stats->unreadable_dirs.push_back(d);
  }
  for (const std::string& s : walk->skipped) stats->skipped.push_back(s);
  InputRule rule;
  rule.kind = InputKind::kLog;
  rule.trusted_uid = walk->owner;
  for (const WalkedFile& wf : walk->files) {
    auto f = OpenInputUnder(input, wf.rel, rule);
    Status s = f.ok() ? StreamOpened(*f, /*check_binary=*/true, sink, stats) : Status(f.error());
    if (!s.ok()) stats->skipped.push_back(wf.path + ": " + s.error().message);
  }
  return OkStatus();
}

WalkOptions LogWalkOptions() {
  WalkOptions o;
  o.skip_dirs = {".events"};  // coordination posts, not log lines
  return o;
}

}  // namespace sl::diagnose
