// libFuzzer targets fuzz_fr_pickle and fuzz_fr_json: one dump reader each, the input forced to
// that format (a pickle starts at PROTO, JSON at '{'), run under a memory limit (-rss_limit_mb,
// -malloc_limit_mb; doc/manual.md "Fuzzing"). Besides "never a crash", the reader's output is
// bounded by its input: a memo bomb (a list of references to a list of references ...) must be
// an error, never gigabytes of values.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "diagnose/flight_recorder/dump.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
#if SL_FUZZ_JSON
  if (bytes.empty() || bytes[0] != '{') bytes.insert(bytes.begin(), '{');
#else
  if (bytes.empty() || static_cast<std::uint8_t>(bytes[0]) != 0x80) bytes.insert(0, "\x80\x02");
#endif
  sl::diagnose::fr::Strings strings;
  sl::diagnose::fr::Stacks stacks;
  sl::diagnose::fr::PgRegistry pgs;
  sl::diagnose::fr::DumpReader reader(&strings, &stacks, &pgs);
  auto dump = reader.Read(bytes);
  if (dump.ok()) {
    // Every entry costs at least one opcode (or JSON byte) of the input.
    if (dump->entries.size() > bytes.size()) std::abort();
    for (const auto& e : dump->entries) (void)strings.at(e.shape).size();
  }
  return 0;
}
