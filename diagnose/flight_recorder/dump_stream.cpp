// DumpReader's streaming pickle reader: the opcodes of a dump run once into the fields RankDump
// keeps (see dump_stream.h). It gives up (false) rather than guess: the full parser then reads
// the dump, so a dump this reader takes gives what the full parser would, and a dump it does not
// take gives the full parser's result or error. Every check of the full parser on the opcodes
// taken here is made here too (truncation, memo keys, marks, container types), and the budget a
// dump may expand to is counted from above.
#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <string>

#include "diagnose/flight_recorder/dump.h"

namespace sl::diagnose::fr {

namespace {

using namespace entry_field;  // NOLINT: the entry keys
using Val = StreamVal;

constexpr std::uint32_t kNone32 = 0xffffffffu;

// Keys after the entry's (0..kFieldCount-1): the root's, a frame's, a pg_config group's and a
// pg_status group's.
enum Key : std::int8_t {
  kVersion = kFieldCount,
  kPgConfigKey,
  kCommLib,
  kPgStatusKey,
  kEntriesKey,
  kName,
  kFilename,
  kLine,
  kRanks,
  kDesc,
  kLastEnqueued,
  kLastStarted,
  kLastCompleted,
  kKeyCount
};

constexpr const char* kKeyNames[int(kKeyCount) - int(kFieldCount)] = {"version",
                                                                      "pg_config",
                                                                      "comm_lib_version",
                                                                      "pg_status",
                                                                      "entries",
                                                                      "name",
                                                                      "filename",
                                                                      "line",
                                                                      "ranks",
                                                                      "desc",
                                                                      "last_enqueued_collective",
                                                                      "last_started_collective",
                                                                      "last_completed_collective"};

// The names as views, their lengths counted once (a compare with a char* counts it each time:
// at 16384 ranks, 2048 pg_config group names a dump are looked up here).
struct KeyViews {
  std::string_view names[kKeyCount];
  KeyViews() {
    for (int i = 0; i < kFieldCount; ++i) names[i] = kFieldNames[i];
    for (int i = kFieldCount; i < kKeyCount; ++i) names[i] = kKeyNames[i - int(kFieldCount)];
  }
};

int KeyOfText(std::string_view t) {
  static const KeyViews views;
  for (int i = 0; i < kKeyCount; ++i) {
    if (t == views.names[i]) return i;
  }
  return kSkip;
}

enum Role : std::uint8_t {
  kAsGeneric,
  kAsRoot,
  kAsPgConfig,
  kAsPgGroup,
  kAsPgStatus,
  kAsPgStatusGroup,
  kAsEntries,
  kAsEntry,
  kAsFrames,
  kAsFrame,
  kAsPgPair,
  kAsShape,
  kAsDone,  ///< an entry read through a template (StreamDone): nothing may be added to it
  kAsGiveUp = 0xff,
};

// The depth below which a shape list's items are kept: Digest and AppendRendered look no deeper.
constexpr std::uint8_t kShapeKept = 3;

State StateOfText(std::string_view s) {
  if (s == "completed") return State::kCompleted;
  if (s == "started") return State::kStarted;
  if (s == "scheduled") return State::kScheduled;
  return State::kUnknown;
}

// The value stack over StreamState::stack's storage, by raw pointers: a push is a compare, a
// store and an increment (the vector's own push_back and size() were a quarter of the loop).
class ValStack {
 public:
  explicit ValStack(std::vector<StreamVal>* store) : store_(store) {
    if (store_->size() < 1024) store_->resize(1024);
    base_ = top_ = store_->data();
    cap_ = base_ + store_->size();
  }
  std::size_t size() const { return static_cast<std::size_t>(top_ - base_); }
  bool empty() const { return top_ == base_; }
  StreamVal& operator[](std::size_t i) { return base_[i]; }
  const StreamVal& operator[](std::size_t i) const { return base_[i]; }
  StreamVal& back() { return top_[-1]; }
  [[gnu::always_inline]] void push_back(const StreamVal& v) {
    if (top_ == cap_) [[unlikely]]
      Grow();
    *top_++ = v;
  }
  void resize(std::size_t n) { top_ = base_ + n; }  // only ever down

 public:
  [[gnu::noinline]] void Grow() {
    const std::size_t n = size();
    store_->resize(store_->size() * 2);
    base_ = store_->data();
    top_ = base_ + n;
    cap_ = base_ + store_->size();
  }
  std::vector<StreamVal>* store_;
  StreamVal* base_;  // the hot loop (Run) keeps these three in registers and syncs them
  StreamVal* top_;
  StreamVal* cap_;
};

}  // namespace

struct DumpReader::Streamer {
  DumpReader& r;
  StreamState& s;
  std::string_view in;
  const char* p;
  const char* end;
  RankDump* out;
  ValStack stk;
  std::uint32_t memo_count = 0;
  std::uint64_t rendered = 0;  // budget Render spent (Learn's count of what a match spends)

  Streamer(DumpReader& reader, std::string_view bytes, RankDump* o)
      : r(reader),
        s(reader.stream_),
        in(bytes),
        p(bytes.data()),
        end(bytes.data() + bytes.size()),
        out(o),
        stk(&reader.stream_.stack) {}

  std::size_t Left() const { return static_cast<std::size_t>(end - p); }
  template <std::size_t N>
  [[gnu::always_inline]] std::uint64_t LeN() {
    std::uint64_t v = 0;
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(&v, p, N);
    } else {
      for (std::size_t k = 0; k < N; ++k) v |= std::uint64_t(std::uint8_t(p[k])) << (8 * k);
    }
    p += N;
    return v;
  }
  std::string_view Text(const Val& v) const {
    return v.tag == Val::kStr ? in.substr(v.s.off, v.s.len) : std::string_view();
  }
  bool Spend(std::uint64_t n) {
    s.spend += n;
    return s.spend <= r.budget_;
  }

  // --- the values' meaning, as dump.cpp reads them from the full parser's nodes ---

  int KeyOf(const Val& k) {
    if (k.tag != Val::kStr) return kSkip;
    if (k.slot == kNone32) return KeyOfText(Text(k));
    std::int32_t& f = s.slot_field[k.slot];
    if (f == kUnset) f = KeyOfText(Text(k));
    return f;
  }
  std::uint32_t StrId(const Val& v) {
    if (v.tag == Val::kStr) {
      if (v.slot == kNone32) return r.local_.Get(Text(v));
      std::uint32_t& id = s.slot_str[v.slot];
      if (id == kNone32) id = r.local_.Get(Text(v));
      return id;
    }
    if (v.tag == Val::kInt) return r.local_.Get(std::to_string(v.i));
    return 0;
  }
  // AsInt of dump.cpp: the same fallbacks; *bad when a number does not fit an int64.
  std::int64_t AsInt(const Val& v, std::int64_t fallback, bool* bad) const {
    switch (v.tag) {
      case Val::kInt:
      case Val::kBool:
        return v.i;
      case Val::kBigInt:
        *bad = true;
        return fallback;
      case Val::kFloat:
        if (!(v.f >= -9223372036854775808.0 && v.f < 9223372036854775808.0)) {
          *bad = true;
          return fallback;
        }
        return static_cast<std::int64_t>(v.f);
      case Val::kStr: {
        std::string_view t = Text(v);
        if (t.empty()) return fallback;
        std::int64_t n = 0;
        bool neg = t.front() == '-';
        if (neg && t.size() == 1) return fallback;
        for (std::size_t k = neg ? 1 : 0; k < t.size(); ++k) {
          if (t[k] < '0' || t[k] > '9') return fallback;
          if (n > (std::numeric_limits<std::int64_t>::max() - (t[k] - '0')) / 10) {
            *bad = true;
            return fallback;
          }
          n = n * 10 + (t[k] - '0');
        }
        return neg ? -n : n;
      }
      default:
        return fallback;
    }
  }
  std::int64_t Plain(const Val& v, std::int64_t fallback) const {
    bool bad = false;
    return AsInt(v, fallback, &bad);
  }
  StreamBox* BoxOf(const Val& v) { return v.tag == Val::kBox ? &s.boxes[v.s.off] : nullptr; }
  bool IsList(const Val& v) { return v.tag == Val::kBox && !s.boxes[v.s.off].dict; }
  bool IsDict(const Val& v) { return v.tag == Val::kBox && s.boxes[v.s.off].dict; }
  bool Is(const Val& v, Role role) { return v.tag == Val::kBox && s.boxes[v.s.off].role == role; }

  // --- roles: where a new list or dict opens decides what it is taken for ---

  // The role of a container opening now, from the container below it on the stack (its batch's
  // MARK, or the single APPEND/SETITEM forms) and, in a dict, the key just pushed. A wrong guess
  // (a tuple being built around it, say) is caught where the value is stored.
  std::uint8_t Guess(bool dict, std::uint8_t* depth) {
    const auto& st = stk;
    const std::size_t n = st.size();
    if (n == 0) return s.boxes.empty() && s.marks.empty() && dict ? kAsRoot : kAsGeneric;
    const bool marked = !s.marks.empty();
    const std::size_t m = marked ? s.marks.back() : 0;  // the stack's size at the last MARK
    const StreamBox* parent = nullptr;
    const Val* key = nullptr;
    if (Single(st[n - 1], false) && (!marked || m <= n - 1)) {
      parent = &s.boxes[st[n - 1].s.off];  // EMPTY_LIST PUT <value> APPEND
    } else if (n >= 2 && Single(st[n - 2], true) && (!marked || m <= n - 2)) {
      parent = &s.boxes[st[n - 2].s.off];  // EMPTY_DICT PUT <key> <value> SETITEM
      key = &st[n - 1];
    } else if (marked && m >= 1 && IsOpen(st[m - 1])) {
      parent = &s.boxes[st[m - 1].s.off];  // MARK <items> APPENDS / SETITEMS
      if (parent->dict) {
        if ((n - m) % 2 == 0) return kAsGeneric;  // a key
        key = &st[n - 1];
      }
    } else {
      return kAsGeneric;
    }
    if (!parent->dict) {
      switch (parent->role) {
        case kAsEntries:
          return dict ? kAsEntry : kAsGeneric;
        case kAsFrames:
          return dict ? kAsFrame : kAsGeneric;
        case kAsShape:
          if (dict) return kAsGeneric;
          *depth = static_cast<std::uint8_t>(std::min(parent->depth + 1, kShapeKept + 1));
          return kAsShape;
        default:
          return kAsGeneric;
      }
    }
    const int f = KeyOf(*key);
    switch (parent->role) {
      case kAsRoot:
        if (f == kPgConfigKey && dict) return kAsPgConfig;
        if (f == kPgStatusKey && dict) return kAsPgStatus;
        if (f == kEntriesKey && !dict) return kAsEntries;
        return kAsGeneric;
      case kAsPgConfig:
        return dict ? kAsPgGroup : kAsGeneric;
      case kAsPgStatus:
        return dict ? kAsPgStatusGroup : kAsGeneric;
      case kAsEntry:
        if (dict) return kAsGeneric;
        if (f == kFrames) return kAsFrames;
        if (f == kProcessGroup) return kAsPgPair;
        if (f == kInSizes || f == kInDtypes || f == kOutSizes || f == kOutDtypes) {
          *depth = 0;
          return kAsShape;
        }
        return kAsGeneric;
      default:
        return kAsGeneric;
    }
  }
  bool IsOpen(const Val& v) const { return v.tag == Val::kBox && !s.boxes[v.s.off].sealed; }
  // An open container that may take a single item (APPEND, SETITEM) now: Python's pickler writes
  // one only as a container's first batch or after full batches of 1000, so a finished value
  // waiting on the stack to be stored is not taken for the container of what follows it.
  bool Single(const Val& v, bool dict) const {
    if (!IsOpen(v)) return false;
    const StreamBox& b = s.boxes[v.s.off];
    return b.dict == dict && b.adds % 1000 == 0;
  }

  bool NewBox(bool dict) {
    std::uint8_t depth = 0;
    const std::uint8_t role = Guess(dict, &depth);
    StreamBox b;
    b.role = role;
    b.dict = dict;
    b.depth = depth;
    switch (role) {
      case kAsEntries:
      case kAsPgConfig:
      case kAsPgStatus: {
        // One of each: a second would need the later-wins choice the full parser makes.
        std::uint32_t& one = role == kAsEntries    ? s.entries_box
                             : role == kAsPgConfig ? s.config_box
                                                   : s.status_box;
        if (one != kNone32) return false;
        one = static_cast<std::uint32_t>(s.boxes.size());
        break;
      }
      case kAsEntry:
        if (!s.templates.empty() && TryTemplates()) return true;
        b.rec = static_cast<std::uint32_t>(s.entries.size());
        s.entries.emplace_back().start = static_cast<std::uint32_t>(p - in.data() - 1);
        break;
      case kAsFrame:
        b.rec = static_cast<std::uint32_t>(s.frame_recs.size());
        s.frame_recs.emplace_back();
        break;
      case kAsPgPair:
      case kAsPgGroup:
      case kAsPgStatusGroup:
        b.rec = static_cast<std::uint32_t>(s.triples.size());
        s.triples.emplace_back();
        break;
      default:
        break;
    }
    Val v;
    v.tag = Val::kBox;
    v.s = {static_cast<std::uint32_t>(s.boxes.size()), 0};
    s.boxes.push_back(b);
    stk.push_back(v);
    return true;
  }

  // --- storing values into containers: the roles' records ---

  // A value stored into another is complete: nothing may be added to it later.
  void Seal(const Val& v) {
    if (v.tag == Val::kBox) s.boxes[v.s.off].sealed = true;
  }

  bool Pair(StreamBox& box, const Val& k, const Val& v) {
    Seal(v);
    Seal(k);
    switch (box.role) {
      case kAsRoot: {
        const int f = KeyOf(k);
        if (f < kVersion || f > kEntriesKey) return true;
        if (IsDict(v) && f == kPgConfigKey && !Is(v, kAsPgConfig)) return false;
        if (IsDict(v) && f == kPgStatusKey && !Is(v, kAsPgStatus)) return false;
        if (v.tag == Val::kBox && f == kEntriesKey && !Is(v, kAsEntries)) return false;
        s.root_f[f - kVersion] = v;
        return true;
      }
      case kAsPgConfig:
        if (IsDict(v) && !Is(v, kAsPgGroup)) return false;
        s.config.emplace_back(k, v);
        ++box.count;
        return true;
      case kAsPgGroup: {
        const int f = KeyOf(k);
        if (f == kRanks) {
          if (v.tag == Val::kBox || v.tag == Val::kTuple) return false;  // a list: full parser
          s.triples[box.rec].a = v;
        } else if (f == kDesc) {
          s.triples[box.rec].b = v;
        }
        return true;
      }
      case kAsPgStatus:
        if (IsDict(v) && !Is(v, kAsPgStatusGroup)) return false;
        s.status.emplace_back(k, v);
        return true;
      case kAsPgStatusGroup: {
        const int f = KeyOf(k);
        StreamTriple& t = s.triples[box.rec];
        if (f == kLastEnqueued) t.a = v;
        if (f == kLastStarted) t.b = v;
        if (f == kLastCompleted) t.c = v;
        return true;
      }
      case kAsEntry: {
        const int f = KeyOf(k);
        if (f < 0 || f >= kFieldCount) return true;
        if (IsList(v)) {
          const std::uint8_t role = s.boxes[v.s.off].role;
          if (f == kFrames && role != kAsFrames) return false;
          if (f == kProcessGroup && role != kAsPgPair) return false;
          if ((f == kInSizes || f == kInDtypes || f == kOutSizes || f == kOutDtypes) &&
              (role != kAsShape || s.boxes[v.s.off].depth != 0)) {
            return false;
          }
        }
        if (f == kFrames && v.tag == Val::kTuple) return false;
        s.entries[box.rec].f[f] = v;
        return true;
      }
      case kAsFrame: {
        const int f = KeyOf(k);
        Frame& fr = s.frame_recs[box.rec];
        if (f == kName) fr.name = StrId(v);
        if (f == kFilename) fr.file = StrId(v);
        if (f == kLine) fr.line = Plain(v, 0);
        return true;
      }
      default:
        return true;
    }
  }

  bool Item(StreamBox& box, const Val& v) {
    Seal(v);
    switch (box.role) {
      case kAsEntries:
        if (Is(v, kAsDone)) {
          const StreamDone& d = s.done[s.boxes[v.s.off].rec];
          if (!Spend(d.spend)) return false;
          out->entries.push_back(d.entry);
          out->entries.back().index = static_cast<std::uint32_t>(out->entries.size() - 1);
          return true;
        }
        if (!Is(v, kAsEntry)) return false;
        return Finish(s.entries[s.boxes[v.s.off].rec]);
      case kAsFrames:
        if (!IsDict(v)) return true;  // StackId takes dicts only
        if (!Is(v, kAsFrame)) return false;
        if (box.count >= 64) return true;
        if (box.count == 0) box.begin = static_cast<std::uint32_t>(s.frames.size());
        if (box.begin + box.count != s.frames.size()) return false;
        s.frames.push_back(s.frame_recs[s.boxes[v.s.off].rec]);
        ++box.count;
        return true;
      case kAsShape:
        if (box.depth > kShapeKept) return true;
        if (box.count == 0) box.begin = static_cast<std::uint32_t>(s.arena.size());
        if (box.begin + box.count != s.arena.size()) return false;
        s.arena.push_back(v);
        ++box.count;
        return true;
      case kAsPgPair: {
        StreamTriple& t = s.triples[box.rec];
        (t.n++ == 0 ? t.a : t.b) = v;
        return true;
      }
      default:
        return true;
    }
  }

  // --- an entry, as ExtractEntry makes it ---

  // Items of a list/tuple for Digest and AppendRendered; false when they were not kept.
  bool Items(const Val& v, const Val** items, std::uint32_t* n) {
    if (v.tag == Val::kTuple) {
      *items = s.arena.data() + v.s.off;
      *n = v.s.len;
      return true;
    }
    const StreamBox& b = s.boxes[v.s.off];
    if (b.role != kAsShape || b.depth > kShapeKept) return false;
    *items = s.arena.data() + b.begin;
    *n = b.count;
    return true;
  }
  bool Digest(const Val& v, int depth, std::uint64_t* h) {
    auto mix = [h](std::uint64_t x) {
      *h = (*h ^ x) * 0x9e3779b97f4a7c15ull;
      *h ^= *h >> 29;
    };
    if (v.tag == Val::kUnset) {
      mix(1);
      return true;
    }
    if (!Spend(8)) return false;
    switch (v.tag) {
      case Val::kInt:
        mix(2);
        mix(static_cast<std::uint64_t>(v.i));
        return true;
      case Val::kStr:
        mix(3);
        mix(StrId(v));
        return true;
      case Val::kBox:
        if (s.boxes[v.s.off].dict) break;
        [[fallthrough]];
      case Val::kTuple: {
        mix(4);
        if (depth <= 3) {
          const Val* items = nullptr;
          std::uint32_t n = 0;
          if (!Items(v, &items, &n)) return false;
          for (std::uint32_t k = 0; k < n; ++k) {
            if (!Digest(items[k], depth + 1, h)) return false;
          }
        }
        mix(5);
        return true;
      }
      default:
        break;
    }
    mix(6);
    return true;
  }
  bool Render(const Val& v, int depth, std::string* o) {
    if (v.tag == Val::kUnset || o->size() > kMaxShape) return true;
    if (!Spend(8)) return false;
    switch (v.tag) {
      case Val::kInt:
        fmt::format_to(std::back_inserter(*o), "{}", v.i);
        return true;
      case Val::kStr:
        o->append(Text(v));
        return true;
      case Val::kBox:
        if (s.boxes[v.s.off].dict) break;
        [[fallthrough]];
      case Val::kTuple: {
        if (depth > 3) {
          o->append("[...]");
          return true;
        }
        const Val* items = nullptr;
        std::uint32_t n = 0;
        if (!Items(v, &items, &n)) return false;
        o->push_back('[');
        for (std::uint32_t k = 0; k < n; ++k) {
          if (k > 0) o->append(", ");
          if (!Render(items[k], depth + 1, o)) return false;
        }
        o->push_back(']');
        return true;
      }
      default:
        break;
    }
    o->append("?");
    return true;
  }
  bool Shape(const StreamEntryRec& rec, std::uint32_t* id, bool keep) {
    std::uint64_t h = 0;
    for (Field k : {kInSizes, kInDtypes, kOutSizes, kOutDtypes}) {
      if (!Digest(rec.f[k], 0, &h)) return false;
    }
    auto it = r.shape_cache_.find(h);
    if (it != r.shape_cache_.end()) {
      *id = it->second;
      return true;
    }
    std::string& o = r.scratch_;
    o.clear();
    const std::uint64_t before = s.spend;
    if (!Render(rec.f[kInSizes], 0, &o)) return false;
    o.push_back('|');
    if (!Render(rec.f[kInDtypes], 0, &o)) return false;
    o.push_back('|');
    if (!Render(rec.f[kOutSizes], 0, &o)) return false;
    o.push_back('|');
    if (!Render(rec.f[kOutDtypes], 0, &o)) return false;
    *id = r.local_.Get(o);
    rendered += s.spend - before;
    if (keep) r.shape_cache_.emplace(h, *id);
    return true;
  }
  std::uint32_t StackId(const Val& v) {
    if (!Is(v, kAsFrames)) return 0;
    const StreamBox& b = s.boxes[v.s.off];
    if (b.count == 0) return 0;
    std::string_view bytes(reinterpret_cast<const char*>(s.frames.data() + b.begin),
                           b.count * sizeof(Frame));
    if (auto known = r.local_stacks_.find(bytes); known != r.local_stacks_.end()) {
      return known->second;
    }
    r.frames_.assign(s.frames.begin() + b.begin, s.frames.begin() + b.begin + b.count);
    const std::uint32_t id = r.stacks_->Intern(r.frames_);
    if (id != 0) r.local_stacks_.emplace(std::string(bytes), id);
    return id;
  }
  bool Finish(const StreamEntryRec& rec) {
    Entry e;
    if (!Build(rec, &e, true)) return false;
    e.index = static_cast<std::uint32_t>(out->entries.size());
    out->entries.push_back(e);
    return true;
  }
  // The entry of `rec`, as ExtractEntry makes it; keep_shape: a shape rendered is cached.
  bool Build(const StreamEntryRec& rec, Entry* out_entry, bool keep_shape) {
    if (!Spend(sizeof(Entry))) return false;
    Entry& e = *out_entry;
    const Val* f = rec.f;
    e.is_p2p = f[kIsP2p].tag != Val::kUnset && Plain(f[kIsP2p], 0) != 0;
    bool bad = false;
    e.seq = AsInt(f[e.is_p2p ? kP2pSeq : kCollSeq], -1, &bad);
    e.t_created = AsInt(f[kCreated], 0, &bad);
    e.t_started = AsInt(f[kStarted], 0, &bad);
    e.t_completed = AsInt(f[kCompleted], 0, &bad);
    if (bad) return false;  // the full parser says which field
    e.op = StrId(f[kProfilingName]);
    e.state = f[kState].tag == Val::kUnset ? State::kUnknown : StateOfText(Text(f[kState]));
    // process_group is (name, desc); older dumps have only pg_id.
    Val name, desc;
    const Val& pg = f[kProcessGroup];
    if (pg.tag == Val::kTuple) {
      for (std::uint32_t k = 0; k < pg.s.len; ++k) (k == 0 ? name : desc) = s.arena[pg.s.off + k];
    } else if (Is(pg, kAsPgPair)) {
      name = s.triples[s.boxes[pg.s.off].rec].a;
      desc = s.triples[s.boxes[pg.s.off].rec].b;
    }
    const Val& name_val = name.tag != Val::kUnset ? name : f[kPgId];
    e.pg = StrId(name_val);
    if (r.pg_seen_.count(e.pg) == 0) {
      // dump.cpp reads an absent name as node 0, the root dict here: "".
      std::string text =
          name_val.tag == Val::kInt ? std::to_string(name_val.i) : std::string(Text(name_val));
      r.pg_seen_[e.pg] = {text, std::string(Text(desc))};
    }
    r.gloo_ = r.gloo_ || Text(f[kProfilingName]).rfind("gloo:", 0) == 0;
    if (!Shape(rec, &e.shape, keep_shape)) return false;
    if (Is(f[kFrames], kAsFrames)) {
      if (!Spend(sizeof(Frame) * s.boxes[f[kFrames].s.off].count)) return false;
    }
    e.frames = StackId(f[kFrames]);
    return true;
  }

  // --- entry templates ---
  //
  // Most entries of a dump are written alike: the same keys (memo references), frames, shapes,
  // group and state; only their numbers (seq ids, times, record_id, op_id) and the memo keys they
  // store differ. An entry read the long way above becomes a template (Learn): its opcodes, with
  // the arguments that may differ marked. A later entry whose bytes are the template's but for
  // those arguments (Match) is the template's Entry with its seq and times read from its own
  // bytes; its memo keys are stored (a str as that str, a container as kPoison: a later reference
  // to one gives up) and nothing else is decoded. The arguments that may differ: the keys of
  // PUTs, the ints of the seq and time fields, and the ints and strs of the fields the analysis
  // skips (record_id, thread_id, ...): none of them changes what the long way would make of the
  // entry. Every check the long way makes on them is made (a memo key out of range or stored
  // before, a str's length), and a match changes nothing until it is complete: an entry that does
  // not match is read the long way, from its first byte.

  static constexpr std::size_t kMaxTemplates = 16;
  static constexpr int kDirectCount = 5;  // the fields a match reads from its own bytes
  static constexpr int kDirect[kDirectCount] = {kCollSeq, kP2pSeq, kCreated, kStarted, kCompleted};
  // Where a match stands: the input position, the memo count, the PUTs so far (in put_keys), the
  // memo word a PUT would store now (0: none may), the seq and time fields read.
  struct MatchAt {
    std::size_t q = 0;
    std::uint32_t mc = 0, puts = 0;
    std::uint64_t top = 0;
    std::int64_t direct[kDirectCount];  // by kDirect's order
    std::uint32_t have = 0;
  };
  enum : std::uint8_t { kTopNone, kTopStr, kTopWord, kTopPoison };  // StreamPiece::top
  enum : std::int8_t { kOpFixed, kOpPut, kOpVar, kOpDirect };       // StreamOp::cls

  static bool IsDirect(int f) {
    return f == kCollSeq || f == kP2pSeq || f == kCreated || f == kStarted || f == kCompleted;
  }
  static bool IsIntOp(std::uint8_t op) { return op == 'K' || op == 'M' || op == 'J' || op == 0x8a; }
  static bool IsStrOp(std::uint8_t op) { return op == 'X' || op == 0x8c; }
  static bool IsPutOp(std::uint8_t op) { return op == 'q' || op == 'r' || op == 0x94; }

  // The opcode at `pos` (below `end`) when a template may hold it.
  bool Token(std::uint32_t pos, std::uint32_t end, StreamOp* t) const {
    const char* q = in.data() + pos;
    const std::size_t left = end - pos;
    *t = StreamOp();
    t->pos = pos;
    t->op = static_cast<std::uint8_t>(q[0]);
    auto arg = [&](std::size_t n) {
      if (left < 1 + n) return false;
      t->len = static_cast<std::uint32_t>(1 + n);
      for (std::size_t k = 0; k < n; ++k)
        t->arg |= std::uint64_t(std::uint8_t(q[1 + k])) << (8 * k);
      return true;
    };
    switch (t->op) {
      case '}':
      case ']':
      case ')':
      case '(':
      case 'a':
      case 'e':
      case 's':
      case 'u':
      case 't':
      case 'N':
      case 0x88:
      case 0x89:
      case 0x85:
      case 0x86:
      case 0x87:
      case 0x94:
        return arg(0);
      case 'q':
      case 'h':
      case 'K':
        return arg(1);
      case 'M':
        return arg(2);
      case 'r':
      case 'j':
      case 'J':
        return arg(4);
      case 'G':
        return arg(8);
      case 0x8a:  // LONG1: the width is kept in arg, the bytes are the value
        if (!arg(1) || t->arg > 8 || left < 2 + t->arg) return false;
        t->len = static_cast<std::uint32_t>(2 + t->arg);
        return true;
      case 'X':
      case 0x8c: {
        const std::size_t w = t->op == 'X' ? 4 : 1;
        if (!arg(w) || left < 1 + w + t->arg) return false;
        t->text = static_cast<std::uint32_t>(pos + 1 + w);
        t->tlen = static_cast<std::uint32_t>(t->arg);
        t->len = static_cast<std::uint32_t>(1 + w + t->arg);
        t->arg = 0;
        return true;
      }
      default:
        return false;
    }
  }

  // Entries made templates: the first 32 tried, then one for every 16 matched (a dump whose
  // entries are all different costs a few tries, not one per entry).
  bool LearnNow() const { return s.learned < 32 || s.learned * 16 < s.matched; }

  // Splits [rec.start, end) into opcodes and finds the entry's key-value pairs: each value's
  // opcodes are classed by its key (Class). False when the entry is not one a template can hold.
  bool Pairs(const StreamEntryRec& rec, std::uint32_t end) {
    auto& ops = s.ops;
    ops.clear();
    for (std::uint32_t pos = rec.start; pos < end;) {
      StreamOp& t = ops.emplace_back();
      if (!Token(pos, end, &t)) return false;
      pos += t.len;
    }
    if (ops.size() < 4 || ops[0].op != '}' || !IsPutOp(ops[1].op) || ops[2].op != '(' ||
        ops.back().op != 'u') {
      return false;
    }
    auto& vals = s.vals;  // where each value on the stack began (an index into ops)
    auto& marks = s.val_marks;
    vals.clear();
    marks.clear();
    const std::uint32_t last = static_cast<std::uint32_t>(ops.size() - 1);
    for (std::uint32_t i = 0; i < ops.size(); ++i) {
      const std::uint8_t op = ops[i].op;
      switch (op) {
        case '(':
          marks.emplace_back(static_cast<std::uint32_t>(vals.size()), i);
          break;
        case 'a':
        case 's':
          if (vals.size() < (op == 'a' ? 2u : 3u)) return false;
          vals.resize(vals.size() - (op == 'a' ? 1 : 2));
          break;
        case 'e':
        case 'u':
        case 't': {
          if (marks.empty() || (marks.size() == 1) != (i == last)) return false;
          const auto [size, at] = marks.back();
          marks.pop_back();
          if (i == last) return size == 1 && at == 2 && Class(size, last);
          vals.resize(size);
          if (op == 't') vals.push_back(at);
          break;
        }
        case 0x85:
        case 0x86:
        case 0x87: {
          const std::size_t n = op - 0x84u;
          if (vals.size() < n + 1) return false;
          const std::uint32_t at = vals[vals.size() - n];
          vals.resize(vals.size() - n);
          vals.push_back(at);
          break;
        }
        default:
          if (IsPutOp(op)) {
            if (vals.empty()) return false;
          } else {
            vals.push_back(i);
          }
      }
    }
    return false;
  }
  // The pairs vals[from..] of the entry: a key a memo reference to a str, each field the analysis
  // keeps once; a seq or time field's int may differ, so may any int or str of a skipped field.
  bool Class(std::uint32_t from, std::uint32_t last) {
    auto& ops = s.ops;
    const auto& vals = s.vals;
    if ((vals.size() - from) % 2) return false;
    std::uint32_t seen = 0;
    for (std::size_t k = from; k < vals.size(); k += 2) {
      const StreamOp& key = ops[vals[k]];
      if ((key.op != 'h' && key.op != 'j') || vals[k + 1] != vals[k] + 1) return false;
      const int f = KeyOf(MemoStr(key.arg));
      if (f >= 0 && f < kFieldCount) {
        if (seen & (1u << f)) return false;  // a repeated key: the last counts
        seen |= 1u << f;
      }
      const std::uint32_t a = vals[k + 1];
      const std::uint32_t b = k + 2 < vals.size() ? vals[k + 2] : last;
      for (std::uint32_t i = a; i < b; ++i) {
        StreamOp& t = ops[i];
        if (IsDirect(f) && b == a + 1 && IsIntOp(t.op)) {
          t.cls = kOpDirect;
          t.field = static_cast<std::int8_t>(f);
        } else if ((f < 0 || f >= kFieldCount) && (IsIntOp(t.op) || IsStrOp(t.op))) {
          t.cls = kOpVar;
        }
      }
    }
    for (StreamOp& t : ops) {
      if (IsPutOp(t.op)) t.cls = kOpPut;
      if ((t.op == 'h' || t.op == 'j') && MemoStr(t.arg).tag != Val::kStr) return false;
    }
    return true;
  }
  // The str memo key `key` holds (kUnset when it holds anything else).
  Val MemoStr(std::uint64_t key) const {
    Val v;
    if (key >= s.memo.size() || (s.memo[key] & 15) != Val::kStr) return v;
    v.tag = Val::kStr;
    v.s = {static_cast<std::uint32_t>(s.memo[key] >> 32),
           static_cast<std::uint32_t>(s.memo[key] >> 4) & 0xfffffffu};
    v.slot = static_cast<std::uint32_t>(key);
    return v;
  }

  // Makes the entry just read the long way a template (see above).
  void Learn(const StreamEntryRec& rec, std::uint32_t end) {
    ++s.learned;
    if (!Pairs(rec, end)) return;
    StreamTemplate t;
    // What a match spends: all the long way does but render a shape (it is cached by then).
    const std::uint64_t saved = s.spend;
    s.spend = 0;
    rendered = 0;
    const bool ok = Build(rec, &t.entry, false);
    t.spend = s.spend - rendered;
    s.spend = saved;
    if (!ok) return;
    t.pairs = static_cast<std::uint32_t>((s.vals.size() - 1) / 2);
    std::uint32_t run = 0, run_end = 0;
    const StreamOp* run_last = nullptr;
    // The run of fixed opcodes before a piece's own opcode, and what the last of them leaves on
    // top.
    auto take_run = [&](StreamPiece& pc) {
      if (run_last == nullptr) return;
      pc.off = run;
      pc.len = run_end - run;
      const std::uint8_t op = run_last->op;
      if (IsStrOp(op)) {
        pc.top = kTopStr;
        pc.rel = run_last->text - run;
        pc.word = run_last->tlen;
      } else if (op == 'h' || op == 'j') {
        pc.top = kTopWord;
        pc.word = s.memo[run_last->arg];
      } else if (op == '}' || op == ']' || op == ')' || op == 't' || (op >= 0x85 && op <= 0x87) ||
                 op == 'a' || op == 'e' || op == 's' || op == 'u') {
        pc.top = kTopPoison;
      }
      run_last = nullptr;
    };
    for (const StreamOp& o : s.ops) {
      if (o.cls == kOpFixed) {
        if (run_last == nullptr) run = o.pos;
        run_end = o.pos + o.len;
        run_last = &o;
        continue;
      }
      StreamPiece& pc = t.pieces.emplace_back();
      take_run(pc);
      pc.op = o.op;
      pc.kind = o.cls == kOpPut ? StreamPiece::kPut
                : IsStrOp(o.op) ? StreamPiece::kStr
                                : StreamPiece::kInt;
      pc.field = -1;
      for (int d = 0; d < kDirectCount; ++d) {
        if (o.cls == kOpDirect && kDirect[d] == o.field) pc.field = static_cast<std::int8_t>(d);
      }
      if (o.op == 0x8a) pc.width = static_cast<std::uint8_t>(o.arg);
      if (o.cls == kOpPut) ++t.puts;
    }
    if (run_last != nullptr) take_run(t.pieces.emplace_back());
    t.stamp = s.matched;
    std::size_t at = s.templates.size();
    if (at < kMaxTemplates) {
      s.templates.push_back(std::move(t));
    } else {
      at = 0;  // the one that matched longest ago
      for (std::size_t i = 1; i < s.templates.size(); ++i) {
        if (s.templates[i].stamp < s.templates[at].stamp) at = i;
      }
      s.templates[at] = std::move(t);
    }
    SetLcp(at);
  }

  // The entry whose EMPTY_DICT was just read, through the first template it matches. Templates
  // share their first pieces (the keys, the frames); a try that fails goes on from where the
  // deepest failed try stopped when the next template has the same pieces up to there.
  bool TryTemplates() {
    const std::uint32_t n = static_cast<std::uint32_t>(s.templates.size());
    const std::uint32_t last = s.last_template;
    const std::uint32_t guess = last < n ? s.templates[last].next : 0;
    MatchAt fresh;
    fresh.q = static_cast<std::uint32_t>(p - in.data() - 1);
    fresh.mc = memo_count;
    MatchAt deep;
    std::uint32_t deep_t = kNone32, deep_at = 0;
    for (std::uint32_t k = 0; k <= n + 1; ++k) {
      const std::uint32_t i = k == 0 ? guess : k == 1 ? last : k - 2;
      if (i >= n || (k >= 2 && (i == guess || i == last)) || (k == 1 && i == guess)) continue;
      const StreamTemplate& t = s.templates[i];
      const std::size_t pair = deep_t * kMaxTemplates + i;
      // Not the bytes the deepest try matched where they part: it cannot match.
      if (deep_t != kNone32 && s.lcp[pair] < deep_at && s.apart[pair]) continue;
      const bool resume = deep_t != kNone32 && s.lcp[pair] >= deep_at;
      MatchAt at = resume ? deep : fresh;
      const std::uint32_t stop = Match(t, resume ? deep_at : 0, &at);
      if (stop == t.pieces.size()) {
        Commit(t, at);
        if (last < n) s.templates[last].next = i;
        s.last_template = i;
        s.templates[i].stamp = ++s.matched;
        return true;
      }
      if (deep_t == kNone32 || stop > deep_at) {
        deep_t = i;
        deep_at = stop;
        deep = at;
      }
    }
    return false;
  }

  // The pieces of `t` from `from` on, over the input at at->q: the index of the piece that does
  // not match, with *at as it was before it, or the pieces' count when all match.
  std::uint32_t Match(const StreamTemplate& t, std::uint32_t from, MatchAt* at) {
    const char* base = in.data();
    const std::size_t n = in.size();
    if (s.put_keys.size() < t.puts) {
      s.put_keys.resize(t.puts);
      s.put_words.resize(t.puts);
    }
    auto le = [&](std::size_t pos, std::size_t w) -> std::uint64_t {
      if (w == 4) return LoadLe32(base + pos);
      if (w == 1) return std::uint8_t(base[pos]);
      if (w == 2) return std::uint8_t(base[pos]) | std::uint64_t(std::uint8_t(base[pos + 1])) << 8;
      std::uint64_t v = 0;
      for (std::size_t k = 0; k < w; ++k)
        v |= std::uint64_t(std::uint8_t(base[pos + k])) << (8 * k);
      return v;
    };
    const std::uint64_t* memo = s.memo.data();
    const std::size_t memo_n = s.memo.size();
    std::uint64_t* keys = s.put_keys.data();
    std::uint64_t* words = s.put_words.data();
    const StreamPiece* pieces = t.pieces.data();
    MatchAt& m = *at;
    const std::uint32_t count = static_cast<std::uint32_t>(t.pieces.size());
    for (std::uint32_t j = from; j < count; ++j) {
      const StreamPiece& pc = pieces[j];
      std::size_t q = m.q;
      std::uint64_t top = m.top;
      if (pc.len != 0) {
        if (n - q < pc.len || !SameBytes(base + q, base + pc.off, pc.len)) return j;
        top = pc.top == kTopStr      ? StrWord(q + pc.rel, pc.word)
              : pc.top == kTopWord   ? pc.word
              : pc.top == kTopPoison ? std::uint64_t(Val::kPoison)
                                     : 0;
        q += pc.len;
      }
      if (pc.kind != StreamPiece::kFixed) {
        if (q >= n || std::uint8_t(base[q]) != pc.op) return j;
        ++q;
      }
      switch (pc.kind) {
        case StreamPiece::kFixed:
          break;
        case StreamPiece::kPut: {
          const std::size_t w = pc.op == 'q' ? 1 : pc.op == 'r' ? 4 : 0;
          if (n - q < w) return j;
          const std::uint64_t key = w ? le(q, w) : m.mc;
          q += w;
          if (top == 0 || key > n || (m.puts > 0 && key <= keys[m.puts - 1])) return j;
          if (key < memo_n && memo[key] != 0) return j;
          keys[m.puts] = key;
          words[m.puts++] = top;
          ++m.mc;
          break;
        }
        case StreamPiece::kStr: {
          const std::size_t w = pc.op == 'X' ? 4 : 1;
          if (n - q < w) return j;
          const std::uint64_t len = le(q, w);
          q += w;
          if (n - q < len) return j;
          top = len < (1u << 28) ? StrWord(q, len) : 0;
          q += len;
          break;
        }
        default: {  // kInt
          std::int64_t v = 0;
          if (!IntArg(pc, &q, &v)) return j;
          if (pc.field >= 0) {
            m.direct[pc.field] = v;
            m.have |= 1u << pc.field;
          }
          top = 0;
        }
      }
      m.q = q;
      m.top = top;
    }
    return count;
  }
  // A kInt piece's argument at *q (after its opcode): its value, *q moved past it; false when
  // the input ends first or a LONG1 is not the template's width.
  [[gnu::always_inline]] bool IntArg(const StreamPiece& pc, std::size_t* q, std::int64_t* v) const {
    const char* at = in.data() + *q;
    const std::size_t left = in.size() - *q;
    auto le = [&](std::size_t from, std::size_t w) {
      std::uint64_t u = 0;
      for (std::size_t k = 0; k < w; ++k) u |= std::uint64_t(std::uint8_t(at[from + k])) << (8 * k);
      return u;
    };
    if (pc.op == 0x8a) {
      const std::size_t w = pc.width;
      if (left < 1 + w || std::uint8_t(at[0]) != w) return false;
      std::uint64_t u = le(1, w);
      if (w > 0 && w < 8 && (u >> (8 * w - 1)) & 1) u |= ~std::uint64_t(0) << (8 * w);
      *v = static_cast<std::int64_t>(u);
      *q += 1 + w;
      return true;
    }
    const std::size_t w = pc.op == 'K' ? 1 : pc.op == 'M' ? 2 : 4;
    if (left < w) return false;
    const std::uint64_t u = w == 4 ? LoadLe32(at) : le(0, w);
    *v = pc.op == 'J' ? std::int32_t(std::uint32_t(u)) : static_cast<std::int64_t>(u);
    *q += w;
    return true;
  }
  // memcmp for the short runs of a template (most are a few memo references).
  static bool SameBytes(const char* a, const char* b, std::size_t len) {
    auto word = [](const char* x, std::size_t w) {
      std::uint64_t v = 0;
      std::memcpy(&v, x, w);
      return v;
    };
    if (len >= 8) {  // 8-byte words, the last one overlapping
      for (std::size_t k = 0; k + 8 < len; k += 8) {
        if (word(a + k, 8) != word(b + k, 8)) return false;
      }
      return word(a + len - 8, 8) == word(b + len - 8, 8);
    }
    if (len >= 4) return word(a, 4) == word(b, 4) && word(a + len - 4, 4) == word(b + len - 4, 4);
    for (std::size_t k = 0; k < len; ++k) {
      if (a[k] != b[k]) return false;
    }
    return true;
  }
  // Whether two templates' pieces are the same (a match of one is one of the other up to there).
  bool SamePiece(const StreamPiece& a, const StreamPiece& b) const {
    return a.kind == b.kind && a.op == b.op && a.field == b.field && a.top == b.top &&
           a.len == b.len && a.rel == b.rel && a.word == b.word && a.width == b.width &&
           std::memcmp(in.data() + a.off, in.data() + b.off, a.len) == 0;
  }
  void SetLcp(std::size_t i) {
    s.lcp.resize(kMaxTemplates * kMaxTemplates);
    s.apart.resize(kMaxTemplates * kMaxTemplates);
    for (std::size_t j = 0; j < s.templates.size(); ++j) {
      const auto& a = s.templates[i].pieces;
      const auto& b = s.templates[j].pieces;
      std::uint32_t k = 0;
      while (k < a.size() && k < b.size() && SamePiece(a[k], b[k])) ++k;
      s.lcp[i * kMaxTemplates + j] = s.lcp[j * kMaxTemplates + i] = k;
      // Whether no input matches both pieces where they part: their runs differ in a byte both
      // have, or the runs are the same and their opcodes differ.
      bool apart = false;
      if (k < a.size() && k < b.size()) {
        const StreamPiece& x = a[k];
        const StreamPiece& y = b[k];
        const std::size_t both = std::min(x.len, y.len);
        apart = !SameBytes(in.data() + x.off, in.data() + y.off, both) ||
                (x.len == y.len && x.kind != StreamPiece::kFixed && y.kind != StreamPiece::kFixed &&
                 x.op != y.op);
      }
      s.apart[i * kMaxTemplates + j] = s.apart[j * kMaxTemplates + i] = apart;
    }
  }
  static std::uint64_t StrWord(std::size_t off, std::uint64_t len) {
    return std::uint64_t(Val::kStr) | (len << 4) | (std::uint64_t(off) << 32);
  }
  void Commit(const StreamTemplate& t, const MatchAt& m) {
    for (std::uint32_t k = 0; k < m.puts; ++k) {
      if (s.put_keys[k] >= s.memo.size()) GrowMemo(s.put_keys[k]);
      s.memo[s.put_keys[k]] = s.put_words[k];
    }
    memo_count = m.mc;
    StreamDone& d = s.done.emplace_back();
    d.entry = t.entry;
    d.spend = t.spend;
    const int seq = d.entry.is_p2p ? 1 : 0;  // kDirect's kP2pSeq, kCollSeq
    if (m.have & (1u << seq)) d.entry.seq = m.direct[seq];
    if (m.have & (1u << 2)) d.entry.t_created = m.direct[2];
    if (m.have & (1u << 3)) d.entry.t_started = m.direct[3];
    if (m.have & (1u << 4)) d.entry.t_completed = m.direct[4];
    p = in.data() + m.q;
    StreamBox b;
    b.role = kAsDone;
    b.dict = true;
    b.rec = static_cast<std::uint32_t>(s.done.size() - 1);
    b.adds = t.pairs;
    Val v;
    v.tag = Val::kBox;
    v.s = {static_cast<std::uint32_t>(s.boxes.size()), 0};
    s.boxes.push_back(b);
    stk.push_back(v);
  }

  // --- the opcodes ---

  bool Floor(std::size_t n) const {
    const std::size_t floor = s.marks.empty() ? 0 : s.marks.back();
    return stk.size() >= floor + n;
  }
  bool Top() const { return Floor(1) && !stk.empty(); }
  [[gnu::always_inline]] bool PushStr(std::size_t len_bytes) {
    if (Left() < len_bytes) return false;
    std::uint64_t len = len_bytes == 1 ? LeN<1>() : len_bytes == 4 ? LeN<4>() : LeN<8>();
    if (Left() < len) return false;
    Val v;
    v.tag = Val::kStr;
    v.s = {static_cast<std::uint32_t>(p - in.data()), static_cast<std::uint32_t>(len)};
    p += len;
    stk.push_back(v);
    return true;
  }
  [[gnu::always_inline]] void PushInt(std::int64_t i, Val::Tag tag = Val::kInt,
                                      std::uint32_t at = kNone32) {
    Val v;
    v.tag = tag;
    v.i = i;
    v.slot = at;
    stk.push_back(v);
  }
  // A memo key stores a str, a container or a tuple (the pickler memoizes nothing else).
  [[gnu::always_inline]] bool Put(std::uint64_t key) {
    if (key > in.size() || !Top()) return false;
    Val& top = stk.back();
    if (top.tag != Val::kStr && top.tag != Val::kBox && top.tag != Val::kTuple) return false;
    if (top.s.len >= (1u << 28)) return false;
    if (s.memo.size() <= key) {
      const std::size_t size = std::max<std::size_t>(key + 1, s.memo.size() * 2);
      s.memo.resize(size, 0);
      s.slot_field.resize(size, kUnset);
      s.slot_str.resize(size, kNone32);
    }
    if (s.memo[key] != 0) return false;  // a key stored twice: its caches
    ++memo_count;
    if (top.tag == Val::kStr) top.slot = static_cast<std::uint32_t>(key);
    s.memo[key] =
        std::uint64_t(top.tag) | (std::uint64_t(top.s.len) << 4) | (std::uint64_t(top.s.off) << 32);
    return true;
  }
  [[gnu::always_inline]] bool Get(std::uint64_t key) {
    if (key >= s.memo.size() || s.memo[key] == 0) return false;
    const std::uint64_t m = s.memo[key];
    Val v;
    v.tag = static_cast<Val::Tag>(m & 15);
    if (v.tag == Val::kPoison) return false;
    v.s = {static_cast<std::uint32_t>(m >> 32), static_cast<std::uint32_t>(m >> 4) & 0xfffffffu};
    if (v.tag == Val::kStr) v.slot = static_cast<std::uint32_t>(key);
    stk.push_back(v);
    return true;
  }
  bool AddTo(std::uint8_t op) {
    auto& st = stk;
    const bool batch = op == 'e' || op == 'u';
    std::size_t from = 0;
    if (batch) {
      if (s.marks.empty()) return false;
      from = s.marks.back();
      s.marks.pop_back();
    } else {
      if (!Floor(op == 's' ? 3 : 2)) return false;
      from = st.size() - (op == 's' ? 2 : 1);
    }
    if (from == 0 || (!s.marks.empty() && s.marks.back() >= from)) return false;
    const bool dict = op == 's' || op == 'u';
    const Val target = st[from - 1];
    if (target.tag != Val::kBox) return false;
    StreamBox& box = s.boxes[target.s.off];
    if (box.dict != dict || box.sealed || box.role == kAsDone) return false;
    if (dict && (st.size() - from) % 2) return false;
    box.adds += static_cast<std::uint32_t>(dict ? (st.size() - from) / 2 : st.size() - from);
    if (dict) {
      for (std::size_t k = from; k + 1 < st.size(); k += 2) {
        if (!Pair(box, st[k], st[k + 1])) return false;
      }
    } else {
      for (std::size_t k = from; k < st.size(); ++k) {
        if (!Item(box, st[k])) return false;
      }
    }
    st.resize(from);
    if (op == 'u' && box.role == kAsEntry && LearnNow()) {
      Learn(s.entries[box.rec], static_cast<std::uint32_t>(p - in.data()));
    }
    return true;
  }
  bool Tuple(std::size_t from) {
    auto& st = stk;
    Val t;
    t.tag = Val::kTuple;
    t.s = {static_cast<std::uint32_t>(s.arena.size()),
           static_cast<std::uint32_t>(st.size() - from)};
    for (std::size_t k = from; k < st.size(); ++k) {
      Seal(st[k]);
      s.arena.push_back(st[k]);
    }
    st.resize(from);
    st.push_back(t);
    return true;
  }

  // strs, ints, floats (an int keeps its argument's offset in `slot`: entry templates patch it).
  bool Scalar(std::uint8_t op) {
    const std::uint32_t at = static_cast<std::uint32_t>(p - in.data());
    switch (op) {
      case 'X':
      case 'T':
        if (op == 'T' && Left() >= 4 && (std::uint8_t(p[3]) & 0x80)) return false;
        return PushStr(4);
      case 0x8c:
      case 'U':
        return PushStr(1);
      case 0x8d:
        return PushStr(8);
      case 'K':
        if (Left() < 1) return false;
        PushInt(static_cast<std::int64_t>(LeN<1>()), Val::kInt, at);
        return true;
      case 'M':
        if (Left() < 2) return false;
        PushInt(static_cast<std::int64_t>(LeN<2>()), Val::kInt, at);
        return true;
      case 'J':
        if (Left() < 4) return false;
        PushInt(std::int32_t(std::uint32_t(LeN<4>())), Val::kInt, at);
        return true;
      case 'N':
        PushInt(0, Val::kNone);
        return true;
      case 0x88:
      case 0x89:
        PushInt(op == 0x88, Val::kBool);
        return true;
      case 0x8a:
        return Long1();
      case 'G': {
        if (Left() < 8) return false;
        std::uint64_t be = 0;
        for (int k = 0; k < 8; ++k) be = (be << 8) | std::uint8_t(p[k]);
        p += 8;
        Val v;
        v.tag = Val::kFloat;
        std::memcpy(&v.f, &be, 8);
        stk.push_back(v);
        return true;
      }
      default:
        return false;  // anything else: the full parser
    }
  }
  bool Long1() {
    if (Left() < 1) return false;
    const std::uint64_t n = LeN<1>();
    if (Left() < n) return false;
    if (n > 8) {
      p += n;
      PushInt(0, Val::kBigInt);
      return true;
    }
    const std::uint32_t at = static_cast<std::uint32_t>(p - in.data());
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < n; ++k) v |= std::uint64_t(std::uint8_t(p[k])) << (8 * k);
    p += n;
    if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t(0) << (8 * n);
    PushInt(static_cast<std::int64_t>(v), Val::kInt, at);
    return true;
  }

  // Every opcode this reader takes; Run calls it for all but the commonest, which it does inline.
  [[gnu::noinline, gnu::flatten]] bool Step(std::uint8_t op) {
    switch (op) {
      case '(':
        s.marks.push_back(static_cast<std::uint32_t>(stk.size()));
        return true;
      case '}':
        return NewBox(true);
      case ']':
        return NewBox(false);
      case ')': {
        Val t;
        t.tag = Val::kTuple;
        t.s = {static_cast<std::uint32_t>(s.arena.size()), 0};
        stk.push_back(t);
        return true;
      }
      case 'q':
        if (Left() < 1) return false;
        return Put(LeN<1>());
      case 'r':
        if (Left() < 4) return false;
        return Put(LeN<4>());
      case 0x94:
        return Put(memo_count);
      case 'h':
        if (Left() < 1) return false;
        return Get(LeN<1>());
      case 'j':
        if (Left() < 4) return false;
        return Get(LeN<4>());
      case 'a':
      case 'e':
      case 's':
      case 'u':
        return AddTo(op);
      case 0x85:
      case 0x86:
      case 0x87: {
        const std::size_t n = op - 0x84u;
        if (!Floor(n)) return false;
        return Tuple(stk.size() - n);
      }
      case 't': {
        if (s.marks.empty()) return false;
        const std::size_t m = s.marks.back();
        s.marks.pop_back();
        return Tuple(m);
      }
      case 0x95:  // FRAME: a length the rest of the input must hold
        if (Left() < 8) return false;
        return Left() >= LeN<8>();
      default:
        return Scalar(op);
    }
  }

  [[gnu::noinline]] void GrowMemo(std::uint64_t key) {
    const std::size_t size = std::max<std::size_t>(key + 1, s.memo.size() * 2);
    s.memo.resize(size, 0);
    s.slot_field.resize(size, kUnset);
    s.slot_str.resize(size, kNone32);
  }

  // The loop's registers (Run): the input position, the stack's pointers, the memo and the last
  // MARK, a local the compiler keeps out of memory.
  struct Hot {
    const char* lp;
    const char* le;
    Val* sp;
    Val* se;
    Val* sb;
    std::uint64_t* memo;
    std::size_t memo_n;
    std::size_t floor;  // the stack's size at the last MARK, 0 without one
  };
  [[gnu::always_inline]] void Load(Hot& h) {
    h.lp = p;
    h.sp = stk.top_;
    h.se = stk.cap_;
    h.sb = stk.base_;
    h.memo = s.memo.data();
    h.memo_n = s.memo.size();
    h.floor = s.marks.empty() ? 0 : s.marks.back();
  }
  [[gnu::always_inline]] void Store(const Hot& h) {
    p = h.lp;
    stk.top_ = h.sp;
  }
  [[gnu::always_inline]] static void Push(Hot& h, ValStack& stk, const Val& v) {
    if (h.sp == h.se) [[unlikely]] {
      stk.top_ = h.sp;
      stk.Grow();
      h.sp = stk.top_;
      h.se = stk.cap_;
      h.sb = stk.base_;
    }
    *h.sp++ = v;
  }
  // As Get, with the loop's registers.
  [[gnu::always_inline]] bool HotGet(Hot& h, std::uint64_t key) {
    if (key >= h.memo_n || h.memo[key] == 0) return false;
    const std::uint64_t m = h.memo[key];
    Val v;
    v.tag = static_cast<Val::Tag>(m & 15);
    if (v.tag == Val::kPoison) return false;
    v.s = {static_cast<std::uint32_t>(m >> 32), static_cast<std::uint32_t>(m >> 4) & 0xfffffffu};
    v.slot = v.tag == Val::kStr ? static_cast<std::uint32_t>(key) : kNone32;
    Push(h, stk, v);
    return true;
  }
  // As Put: in range, something above the last MARK, a str or container, a fresh key.
  [[gnu::always_inline]] bool HotPut(Hot& h, std::uint64_t key) {
    if (key > in.size() || static_cast<std::size_t>(h.sp - h.sb) <= h.floor) return false;
    Val& top = h.sp[-1];
    if (top.tag != Val::kStr && top.tag != Val::kBox && top.tag != Val::kTuple) return false;
    if (top.s.len >= (1u << 28)) return false;
    if (key >= h.memo_n) {
      GrowMemo(key);
      h.memo = s.memo.data();
      h.memo_n = s.memo.size();
    }
    if (h.memo[key] != 0) return false;
    ++memo_count;
    if (top.tag == Val::kStr) top.slot = static_cast<std::uint32_t>(key);
    h.memo[key] =
        std::uint64_t(top.tag) | (std::uint64_t(top.s.len) << 4) | (std::uint64_t(top.s.off) << 32);
    return true;
  }
  [[gnu::always_inline]] bool HotStr(Hot& h, std::uint64_t len) {
    if (static_cast<std::uint64_t>(h.le - h.lp) < len) return false;
    Val v;
    v.tag = Val::kStr;
    v.s = {static_cast<std::uint32_t>(h.lp - in.data()), static_cast<std::uint32_t>(len)};
    h.lp += len;
    Push(h, stk, v);
    return true;
  }
  [[gnu::always_inline]] void HotInt(Hot& h, std::int64_t i, std::size_t width) {
    Val v;
    v.tag = Val::kInt;
    v.i = i;
    v.slot = static_cast<std::uint32_t>(h.lp - in.data());
    h.lp += width;
    Push(h, stk, v);
  }
  // One opcode: the commonest (a memo reference, a PUT, a str, a small int, MARK: three quarters
  // of a dump's) as Step does them; any other syncs the registers and calls Step. 1: go on,
  // 0: give up, 2: STOP read.
  [[gnu::always_inline]] int HotStep(Hot& h) {
    const std::uint8_t op = static_cast<std::uint8_t>(*h.lp++);
    const std::size_t left = static_cast<std::size_t>(h.le - h.lp);
    switch (op) {
      case 'h':
        return left >= 1 && HotGet(h, std::uint8_t(*h.lp++));
      case 'j':
        if (left < 4) return 0;
        h.lp += 4;
        return HotGet(h, LoadLe32(h.lp - 4));
      case 'q':
        return left >= 1 && HotPut(h, std::uint8_t(*h.lp++));
      case 'r':
        if (left < 4) return 0;
        h.lp += 4;
        return HotPut(h, LoadLe32(h.lp - 4));
      case 0x94:
        return HotPut(h, memo_count);
      case 'X':
        if (left < 4) return 0;
        h.lp += 4;
        return HotStr(h, LoadLe32(h.lp - 4));
      case 0x8c:
        return left >= 1 && HotStr(h, std::uint8_t(*h.lp++));
      case 'K':
        if (left < 1) return 0;
        HotInt(h, std::uint8_t(h.lp[0]), 1);
        return 1;
      case 'M':
        if (left < 2) return 0;
        HotInt(h, std::uint8_t(h.lp[0]) | (std::uint8_t(h.lp[1]) << 8), 2);
        return 1;
      case 'J':
        if (left < 4) return 0;
        HotInt(h, std::int32_t(LoadLe32(h.lp)), 4);
        return 1;
      case '(':
        h.floor = static_cast<std::size_t>(h.sp - h.sb);
        s.marks.push_back(static_cast<std::uint32_t>(h.floor));
        return 1;
      case '.':
        Store(h);
        return Stop() ? 2 : 0;
      default: {
        Store(h);
        const bool ok = Step(op);
        Load(h);
        return ok;
      }
    }
  }
  // (The whole reader flattened into one loop kept `this` and the position on the stack frame:
  // about 90 instructions an opcode; this loop and Step take about a third of that.)
  bool Run() {
    if (in.size() < 2 || std::uint8_t(in[0]) != 0x80 || std::uint8_t(in[1]) > 5) return false;
    if (in.size() >= std::numeric_limits<std::uint32_t>::max()) return false;
    p += 2;
    Hot h;
    h.le = end;
    Load(h);
    while (h.lp < h.le) {
      const int r = HotStep(h);
      if (r != 1) return r == 2;
    }
    return false;  // no STOP
  }
  static std::uint64_t LoadLe32(const char* q) {
    std::uint32_t x = 0;
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(&x, q, 4);
    } else {
      x = std::uint32_t(std::uint8_t(q[0])) | std::uint32_t(std::uint8_t(q[1])) << 8 |
          std::uint32_t(std::uint8_t(q[2])) << 16 | std::uint32_t(std::uint8_t(q[3])) << 24;
    }
    return x;
  }

  bool Stop() {
    if (!Top()) return false;
    const Val root = stk.back();
    if (!Is(root, kAsRoot) || root.s.off != 0) return false;
    const Val& entries = s.root_f[kEntriesKey - kVersion];
    if (!Is(entries, kAsEntries)) return false;  // none, or not a list: the full parser says so
    out->version = std::string(Text(s.root_f[kVersion - kVersion]));
    out->comm_lib = std::string(Text(s.root_f[kCommLib - kVersion]));
    out->gloo = r.gloo_;
    if (Is(s.root_f[kPgConfigKey - kVersion], kAsPgConfig)) RegisterPgs();
    const Val& status = s.root_f[kPgStatusKey - kVersion];
    if (Is(status, kAsPgStatus)) {
      for (const auto& [k, v] : s.status) {
        PgStatus st;
        st.pg = StrId(k);
        if (Is(v, kAsPgStatusGroup)) {
          const StreamTriple& t = s.triples[s.boxes[v.s.off].rec];
          st.enqueued = Plain(t.a, -1);
          st.started = Plain(t.b, -1);
          st.completed = Plain(t.c, -1);
        }
        out->status.push_back(st);
      }
    }
    return true;
  }

  // dump.cpp's RegisterPgs over the kept pg_config pairs (later pairs win, as Find does).
  const Val* FindGroup(std::string_view name) {
    const Val* found = nullptr;
    for (const auto& [k, v] : s.config) {
      if (k.tag == Val::kStr && Text(k) == name) found = &v;
    }
    return found;
  }
  void RegisterPgs() {
    const std::uint32_t pairs = s.boxes[s.config_box].count;
    for (const auto& [id, seen] : r.pg_seen_) {
      const std::string& name = seen.first;
      if (r.pgs_->Has(name)) continue;
      const Val* c = FindGroup(name);
      if (c == nullptr && pairs == 1) c = FindGroup("");
      if (c == nullptr || !Is(*c, kAsPgGroup)) continue;
      const StreamTriple& g = s.triples[s.boxes[c->s.off].rec];
      const std::string_view text = Text(g.a);
      const std::string desc = !Text(g.b).empty() ? std::string(Text(g.b)) : seen.second;
      r.pgs_->Add(name, desc, text, {});
    }
  }
};

bool DumpReader::ReadStream(std::string_view bytes, RankDump* out) {
  StreamState& s = stream_;
  s.memo.clear();
  s.slot_field.clear();
  s.slot_str.clear();
  s.arena.clear();
  s.marks.clear();
  s.boxes.clear();
  s.entries.clear();
  s.frame_recs.clear();
  s.frames.clear();
  s.triples.clear();
  s.config.clear();
  s.status.clear();
  for (StreamVal& v : s.root_f) v = StreamVal();
  s.templates.clear();
  s.done.clear();
  s.last_template = 0xffffffffu;
  s.matched = s.learned = 0;
  s.entries_box = s.config_box = s.status_box = 0xffffffffu;
  s.spend = 0;
  pg_seen_.clear();
  gloo_ = false;
  *out = RankDump();
  Streamer st(*this, bytes, out);
  return st.Run();
}

}  // namespace sl::diagnose::fr
