#pragma once
// The state of DumpReader's streaming pickle reader (dump_stream.cpp): it runs the opcodes of a
// dump once and keeps only what RankDump needs, with no tree of the whole file. Values are
// 16-byte tagged words on a stack; a container is a Box whose role (an entry, a frame, a shape
// list, ...) is guessed from where it opens and checked where it is stored. Anything it does not
// expect (an opcode Python's pickler does not write for plain data, a role that does not match,
// a reused memo key, an error) makes it give up, and the dump is read again by the full parser
// (pickle.h), which gives the same result or the same error. Entries written like an earlier
// entry of the same dump are read through it, by comparing bytes ("entry templates" in the .cpp).
// Owned by one DumpReader: the vectors keep their capacity from file to file.
#include <cstdint>
#include <utility>
#include <vector>

#include "diagnose/flight_recorder/records.h"

namespace sl::diagnose::fr {

namespace entry_field {
// The entry keys the analysis keeps; everything else (record_id, thread_name, ...) is skipped.
enum Field : std::int8_t {
  kUnset = -2,
  kSkip = -1,
  kFrames,
  kProcessGroup,
  kCollSeq,
  kP2pSeq,
  kProfilingName,
  kCreated,
  kInSizes,
  kInDtypes,
  kOutSizes,
  kOutDtypes,
  kState,
  kStarted,
  kCompleted,
  kIsP2p,
  kPgId,
  kFieldCount
};

inline constexpr const char* kFieldNames[kFieldCount] = {"frames",
                                                         "process_group",
                                                         "collective_seq_id",
                                                         "p2p_seq_id",
                                                         "profiling_name",
                                                         "time_created_ns",
                                                         "input_sizes",
                                                         "input_dtypes",
                                                         "output_sizes",
                                                         "output_dtypes",
                                                         "state",
                                                         "time_discovered_started_ns",
                                                         "time_discovered_completed_ns",
                                                         "is_p2p",
                                                         "pg_id"};
}  // namespace entry_field

/// One value on the stream reader's stack or in its memo.
struct StreamVal {
  // 32 bits, not 8: a store through a char-sized member may alias anything, and the reader's
  // loop would reload its pointers after every value it writes.
  enum Tag : std::uint32_t {
    kUnset,
    kNone,
    kBool,
    kInt,
    kBigInt,
    kFloat,
    kStr,
    kBox,
    kTuple,
    kPoison,  ///< a memo key an entry template stored without its value: a GET of it gives up
  };
  Tag tag = kUnset;
  std::uint32_t slot = 0xffffffffu;  ///< kStr: its memo key (caches); kInt: its bytes' offset
  union {
    std::int64_t i;  ///< kBool, kInt
    double f;        ///< kFloat
    struct {
      std::uint32_t off, len;  ///< kStr: bytes of the input; kBox: id, -; kTuple: arena begin, n
    } s;
  };
  StreamVal() : i(0) {}
};

/// A list or dict the stream reader has seen open.
struct StreamBox {
  // Bit-fields of a 32-bit word, not bytes and bools (see StreamVal::Tag).
  std::uint32_t role : 8 = 0;
  std::uint32_t dict : 1 = 0;
  std::uint32_t sealed : 1 = 0;  ///< stored into another value: no more items may come
  std::uint32_t depth : 8 = 0;
  union {
    std::uint32_t rec = 0;  ///< the role's record (entries, frames, triples)
    std::uint32_t begin;    ///< a frames or shape list: its first kept item (frames, arena)
  };
  std::uint32_t count = 0;  ///< a frames or shape list: its kept items
  std::uint32_t adds = 0;   ///< items (pairs for a dict) stored into it so far
};

/// The records the roles keep. One entry dict's fields as they came (the last of a repeated key).
struct StreamEntryRec {
  StreamVal f[entry_field::kFieldCount];
  std::uint32_t start = 0;  ///< the offset of its EMPTY_DICT
};
struct StreamTriple {
  StreamVal a, b, c;
  std::uint32_t n = 0;
};

/// A piece of an entry template (dump_stream.cpp, "entry templates"): a run of bytes that must be
/// the template's, then (but for the last, kFixed) one opcode whose argument may differ.
struct StreamPiece {
  enum Kind : std::uint8_t { kFixed, kPut, kStr, kInt };
  Kind kind = kFixed;
  std::uint8_t op = 0;     ///< kPut, kStr, kInt: the opcode byte (the same in every match)
  std::int8_t field = -1;  ///< kInt: the entry field it sets (kDirect in the .cpp), or -1
  std::uint8_t top = 0;    ///< what the run's last opcode leaves on top (kTop* in the .cpp)
  std::uint8_t width = 0;  ///< kInt LONG1: its width
  std::uint32_t off = 0;   ///< the run of fixed bytes before the opcode: the template's bytes
  std::uint32_t len = 0;   ///< how many (0: none)
  std::uint32_t rel = 0;   ///< a run ending in a str: its text's offset from the run's start
  std::uint64_t word = 0;  ///< a run ending in a str: its length; in a memo reference: the value
};

/// One opcode of an entry being made a template.
struct StreamOp {
  std::uint32_t pos = 0, len = 0;    ///< its bytes, opcode and argument
  std::uint32_t text = 0, tlen = 0;  ///< a str: its text
  std::uint64_t arg = 0;             ///< a memo key (GET, PUT), LONG1's width
  std::uint8_t op = 0;
  std::int8_t cls = 0;  ///< what the template does with it (kOp* in the .cpp)
  std::int8_t field = -1;
};

/// An entry decoded once by the stream reader, kept to decode the entries written like it.
struct StreamTemplate {
  std::vector<StreamPiece> pieces;
  Entry entry;              ///< what it gave, but for the kInt fields' values and the index
  std::uint64_t spend = 0;  ///< the budget an entry like it spends (its shape already cached)
  std::uint32_t puts = 0;   ///< memo keys it stores
  std::uint32_t pairs = 0;  ///< key-value pairs (the box's adds)
  std::uint32_t next = 0;   ///< the template that matched after this one last
  std::uint32_t stamp = 0;  ///< the match count when it was made or last matched
};

/// An entry decoded through a template, waiting to be stored into the entries list.
struct StreamDone {
  Entry entry;
  std::uint64_t spend = 0;
};

struct StreamState {
  std::vector<StreamVal> stack, arena;
  /// The memo, 8 bytes a key: a str's offset, length and tag, or a container's id (Pack).
  std::vector<std::uint64_t> memo;
  std::vector<std::uint32_t> marks;
  std::vector<std::int32_t> slot_field;
  std::vector<std::uint32_t> slot_str;
  std::vector<StreamBox> boxes;
  std::vector<StreamEntryRec> entries;
  std::vector<Frame> frame_recs, frames;
  std::vector<StreamTriple> triples;  // process_group lists, pg_config groups, pg_status groups
  std::vector<std::pair<StreamVal, StreamVal>> config, status;
  StreamVal root_f[5];
  std::vector<StreamTemplate> templates;
  std::vector<StreamDone> done;
  std::vector<StreamOp> ops;  // Learn's
  std::vector<std::uint32_t> vals;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> val_marks;
  std::vector<std::uint64_t> put_keys, put_words;  // a match's memo keys and values
  std::vector<std::uint32_t> lcp;                  // pieces two templates share, from the first
  std::vector<std::uint8_t> apart;  // no input matches both where they part (TryTemplates)
  std::uint32_t last_template = 0xffffffffu;
  std::uint32_t matched = 0, learned = 0;  ///< entries read through a template, entries tried
  std::uint32_t entries_box = 0xffffffffu, config_box = 0xffffffffu, status_box = 0xffffffffu;
  std::uint64_t spend = 0;
};

}  // namespace sl::diagnose::fr
