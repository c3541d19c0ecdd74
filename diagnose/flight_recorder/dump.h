#pragma once
// Reading one Flight Recorder dump (pickle or JSON, as torch writes it) into a compact RankDump.
// Pure: takes the file's bytes; the caller reads the file and names it.
#include <map>
#include <mutex>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "diagnose/flight_recorder/dump_stream.h"
#include "diagnose/flight_recorder/pickle.h"
#include "diagnose/flight_recorder/records.h"

namespace sl::diagnose::fr {

/// Every process group the dumps describe, by name; shared by the reader threads.
class PgRegistry {
 public:
  bool Has(const std::string& name);
  /// Records `name` unless known. `ranks` is pg_config's text ("[0, 1, 2]") or "" (then `list`).
  void Add(const std::string& name, const std::string& desc, std::string_view ranks,
           const std::vector<int>& list);
  /// The table, once the readers are done.
  std::map<std::string, PgInfo>& all() { return pgs_; }

 private:
  std::mutex mu_;
  std::map<std::string, PgInfo> pgs_;
};

/// The global rank a dump file is for: the last run of digits in its name
/// ("fr_rank_12", "comm_lib_trace_rank_3.pkl", "flight_recorder_rank_0.decoded.json"); -1 if none.
int RankFromFileName(std::string_view path);

/// Parses "[0, 1, 2]" (pg_config's "ranks") into ranks; empty on anything else.
std::vector<int> ParseRankList(std::string_view text);

/// A stack's frame-dict node ids -> its stack id, for one file: open addressing over keys kept
/// in one array, so a lookup or an insert allocates nothing (the map of strings it replaced took
/// two allocations and two hashes of the key per entry, a sixth of extracting a dump).
class StackCache {
 public:
  void Clear();
  /// The id kept for the key, or nullptr.
  const std::uint32_t* Find(const std::vector<std::uint32_t>& key, std::uint64_t hash) const;
  void Insert(const std::vector<std::uint32_t>& key, std::uint64_t hash, std::uint32_t id);
  static std::uint64_t Hash(const std::vector<std::uint32_t>& key);

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t off = 0, len = 0, id = 0;
    bool used = false;
  };
  bool Same(const Slot& s, const std::vector<std::uint32_t>& key, std::uint64_t hash) const;
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> keys_;
  std::size_t count_ = 0;
};

/// Reads dumps one after another (one reader per thread: it reuses its buffers).
class DumpReader {
 public:
  DumpReader(Strings* strings, Stacks* stacks, PgRegistry* pgs)
      : strings_(strings), stacks_(stacks), pgs_(pgs), local_(strings) {}
  /// The dump in `bytes` (a pickle when it starts with the PROTO opcode 0x80, JSON when with
  /// '{'). Errors carry "byte N" in Error::where when they are about a byte of the file.
  Result<RankDump> Read(std::string_view bytes);
  /// Whether pickles are first tried by the streaming reader (dump_stream.cpp); off, every dump
  /// goes through the full parser (the tests and the fuzzer compare the two).
  void set_stream(bool on) { use_stream_ = on; }
  /// Whether the last Read took the streaming reader's result (false: the full parser's).
  bool streamed() const { return streamed_; }
  /// Entries of the last Read the streaming reader took through an entry template (0 when it
  /// gave up, or none matched).
  std::uint32_t templated() const { return streamed_ ? stream_.matched : 0; }

 private:
  struct Streamer;
  /// The dump in one pass, or false when the full parser must read it (see dump_stream.h).
  bool ReadStream(std::string_view bytes, RankDump* out);
  struct Fields;
  /// A file may expand to kBudgetBase + kBudgetPerByte x its size bytes of values.
  static constexpr std::uint64_t kBudgetBase = 16u << 20;
  static constexpr std::uint64_t kBudgetPerByte = 16;
  /// A shape string longer than this is not rendered further.
  static constexpr std::size_t kMaxShape = 64u << 10;
  bool Spend(std::uint64_t n);
  Error BudgetError() const;
  Status FromJson(std::string_view bytes);
  Result<std::uint32_t> BuildJson(const nlohmann::json& v, int depth);
  std::uint32_t JsonNode(Kind kind);
  std::uint32_t JsonText(const std::string& s);
  Result<RankDump> Extract();
  Status ExtractEntries(std::uint32_t list, RankDump* out);
  void ExtractEntry(std::uint32_t dict, Entry* e);
  std::uint32_t StrId(std::uint32_t node);
  std::uint32_t StackId(std::uint32_t list);
  int FrameKey(std::uint32_t key);
  void Digest(std::uint32_t node, int depth, std::uint64_t* h);
  void AppendRendered(std::uint32_t node, int depth, std::string* out);
  void RegisterPgs(std::uint32_t config);

  Strings* strings_;
  Stacks* stacks_;
  PgRegistry* pgs_;
  LocalStrings local_;
  Unpickler unpickler_;
  PickleDoc doc_;
  std::string json_text_;  // string storage when the dump was JSON
  std::vector<std::int8_t> key_field_;
  std::vector<std::uint32_t> str_id_;
  StackCache stack_cache_;
  std::vector<std::uint32_t> frame_ids_;  // StackId's key: the stack's frame dicts
  // A stack's frames as bytes -> its id in Stacks, for every file of this thread.
  struct BytesHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::uint32_t, BytesHash, std::equal_to<>> local_stacks_;
  std::uint32_t frame_keys_[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};  // FrameKey's nodes
  std::string scratch_;
  std::unordered_map<std::uint64_t, std::uint32_t> shape_cache_;  // digest -> shape, per thread
  std::vector<Frame> frames_;
  std::unordered_map<std::uint32_t, std::pair<std::string, std::string>> pg_seen_;  // name, desc
  bool gloo_ = false;
  std::uint64_t budget_ = 0, spent_ = 0, input_size_ = 0;
  std::string range_error_;  // the first number out of range in this file
  StreamState stream_;
  bool use_stream_ = true, streamed_ = false;
};

}  // namespace sl::diagnose::fr
