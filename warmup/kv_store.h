#pragma once
// The store every warm-up rank shares (a c10d::TCPStore hosted by global rank 0), as an
// interface: the libtorch binding is in warmup/torch/, the authenticated view over it in
// warmup/store_auth.h, and tests use an in-memory one. Torch-free.
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace sl::warmup {

/// Key-value store shared by all ranks. Keys and values are plain: anyone who can connect may
/// read or write any key (c10d's TCPStore has no authentication), hence AuthStore.
class KvStore {
 public:
  virtual ~KvStore() = default;
  virtual Status Set(const std::string& key, const std::string& value) = 0;
  /// Only called for keys Check() reported present, so it does not block.
  virtual Result<std::string> Get(const std::string& key) = 0;
  /// True when every key exists; never blocks.
  virtual Result<bool> Check(const std::vector<std::string>& keys) = 0;
  virtual Result<std::int64_t> Add(const std::string& key, std::int64_t delta) = 0;
};

}  // namespace sl::warmup
