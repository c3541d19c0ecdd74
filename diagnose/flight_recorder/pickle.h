#pragma once
// A restricted unpickler for the data subset Python's pickle writes for plain containers
// (protocols 0-5): dict, list, tuple, set, str, bytes, int (LONG1/LONG4 included), float, bool,
// None, the memo, FRAME and marks. It never imports or calls anything: GLOBAL, STACK_GLOBAL,
// REDUCE, INST, OBJ, NEWOBJ(_EX), BUILD, EXT*, PERSID and out-of-band buffers are refused with
// the opcode and its byte offset. Flight Recorder dumps come from other users' jobs, and torch's
// real dumps (torch 2.11, tests/fixtures/device) contain none of them.
//
// Values live in flat arenas owned by PickleDoc (no allocation per value, strings are views into
// the input), so a 2000-entry dump costs a few vectors that the next file reuses.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sl::diagnose::fr {

enum class Kind : std::uint8_t {
  kNone,
  kBool,
  kInt,
  kBigInt,  ///< an int wider than 64 bits (LONG1/LONG4/LONG); its bytes are not kept
  kFloat,
  kStr,    ///< UTF-8 text; a view into the input
  kBytes,  ///< bytes/bytearray; a view into the input
  kList,
  kTuple,
  kDict,  ///< items are key, value, key, value, ...
  kSet,
};

/// One value. Containers hold a chain of item chunks (a list grows by one chunk per APPENDS).
struct Node {
  Kind kind = Kind::kNone;
  std::uint32_t count = 0;  ///< items (pairs for a dict)
  union {
    std::int64_t i;  ///< kBool, kInt
    double f;        ///< kFloat
    struct {
      std::uint32_t off, len;  ///< kStr, kBytes: bytes of the input
    } s;
    struct {
      std::uint32_t first, last;  ///< containers: chunk ids, kNoChunk when empty
    } c;
  };
  Node() : i(0) {}
};

inline constexpr std::uint32_t kNoChunk = 0xffffffffu;

/// A parsed pickle: the arenas and the root value. Views stay valid while the input does.
class PickleDoc {
 public:
  std::uint32_t root() const { return root_; }
  const Node& at(std::uint32_t id) const { return nodes_[id]; }
  std::size_t size() const { return nodes_.size(); }
  /// The text of a kStr/kBytes node ("" for other kinds and for kNotFound).
  std::string_view Text(std::uint32_t id) const;
  /// Calls fn(child) for each item of a list/tuple/set (nothing for other kinds).
  template <typename Fn>
  void ForEachItem(std::uint32_t id, Fn&& fn) const;
  /// Calls fn(key, value) for each pair of a dict, in pickle order (a repeated key: later wins).
  template <typename Fn>
  void ForEachPair(std::uint32_t id, Fn&& fn) const;
  /// The value of `key` (a str) in a dict; kNotFound when absent.
  std::uint32_t Find(std::uint32_t dict, std::string_view key) const;
  static constexpr std::uint32_t kNotFound = 0xffffffffu;

 private:
  friend class Unpickler;
  friend class DumpReader;  // builds a doc from a JSON dump
  struct Chunk {
    std::uint32_t begin, len, next;
  };
  std::string_view input_;
  std::vector<Node> nodes_;
  std::vector<Chunk> chunks_;
  std::vector<std::uint32_t> items_;
  std::uint32_t root_ = 0;
};

/// Parses pickles into a PickleDoc. Reuse one per thread: its stacks keep their capacity, and
/// the leading bytes that consecutive inputs share are parsed once (see Parse).
class Unpickler {
 public:
  /// Parses `data` up to its STOP opcode. Errors say what is wrong and carry "byte N" (the
  /// offset of the offending opcode) in Error::where; the caller prefixes the file name.
  ///
  /// The parser's state after a run of leading bytes depends on those bytes alone, so when an
  /// input starts with the same bytes as an earlier one (a job's dumps all repeat the version and
  /// the pg_config, whose rank lists grow with the job), the state after them is kept once and
  /// later inputs that start with them resume from it: the same doc and the same errors as a parse
  /// from byte 0, at the cost of a compare and a copy instead of one opcode each.
  Status Parse(std::string_view data, PickleDoc* doc);
  /// Leading bytes the last Parse took from a kept state instead of parsing them (0: none).
  std::size_t reused() const { return reused_; }

  /// Below this many shared leading bytes no state is kept (parsing them costs less).
  static constexpr std::size_t kMinShared = 4096;
  /// Leading bytes of an input kept to find what the next one shares.
  static constexpr std::size_t kMaxShared = 8u << 20;

 private:
  struct State;
  /// The parser's registers and the doc's arrays after `prefix`, an opcode boundary.
  struct Kept {
    std::string prefix;
    std::uint64_t need_size = 0;  ///< a shorter input may fail inside the prefix (FRAME, memo key)
    std::vector<Node> nodes;
    std::vector<PickleDoc::Chunk> chunks;
    std::vector<std::uint32_t> items, stack, marks, memo;
    std::uint32_t memo_count = 0;
  };
  void Reset(std::string_view data, PickleDoc* doc);
  bool Resume(std::string_view data, PickleDoc* doc, State* s);
  void Keep(const State& s);
  std::vector<std::uint32_t> stack_;
  std::vector<std::uint32_t> marks_;
  std::vector<std::uint32_t> memo_;
  Kept kept_;
  std::string last_;  ///< the leading bytes of the last input no kept state matched
  std::size_t reused_ = 0;
};

/// The name pickletools gives an opcode byte ("BINUNICODE", "GLOBAL"), "?" when none.
std::string_view OpcodeName(std::uint8_t op);

template <typename Fn>
void PickleDoc::ForEachItem(std::uint32_t id, Fn&& fn) const {
  if (id >= nodes_.size()) return;
  const Node& n = nodes_[id];
  if (n.kind != Kind::kList && n.kind != Kind::kTuple && n.kind != Kind::kSet) return;
  for (std::uint32_t c = n.c.first; c != kNoChunk; c = chunks_[c].next) {
    const Chunk& ch = chunks_[c];
    for (std::uint32_t k = 0; k < ch.len; ++k) fn(items_[ch.begin + k]);
  }
}

template <typename Fn>
void PickleDoc::ForEachPair(std::uint32_t id, Fn&& fn) const {
  if (id >= nodes_.size()) return;
  const Node& n = nodes_[id];
  if (n.kind != Kind::kDict) return;
  for (std::uint32_t c = n.c.first; c != kNoChunk; c = chunks_[c].next) {
    const Chunk& ch = chunks_[c];
    for (std::uint32_t k = 0; k + 1 < ch.len; k += 2)
      fn(items_[ch.begin + k], items_[ch.begin + k + 1]);
  }
}

}  // namespace sl::diagnose::fr
