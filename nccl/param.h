#pragma once
// How NCCL reads its integer parameters (src/misc/param.cc, ncclLoadParam / NCCL_PARAM, all
// releases 2.10 -> 2.28): strtoll(value, NULL, 0), so "0x10" is 16, "1abc" is 1 (trailing junk
// ignored), an empty value means "unset", and an out-of-range value falls back to the default.
#include "common/environment.h"

namespace sl::nccl {

/// The value NCCL would use for integer parameter `name` in `env`, or `deflt` when unset/empty
/// or out of range.
long long IntParam(const Environment& env, const char* name, long long deflt);

}  // namespace sl::nccl
