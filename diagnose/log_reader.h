#pragma once
// The log reader of `safe-launch diagnose`: turns what users hand over (job output, NCCL debug
// files, kernel logs, torchrun error files, bundles as directories or .tar.gz, run directories)
// into clean lines with file:line, in bounded memory. Reading (the bytes of a file or archive
// member) is kept apart from cleaning (pure functions over bytes), so the cleaning is tested on
// literal strings and fuzzed without files.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/input_file.h"
#include "common/line_assembler.h"
#include "common/result.h"

namespace sl::diagnose {

/// What log collectors put in front of a line, taken off and kept as fields.
struct LinePrefix {
  std::string timestamp;  ///< ISO 8601 / syslog / dmesg stamp as written, "" when none
  std::string rank;       ///< from "[rank3]:", "[default3]:" (torchrun --tee), srun -l "3: "
                          ///< or Open MPI's --tag-output "[1,3]<stdout>:"
  std::string pod;        ///< from "pod-name | " (compose / stern) or "[pod/name/container]"
};

/// Takes the collector prefixes off `line` (any order, several stacked) and returns the rest:
/// timestamps, rank and stream tags, pod tags, Ray's "(Worker pid=N, ip=A) ", a pdsh/clush
/// "host: " in front of NCCL's prefix, and what a paste adds (indentation, Markdown "> ").
/// NCCL's own "host:pid:tid [dev]" prefix is not a collector's and stays in the line.
std::string_view StripCollectorPrefixes(std::string_view line, LinePrefix* prefix);

/// Appends `in` to `out` cleaned: ANSI escape sequences removed, "\r\n" -> "\n", a lone '\r'
/// (progress bars) -> ' ', NUL and bytes that are not valid UTF-8 -> '?'. Returns how many bytes
/// were replaced. `in` may end inside a sequence; the caller feeds line-aligned pieces.
std::size_t CleanBytes(std::string_view in, std::string* out);

/// Cuts a byte stream into blocks of whole, cleaned lines (each ends in '\n'), so a 100 MB log
/// never sits in memory: the buffer holds one block plus at most one partial line, and a line
/// longer than kMaxLine is cut there (the rest of it is dropped and counted). The cutting is the
/// one LineAssembler (common/line_assembler.h, kCut mode, a lone CR ends a line); this adds the
/// cleaning and the blocks.
class LogLineBlocks {
 public:
  static constexpr std::size_t kMaxLine = 64 * 1024;
  static constexpr std::size_t kBlock = 1 << 20;
  /// Called with each block and the 1-based number of its first line.
  using BlockFn = std::function<void(std::string_view block, std::uint64_t first_line)>;
  explicit LogLineBlocks(BlockFn on_block);
  LogLineBlocks(const LogLineBlocks&) = delete;  // the assembler's callback holds `this`
  LogLineBlocks& operator=(const LogLineBlocks&) = delete;
  /// Takes the next bytes of the stream.
  void Feed(std::string_view bytes) { lines_.Feed(bytes); }
  /// Ends the stream: a last line without '\n' is handed over too.
  void Finish();
  std::uint64_t lines() const { return lines_.lines(); }
  std::uint64_t cut_lines() const { return lines_.cut_lines(); }
  std::uint64_t replaced_bytes() const { return replaced_; }

 private:
  void Flush();
  BlockFn on_block_;
  LineAssembler lines_;
  // Cleaned whole lines waiting to be handed over: block_size_ bytes written of block_room_
  // (cleaning writes in place, so no byte of it is first zeroed or copied).
  std::unique_ptr<char[]> block_;
  std::size_t block_size_ = 0, block_room_ = 0;
  std::uint64_t block_first_ = 1;
  std::uint64_t replaced_ = 0;
};

/// A torchrun/elastic error file (TORCHELASTIC_ERROR_FILE, written by @record): its message and
/// Python call stack as plain lines, or "" when `text` is not one.
std::string TorchErrorFileText(std::string_view text);

/// Receives the files behind the inputs, one after the other.
class InputSink {
 public:
  virtual ~InputSink() = default;
  /// A file starts; `name` is what evidence cites (path, "archive.tar.gz:member", "-").
  virtual void BeginFile(const std::string& name) = 0;
  virtual void Bytes(std::string_view bytes) = 0;
  virtual void EndFile() = 0;
};

/// Counts of what the inputs held.
struct InputStats {
  std::uint64_t files = 0, bytes = 0;
  std::uint64_t binary = 0;          ///< files passed over as binary (dumps, cores): a count
  std::vector<std::string> skipped;  ///< "path: why" (unreadable member, link, FIFO, ...)
  std::vector<std::string> unreadable_dirs;  ///< "dir: why": directories the walk could not open
};

/// Reads one input: "-" (stdin), a file (".gz" decompressed, ".tar.gz"/".tgz"/".tar" walked as
/// an archive, a torchrun error file turned into its message), or a directory (every regular
/// file below it, sorted, links not followed, binary files such as Flight Recorder pickles
/// skipped). An input that cannot be opened at all is an error; files inside that cannot be read
/// are listed in stats->skipped.
Status ReadInput(const std::string& input, InputSink& sink, InputStats* stats,
                 std::FILE* stdin_stream = stdin);

/// The walk ReadInput does over a directory input (WalkInputs; .events/ not entered).
WalkOptions LogWalkOptions();

}  // namespace sl::diagnose
