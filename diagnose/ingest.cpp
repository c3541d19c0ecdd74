#include "diagnose/ingest.h"

#include <algorithm>
#include <cctype>

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

LogIngest::LogIngest(const LineMatcher& matcher, Evidence* evidence)
    : matcher_(matcher), evidence_(evidence) {}

LogIngest::~LogIngest() = default;

void LogIngest::BeginFile(const std::string& name) {
  file_ = name;
  assembler_ = std::make_unique<LineAssembler>(
      [this](std::string_view block, std::uint64_t first) { OnBlock(block, first); });
}

void LogIngest::Bytes(std::string_view bytes) {
  if (assembler_) assembler_->Feed(bytes);
}

void LogIngest::EndFile() {
  if (!assembler_) return;
  assembler_->Finish();
  lines_ += assembler_->lines();
  cut_lines_ += assembler_->cut_lines();
  replaced_ += assembler_->replaced_bytes();
  assembler_.reset();
}

void LogIngest::AddText(const std::string& name, std::string_view text) {
  BeginFile(name);
  Bytes(text);
  EndFile();
}

void LogIngest::OnBlock(std::string_view block, std::uint64_t first_line) {
  // The skip scan hands over every line MatchLine can match (prefixes only add bytes in front,
  // so a line that matches once stripped holds the same anchors).
  matcher_.ScanBlock(block, [&](std::string_view line, std::size_t index) {
    if (auto m = RecognizeLine(matcher_, line)) {
      m->source = file_;
      m->line_number = first_line + index;
      evidence_->Add(std::move(*m));
    }
  });
}

Result<DiagnoseRun> DiagnoseInputs(const std::vector<std::string>& inputs, std::FILE* stdin_stream,
                                   std::span<const CauseClaim> claims) {
  static const LineMatcher matcher;
  Evidence evidence;
  LogIngest ingest(matcher, &evidence);
  InputStats stats;
  for (const std::string& input : inputs) {
    if (Status s = ReadInput(input, ingest, &stats, stdin_stream); !s.ok()) return s.error();
  }
  DiagnoseRun run;
  run.read = {inputs,         stats.files,        stats.bytes,
              ingest.lines(), ingest.cut_lines(), ingest.replaced_bytes(),
              stats.skipped};
  run.diagnosis = Diagnose(evidence, claims);
  return run;
}

}  // namespace sl::diagnose
