#include "diagnose/ingest.h"

#include <algorithm>
#include <cctype>

#include "common/input_file.h"

namespace sl::diagnose {

namespace {

// NCCL's "host:pid:tid [dev] " line prefix: the CUDA device in brackets (the GPU the line is
// about). Returns "" when the line does not start that way.
std::string NcclDevice(std::string_view line) {
  const std::size_t sp = line.find(' ');
  if (sp == std::string_view::npos || sp + 2 >= line.size() || line[sp + 1] != '[') return "";
  std::string_view head = line.substr(0, sp);
  if (std::count(head.begin(), head.end(), ':') < 2) return "";
  const std::size_t close = line.find(']', sp);
  if (close == std::string_view::npos || close - sp > 8) return "";
  std::string_view dev = line.substr(sp + 2, close - sp - 2);
  for (char c : dev) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return "";
  }
  return std::string(dev);
}

bool IsOwnReport(std::string_view file) {
  static constexpr std::string_view kReports[] = {
      "preflight.json", "warmup.json",      "env-plan.json",       "status.json",
      "manifest.json",  "ib_counters.json", "host.json",           "summary.md",
      "summary.json",   "limits.txt",       "rank_environment.txt"};
  const std::size_t slash = file.find_last_of("/:");
  const std::string_view base = slash == std::string_view::npos ? file : file.substr(slash + 1);
  return std::find(std::begin(kReports), std::end(kReports), base) != std::end(kReports);
}

// The run root's diagnosis.{md,json,html} from an earlier `diagnose`: its own quotes.
bool IsDiagnosisFile(std::string_view file) {
  const std::size_t slash = file.find_last_of("/:");
  const std::string_view base = slash == std::string_view::npos ? file : file.substr(slash + 1);
  return base == "diagnosis.md" || base == "diagnosis.json" || base == "diagnosis.html" ||
         base == "remediation.json";
}

// The line after `line` (a view into `text`), without its end of line and leading blanks.
std::string_view NextLine(std::string_view text, std::string_view line) {
  std::size_t at = static_cast<std::size_t>(line.data() - text.data()) + line.size();
  if (at < text.size() && text[at] == '\r') ++at;
  if (at < text.size() && text[at] == '\n') ++at;
  std::string_view rest = text.substr(std::min(at, text.size()));
  rest = rest.substr(0, std::min(rest.size(), rest.find('\n')));
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  while (!rest.empty() && rest.back() == '\r') rest.remove_suffix(1);
  return rest;
}

// Where the last progress bar of `line` ends when the line goes on after it: tqdm's format
// "{desc}: 47%|####| n/N [elapsed<remaining, rate{postfix}]" (tqdm/std.py format_meter; the
// rate "967.30 examples/s", "1.83s/it", "?it/s"), whose "]" the next output follows at once.
// line.size() when there is no such bar or nothing but blanks follows it.
std::size_t ProgressBarEnd(std::string_view line) {
  const std::size_t bar = line.rfind("%|");
  if (bar == std::string_view::npos) return line.size();
  const std::size_t open = line.find(" [", bar);
  if (open == std::string_view::npos) return line.size();
  const std::size_t close = line.find(']', open);
  if (close == std::string_view::npos) return line.size();
  const std::string_view inside = line.substr(open, close - open);
  if (inside.find('<') == std::string_view::npos ||
      (inside.find("/s") == std::string_view::npos &&
       inside.find("s/it") == std::string_view::npos)) {
    return line.size();
  }
  const std::size_t more = line.find_first_not_of(" \t", close + 1);
  return more == std::string_view::npos ? line.size() : close + 1;
}

}  // namespace

std::optional<Match> RecognizeLine(const LineMatcher& matcher, std::string_view line) {
  LinePrefix prefix;
  std::string_view rest = StripCollectorPrefixes(line, &prefix);
  std::optional<Match> m = matcher.MatchLine(rest);
  if (!m) return m;
  auto put = [&m](const char* k, const std::string& v) {
    if (!v.empty() && !m->fields.count(k)) m->fields[k] = v;
  };
  put("rank", prefix.rank);
  put("ts", prefix.timestamp);
  put("pod", prefix.pod);
  put("dev", NcclDevice(rest));
  return m;
}

// torch's watchdog message is one long line that terminals and pasted logs wrap (inside a word
// or after a comma): unmatched alone, the line is joined with up to two following lines of its
// block, the way it was printed. The supervisor joins its own pieces at the seam instead.
std::optional<Match> RecognizeWrapped(const LineMatcher& matcher, std::string_view block,
                                      std::string_view line) {
  if (line.find("Watchdog caught collective") == std::string_view::npos) return std::nullopt;
  if (line.data() < block.data() || line.data() + line.size() > block.data() + block.size()) {
    return std::nullopt;
  }
  std::string joined(line);
  std::string_view piece = line;
  for (int i = 0; i < 2; ++i) {
    piece = NextLine(block, piece);
    if (piece.empty()) break;
    const char last = joined.back();
    if (last == ',' || last == ':' || last == ')') joined += ' ';
    joined.append(piece);
    auto m = RecognizeLine(matcher, joined);
    if (m && !MayBeCompletedByLaterText(*m->signature)) return m;
  }
  return std::nullopt;
}
LogIngest::LogIngest(const LineMatcher& matcher, Evidence* evidence)
    : matcher_(matcher), evidence_(evidence) {}

LogIngest::~LogIngest() = default;

void LogIngest::BeginFile(const std::string& name) {
  file_ = name;
  ++file_number_;
  recalled_by_text_.clear();
  node_ = node_of_dir_ != nullptr ? NodeOfFile(*node_of_dir_, name) : "";
  // safe-launch's own reports in a run directory or bundle are facts (ReadJobFacts reads them),
  // not log lines: their messages quote error strings ("ibv_reg_mr fails with ENOMEM") that the
  // catalog would take for the job's own.
  // Found by a walk (below a directory input, or an archive's member), not named by the user.
  bool walked = name.find(".tar.gz:") != std::string::npos ||
                name.find(".tgz:") != std::string::npos || name.find(".tar:") != std::string::npos;
  for (const std::string& root : walk_roots_) {
    walked = walked || (name.size() > root.size() && name.compare(0, root.size(), root) == 0 &&
                        name[root.size()] == '/');
  }
  // A bundle's summary quotes the lines it found, its environment copy holds values that look
  // like errors, an earlier diagnosis quotes everything: counted again, one OOM became ten.
  skip_ = ((!node_.empty() || walked) && IsOwnReport(name)) || (walked && IsDiagnosisFile(name)) ||
          (node_of_dir_ != nullptr && !node_of_dir_->empty() && IsDiagnosisFile(name));
  assembler_ = std::make_unique<LogLineBlocks>(
      [this](std::string_view block, std::uint64_t first) { OnBlock(block, first); });
}

void LogIngest::Bytes(std::string_view bytes) {
  if (assembler_ && !skip_) assembler_->Feed(bytes);
}

void LogIngest::EndFile() {
  if (!assembler_) return;
  assembler_->Finish();
  lines_ += assembler_->lines();
  cut_lines_ += assembler_->cut_lines();
  replaced_ += assembler_->replaced_bytes();
  assembler_.reset();
}

// The identity of a line is its node and its text without collector prefixes (timestamps, rank
// tags, stream tags differ between a tail and its log). A line's count is the most any one file
// of that node holds (a line printed twice is twice in each copy), never their sum. Only lines
// of a known node: two nodes' logs named on the command line may hold the same text.
bool LogIngest::SeenInAnotherFile(std::string_view clean_line) {
  if (node_.empty()) return false;
  LinePrefix prefix;
  std::string key = node_;
  key += '\n';
  key += StripCollectorPrefixes(clean_line, &prefix);
  const std::uint64_t h = std::hash<std::string>{}(key);
  auto it = seen_.find(h);
  if (it == seen_.end()) {
    if (seen_.size() >= kMaxRemembered) return false;
    it = seen_.emplace(h, std::vector<std::pair<std::uint32_t, std::uint32_t>>{}).first;
  }
  auto& per_file = it->second;
  if (per_file.empty() || per_file.back().first != file_number_)
    per_file.emplace_back(file_number_, 0);
  const std::uint32_t here = ++per_file.back().second;
  std::uint32_t elsewhere = 0;
  for (std::size_t i = 0; i + 1 < per_file.size(); ++i)
    elsewhere = std::max(elsewhere, per_file[i].second);
  return here <= elsewhere;
}

void LogIngest::AddText(const std::string& name, std::string_view text) {
  BeginFile(name);
  Bytes(text);
  EndFile();
}

// RecognizeLine is a function of the line's text alone, and a file's lines all get the same
// source and node: an identical line of the same file is recognised once. Bounded: past
// kMaxRecalled texts (or for a very long line) nothing more is remembered and lines are
// recognised one by one, as before.
LogIngest::Recognised* LogIngest::Recall(std::string_view line) {
  if (auto it = recalled_by_text_.find(line); it != recalled_by_text_.end()) {
    ++recalled_;
    return &it->second;
  }
  if (recalled_by_text_.size() >= kMaxRecalled || line.size() > kMaxRecalledLine) return nullptr;
  Recognised r;
  r.match = RecognizeLine(matcher_, line);
  if (r.match) {
    r.match->source = file_;
    if (!node_.empty() && r.match->Field("host").empty()) r.match->fields["host"] = node_;
  }
  return &recalled_by_text_.emplace(std::string(line), std::move(r)).first->second;
}

void LogIngest::OnBlock(std::string_view block, std::uint64_t first_line) {
  // The skip scan hands over every line MatchLine can match (prefixes only add bytes in front,
  // so a line that matches once stripped holds the same anchors).
  matcher_.ScanBlockLazily(block, [&](std::string_view whole, LineIndex& index) {
    // A progress bar's line that the terminal's next output went on (tqdm ends a bar with "\r",
    // not "\n": a pasted log reads "Map: 47%|####| n/N [30:09<33:25, 967.30 examples/s]Traceback
    // (most recent call last):") is two lines: each piece is recognised on its own.
    // ProgressBarEnd cuts only where text other than blanks follows.
    const std::size_t cut = ProgressBarEnd(whole);
    OnLine(block, whole.substr(0, cut), first_line, index);
    if (cut < whole.size()) {
      OnLine(block, whole.substr(whole.find_first_not_of(" \t", cut)), first_line, index);
    }
  });
}

void LogIngest::OnLine(std::string_view block, std::string_view line, std::uint64_t first_line,
                       LineIndex& index) {
  Recognised* known = Recall(line);
  std::optional<Match> m;
  if (known == nullptr) {
    m = RecognizeLine(matcher_, line);
  } else if (known->match && MayBeCompletedByLaterText(*known->match->signature)) {
    // The lines after it may complete a remembered match: completed, it is a new match
    // (below); otherwise the remembered one stands, counted like any other.
    m = RecognizeWrapped(matcher_, block, line);
  }
  if (known != nullptr && known->match && !m) {
    if (SeenInAnotherFile(line)) {
      ++duplicates_;
      return;
    }
    // Already in the evidence once: when Add would only count it, count it (its line number
    // is not needed then, and not counted).
    if (known->added && evidence_->CountRepeat(*known->match->signature)) return;
    known->added = true;
    Match copy = *known->match;
    copy.line_number = first_line + index.Of(line);
    evidence_->Add(std::move(copy));
    return;
  }
  // Not recognised alone (or only as the watchdog line without its WorkNCCL fields): a wrapped
  // line depends on the lines after it, never remembered.
  if (!m || MayBeCompletedByLaterText(*m->signature)) {
    if (auto whole = RecognizeWrapped(matcher_, block, line)) m = std::move(whole);
  }
  if (m) {
    if (SeenInAnotherFile(line)) {
      ++duplicates_;
      return;
    }
    m->source = file_;
    m->line_number = first_line + index.Of(line);
    if (!node_.empty() && m->Field("host").empty()) m->fields["host"] = node_;
    evidence_->Add(std::move(*m));
  }
}

void AnnotateNodes(const JobFacts& job, Diagnosis* diagnosis) {
  if (job.job_nodes < 2) return;
  for (Cause& c : diagnosis->causes) {
    // Only a bare node name from the lines; a claim's entity already says how many nodes.
    if (std::find(job.nodes.begin(), job.nodes.end(), c.entity.node) == job.nodes.end()) continue;
    std::vector<std::string> seen;
    for (const EvidenceLine& e : c.evidence) {
      if (std::string n = NodeOfFile(job.node_of_dir, e.file); !n.empty()) seen.push_back(n);
    }
    if (!seen.empty()) c.entity.node = NodesText(seen, job.job_nodes);
  }
}

namespace {
// Passes every call on, counting files and bytes for a progress line.
class ProgressSink : public InputSink {
 public:
  ProgressSink(InputSink& inner, const ReadProgress& progress)
      : inner_(inner), progress_(progress) {}
  void BeginFile(const std::string& name) override {
    if (progress_) progress_(name, files_, bytes_);
    ++files_;
    inner_.BeginFile(name);
  }
  void Bytes(std::string_view bytes) override {
    bytes_ += bytes.size();
    inner_.Bytes(bytes);
  }
  void EndFile() override { inner_.EndFile(); }

 private:
  InputSink& inner_;
  const ReadProgress& progress_;
  std::uint64_t files_ = 0, bytes_ = 0;
};
}  // namespace

Result<DiagnoseRun> DiagnoseInputs(const std::vector<std::string>& inputs, std::FILE* stdin_stream,
                                   std::span<const CauseClaim> claims,
                                   const ReadProgress& progress) {
  static const LineMatcher matcher;
  DiagnoseRun run;
  run.job = ReadJobFacts(inputs, InputTreeReader(inputs));
  Evidence evidence;
  LogIngest ingest(matcher, &evidence);
  ingest.SetNodeDirs(&run.job.node_of_dir);
  std::vector<std::string> roots;
  for (const std::string& in : inputs) {
    std::string r = in;
    while (r.size() > 1 && r.back() == '/') r.pop_back();
    if (in != "-" && InputTreeReader(std::vector<std::string>{r}).IsDir(r)) roots.push_back(r);
  }
  ingest.SetWalkRoots(std::move(roots));
  InputStats stats;
  ProgressSink sink(ingest, progress);
  for (const std::string& input : inputs) {
    if (Status s = ReadInput(input, sink, &stats, stdin_stream); !s.ok()) return s.error();
  }
  run.read = {inputs,         stats.files,        stats.bytes,
              ingest.lines(), ingest.cut_lines(), ingest.replaced_bytes(),
              stats.skipped,  stats.binary,       ingest.duplicate_lines()};
  std::vector<CauseClaim> all(claims.begin(), claims.end());
  for (CauseClaim& c : run.job.Claims()) all.push_back(std::move(c));
  run.diagnosis = Diagnose(evidence, all);
  AnnotateNodes(run.job, &run.diagnosis);
  return run;
}

}  // namespace sl::diagnose
