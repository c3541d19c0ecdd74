#pragma once
// The state of DumpReader's streaming pickle reader (dump_stream.cpp): it runs the opcodes of a
// dump once and keeps only what RankDump needs, with no tree of the whole file. Values are
// 16-byte tagged words on a stack; a container is a Box whose role (an entry, a frame, a shape
// list, ...) is guessed from where it opens and checked where it is stored. Anything it does not
// expect (an opcode Python's pickler does not write for plain data, a role that does not match,
// a reused memo key, an error) makes it give up, and the dump is read again by the full parser
// (pickle.h), which gives the same result or the same error. Owned by one DumpReader: the
// vectors keep their capacity from file to file.
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
};
struct StreamTriple {
  StreamVal a, b, c;
  std::uint32_t n = 0;
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
  std::uint32_t entries_box = 0xffffffffu, config_box = 0xffffffffu, status_box = 0xffffffffu;
  std::uint64_t spend = 0;
};

}  // namespace sl::diagnose::fr
