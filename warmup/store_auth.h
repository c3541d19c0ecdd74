#pragma once
// Who may speak in the warm-up store. c10d's TCPStore has no authentication: any process that
// reaches node 0's port can write "verdict" or answer for a node. So every key the warm-up uses
// lives under the job's namespace, and every value carries an HMAC-SHA256 tag over the full key
// and the value, keyed by a per-job key derived from a secret the job's nodes share
// (SAFE_LAUNCH_WARMUP_SECRET). A value without a valid tag is refused and named, never believed.
// Without a secret the key is derived from the job id alone: that still refuses another job's
// writes and hand-set plain keys, but not a deliberate impostor, and the launcher warns.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/environment.h"
#include "common/result.h"
#include "warmup/kv_store.h"

namespace sl::warmup {

/// The environment variable holding the job's shared warm-up secret.
inline constexpr std::string_view kWarmupSecretVar = "SAFE_LAUNCH_WARMUP_SECRET";

/// How this node's warm-up authenticates the store (travels to the ranks in the plan, 0600).
struct WarmupAuth {
  std::string job_id;   ///< namespace of every key: "slurm-<job>.<step>", mpirun's
                        ///< "[<job>.]mpi-<ns>" (LaunchId) or "port-<P>"
  std::string key_hex;  ///< HMAC key, hex; never the secret itself
  std::string source;   ///< where the secret came from: kWarmupSecretVar, or "" (none)
  bool Authenticated() const { return !source.empty(); }
};

/// Job id from Slurm (SLURM_JOB_ID, plus SLURM_STEP_ID when set: steps of one job must not read
/// each other's keys), else the store port (the one value every node of a manual job shares);
/// key = HMAC-SHA256(secret, "safe-launch-warmup/1 " + job id).
WarmupAuth ResolveWarmupAuth(const Environment& env, int store_port);

/// HMAC-SHA256 (OpenSSL libcrypto, loaded on first call) of `data` under `key`, lower-case hex;
/// "" when libcrypto cannot be loaded (logged once).
std::string HmacSha256Hex(std::string_view key, std::string_view data);

/// "sl1.<tag hex>.<payload>", tag = HMAC(key, full_key + '\0' + payload): binding the key name
/// stops a tagged value being replayed under another key (one rank's result as another's).
std::string SignValue(const std::string& key_hex, const std::string& full_key,
                      std::string_view payload);
/// The payload when `value` carries a valid tag for `full_key`; else an Error saying why.
Result<std::string> VerifyValue(const std::string& key_hex, const std::string& full_key,
                                std::string_view value);

/// The warm-up's view of the store: namespaced keys, tagged values.
class AuthStore {
 public:
  AuthStore(KvStore& inner, WarmupAuth auth) : inner_(inner), auth_(std::move(auth)) {}

  /// "sl-warmup/<job id>/<key>".
  std::string FullKey(const std::string& key) const;
  Status Set(const std::string& key, std::string_view payload);
  /// A key as read: absent, a payload with a valid tag, or refused (with the reason).
  struct Value {
    enum class State { kAbsent, kValid, kRefused } state = State::kAbsent;
    std::string text;  ///< the payload (kValid) or why it was refused (kRefused)
  };
  /// An Error only when the store itself failed; a value without a valid tag is kRefused,
  /// which the caller names and never trusts.
  Result<Value> Get(const std::string& key);
  /// True when every key is present (tags are checked by Get, not here); never blocks.
  Result<bool> HasAll(const std::vector<std::string>& keys);
  /// Counters cannot carry a tag (TCPStore adds integers): used only as hints (wake-ups, a
  /// second claimant of a rank), never as proof that a rank arrived.
  Result<std::int64_t> Add(const std::string& key, std::int64_t delta);
  const WarmupAuth& Auth() const { return auth_; }

 private:
  KvStore& inner_;
  WarmupAuth auth_;
};

}  // namespace sl::warmup
