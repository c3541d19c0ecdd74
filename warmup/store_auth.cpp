#include "warmup/store_auth.h"

#include <dlfcn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>

#include "common/log.h"
#include "common/strings.h"

// CMake passes the file it found (warmup/CMakeLists.txt); a plain-compiler build gets OpenSSL 3's.
#ifndef SL_LIBCRYPTO_SONAME
#define SL_LIBCRYPTO_SONAME "libcrypto.so.3"
#endif
#ifndef SL_LIBCRYPTO_PATH
#define SL_LIBCRYPTO_PATH SL_LIBCRYPTO_SONAME
#endif

namespace sl::warmup {
namespace {

// libcrypto is loaded on first use, not linked: linked, its relocations and pages cost every
// `run` at start-up (about 2.5M instructions and 1.5 MiB of RSS) though only the warm-up signs.
struct Crypto {
  decltype(&HMAC) hmac = nullptr;
  decltype(&EVP_sha256) sha256 = nullptr;
  decltype(&CRYPTO_memcmp) memcmp = nullptr;
  bool ok() const { return hmac != nullptr && sha256 != nullptr && memcmp != nullptr; }
};

const Crypto& LoadCrypto() {
  static const Crypto kCrypto = [] {
    Crypto c;
    // The soname first (found where the node keeps it), then the file the build found.
    void* lib = ::dlopen(SL_LIBCRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) lib = ::dlopen(SL_LIBCRYPTO_PATH, RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      c.hmac = reinterpret_cast<decltype(&HMAC)>(::dlsym(lib, "HMAC"));
      c.sha256 = reinterpret_cast<decltype(&EVP_sha256)>(::dlsym(lib, "EVP_sha256"));
      c.memcmp = reinterpret_cast<decltype(&CRYPTO_memcmp)>(::dlsym(lib, "CRYPTO_memcmp"));
    }
    if (!c.ok()) {
      const char* why = ::dlerror();
      log::Error("cannot load OpenSSL's libcrypto ({}: {}): warm-up store values cannot be signed",
                 SL_LIBCRYPTO_SONAME, why ? why : "HMAC/EVP_sha256/CRYPTO_memcmp missing");
    }
    return c;
  }();
  return kCrypto;
}

constexpr std::string_view kTagPrefix = "sl1.";
constexpr std::size_t kTagHexLen = 64;

std::string Hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 0xf]);
  }
  return out;
}

std::string TagOf(const std::string& key_hex, const std::string& full_key,
                  std::string_view payload) {
  std::string data = full_key;
  data.push_back('\0');
  data.append(payload);
  return HmacSha256Hex(key_hex, data);
}

}  // namespace

std::string HmacSha256Hex(std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  // One-shot HMAC(): not deprecated in OpenSSL 3 (the HMAC_CTX calls are).
  const Crypto& crypto = LoadCrypto();
  if (!crypto.ok()) return "";
  if (crypto.hmac(crypto.sha256(), key.data(), static_cast<int>(key.size()),
                  reinterpret_cast<const unsigned char*>(data.data()), data.size(), md.data(),
                  &len) == nullptr)
    return "";
  return Hex(md.data(), len);
}

WarmupAuth ResolveWarmupAuth(const Environment& env, int store_port) {
  WarmupAuth a;
  // The launch's id, as the run directory has it, so every node of one launch meets in one
  // namespace (mpirun inside an allocation: its ranks see different Slurm steps).
  const std::string id = LaunchId(env);
  if (id.empty())
    a.job_id = "port-" + std::to_string(store_port);
  else
    a.job_id = StartsWith(id, "mpi-") || id.find(".mpi-") != std::string::npos ? id : "slurm-" + id;
  std::string secret;
  if (auto s = Lookup(env, kWarmupSecretVar); s && !s->empty()) {
    secret = *s;
    a.source = std::string(kWarmupSecretVar);
  }
  a.key_hex = HmacSha256Hex(secret, "safe-launch-warmup/1 " + a.job_id);
  return a;
}

std::string SignValue(const std::string& key_hex, const std::string& full_key,
                      std::string_view payload) {
  std::string out(kTagPrefix);
  out += TagOf(key_hex, full_key, payload);
  out.push_back('.');
  out.append(payload);
  return out;
}

Result<std::string> VerifyValue(const std::string& key_hex, const std::string& full_key,
                                std::string_view value) {
  const std::size_t header = kTagPrefix.size() + kTagHexLen + 1;
  if (value.size() < header || value.substr(0, kTagPrefix.size()) != kTagPrefix ||
      value[header - 1] != '.')
    return MakeError("'" + full_key + "' carries no tag (written by something other than a " +
                     "safe-launch warm-up rank of this job)");
  std::string_view payload = value.substr(header);
  std::string want = TagOf(key_hex, full_key, payload);
  std::string_view got = value.substr(kTagPrefix.size(), kTagHexLen);
  // Constant time: the comparison must not tell a prober how much of a forged tag was right.
  if (want.size() != got.size() || LoadCrypto().memcmp(want.data(), got.data(), got.size()) != 0)
    return MakeError("'" + full_key + "' has a tag made with another key (a process without " +
                     "this job's " + std::string(kWarmupSecretVar) + ", or another job)");
  return std::string(payload);
}

std::string AuthStore::FullKey(const std::string& key) const {
  return "sl-warmup/" + auth_.job_id + "/" + key;
}

Status AuthStore::Set(const std::string& key, std::string_view payload) {
  std::string full = FullKey(key);
  return inner_.Set(full, SignValue(auth_.key_hex, full, payload));
}

Result<AuthStore::Value> AuthStore::Get(const std::string& key) {
  std::string full = FullKey(key);
  auto has = inner_.Check({full});
  if (!has.ok()) return has.error();
  if (!*has) return Value{};
  auto v = inner_.Get(full);
  if (!v.ok()) return v.error();
  auto payload = VerifyValue(auth_.key_hex, full, *v);
  if (!payload.ok()) return Value{Value::State::kRefused, payload.error().message};
  return Value{Value::State::kValid, std::move(*payload)};
}

Result<bool> AuthStore::HasAll(const std::vector<std::string>& keys) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const auto& k : keys) full.push_back(FullKey(k));
  return inner_.Check(full);
}

Result<std::int64_t> AuthStore::Add(const std::string& key, std::int64_t delta) {
  return inner_.Add(FullKey(key), delta);
}

}  // namespace sl::warmup
