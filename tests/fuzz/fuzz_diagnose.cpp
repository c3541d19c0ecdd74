// Fuzz target for `safe-launch diagnose`'s reader and rules: arbitrary bytes, fed in pieces of
// fuzzer-chosen sizes (lines cut across reads), go through cleaning, prefix stripping, the
// catalog and every rule, and the reports render. Garbage must give a diagnosis, never a crash;
// the reader must hand over whole lines with the line count a plain split gives (at '\n' and
// at a lone '\r'). The same bytes as a pasted report's Python stacks, too.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "diagnose/engine.h"
#include "diagnose/ingest.h"
#include "diagnose/log_reader.h"
#include "diagnose/report.h"
#include "diagnose/stacks_analysis.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const sl::diagnose::LineMatcher matcher;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // The first byte picks the read size, so cuts land everywhere.
  const std::size_t piece = size == 0 ? 1 : 1 + static_cast<std::uint8_t>(in[0]) * 17;
  sl::diagnose::Evidence ev;
  sl::diagnose::LogIngest ingest(matcher, &ev);
  ingest.BeginFile("fuzz");
  for (std::size_t at = 0; at < in.size(); at += piece) ingest.Bytes(in.substr(at, piece));
  ingest.EndFile();
  // A line ends at '\n', and at a lone '\r' (one not followed by '\n': a progress bar's redraw).
  std::size_t ends = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    ends += in[i] == '\n' || (in[i] == '\r' && (i + 1 == in.size() || in[i + 1] != '\n'));
  }
  const bool tail = !in.empty() && in.back() != '\n' && in.back() != '\r';
  if (ingest.lines() != ends + (tail ? 1 : 0)) std::abort();
  sl::diagnose::LinePrefix prefix;
  if (sl::diagnose::StripCollectorPrefixes(in, &prefix).size() > in.size()) std::abort();
  sl::diagnose::Diagnosis d = sl::diagnose::Diagnose(ev);
  if (d.causes.empty()) std::abort();  // at least "unknown"
  (void)sl::diagnose::DiagnosisJson(d, {}, true).dump();
  (void)sl::diagnose::DiagnosisText(d, {}, true);
  (void)sl::diagnose::TorchErrorFileText(in);
  // Stacks pasted into the same bytes (py-spy sections, faulthandler dumps): every claim cites a
  // line of the text and names a category.
  for (const auto& c : sl::diagnose::PastedStacksClaims(in, "fuzz")) {
    if (c.category.empty() || c.evidence.empty()) std::abort();
    for (const auto& e : c.evidence) {
      if (e.line > ends + 1) std::abort();
    }
  }
  return 0;
}
