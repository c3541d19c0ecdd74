#pragma once
// The variable registry: every NCCL / PyTorch distributed variable safe-launch sets or lints, as
// data (one table in registry.cpp, like NCCL's NCCL_PARAM declarations). Used by recipe
// validation, resolution and the preflight env.nccl lint.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/result.h"
#include "nccl/version.h"

namespace sl::nccl {

enum class VarType {
  kInt,       ///< decimal integer within [min, max]
  kBool,      ///< 0/1 (NCCL reads integers; only 0 and 1 are meaningful)
  kEnum,      ///< one of `values` ('|'-separated, case-insensitive as NCCL reads them)
  kIbHca,     ///< NCCL_IB_HCA syntax (nccl/name_filter.h)
  kIfname,    ///< NCCL_SOCKET_IFNAME syntax
  kString,    ///< free text (paths, lists NCCL parses itself)
  kHostPort,  ///< "host:port" (NCCL_RAS_ADDR)
};

/// Whether a variable's value may differ between the nodes of one job (the warm-up's
/// cross-node comparison, warmup/compare.cpp, asks VariableScope).
enum class Scope {
  kJobWide,    ///< should be the same everywhere: a difference is a warning
  kMustMatch,  ///< nodes speak different protocols or transports when it differs: a failure
  kPerHost,    ///< names a per-host file or identity: never compared
};

struct VarSpec {
  std::string_view name;
  VarType type;
  std::string_view values;         ///< kEnum: "VERSION|WARN|INFO|TRACE"; else ""
  std::int64_t min = 0, max = 0;   ///< kInt: accepted range (inclusive)
  std::string_view default_value;  ///< what NCCL/torch uses when unset ("" = none / computed)
  std::string_view meaning;        ///< one line
  std::string_view owner;          ///< "nccl" or "torch"
  std::optional<Version> since;    ///< first version of `owner` that reads it
  std::optional<Version> until;    ///< first version that no longer reads it (exclusive)
  /// Deprecated alias: this name was renamed to `replaced_by` in `owner` version `renamed_in`
  /// (the old name is still read, with a warning, from then on).
  std::string_view replaced_by;
  std::optional<Version> renamed_in;
  Scope scope = Scope::kJobWide;  ///< across the nodes of one job
};

/// All registered variables.
std::span<const VarSpec> Variables();
/// Exact lookup; nullptr when not registered.
const VarSpec* FindVariable(std::string_view name);
/// True for names the lint covers: NCCL_*, TORCH_NCCL_*, TORCH_FR_*.
bool IsLintedName(std::string_view name);
/// The scope of a variable, registered or not: a name holding "RANK" and the per-host torch
/// directories (TORCH_COMPILE_DEBUG_DIR, TORCHINDUCTOR_CACHE_DIR) are per host too.
Scope VariableScope(std::string_view name);
/// Closest registered name ("" when nothing is close), for "did you mean".
std::string SuggestVariable(std::string_view name);
/// Checks `value` against the spec; the error names the variable, the value and the range or
/// accepted values.
Status ValidateValue(const VarSpec& spec, std::string_view value);
/// "integer 0..1", "one of VERSION, WARN, INFO, TRACE", ... for messages and docs.
std::string DescribeAccepted(const VarSpec& spec);
/// Whether `spec` is read by the given version of its owner (unknown version: true).
bool AppliesTo(const VarSpec& spec, const std::optional<Version>& owner_version);
/// The name the given torch/NCCL version reads for a variable known under either its old or new
/// name (e.g. TORCH_FR_BUFFER_SIZE -> TORCH_NCCL_TRACE_BUFFER_SIZE for torch < 2.9).
std::string NameFor(std::string_view name, const Versions& versions);
/// A value the old name `name` (as NameFor gave it) does not understand, rewritten to the one it
/// does, with `why` set ("; torch 2.1.0 has no mode 3 ..."); nullopt when `value` is fine.
/// NCCL_ASYNC_ERROR_HANDLING=3 (SkipCleanUp came with the TORCH_NCCL_ name in torch 2.2) -> 1.
std::optional<std::string> ValueForOldName(std::string_view name, std::string_view value,
                                           const Versions& versions, std::string* why);

}  // namespace sl::nccl
