#include "watchdog/hang/redact.h"

#include <catch2/catch.hpp>

using namespace sl::hang;

TEST_CASE("secret-looking names are recognised by their parts") {
  CHECK(IsSecretName("HF_TOKEN"));
  CHECK(IsSecretName("WANDB_API_KEY"));
  CHECK(IsSecretName("AWS_SECRET_ACCESS_KEY"));
  CHECK(IsSecretName("--api-key"));
  CHECK(IsSecretName("--token"));
  CHECK(IsSecretName("DB_PASSWORD"));
  CHECK_FALSE(IsSecretName("--max-tokens"));
  CHECK_FALSE(IsSecretName("TOKENIZERS_PARALLELISM"));
  CHECK_FALSE(IsSecretName("NCCL_IB_HCA"));
}

TEST_CASE("values of secret variables disappear everywhere, the rest stays") {
  sl::Environment env{{"HF_TOKEN", "hf_abcdefSECRET123"},
                      {"PATH", "/usr/bin"},
                      {"WANDB_API_KEY", "0123456789abcdef"},
                      {"NCCL_DEBUG", "INFO"}};
  Redactor r(env);
  std::string out =
      r.Redact("token hf_abcdefSECRET123 printed; key=0123456789abcdef PATH=/usr/bin");
  CHECK(out.find("hf_abcdefSECRET123") == std::string::npos);
  CHECK(out.find("0123456789abcdef") == std::string::npos);
  CHECK(out.find("PATH=/usr/bin") != std::string::npos);
}

TEST_CASE("NAME=VALUE, JSON and --flag VALUE forms are redacted without knowing the value") {
  Redactor r;
  CHECK(r.Redact("MY_SERVICE_TOKEN=abc12345 other") == "MY_SERVICE_TOKEN=<redacted> other");
  CHECK(r.Redact("\"AWS_SECRET_ACCESS_KEY\": \"zzzzzzzz\"") ==
        "\"AWS_SECRET_ACCESS_KEY\": \"<redacted>\"");
  CHECK(r.Redact("python train.py --api-key sk-live-999 --lr 3") ==
        "python train.py --api-key <redacted> --lr 3");
  CHECK(r.Redact("python train.py --token=t0k3n123") == "python train.py --token=<redacted>");
  CHECK(r.Redact("--max-tokens 512") == "--max-tokens 512");
}

TEST_CASE("argv values after secret flags are learned and scrubbed from other text") {
  Redactor r;
  auto argv = r.RedactArgv({"python", "job.py", "--api-key", "sk-planted-4242", "--epochs", "3"});
  CHECK(argv[3] == "<redacted>");
  CHECK(argv[5] == "3");
  CHECK(r.Redact("the job echoed sk-planted-4242 to stdout") ==
        "the job echoed <redacted> to stdout");
  // /proc/<pid>/environ is NUL-separated.
  std::string environ = std::string("A=1\0HF_TOKEN=hf_zz99\0B=2\0", 24);
  CHECK(r.Redact(environ).find("hf_zz99") == std::string::npos);
}
