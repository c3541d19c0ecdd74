#pragma once
// A fact about the node with its evidence: the value, the node path it was read from and the raw
// text (the line or value as read, printable), or why it could not be read. Checks decide on
// facts and quote `path`/`raw` as evidence instead of reading the file again.
//
// One small template rather than per-struct path/raw fields: every source (a limits row, a
// sysctl, a config space) needs the same three things plus the error, and checks render them the
// same way. Unlike Result<T> it keeps `raw` next to an error too (a malformed value is evidence).
#include <optional>
#include <string>
#include <utility>

#include "common/result.h"

namespace sl {

template <typename T>
struct Fact {
  std::optional<T> value;  ///< absent when the source could not be read or parsed
  std::string path;        ///< node path ("/proc/self/limits"), or a call ("statvfs(/dev/shm)")
  std::string raw;         ///< the line/value as read (printable); may be set with an error
  Error error = MakeError("not gathered");  ///< why `value` is absent (where = host path)
  bool unreadable = true;  ///< the error is a failed read (vs. content that did not parse)
  /// Nothing at all is at `path` (PathAbsent): the source does not exist on this node, which a
  /// check may read as "none". Any other failed read is an error, never "empty".
  bool absent = false;

  bool ok() const { return value.has_value(); }
  const T& operator*() const { return *value; }
  const T* operator->() const { return &*value; }

  static Fact Of(T v, std::string path, std::string raw) {
    Fact f;
    f.value = std::move(v);
    f.path = std::move(path);
    f.raw = std::move(raw);
    f.error = {};
    f.unreadable = false;
    return f;
  }
  static Fact Unreadable(std::string path, Error e) {
    Fact f;
    f.path = std::move(path);
    f.error = std::move(e);
    f.unreadable = true;
    return f;
  }
  static Fact Absent(std::string path, Error e) {
    Fact f = Unreadable(std::move(path), std::move(e));
    f.absent = true;
    return f;
  }
  static Fact Malformed(std::string path, std::string raw, Error e) {
    Fact f;
    f.path = std::move(path);
    f.raw = std::move(raw);
    f.error = std::move(e);
    f.unreadable = false;
    return f;
  }
};

}  // namespace sl
