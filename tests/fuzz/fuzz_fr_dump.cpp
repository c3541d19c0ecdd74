// libFuzzer target: bytes -> restricted unpickler (or JSON) -> compact Flight Recorder dump.
// Dumps come from other users' jobs: any input must give a value or an error, never a crash, an
// unbounded allocation, or a refused opcode executed.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "diagnose/flight_recorder/dump.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static sl::diagnose::fr::Strings strings;
  static sl::diagnose::fr::Stacks stacks;
  sl::diagnose::fr::PgRegistry pgs;
  sl::diagnose::fr::DumpReader reader(&strings, &stacks, &pgs);
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto dump = reader.Read(bytes);
  if (dump.ok()) {
    for (const auto& e : dump->entries) (void)strings.at(e.op).size();
  }
  // The unpickler alone too: the bytes after PROTO, whatever they are.
  sl::diagnose::fr::Unpickler u;
  sl::diagnose::fr::PickleDoc doc;
  (void)u.Parse(bytes, &doc);
  return 0;
}
