// libFuzzer targets fuzz_fr_pickle and fuzz_fr_json: one dump reader each, the input forced to
// that format (a pickle starts at PROTO, JSON at '{'), run under a memory limit (-rss_limit_mb,
// -malloc_limit_mb; doc/manual.md "Fuzzing"). Besides "never a crash", the reader's output is
// bounded by its input: a memo bomb (a list of references to a list of references ...) must be
// an error, never gigabytes of values. A pickle the streaming reader takes (dump.h, set_stream)
// must give what the full parser gives, field by field, process groups included: any difference
// aborts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "diagnose/flight_recorder/dump.h"

namespace {

using sl::diagnose::fr::RankDump;

// The full parser on the same bytes, over the same string and stack tables (so ids compare).
void Compare(const RankDump& a, sl::diagnose::fr::PgRegistry& a_pgs, const std::string& bytes,
             sl::diagnose::fr::Strings* strings, sl::diagnose::fr::Stacks* stacks) {
  sl::diagnose::fr::PgRegistry pgs;
  sl::diagnose::fr::DumpReader full(strings, stacks, &pgs);
  full.set_stream(false);
  auto b = full.Read(bytes);
  if (!b.ok()) std::abort();
  if (a.version != b->version || a.comm_lib != b->comm_lib || a.gloo != b->gloo) std::abort();
  if (a.entries.size() != b->entries.size() || a.status.size() != b->status.size()) std::abort();
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    const auto& x = a.entries[i];
    const auto& y = b->entries[i];
    if (x.seq != y.seq || x.t_created != y.t_created || x.t_started != y.t_started ||
        x.t_completed != y.t_completed || x.pg != y.pg || x.op != y.op || x.shape != y.shape ||
        x.frames != y.frames || x.index != y.index || x.state != y.state || x.is_p2p != y.is_p2p) {
      std::abort();
    }
  }
  for (std::size_t i = 0; i < a.status.size(); ++i) {
    const auto& x = a.status[i];
    const auto& y = b->status[i];
    if (x.pg != y.pg || x.enqueued != y.enqueued || x.started != y.started ||
        x.completed != y.completed) {
      std::abort();
    }
  }
  if (a_pgs.all().size() != pgs.all().size()) std::abort();
  for (auto& [name, info] : a_pgs.all()) {
    auto it = pgs.all().find(name);
    if (it == pgs.all().end() || it->second.desc != info.desc ||
        it->second.members != info.members) {
      std::abort();
    }
  }
}

}  // namespace

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
  reader.set_stream(true);
  auto dump = reader.Read(bytes);
  if (dump.ok()) {
    // Every entry costs at least one opcode (or JSON byte) of the input.
    if (dump->entries.size() > bytes.size()) std::abort();
    for (const auto& e : dump->entries) (void)strings.at(e.shape).size();
  }
  if (reader.streamed()) Compare(*dump, pgs, bytes, &strings, &stacks);
  return 0;
}
