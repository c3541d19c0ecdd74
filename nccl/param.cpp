#include "nccl/param.h"

#include <cerrno>
#include <cstdlib>

namespace sl::nccl {

long long IntParam(const Environment& env, const char* name, long long deflt) {
  auto v = Lookup(env, name);
  if (!v || v->empty()) return deflt;
  errno = 0;
  long long out = std::strtoll(v->c_str(), nullptr, 0);
  return errno ? deflt : out;
}

}  // namespace sl::nccl
