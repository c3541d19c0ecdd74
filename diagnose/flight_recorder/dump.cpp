#include "diagnose/flight_recorder/dump.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace sl::diagnose::fr {

namespace {

using namespace entry_field;  // NOLINT: the entry keys, shared with dump_stream.cpp

constexpr std::uint32_t kNoId = 0xffffffffu;

// An int field: torch writes ints, its JSON form sometimes strings ("5"), null for "not yet".
// A value that is a number but does not fit an int64 (1e400 read as inf, a LONG wider than 64
// bits, "99999999999999999999") sets *out_of_range instead of wrapping or being UB.
std::int64_t AsInt(const PickleDoc& d, std::uint32_t id, std::int64_t fallback,
                   bool* out_of_range = nullptr) {
  auto bad = [&] {
    if (out_of_range != nullptr) *out_of_range = true;
    return fallback;
  };
  if (id == PickleDoc::kNotFound) return fallback;
  const Node& n = d.at(id);
  if (n.kind == Kind::kInt || n.kind == Kind::kBool) return n.i;
  if (n.kind == Kind::kBigInt) return bad();
  if (n.kind == Kind::kFloat) {
    // 2^63 is exact as a double; NaN fails both comparisons.
    if (!(n.f >= -9223372036854775808.0 && n.f < 9223372036854775808.0)) return bad();
    return static_cast<std::int64_t>(n.f);
  }
  if (n.kind == Kind::kStr) {
    std::string_view t = d.Text(id);
    if (t.empty()) return fallback;
    std::int64_t v = 0;
    bool neg = t.front() == '-';
    if (neg && t.size() == 1) return fallback;
    for (std::size_t k = neg ? 1 : 0; k < t.size(); ++k) {
      if (!std::isdigit(static_cast<unsigned char>(t[k]))) return fallback;
      if (v > (std::numeric_limits<std::int64_t>::max() - (t[k] - '0')) / 10) return bad();
      v = v * 10 + (t[k] - '0');
    }
    return neg ? -v : v;
  }
  return fallback;
}

State StateOf(std::string_view s) {
  if (s == "completed") return State::kCompleted;
  if (s == "started") return State::kStarted;
  if (s == "scheduled") return State::kScheduled;
  return State::kUnknown;
}

}  // namespace

std::string_view StateName(State s) {
  switch (s) {
    case State::kScheduled:
      return "scheduled";
    case State::kStarted:
      return "started";
    case State::kCompleted:
      return "completed";
    default:
      return "unknown";
  }
}

Strings::Strings() { Intern(""); }

std::uint32_t Strings::Intern(std::string_view s) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  all_.emplace_back(s);
  auto id = static_cast<std::uint32_t>(all_.size() - 1);
  ids_.emplace(all_.back(), id);
  return id;
}

std::uint32_t LocalStrings::Get(std::string_view s) {
  auto it = cache_.find(s);
  if (it != cache_.end()) return it->second;
  std::uint32_t id = global_->Intern(s);
  cache_.emplace(std::string(s), id);
  return id;
}

Stacks::Stacks() { all_.emplace_back(); }

std::uint32_t Stacks::Intern(const std::vector<Frame>& frames) {
  if (frames.empty()) return 0;
  std::string key(reinterpret_cast<const char*>(frames.data()), frames.size() * sizeof(Frame));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ids_.find(key);
  if (it != ids_.end()) return it->second;
  all_.push_back(frames);
  auto id = static_cast<std::uint32_t>(all_.size() - 1);
  ids_.emplace(std::move(key), id);
  return id;
}

bool PgRegistry::Has(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return pgs_.count(name) > 0;
}

void PgRegistry::Add(const std::string& name, const std::string& desc, std::string_view ranks,
                     const std::vector<int>& list) {
  std::vector<int> members = ranks.empty() ? list : ParseRankList(ranks);
  std::lock_guard<std::mutex> lock(mu_);
  if (pgs_.count(name)) return;
  pgs_[name] = PgInfo{name, desc, std::move(members)};
}

int RankFromFileName(std::string_view path) {
  std::size_t slash = path.rfind('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  std::size_t end = base.size();
  while (end > 0 && !std::isdigit(static_cast<unsigned char>(base[end - 1]))) --end;
  if (end == 0) return -1;
  std::size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(base[begin - 1]))) --begin;
  if (end - begin > 9) return -1;
  return std::stoi(std::string(base.substr(begin, end - begin)));
}

std::vector<int> ParseRankList(std::string_view text) {
  std::vector<int> out;
  long cur = -1;
  for (char c : text) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      cur = (cur < 0 ? 0 : cur) * 10 + (c - '0');
      if (cur > (1 << 24)) return {};
    } else {
      if (cur >= 0) out.push_back(static_cast<int>(cur));
      cur = -1;
      if (c != '[' && c != ']' && c != ',' && c != ' ') return {};
    }
  }
  if (cur >= 0) out.push_back(static_cast<int>(cur));
  return out;
}

void StackCache::Clear() {
  if (count_ > 0) std::fill(slots_.begin(), slots_.end(), Slot{});
  keys_.clear();
  count_ = 0;
}

std::uint64_t StackCache::Hash(const std::vector<std::uint32_t>& key) {
  std::uint64_t h = 0x84222325cbf29ce4ull ^ key.size();
  for (std::uint32_t v : key) {
    h = (h ^ v) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 31;
  }
  return h;
}

bool StackCache::Same(const Slot& s, const std::vector<std::uint32_t>& key,
                      std::uint64_t hash) const {
  return s.hash == hash && s.len == key.size() &&
         std::equal(key.begin(), key.end(), keys_.begin() + s.off);
}

const std::uint32_t* StackCache::Find(const std::vector<std::uint32_t>& key,
                                      std::uint64_t hash) const {
  if (slots_.empty()) return nullptr;
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (!s.used) return nullptr;
    if (Same(s, key, hash)) return &s.id;
  }
}

void StackCache::Insert(const std::vector<std::uint32_t>& key, std::uint64_t hash,
                        std::uint32_t id) {
  // At most half full: a probe ends at an empty slot.
  if ((count_ + 1) * 2 > slots_.size()) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<std::size_t>(1024, old.size() * 2), Slot{});
    const std::size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (!s.used) continue;
      std::size_t i = s.hash & mask;
      while (slots_[i].used) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = hash & mask;
  while (slots_[i].used) {
    if (Same(slots_[i], key, hash)) return;
    i = (i + 1) & mask;
  }
  slots_[i] = Slot{hash, static_cast<std::uint32_t>(keys_.size()),
                   static_cast<std::uint32_t>(key.size()), id, true};
  keys_.insert(keys_.end(), key.begin(), key.end());
  ++count_;
}

bool DumpReader::Spend(std::uint64_t n) {
  spent_ += n;
  return spent_ <= budget_;
}

Error DumpReader::BudgetError() const {
  return MakeError(
      fmt::format("the dump expands to more than {} MiB of values from {} bytes "
                  "(repeated references to shared objects?): not read",
                  budget_ >> 20, input_size_));
}

Result<RankDump> DumpReader::Read(std::string_view bytes) {
  if (bytes.empty()) return MakeError("empty file (the rank died while dumping?)", "byte 0");
  // What one file may expand to, in bytes of values read out of it: proportional to its size
  // (a real dump's entries, shapes and frames take less than its bytes), shared objects counted
  // once (a memo'd frame or stack is interned once, not per reference).
  input_size_ = bytes.size();
  budget_ = kBudgetBase + kBudgetPerByte * static_cast<std::uint64_t>(bytes.size());
  spent_ = 0;
  range_error_.clear();
  streamed_ = false;
  if (static_cast<std::uint8_t>(bytes[0]) == 0x80) {
    if (use_stream_) {
      RankDump out;
      if (ReadStream(bytes, &out)) {
        streamed_ = true;
        return out;
      }
    }
    json_text_.clear();
    auto st = unpickler_.Parse(bytes, &doc_);
    if (!st) return st.error();
  } else if (bytes[0] == '{') {
    auto st = FromJson(bytes);
    if (!st) return st.error();
  } else {
    return MakeError(
        "neither a pickle (first byte 0x80) nor JSON ('{'): not a Flight Recorder dump", "byte 0");
  }
  return Extract();
}

// JSON dumps (_dump_fr_trace_json, or a pickle someone re-saved as JSON) become the same doc the
// unpickler builds, so one extractor serves both; strings are copied into json_text_.
std::uint32_t DumpReader::JsonNode(Kind kind) {
  Node& n = doc_.nodes_.emplace_back();
  n.kind = kind;
  n.c = {kNoChunk, kNoChunk};
  return static_cast<std::uint32_t>(doc_.nodes_.size() - 1);
}

std::uint32_t DumpReader::JsonText(const std::string& s) {
  std::uint32_t id = JsonNode(Kind::kStr);
  doc_.nodes_[id].s = {static_cast<std::uint32_t>(json_text_.size()),
                       static_cast<std::uint32_t>(s.size())};
  json_text_ += s;
  return id;
}

// Recursion is bounded: JSON dumps nest 4 deep and more than 64 is refused.
Result<std::uint32_t> DumpReader::BuildJson(const nlohmann::json& v, int depth) {
  if (depth > 64) return MakeError("JSON nested deeper than 64 levels");
  std::uint32_t id = 0;
  if (v.is_null()) return JsonNode(Kind::kNone);
  if (v.is_string()) return JsonText(v.get<std::string>());
  if (v.is_boolean() || v.is_number_integer() || v.is_number_unsigned()) {
    id = JsonNode(v.is_boolean() ? Kind::kBool : Kind::kInt);
    doc_.nodes_[id].i = v.is_boolean()           ? v.get<bool>()
                        : v.is_number_unsigned() ? static_cast<std::int64_t>(v.get<std::uint64_t>())
                                                 : v.get<std::int64_t>();
    // Past int64: kept as a big int (AsInt says it is out of range), never wrapped negative.
    if (v.is_number_unsigned() &&
        v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max())) {
      doc_.nodes_[id].kind = Kind::kBigInt;
    }
    return id;
  }
  if (v.is_number_float()) {
    id = JsonNode(Kind::kFloat);
    doc_.nodes_[id].f = v.get<double>();
    return id;
  }
  std::vector<std::uint32_t> kids;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (v.is_object()) kids.push_back(JsonText(it.key()));
    auto c = BuildJson(it.value(), depth + 1);
    if (!c) return c.error();
    kids.push_back(*c);
  }
  id = JsonNode(v.is_object() ? Kind::kDict : Kind::kList);
  if (!kids.empty()) {
    auto chunk = static_cast<std::uint32_t>(doc_.chunks_.size());
    doc_.chunks_.push_back({static_cast<std::uint32_t>(doc_.items_.size()),
                            static_cast<std::uint32_t>(kids.size()), kNoChunk});
    doc_.items_.insert(doc_.items_.end(), kids.begin(), kids.end());
    doc_.nodes_[id].c = {chunk, chunk};
    doc_.nodes_[id].count =
        static_cast<std::uint32_t>(v.is_object() ? kids.size() / 2 : kids.size());
  }
  return id;
}

// JSON dumps (_dump_fr_trace_json, or a pickle someone re-saved as JSON) become the same doc the
// unpickler builds, so one extractor serves both; strings are copied into json_text_.
Status DumpReader::FromJson(std::string_view bytes) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(bytes.begin(), bytes.end());
  } catch (const nlohmann::json::parse_error& e) {
    return MakeError(fmt::format("not valid JSON: {}", e.what()), fmt::format("byte {}", e.byte));
  } catch (const nlohmann::json::out_of_range& e) {
    // "number overflow parsing '1e400'": a number no double holds.
    return MakeError(fmt::format("a number out of range: {}", e.what()));
  } catch (const nlohmann::json::exception& e) {
    return MakeError(fmt::format("not valid JSON: {}", e.what()));
  }
  doc_.nodes_.clear();
  doc_.chunks_.clear();
  doc_.items_.clear();
  json_text_.clear();
  auto root = BuildJson(j, 0);
  if (!root) return root.error();
  doc_.root_ = *root;
  doc_.input_ = json_text_;
  return OkStatus();
}

std::uint32_t DumpReader::StrId(std::uint32_t node) {
  if (node == PickleDoc::kNotFound) return 0;
  if (str_id_[node] != kNoId) return str_id_[node];
  const Node& n = doc_.at(node);
  std::uint32_t id = 0;
  if (n.kind == Kind::kStr || n.kind == Kind::kBytes) {
    id = local_.Get(doc_.Text(node));
  } else if (n.kind == Kind::kInt) {
    id = local_.Get(std::to_string(n.i));
  }
  str_id_[node] = id;
  return id;
}

// "[[6553600]]", "[Float]": a shape or dtype list as Python prints it, 3 levels at most.
void DumpReader::AppendRendered(std::uint32_t node, int depth, std::string* out) {
  // The rest of an over-long shape is not rendered; each node rendered costs.
  if (node == PickleDoc::kNotFound || out->size() > kMaxShape || !Spend(8)) return;
  const Node& n = doc_.at(node);
  switch (n.kind) {
    case Kind::kInt:
      fmt::format_to(std::back_inserter(*out), "{}", n.i);
      return;
    case Kind::kStr:
      out->append(doc_.Text(node));
      return;
    case Kind::kList:
    case Kind::kTuple: {
      if (depth > 3) {
        out->append("[...]");
        return;
      }
      out->push_back('[');
      bool first = true;
      doc_.ForEachItem(node, [&](std::uint32_t c) {
        if (!first) out->append(", ");
        first = false;
        AppendRendered(c, depth + 1, out);
      });
      out->push_back(']');
      return;
    }
    default:
      out->append("?");
      return;
  }
}

// A stack is looked up by its frame dicts' node ids (torch memoizes identical frame dicts), so
// it is decoded once per file; the cache allocates nothing per lookup.
std::uint32_t DumpReader::StackId(std::uint32_t list) {
  if (list == PickleDoc::kNotFound) return 0;
  frame_ids_.clear();
  doc_.ForEachItem(list, [&](std::uint32_t f) {
    if (doc_.at(f).kind == Kind::kDict && frame_ids_.size() < 64) frame_ids_.push_back(f);
  });
  if (frame_ids_.empty()) return 0;
  const std::uint64_t hash = StackCache::Hash(frame_ids_);
  if (const std::uint32_t* known = stack_cache_.Find(frame_ids_, hash)) return *known;
  frames_.clear();
  for (std::uint32_t f : frame_ids_) {
    Frame fr;
    if (!Spend(sizeof(Frame))) break;
    doc_.ForEachPair(f, [&](std::uint32_t key, std::uint32_t v) {
      switch (FrameKey(key)) {
        case 0:
          fr.name = StrId(v);
          break;
        case 1:
          fr.file = StrId(v);
          break;
        case 2:
          fr.line = AsInt(doc_, v, 0);
          break;
        default:
          break;
      }
    });
    frames_.push_back(fr);
  }
  // Stacks are interned by their frames' bytes, so the id a thread saw for these bytes is the
  // one Stacks::Intern returns (a dump whose frame dicts are not shared, one stack per entry,
  // would otherwise take the table's lock and build a key per entry).
  std::string_view bytes(reinterpret_cast<const char*>(frames_.data()),
                         frames_.size() * sizeof(Frame));
  std::uint32_t id = 0;
  if (auto known = local_stacks_.find(bytes); known != local_stacks_.end()) {
    id = known->second;
  } else {
    id = stacks_->Intern(frames_);
    if (id != 0) local_stacks_.emplace(std::string(bytes), id);
  }
  stack_cache_.Insert(frame_ids_, hash, id);
  return id;
}

// 0, 1, 2 for a frame's "name", "filename", "line", -1 for any other key; torch memoizes the
// three keys, so after the first frame of a dump this compares node ids, not text.
int DumpReader::FrameKey(std::uint32_t key) {
  for (int i = 0; i < 3; ++i) {
    if (frame_keys_[i] == key) return i;
  }
  std::string_view name = doc_.Text(key);
  int i = name == "name" ? 0 : name == "filename" ? 1 : name == "line" ? 2 : -1;
  if (i >= 0) frame_keys_[i] = key;
  return i;
}

// A 64-bit digest of the sizes and dtypes lists (ints, interned strings, nesting), so the shape
// string is rendered and interned once per distinct shape, not once per entry.
void DumpReader::Digest(std::uint32_t node, int depth, std::uint64_t* h) {
  auto mix = [h](std::uint64_t v) {
    *h = (*h ^ v) * 0x9e3779b97f4a7c15ull;
    *h ^= *h >> 29;
  };
  if (node == PickleDoc::kNotFound) return mix(1);
  // Each visit costs: a list of memo references to a list of memo references ... is small in the
  // file and huge when walked.
  if (!Spend(8)) return mix(7);
  const Node& n = doc_.at(node);
  switch (n.kind) {
    case Kind::kInt:
      mix(2);
      return mix(static_cast<std::uint64_t>(n.i));
    case Kind::kStr:
      mix(3);
      return mix(StrId(node));
    case Kind::kList:
    case Kind::kTuple:
      mix(4);
      if (depth <= 3) doc_.ForEachItem(node, [&](std::uint32_t c) { Digest(c, depth + 1, h); });
      return mix(5);
    default:
      return mix(6);
  }
}

void DumpReader::ExtractEntry(std::uint32_t dict, Entry* e) {
  std::uint32_t f[kFieldCount];
  std::fill(std::begin(f), std::end(f), PickleDoc::kNotFound);
  doc_.ForEachPair(dict, [&](std::uint32_t k, std::uint32_t v) {
    std::int8_t& field = key_field_[k];
    if (field == kUnset) {
      field = kSkip;
      std::string_view key = doc_.Text(k);
      for (int i = 0; i < kFieldCount; ++i) {
        if (key == kFieldNames[i]) field = static_cast<std::int8_t>(i);
      }
    }
    if (field >= 0) f[field] = v;
  });
  e->is_p2p = f[kIsP2p] != PickleDoc::kNotFound && AsInt(doc_, f[kIsP2p], 0) != 0;
  auto number = [&](Field k, std::int64_t fallback) {
    bool out_of_range = false;
    std::int64_t v = AsInt(doc_, f[k], fallback, &out_of_range);
    if (out_of_range && range_error_.empty()) {
      range_error_ = fmt::format("entries[{}].{} is out of range (not a 64-bit integer)", e->index,
                                 kFieldNames[k]);
    }
    return v;
  };
  e->seq = number(e->is_p2p ? kP2pSeq : kCollSeq, -1);
  e->t_created = number(kCreated, 0);
  e->t_started = number(kStarted, 0);
  e->t_completed = number(kCompleted, 0);
  e->op = StrId(f[kProfilingName]);
  std::uint32_t state = f[kState];
  e->state = state == PickleDoc::kNotFound ? State::kUnknown : StateOf(doc_.Text(state));
  // process_group is (name, desc); older dumps have only pg_id.
  std::uint32_t pg = f[kProcessGroup];
  std::uint32_t name = PickleDoc::kNotFound, desc = PickleDoc::kNotFound;
  int k = 0;
  doc_.ForEachItem(pg, [&](std::uint32_t c) { (k++ == 0 ? name : desc) = c; });
  std::uint32_t name_node = name != PickleDoc::kNotFound ? name : f[kPgId];
  e->pg = StrId(name_node);
  if (pg_seen_.count(e->pg) == 0) {
    const Node& nn = doc_.at(name_node == PickleDoc::kNotFound ? 0 : name_node);
    std::string text =
        nn.kind == Kind::kInt ? std::to_string(nn.i) : std::string(doc_.Text(name_node));
    pg_seen_[e->pg] = {text, desc == PickleDoc::kNotFound ? "" : std::string(doc_.Text(desc))};
  }
  gloo_ = gloo_ || doc_.Text(f[kProfilingName]).rfind("gloo:", 0) == 0;
  std::uint64_t h = 0;
  for (Field k : {kInSizes, kInDtypes, kOutSizes, kOutDtypes}) Digest(f[k], 0, &h);
  auto shape = shape_cache_.find(h);
  if (shape == shape_cache_.end()) {
    scratch_.clear();
    AppendRendered(f[kInSizes], 0, &scratch_);
    scratch_.push_back('|');
    AppendRendered(f[kInDtypes], 0, &scratch_);
    scratch_.push_back('|');
    AppendRendered(f[kOutSizes], 0, &scratch_);
    scratch_.push_back('|');
    AppendRendered(f[kOutDtypes], 0, &scratch_);
    shape = shape_cache_.emplace(h, local_.Get(scratch_)).first;
  }
  e->shape = shape->second;
  e->frames = StackId(f[kFrames]);
}

Status DumpReader::ExtractEntries(std::uint32_t list, RankDump* out) {
  const Node& n = doc_.at(list);
  if (n.kind != Kind::kList) return MakeError("\"entries\" is not a list");
  out->entries.reserve(n.count);
  std::uint32_t index = 0;
  Status bad = OkStatus();
  doc_.ForEachItem(list, [&](std::uint32_t item) {
    if (!bad) return;
    if (doc_.at(item).kind != Kind::kDict) {
      bad = MakeError(fmt::format("entries[{}] is not a dict", index));
      return;
    }
    if (!Spend(sizeof(Entry))) {
      bad = BudgetError();
      return;
    }
    Entry e;
    e.index = index++;
    ExtractEntry(item, &e);
    if (!range_error_.empty()) {
      bad = MakeError(range_error_);
      return;
    }
    out->entries.push_back(e);
  });
  if (bad && spent_ > budget_) return BudgetError();
  return bad;
}

void DumpReader::RegisterPgs(std::uint32_t config) {
  for (const auto& [id, seen] : pg_seen_) {
    const std::string& name = seen.first;
    if (pgs_->Has(name)) continue;
    std::uint32_t c = doc_.Find(config, name);
    // A Gloo dump keys its only group by '' while the entries call it '0'.
    if (c == PickleDoc::kNotFound && doc_.at(config).count == 1) c = doc_.Find(config, "");
    if (c == PickleDoc::kNotFound || doc_.at(c).kind != Kind::kDict) continue;
    std::uint32_t ranks = doc_.Find(c, "ranks");
    std::vector<int> list;
    std::string_view text;
    if (ranks != PickleDoc::kNotFound && doc_.at(ranks).kind == Kind::kStr) {
      text = doc_.Text(ranks);
    } else if (ranks != PickleDoc::kNotFound) {
      // Only ranks: an item that is not one (a list that holds itself through the memo, a
      // string, a number past 2^24) makes the members unknown rather than "rank -1", which
      // would stand for a member no dump can match and hide what the others show.
      bool valid = true;
      doc_.ForEachItem(ranks, [&](std::uint32_t r) {
        const Kind k = doc_.at(r).kind;
        const std::int64_t v = k == Kind::kInt ? doc_.at(r).i : -1;
        if (v < 0 || v > (1 << 24)) valid = false;
        if (valid) list.push_back(static_cast<int>(v));
      });
      if (!valid) list.clear();
    }
    std::uint32_t d = doc_.Find(c, "desc");
    std::string desc = d != PickleDoc::kNotFound && !doc_.Text(d).empty()
                           ? std::string(doc_.Text(d))
                           : seen.second;
    pgs_->Add(name, desc, text, list);
  }
}

Result<RankDump> DumpReader::Extract() {
  key_field_.assign(doc_.size(), kUnset);
  str_id_.assign(doc_.size(), kNoId);
  stack_cache_.Clear();  // keyed on this file's node ids
  frame_keys_[0] = frame_keys_[1] = frame_keys_[2] = kNoId;
  std::uint32_t root = doc_.root();
  if (doc_.at(root).kind != Kind::kDict) return MakeError("the dump is not a dict");
  // "{path: dump}", as the fixtures' decoded.json wraps it.
  if (doc_.Find(root, "entries") == PickleDoc::kNotFound && doc_.at(root).count == 1) {
    doc_.ForEachPair(root, [&](std::uint32_t, std::uint32_t v) {
      if (doc_.at(v).kind == Kind::kDict) root = v;
    });
  }
  RankDump out;
  out.version = std::string(doc_.Text(doc_.Find(root, "version")));
  out.comm_lib = std::string(doc_.Text(doc_.Find(root, "comm_lib_version")));
  std::uint32_t entries = doc_.Find(root, "entries");
  if (entries == PickleDoc::kNotFound) {
    return MakeError(
        fmt::format("no \"entries\" list: not a Flight Recorder dump, or a version "
                    "this reader does not know (version \"{}\")",
                    out.version));
  }
  pg_seen_.clear();
  gloo_ = false;
  auto st = ExtractEntries(entries, &out);
  if (!st) return st.error();
  if (spent_ > budget_) return BudgetError();
  out.gloo = gloo_;
  std::uint32_t config = doc_.Find(root, "pg_config");
  if (config != PickleDoc::kNotFound && doc_.at(config).kind == Kind::kDict) RegisterPgs(config);
  std::uint32_t status = doc_.Find(root, "pg_status");
  doc_.ForEachPair(status, [&](std::uint32_t k, std::uint32_t v) {
    PgStatus s;
    s.pg = StrId(k);
    s.enqueued = AsInt(doc_, doc_.Find(v, "last_enqueued_collective"), -1);
    s.started = AsInt(doc_, doc_.Find(v, "last_started_collective"), -1);
    s.completed = AsInt(doc_, doc_.Find(v, "last_completed_collective"), -1);
    out.status.push_back(s);
  });
  return out;
}

}  // namespace sl::diagnose::fr
