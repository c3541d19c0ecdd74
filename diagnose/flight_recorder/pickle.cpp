#include "diagnose/flight_recorder/pickle.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>

namespace sl::diagnose::fr {

namespace {

struct OpInfo {
  std::uint8_t code;
  const char* name;
};

// The opcodes of CPython's Lib/pickletools.py, protocols 0-5.
constexpr OpInfo kOps[] = {
    {'(', "MARK"},
    {'.', "STOP"},
    {'0', "POP"},
    {'1', "POP_MARK"},
    {'2', "DUP"},
    {'F', "FLOAT"},
    {'I', "INT"},
    {'J', "BININT"},
    {'K', "BININT1"},
    {'L', "LONG"},
    {'M', "BININT2"},
    {'N', "NONE"},
    {'P', "PERSID"},
    {'Q', "BINPERSID"},
    {'R', "REDUCE"},
    {'S', "STRING"},
    {'T', "BINSTRING"},
    {'U', "SHORT_BINSTRING"},
    {'V', "UNICODE"},
    {'X', "BINUNICODE"},
    {'a', "APPEND"},
    {'b', "BUILD"},
    {'c', "GLOBAL"},
    {'d', "DICT"},
    {'}', "EMPTY_DICT"},
    {'e', "APPENDS"},
    {'g', "GET"},
    {'h', "BINGET"},
    {'i', "INST"},
    {'j', "LONG_BINGET"},
    {'l', "LIST"},
    {']', "EMPTY_LIST"},
    {'o', "OBJ"},
    {'p', "PUT"},
    {'q', "BINPUT"},
    {'r', "LONG_BINPUT"},
    {'s', "SETITEM"},
    {'t', "TUPLE"},
    {')', "EMPTY_TUPLE"},
    {'u', "SETITEMS"},
    {'G', "BINFLOAT"},
    {0x80, "PROTO"},
    {0x81, "NEWOBJ"},
    {0x82, "EXT1"},
    {0x83, "EXT2"},
    {0x84, "EXT4"},
    {0x85, "TUPLE1"},
    {0x86, "TUPLE2"},
    {0x87, "TUPLE3"},
    {0x88, "NEWTRUE"},
    {0x89, "NEWFALSE"},
    {0x8a, "LONG1"},
    {0x8b, "LONG4"},
    {'B', "BINBYTES"},
    {'C', "SHORT_BINBYTES"},
    {0x8c, "SHORT_BINUNICODE"},
    {0x8d, "BINUNICODE8"},
    {0x8e, "BINBYTES8"},
    {0x8f, "EMPTY_SET"},
    {0x90, "ADDITEMS"},
    {0x91, "FROZENSET"},
    {0x92, "NEWOBJ_EX"},
    {0x93, "STACK_GLOBAL"},
    {0x94, "MEMOIZE"},
    {0x95, "FRAME"},
    {0x96, "BYTEARRAY8"},
    {0x97, "NEXT_BUFFER"},
    {0x98, "READONLY_BUFFER"},
};

// Opcodes that import, call or resolve objects outside the pickle: never executed.
bool IsRefused(std::uint8_t op) {
  switch (op) {
    case 'c':
    case 0x93:
    case 'R':
    case 'i':
    case 'o':
    case 0x81:
    case 0x92:
    case 'b':
    case 0x82:
    case 0x83:
    case 0x84:
    case 'P':
    case 'Q':
    case 0x97:
    case 0x98:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string_view OpcodeName(std::uint8_t op) {
  for (const auto& o : kOps) {
    if (o.code == op) return o.name;
  }
  return "?";
}

std::string_view PickleDoc::Text(std::uint32_t id) const {
  if (id >= nodes_.size()) return {};
  const Node& n = nodes_[id];
  if (n.kind != Kind::kStr && n.kind != Kind::kBytes) return {};
  return input_.substr(n.s.off, n.s.len);
}

std::uint32_t PickleDoc::Find(std::uint32_t dict, std::string_view key) const {
  std::uint32_t found = kNotFound;
  ForEachPair(dict, [&](std::uint32_t k, std::uint32_t v) {
    if (nodes_[k].kind == Kind::kStr && Text(k) == key) found = v;
  });
  return found;
}

// The machine's registers for one Parse call. Handlers return false after storing the error:
// the hot loop carries no Result per opcode (a 2000-entry dump is ~150k opcodes).
struct Unpickler::State {
  State(Unpickler& unpickler, PickleDoc& d, std::string_view input)
      : u(unpickler), doc(d), in(input) {}
  Unpickler& u;
  PickleDoc& doc;
  std::string_view in;
  std::size_t pos = 0;
  std::size_t op_at = 0;
  std::uint8_t op = 0;
  std::uint32_t memo_count = 0;
  std::uint64_t frame_need = 0;  // the input size the FRAMEs read so far ask for
  bool done = false;             // STOP was read
  std::size_t until = 0;         // Run's pause point: no opcode is taken with another past it
  std::optional<Error> error;

  // The error paths are cold and out of line, so the hot handlers stay small enough to inline
  // into Run's loop (Get with its message formatting inline was 10% of the reader).
  [[gnu::cold, gnu::noinline]] bool Fail(const std::string& what) {
    error = MakeError(fmt::format("{} (opcode {} 0x{:02x})", what, OpcodeName(op), op),
                      fmt::format("byte {}", op_at));
    return false;
  }
  [[gnu::cold, gnu::noinline]] bool Truncated(std::uint64_t need) {
    error =
        MakeError(fmt::format("truncated: opcode {} needs {} more bytes, the file ends at byte {}",
                              OpcodeName(op), need - (in.size() - pos), in.size()),
                  fmt::format("byte {}", op_at));
    return false;
  }
  [[gnu::cold, gnu::noinline]] bool FailKey(const char* what, std::uint64_t key) {
    return Fail(fmt::format(fmt::runtime(what), key));
  }
  bool Has(std::uint64_t n) const { return in.size() - pos >= n; }
  // n <= 8 bytes, little-endian; one load for the widths opcodes use (a memcpy of a size the
  // compiler cannot see was a call into libc per opcode: a twentieth of the parser's instructions).
  template <std::size_t N>
  [[gnu::always_inline]] std::uint64_t LeN() {
    std::uint64_t v = 0;
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(&v, in.data() + pos, N);
    } else {
      for (std::size_t k = 0; k < N; ++k) v |= std::uint64_t(std::uint8_t(in[pos + k])) << (8 * k);
    }
    pos += N;
    return v;
  }
  [[gnu::always_inline]] std::uint64_t Le(std::size_t n) {
    switch (n) {
      case 1:
        return LeN<1>();
      case 2:
        return LeN<2>();
      case 4:
        return LeN<4>();
      case 8:
        return LeN<8>();
      default: {
        std::uint64_t v = 0;
        for (std::size_t k = 0; k < n; ++k)
          v |= std::uint64_t(std::uint8_t(in[pos + k])) << (8 * k);
        pos += n;
        return v;
      }
    }
  }
  [[gnu::always_inline]] std::uint32_t NewNode(Kind kind) {
    Node& n = doc.nodes_.emplace_back();
    n.kind = kind;
    n.c = {kNoChunk, kNoChunk};
    return static_cast<std::uint32_t>(doc.nodes_.size() - 1);
  }
  [[gnu::always_inline]] bool PushInt(std::int64_t v, Kind kind = Kind::kInt) {
    std::uint32_t id = NewNode(kind);
    doc.nodes_[id].i = v;
    u.stack_.push_back(id);
    return true;
  }
  [[gnu::always_inline]] bool PushFixed(std::size_t n, bool is_signed) {
    if (!Has(n)) return Truncated(n);
    std::uint64_t v = Le(n);
    return PushInt(is_signed ? std::int32_t(std::uint32_t(v)) : std::int64_t(v));
  }
  [[gnu::always_inline]] bool PushText(Kind kind, std::size_t len_bytes) {
    if (!Has(len_bytes)) return Truncated(len_bytes);
    std::uint64_t len = Le(len_bytes);
    if (op == 'T' && (len & 0x80000000u)) return Fail("negative length");
    if (!Has(len)) return Truncated(len);
    std::uint32_t id = NewNode(kind);
    doc.nodes_[id].s = {static_cast<std::uint32_t>(pos), static_cast<std::uint32_t>(len)};
    pos += len;
    u.stack_.push_back(id);
    return ThenPut();
  }
  bool Top() {  // stack non-empty above the last mark
    return !u.stack_.empty() && (u.marks_.empty() || u.marks_.back() < u.stack_.size());
  }
  bool Floor(std::size_t n) {  // at least n items above the last mark
    std::size_t floor = u.marks_.empty() ? 0 : u.marks_.back();
    return u.stack_.size() >= floor + n;
  }
  bool PopMark(std::size_t* m) {
    if (u.marks_.empty()) return Fail("corrupted: no MARK before this opcode");
    *m = u.marks_.back();
    u.marks_.pop_back();
    return true;
  }
  bool Line(std::string_view* line) {
    std::size_t nl = in.find('\n', pos);
    if (nl == std::string_view::npos) return Truncated(in.size() - pos + 1);
    *line = in.substr(pos, nl - pos);
    pos = nl + 1;
    return true;
  }
  // A few ids at the end of items_ (the generic range insert was a tenth of the parser's
  // instructions for runs of two to five items).
  [[gnu::always_inline]] void AppendItems(const std::uint32_t* from, std::uint32_t len) {
    auto& items = doc.items_;
    const std::size_t old = items.size();
    items.resize(old + len);
    std::memcpy(items.data() + old, from, len * sizeof(std::uint32_t));
  }
  // Appends stack_[from, end) to container `id` as one chunk and drops them from the stack.
  [[gnu::always_inline]] void AddItems(std::uint32_t id, std::size_t from, std::uint32_t per_item) {
    auto& st = u.stack_;
    std::uint32_t len = static_cast<std::uint32_t>(st.size() - from);
    if (len == 0) return;
    Node& target = doc.nodes_[id];
    // APPEND after APPEND (nothing else stored between): the last chunk grows in place, so a
    // list built item by item is one chunk, not one per item.
    if (target.c.last != kNoChunk) {
      PickleDoc::Chunk& last = doc.chunks_[target.c.last];
      if (last.begin + last.len == doc.items_.size()) {
        AppendItems(st.data() + from, len);
        last.len += len;
        target.count += len / per_item;
        st.resize(from);
        return;
      }
    }
    {
      std::uint32_t chunk = static_cast<std::uint32_t>(doc.chunks_.size());
      doc.chunks_.push_back({static_cast<std::uint32_t>(doc.items_.size()), len, kNoChunk});
      AppendItems(st.data() + from, len);
      Node& n = target;
      if (n.c.first == kNoChunk) {
        n.c.first = chunk;
      } else {
        doc.chunks_[n.c.last].next = chunk;
      }
      n.c.last = chunk;
      n.count += len / per_item;
    }
    st.resize(from);
  }
  [[gnu::always_inline]] bool Put(std::uint64_t key) {
    // A memo key never exceeds the number of opcodes before it, so the file size bounds it and
    // a forged LONG_BINPUT cannot make us allocate gigabytes.
    if (key > in.size()) return FailKey("corrupted: memo key {} out of range", key);
    if (!Top()) return Fail("corrupted: nothing to memoize");
    auto& memo = u.memo_;
    // Keys come in order (BINPUT 0, 1, 2, ...): grow geometrically, not once per key.
    if (memo.size() <= key) memo.resize(std::max<std::size_t>(key + 1, memo.size() * 2), kNoChunk);
    if (memo[key] == kNoChunk) ++memo_count;
    memo[key] = u.stack_.back();
    return true;
  }
  [[gnu::always_inline]] bool Get(std::uint64_t key) {
    if (key >= u.memo_.size() || u.memo_[key] == kNoChunk) {
      return FailKey("corrupted: memo key {} was never stored", key);
    }
    u.stack_.push_back(u.memo_[key]);
    return true;
  }
  [[gnu::always_inline]] bool MemoArg(std::size_t n, bool put) {
    if (!Has(n)) return Truncated(n);
    std::uint64_t key = Le(n);
    return put ? Put(key) : Get(key);
  }
  // The pickler memoizes every str and container it writes: the PUT that follows one is taken
  // here, a predicted branch instead of another dispatch (the dispatch's indirect jump was a
  // fifth of the parser's time).
  // Not at or past Run's pause point: the kept state of the shared leading bytes must end at the
  // opcode boundary where the inputs stop agreeing, which may be between a value and its PUT.
  [[gnu::always_inline]] bool ThenPut() {
    if (pos >= in.size() || pos >= until) return true;
    const std::uint8_t next = static_cast<std::uint8_t>(in[pos]);
    if (next != 'r' && next != 'q' && next != 0x94) return true;
    op_at = pos++;
    op = next;
    if (next == 0x94) return Put(memo_count);
    return MemoArg(next == 'r' ? 4 : 1, true);
  }
  [[gnu::always_inline]] bool PushEmpty(Kind kind) {
    u.stack_.push_back(NewNode(kind));
    return ThenPut();
  }
  bool Float();
  bool StringOp();
  bool ScalarOp();
  bool Scalar();
  bool Long();
  bool TextOp();
  bool Build();
  bool Tuple(std::size_t n);
  bool AddTo();
  bool Misc(bool* stop);
  bool Step(bool* stop);
  bool Run(std::size_t pause_at);
};

bool Unpickler::State::Float() {
  if (!Has(8)) return Truncated(8);
  std::uint64_t be = 0;
  for (int k = 0; k < 8; ++k) be = (be << 8) | std::uint8_t(in[pos + k]);
  pos += 8;
  double d;
  std::memcpy(&d, &be, 8);
  std::uint32_t id = NewNode(Kind::kFloat);
  doc.nodes_[id].f = d;
  u.stack_.push_back(id);
  return true;
}

// LONG1/LONG4: little-endian two's complement of n bytes; wider than 64 bits is kBigInt.
bool Unpickler::State::Long() {
  std::size_t w = op == 0x8a ? 1 : 4;
  if (!Has(w)) return Truncated(w);
  std::uint64_t n = Le(w);
  if (w == 4 && (n & 0x80000000u)) return Fail("negative length");
  if (!Has(n)) return Truncated(n);
  if (n > 8) {
    pos += n;
    return PushInt(0, Kind::kBigInt);
  }
  std::uint64_t v = n ? Le(n) : 0;
  if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~std::uint64_t(0) << (8 * n);  // sign
  return PushInt(static_cast<std::int64_t>(v));
}

// Protocol 0's text forms (INT, LONG, FLOAT, STRING, UNICODE, PUT, GET): plain values only;
// escapes, which would need Python's codecs, are refused as unsupported rather than guessed.
bool Unpickler::State::TextOp() {
  std::string_view t;
  if (!Line(&t)) return false;
  if (op == 'S' || op == 'V') {
    if (t.find('\\') != std::string_view::npos) return Fail("escaped text is not supported");
    if (op == 'S') {
      if (t.size() < 2 || (t.front() != '\'' && t.front() != '"') || t.back() != t.front()) {
        return Fail("corrupted: STRING argument is not quoted");
      }
      t = t.substr(1, t.size() - 2);
    }
    std::uint32_t id = NewNode(Kind::kStr);
    doc.nodes_[id].s = {static_cast<std::uint32_t>(t.data() - in.data()),
                        static_cast<std::uint32_t>(t.size())};
    u.stack_.push_back(id);
    return true;
  }
  if (op == 'I' && (t == "00" || t == "01")) return PushInt(t == "01", Kind::kBool);
  if (op == 'L' && !t.empty() && t.back() == 'L') t.remove_suffix(1);
  std::string z(t);
  char* end = nullptr;
  errno = 0;
  if (op == 'F') {
    double d = std::strtod(z.c_str(), &end);
    if (z.empty() || *end) return Fail("corrupted: FLOAT argument is not a number");
    std::uint32_t id = NewNode(Kind::kFloat);
    doc.nodes_[id].f = d;
    u.stack_.push_back(id);
    return true;
  }
  long long v = std::strtoll(z.c_str(), &end, 10);
  if (z.empty() || *end || (v < 0 && (op == 'p' || op == 'g'))) {
    return Fail("corrupted: the argument is not a number");
  }
  if (op == 'p') return Put(static_cast<std::uint64_t>(v));
  if (op == 'g') return Get(static_cast<std::uint64_t>(v));
  return PushInt(v, errno == ERANGE ? Kind::kBigInt : Kind::kInt);
}

// LIST, TUPLE, DICT, FROZENSET: a container of the items above the last mark.
bool Unpickler::State::Build() {
  std::size_t m = 0;
  if (!PopMark(&m)) return false;
  Kind k = op == 'l'   ? Kind::kList
           : op == 't' ? Kind::kTuple
           : op == 'd' ? Kind::kDict
                       : Kind::kSet;
  if (k == Kind::kDict && (u.stack_.size() - m) % 2)
    return Fail("corrupted: odd number of dict items");
  std::uint32_t id = NewNode(k);
  AddItems(id, m, k == Kind::kDict ? 2 : 1);
  u.stack_.push_back(id);
  return true;
}

bool Unpickler::State::Tuple(std::size_t n) {
  if (!Floor(n)) return Fail("corrupted: stack underflow");
  std::uint32_t id = NewNode(Kind::kTuple);
  AddItems(id, u.stack_.size() - n, 1);
  u.stack_.push_back(id);
  return true;
}

// APPEND(S), SETITEM(S), ADDITEMS: items into the list/dict/set below them. Only real
// containers: Python would call an object's append/extend/__setitem__, which is code.
bool Unpickler::State::AddTo() {
  auto& st = u.stack_;
  bool batch = op == 'e' || op == 'u' || op == 0x90;
  std::size_t from = 0;
  if (batch) {
    if (!PopMark(&from)) return false;
  } else {
    std::size_t n = op == 's' ? 2 : 1;
    if (!Floor(n + 1)) return Fail("corrupted: stack underflow");
    from = st.size() - n;
  }
  if (from == 0 || (!u.marks_.empty() && u.marks_.back() >= from)) {
    return Fail("corrupted: no container below the items");
  }
  Kind want = (op == 's' || op == 'u') ? Kind::kDict : op == 0x90 ? Kind::kSet : Kind::kList;
  std::uint32_t target = st[from - 1];
  if (doc.nodes_[target].kind != want)
    return Fail("corrupted: items added to a value of the wrong type");
  if (want == Kind::kDict && (st.size() - from) % 2)
    return Fail("corrupted: odd number of dict items");
  AddItems(target, from, want == Kind::kDict ? 2 : 1);
  return true;
}

// PROTO, FRAME, MARK, POP, POP_MARK, DUP, STOP.
bool Unpickler::State::Misc(bool* stop) {
  auto& st = u.stack_;
  switch (op) {
    case 0x80: {
      if (!Has(1)) return Truncated(1);
      std::uint64_t v = Le(1);
      if (v > 5) return Fail(fmt::format("pickle protocol {} is newer than this reader (0-5)", v));
      return true;
    }
    case 0x95: {
      if (!Has(8)) return Truncated(8);
      std::uint64_t len = Le(8);
      if (!Has(len)) return Truncated(len);
      frame_need = std::max<std::uint64_t>(frame_need, pos + len);
      return true;
    }
    case '(':
      u.marks_.push_back(static_cast<std::uint32_t>(st.size()));
      return true;
    case '0':
      if (!u.marks_.empty() && u.marks_.back() == st.size()) {
        u.marks_.pop_back();
        return true;
      }
      if (!Top()) return Fail("corrupted: stack underflow");
      st.pop_back();
      return true;
    case '1': {
      std::size_t m = 0;
      if (!PopMark(&m)) return false;
      st.resize(m);
      return true;
    }
    case '2':
      if (st.empty()) return Fail("corrupted: stack underflow");
      st.push_back(st.back());
      return true;
    case '.':
      if (!Top()) return Fail("corrupted: stack underflow");
      doc.root_ = st.back();
      *stop = true;
      return true;
    default:
      return Fail("unknown opcode: the file is corrupted or not a pickle");
  }
}

// BINUNICODE and friends: a length of 1, 4 or 8 bytes, then the text.
bool Unpickler::State::StringOp() {
  switch (op) {
    case 'X':
    case 'T':
      return PushText(Kind::kStr, 4);
    case 0x8c:
    case 'U':
      return PushText(Kind::kStr, 1);
    case 0x8d:
      return PushText(Kind::kStr, 8);
    case 'B':
      return PushText(Kind::kBytes, 4);
    case 'C':
      return PushText(Kind::kBytes, 1);
    default:
      return PushText(Kind::kBytes, 8);  // BINBYTES8, BYTEARRAY8
  }
}

// BINFLOAT, LONG1, LONG4 (the small scalars are inline in Step).
bool Unpickler::State::ScalarOp() { return op == 'G' ? Float() : Long(); }

// The small scalars and MARK, a third of a dump's opcodes, inline in the loop; the rest out of it.
[[gnu::always_inline]] inline bool Unpickler::State::Scalar() {
  switch (op) {
    case 'K':
      return PushFixed(1, false);
    case 'M':
      return PushFixed(2, false);
    case 'J':
      return PushFixed(4, true);
    case 'N':
      return PushInt(0, Kind::kNone);
    case 0x88:
      return PushInt(1, Kind::kBool);
    case 0x89:
      return PushInt(0, Kind::kBool);
    case '(':
      u.marks_.push_back(static_cast<std::uint32_t>(u.stack_.size()));
      return true;
    default:
      return ScalarOp();
  }
}

// Inlined into Run's loop: a call per opcode (saving and restoring six registers around a
// jump-table dispatch) was a tenth of the reader's time on 512 dumps (perf annotate).
[[gnu::always_inline]] inline bool Unpickler::State::Step(bool* stop) {
  op_at = pos;
  op = static_cast<std::uint8_t>(in[pos++]);
  switch (op) {
    case 'X':
    case 0x8c:
    case 0x8d:
    case 'T':
    case 'U':
    case 'B':
    case 'C':
    case 0x8e:
    case 0x96:
      return StringOp();
    case 'K':
    case 'M':
    case 'J':
    case 'N':
    case 0x88:
    case 0x89:
    case '(':
    case 'G':
    case 0x8a:
    case 0x8b:
      return Scalar();
    case 'q':
      return MemoArg(1, true);
    case 'r':
      return MemoArg(4, true);
    case 'h':
      return MemoArg(1, false);
    case 'j':
      return MemoArg(4, false);
    case 0x94:
      return Put(memo_count);
    case 'I':
    case 'L':
    case 'F':
    case 'S':
    case 'V':
    case 'p':
    case 'g':
      return TextOp();
    case ']':
      return PushEmpty(Kind::kList);
    case '}':
      return PushEmpty(Kind::kDict);
    case ')':
      return PushEmpty(Kind::kTuple);
    case 0x8f:
      return PushEmpty(Kind::kSet);
    case 'l':
    case 't':
    case 'd':
    case 0x91:
      return Build();
    case 0x85:
    case 0x86:
    case 0x87:
      return Tuple(op - 0x84);
    case 'a':
    case 's':
    case 'e':
    case 'u':
    case 0x90:
      return AddTo();
    default:
      break;
  }
  if (IsRefused(op)) {
    return Fail(
        "refused: this opcode imports or calls Python code, which a Flight Recorder dump "
        "never needs; the file is not a plain-data dump");
  }
  return Misc(stop);
}

// Runs opcodes until STOP, or until the first opcode boundary at or past `until` when that is
// short of the input's end (done stays false: a pause, to keep the state there).
[[gnu::flatten]] bool Unpickler::State::Run(std::size_t pause_at) {
  until = pause_at;
  bool stop = false;
  while (!stop) {
    if (pos >= until && until < in.size()) return true;
    if (pos >= in.size()) {
      error = MakeError(
          fmt::format("truncated: the file ends at byte {} before the pickle's STOP", in.size()),
          fmt::format("byte {}", in.size()));
      return false;
    }
    if (!Step(&stop)) return false;
  }
  done = true;
  return true;
}

void Unpickler::Reset(std::string_view data, PickleDoc* doc) {
  doc->input_ = data;
  doc->nodes_.clear();
  doc->chunks_.clear();
  doc->items_.clear();
  doc->root_ = 0;
  stack_.clear();
  marks_.clear();
  memo_.clear();
}

// The kept state when `data` starts with its prefix and is long enough that nothing the prefix
// checked against the input's size (a FRAME's length, a memo key) fails for it.
bool Unpickler::Resume(std::string_view data, PickleDoc* doc, State* s) {
  const std::string& p = kept_.prefix;
  if (p.empty() || data.size() < p.size() || data.size() < kept_.need_size ||
      std::memcmp(data.data(), p.data(), p.size()) != 0) {
    return false;
  }
  doc->nodes_.assign(kept_.nodes.begin(), kept_.nodes.end());
  doc->chunks_.assign(kept_.chunks.begin(), kept_.chunks.end());
  doc->items_.assign(kept_.items.begin(), kept_.items.end());
  stack_.assign(kept_.stack.begin(), kept_.stack.end());
  marks_.assign(kept_.marks.begin(), kept_.marks.end());
  memo_.assign(kept_.memo.begin(), kept_.memo.end());
  s->memo_count = kept_.memo_count;
  s->pos = p.size();
  reused_ = p.size();
  return true;
}

void Unpickler::Keep(const State& s) {
  kept_.prefix.assign(s.in.substr(0, s.pos));
  // Put refuses a key past the input's size: the largest key stored bounds it from below.
  std::uint64_t key = memo_.size();
  while (key > 0 && memo_[key - 1] == kNoChunk) --key;
  kept_.need_size = std::max<std::uint64_t>(s.frame_need, key);
  kept_.nodes.assign(s.doc.nodes_.begin(), s.doc.nodes_.end());
  kept_.chunks.assign(s.doc.chunks_.begin(), s.doc.chunks_.end());
  kept_.items.assign(s.doc.items_.begin(), s.doc.items_.end());
  kept_.stack.assign(stack_.begin(), stack_.end());
  kept_.marks.assign(marks_.begin(), marks_.end());
  kept_.memo.assign(memo_.begin(), memo_.end());
  kept_.memo_count = s.memo_count;
}

Status Unpickler::Parse(std::string_view data, PickleDoc* doc) {
  Reset(data, doc);
  reused_ = 0;
  if (data.size() >= std::numeric_limits<std::uint32_t>::max()) {
    return MakeError("file too large for a Flight Recorder dump (4 GiB or more)", "byte 0");
  }
  doc->nodes_.reserve(data.size() / 3);
  std::optional<State> s;
  s.emplace(*this, *doc, data);
  if (!Resume(data, doc, &*s)) {
    // What this input shares with the last one: parsed up to there, the state is kept when it
    // is at an opcode boundary inside the shared bytes (an opcode that reads past them is parsed
    // again from byte 0, stopping before it, so that the kept prefix ends where the inputs
    // agree and the next input, which differs there too, still matches it).
    const std::size_t common = std::min(data.size(), last_.size());
    std::size_t shared = 0;
    while (shared + 4096 <= common &&
           std::memcmp(data.data() + shared, last_.data() + shared, 4096) == 0)
      shared += 4096;
    while (shared < common && data[shared] == last_[shared]) ++shared;
    last_.assign(data.substr(0, std::min(data.size(), kMaxShared)));
    if (shared >= kMinShared && shared < data.size()) {
      if (!s->Run(shared)) return *s->error;
      if (!s->done && s->pos > shared) {
        const std::size_t boundary = s->op_at;
        Reset(data, doc);
        s.emplace(*this, *doc, data);
        if (!s->Run(boundary)) return *s->error;
      }
      if (!s->done && s->pos >= kMinShared) Keep(*s);
    }
  }
  if (!s->done && !s->Run(data.size())) return *s->error;
  return OkStatus();
}

}  // namespace sl::diagnose::fr
