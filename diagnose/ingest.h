#pragma once
// From the reader's clean lines to evidence: the skip scan finds the few lines that can match,
// their collector prefixes come off (kept as fields), and the catalog recognises them.
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "diagnose/engine.h"
#include "diagnose/evidence.h"
#include "diagnose/job_facts.h"
#include "diagnose/log_reader.h"
#include "diagnose/report.h"
#include "diagnose/signatures.h"

namespace sl::diagnose {

/// An InputSink that turns every file it is given into evidence, with file:line on each match.
class LogIngest : public InputSink {
 public:
  LogIngest(const LineMatcher& matcher, Evidence* evidence);
  ~LogIngest() override;
  void BeginFile(const std::string& name) override;
  void Bytes(std::string_view bytes) override;
  void EndFile() override;
  /// Directories -> node names: a line of a file below one (a bundle's node/kernel.log) gets
  /// that node as its "host" field when it names none itself. Not owned; may be null.
  void SetNodeDirs(const std::map<std::string, std::string>* node_of_dir) {
    node_of_dir_ = node_of_dir;
  }
  /// The directory inputs: a file found below one of them (or inside an archive) that is one of
  /// safe-launch's own files (bundle summary, manifest, environment and limits copies, reports,
  /// an earlier diagnosis.*) is not read as job log lines; named on its own it still is.
  void SetWalkRoots(std::vector<std::string> roots) { walk_roots_ = std::move(roots); }
  /// One literal text as a whole file (tests, stdin already read).
  void AddText(const std::string& name, std::string_view text);
  std::uint64_t lines() const { return lines_; }
  std::uint64_t cut_lines() const { return cut_lines_; }
  std::uint64_t replaced_bytes() const { return replaced_; }
  /// Recognised lines not counted again: the same line of the same node already counted from
  /// another file (a bundle's output/*.tail repeats the job's stream and rank logs).
  std::uint64_t duplicate_lines() const { return duplicates_; }
  /// Distinct lines remembered for that (beyond it, every line counts: bounded memory).
  static constexpr std::size_t kMaxRemembered = 1 << 18;
  /// Candidate lines whose recognition was taken from an earlier identical line of the same file
  /// (logs repeat the same few lines: NCCL's channel and transport lines, a flood of one WARN).
  std::uint64_t recalled_lines() const { return recalled_; }
  /// Distinct line texts whose recognition is remembered per file, and the longest remembered.
  static constexpr std::size_t kMaxRecalled = 4096;
  static constexpr std::size_t kMaxRecalledLine = 1024;

 private:
  void OnBlock(std::string_view block, std::uint64_t first_line);
  void OnLine(std::string_view block, std::string_view line, std::uint64_t first_line,
              LineIndex& index);
  // What RecognizeLine made of a line of this file (source and host set), and whether that
  // Match has gone into the evidence once already (then a repeat may only be counted).
  struct Recognised {
    std::optional<Match> match;
    bool added = false;
  };
  Recognised* Recall(std::string_view line);
  // Every candidate line is looked up by its text: 16 bytes a step in two independent chains
  // (a multiply and a shift each), the last bytes read overlapping, the length in the seed.
  struct TextHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const {
      const char* p = s.data();
      const std::size_t n = s.size();
      const auto word = [p](std::size_t at) {
        std::uint64_t w;
        std::memcpy(&w, p + at, 8);
        return w;
      };
      std::uint64_t a = 0x9E3779B97F4A7C15ull ^ n, b = 0xC2B2AE3D27D4EB4Full;
      if (n >= 8) {
        std::size_t i = 0;
        for (; i + 16 <= n; i += 16) {
          a = (a ^ word(i)) * 0xBF58476D1CE4E5B9ull;
          b = (b ^ word(i + 8)) * 0x94D049BB133111EBull;
          a ^= a >> 29;
          b ^= b >> 32;
        }
        if (n - i > 8) b ^= word(i);
        a ^= word(n - 8);
      } else {
        for (std::size_t i = 0; i < n; ++i) a ^= std::uint64_t(std::uint8_t(p[i])) << (8 * i);
      }
      std::uint64_t h = (a * 0xBF58476D1CE4E5B9ull) ^ (b * 0x94D049BB133111EBull);
      return static_cast<std::size_t>(h ^ (h >> 31));
    }
  };
  std::unordered_map<std::string, Recognised, TextHash, std::equal_to<>> recalled_by_text_;
  bool SeenInAnotherFile(std::string_view clean_line);
  const LineMatcher& matcher_;
  Evidence* evidence_;
  std::string file_, node_;
  bool skip_ = false;
  const std::map<std::string, std::string>* node_of_dir_ = nullptr;
  std::vector<std::string> walk_roots_;
  std::unique_ptr<LogLineBlocks> assembler_;
  std::uint64_t lines_ = 0, cut_lines_ = 0, replaced_ = 0, duplicates_ = 0, recalled_ = 0;
  // hash(node, line without collector prefixes) -> (file number, times seen there), per file.
  std::unordered_map<std::uint64_t, std::vector<std::pair<std::uint32_t, std::uint32_t>>> seen_;
  std::uint32_t file_number_ = 0;
};

/// Recognises one clean line: collector prefixes off (timestamp, rank, pod kept as fields "ts",
/// "rank", "pod"), NCCL's "[dev]" kept as "dev". nullopt when the catalog does not know it.
std::optional<Match> RecognizeLine(const LineMatcher& matcher, std::string_view line);
/// A line of `block` that matched nothing, joined with up to two following lines where the log
/// wrapped one long message (torch's watchdog timeout); nullopt when that matches nothing either.
std::optional<Match> RecognizeWrapped(const LineMatcher& matcher, std::string_view block,
                                      std::string_view line);

/// What `safe-launch diagnose` computes from its inputs.
struct DiagnoseRun {
  Diagnosis diagnosis;
  ReadSummary read;
  JobFacts job;  ///< the nodes and their facts found in the directory inputs
};

/// Where a cause names one node by its lines (a kernel event of one bundle), says how many of
/// the job's nodes its evidence comes from: "n2 only (1 of 4 nodes)", "all 4 nodes".
void AnnotateNodes(const JobFacts& job, Diagnosis* diagnosis);

/// Reads every input (see ReadInput) into one Evidence and diagnoses it. An input that cannot
/// be opened is an error (the command's usage error); what cannot be read inside a directory or
/// archive is listed in read.skipped.
/// `claims` are causes another source (the Flight Recorder analysis) found; they rank with the
/// rules' causes, and so do the job's facts in the directory inputs (ReadJobFacts: preflight
/// findings, warm-up differences, IB counter deltas of every node).
/// `progress` (optional) is called at each file's start with its name and the files and bytes
/// read so far (the command shows it on a terminal).
using ReadProgress =
    std::function<void(const std::string& file, std::uint64_t files, std::uint64_t bytes)>;
Result<DiagnoseRun> DiagnoseInputs(const std::vector<std::string>& inputs,
                                   std::FILE* stdin_stream = stdin,
                                   std::span<const CauseClaim> claims = {},
                                   const ReadProgress& progress = {});

}  // namespace sl::diagnose
