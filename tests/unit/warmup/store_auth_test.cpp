#include "warmup/store_auth.h"

#include <catch2/catch.hpp>
#include <map>

using sl::warmup::AuthStore;
using sl::warmup::HmacSha256Hex;
using sl::warmup::KvStore;
using sl::warmup::ResolveWarmupAuth;
using sl::warmup::SignValue;
using sl::warmup::VerifyValue;
using State = sl::warmup::AuthStore::Value::State;

namespace {

// The store as every process reaching node 0's port sees it: plain keys, anyone may write.
class MemKvStore final : public KvStore {
 public:
  sl::Status Set(const std::string& key, const std::string& value) override {
    kv[key] = value;
    return sl::Ok{};
  }
  sl::Result<std::string> Get(const std::string& key) override { return kv.at(key); }
  sl::Result<bool> Check(const std::vector<std::string>& keys) override {
    for (const auto& k : keys)
      if (!kv.count(k)) return false;
    return true;
  }
  sl::Result<std::int64_t> Add(const std::string& key, std::int64_t delta) override {
    return counters[key] += delta;
  }
  std::map<std::string, std::string> kv;
  std::map<std::string, std::int64_t> counters;
};

}  // namespace

TEST_CASE("HMAC-SHA256 matches RFC 4231 test case 2") {
  CHECK(HmacSha256Hex("Jefe", "what do ya want for nothing?") ==
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST_CASE("the key comes from the shared secret and the Slurm job step, never the secret itself") {
  auto a = ResolveWarmupAuth(
      {{"SAFE_LAUNCH_WARMUP_SECRET", "s3cret"}, {"SLURM_JOB_ID", "42"}, {"SLURM_STEP_ID", "3"}},
      29501);
  CHECK(a.Authenticated());
  CHECK(a.source == "SAFE_LAUNCH_WARMUP_SECRET");
  CHECK(a.job_id == "slurm-42.3");
  CHECK(a.key_hex.size() == 64);
  CHECK(a.key_hex.find("s3cret") == std::string::npos);
  // Another step of the same job, another secret: other keys.
  auto step = ResolveWarmupAuth(
      {{"SAFE_LAUNCH_WARMUP_SECRET", "s3cret"}, {"SLURM_JOB_ID", "42"}, {"SLURM_STEP_ID", "4"}},
      29501);
  auto other = ResolveWarmupAuth(
      {{"SAFE_LAUNCH_WARMUP_SECRET", "other"}, {"SLURM_JOB_ID", "42"}, {"SLURM_STEP_ID", "3"}},
      29501);
  CHECK(step.key_hex != a.key_hex);
  CHECK(other.key_hex != a.key_hex);
  // Every node of a manual job derives the same one.
  auto manual = ResolveWarmupAuth({{"SAFE_LAUNCH_WARMUP_SECRET", "s3cret"}}, 29501);
  CHECK(manual.job_id == "port-29501");
  CHECK(manual.key_hex ==
        ResolveWarmupAuth({{"SAFE_LAUNCH_WARMUP_SECRET", "s3cret"}}, 29501).key_hex);
}

TEST_CASE("without a secret the store is marked unauthenticated") {
  auto a = ResolveWarmupAuth({{"SAFE_LAUNCH_WARMUP_SECRET", ""}}, 29501);
  CHECK_FALSE(a.Authenticated());
  CHECK(a.source.empty());
  CHECK(a.key_hex.size() == 64);
}

TEST_CASE("a signed value verifies only under its own key name and key") {
  std::string v = SignValue("k1", "sl-warmup/j/result/2", R"({"ok":true})");
  auto ok = VerifyValue("k1", "sl-warmup/j/result/2", v);
  REQUIRE(ok.ok());
  CHECK(*ok == R"({"ok":true})");
  // Replayed as another rank's result.
  CHECK_FALSE(VerifyValue("k1", "sl-warmup/j/result/3", v).ok());
  // Made with another job's key.
  auto other = VerifyValue("k2", "sl-warmup/j/result/2", v);
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().message.find("another key") != std::string::npos);
  // Payload changed after signing.
  std::string forged = v;
  forged.replace(forged.find("true"), 4, "fals");
  CHECK_FALSE(VerifyValue("k1", "sl-warmup/j/result/2", forged).ok());
  // Plain JSON, as any c10d client would set it.
  auto plain = VerifyValue("k1", "sl-warmup/j/verdict", R"({"run_collectives":true})");
  REQUIRE_FALSE(plain.ok());
  CHECK(plain.error().message.find("carries no tag") != std::string::npos);
  CHECK_FALSE(VerifyValue("k1", "sl-warmup/j/verdict", "").ok());
}

TEST_CASE("the store view namespaces keys and refuses pre-set or forged values") {
  MemKvStore raw;
  auto auth = ResolveWarmupAuth({{"SAFE_LAUNCH_WARMUP_SECRET", "s3cret"}}, 29501);
  AuthStore store(raw, auth);
  REQUIRE(store.Set("verdict", R"({"run_collectives":true})").ok());
  CHECK(raw.kv.count("sl-warmup/port-29501/verdict") == 1);
  CHECK(raw.kv.count("verdict") == 0);
  auto got = store.Get("verdict");
  REQUIRE(got.ok());
  CHECK(got->state == State::kValid);
  CHECK(got->text == R"({"run_collectives":true})");

  auto absent = store.Get("report");
  REQUIRE(absent.ok());
  CHECK(absent->state == State::kAbsent);

  // Someone sets the report by hand, and another writer signs with its own secret.
  raw.kv["sl-warmup/port-29501/report"] = R"({"verdict":"pass"})";
  auto preset = store.Get("report");
  REQUIRE(preset.ok());
  CHECK(preset->state == State::kRefused);
  CHECK(preset->text.find("sl-warmup/port-29501/report") != std::string::npos);
  AuthStore impostor(raw, ResolveWarmupAuth({{"SAFE_LAUNCH_WARMUP_SECRET", "guess"}}, 29501));
  REQUIRE(impostor.Set("facts/1", "{}").ok());
  auto forged = store.Get("facts/1");
  REQUIRE(forged.ok());
  CHECK(forged->state == State::kRefused);
  CHECK(forged->text.find("SAFE_LAUNCH_WARMUP_SECRET") != std::string::npos);

  CHECK(*store.Add("claims/1", 1) == 1);
  CHECK(raw.counters["sl-warmup/port-29501/claims/1"] == 1);
  CHECK(*store.HasAll({"verdict", "report"}));
  CHECK_FALSE(*store.HasAll({"verdict", "result/0"}));
}

TEST_CASE("mpirun's ranks in the batch step and in their daemon's srun step share one key") {
  // mpirun inside an allocation: ranks on the first node run in the batch step (no
  // SLURM_STEP_ID), the others under the srun that started their daemon (step 0).
  sl::Environment batch{{"SAFE_LAUNCH_WARMUP_SECRET", "s3cret"},
                        {"SLURM_JOB_ID", "42"},
                        {"OMPI_COMM_WORLD_SIZE", "2"},
                        {"PMIX_NAMESPACE", "1059651585"}};
  sl::Environment stepped = batch;
  stepped["SLURM_STEP_ID"] = "0";
  auto a = ResolveWarmupAuth(batch, 29501);
  auto b = ResolveWarmupAuth(stepped, 29501);
  CHECK(a.job_id == "42.mpi-1059651585");
  CHECK(a.key_hex == b.key_hex);
  // Another mpirun of the same allocation: another namespace, another key.
  stepped["PMIX_NAMESPACE"] = "1059651586";
  CHECK(ResolveWarmupAuth(stepped, 29501).key_hex != a.key_hex);
}
