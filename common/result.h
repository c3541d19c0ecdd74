#pragma once
// Errors are values: every fallible function returns Result<T>; nothing throws across modules.
#include <string>
#include <utility>
#include <variant>

namespace sl {

/// What went wrong, where (file, line, entity) and what to do about it.
struct Error {
  std::string message;  ///< what failed, one sentence
  std::string where;    ///< file path, "file:line:col", or entity such as "mlx5_0:1"
  std::string fix;      ///< next step for the user; may be empty

  /// "where: message (fix: ...)" for logs.
  std::string Describe() const {
    std::string out = where.empty() ? message : where + ": " + message;
    if (!fix.empty()) out += " (fix: " + fix + ")";
    return out;
  }
};

inline Error MakeError(std::string message, std::string where = {}, std::string fix = {}) {
  return Error{std::move(message), std::move(where), std::move(fix)};
}

/// A value or an Error.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }
  T value_or(T fallback) const { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Error> v_;
};

/// Result for operations with nothing to return.
struct Ok {};
using Status = Result<Ok>;
inline Status OkStatus() { return Ok{}; }

}  // namespace sl
