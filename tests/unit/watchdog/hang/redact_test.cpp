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

TEST_CASE("an Authorization header loses its credential, not only the scheme word") {
  Redactor r;
  CHECK(r.Redact("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig") ==
        "Authorization: Bearer <redacted>");
  CHECK(r.Redact("curl -H 'authorization: basic dXNlcjpwYXNzd29yZA=='") ==
        "curl -H 'authorization: basic <redacted>'");
  CHECK(r.Redact("{\"Authorization\": \"Bearer abcdefgh12345678\"}") ==
        "{\"Authorization\": \"Bearer <redacted>\"}");
  // A bearer token with no header name before it.
  CHECK(r.Redact("retrying with bearer abcdefgh12345678 now") ==
        "retrying with bearer <redacted> now");
  CHECK(r.Redact("the bearer of bad news") == "the bearer of bad news");
}

TEST_CASE("passwords in URL user-info are redacted, the user and host stay") {
  Redactor r;
  CHECK(r.Redact("git clone https://alice:s3cr3t-pw@git.example.com/repo.git") ==
        "git clone https://alice:<redacted>@git.example.com/repo.git");
  CHECK(r.Redact("DATABASE=postgres://svc:p%40ss@db:5432/x") ==
        "DATABASE=postgres://svc:<redacted>@db:5432/x");
  CHECK(r.Redact("http://host:8080/path and http://h:1 mail a@b") ==
        "http://host:8080/path and http://h:1 mail a@b");
}

TEST_CASE("*_PASS and *_PWD names are secret, PWD alone is the working directory") {
  CHECK(IsSecretName("DB_PASS"));
  CHECK(IsSecretName("MYSQL_PWD"));
  CHECK(IsSecretName("--db-pass"));
  CHECK_FALSE(IsSecretName("PWD"));
  CHECK_FALSE(IsSecretName("OLDPWD"));
  CHECK_FALSE(IsSecretName("NCCL_BYPASS_X"));
  Redactor r(sl::Environment{{"SMTP_PASS", "mail-pass-1"}, {"PWD", "/home/u/proj"}});
  CHECK(r.Redact("login mail-pass-1 in /home/u/proj") == "login <redacted> in /home/u/proj");
  CHECK(r.Redact("MYSQL_PWD=abcd1234 mysql") == "MYSQL_PWD=<redacted> mysql");
}

TEST_CASE("well-known token shapes are redacted wherever they appear") {
  Redactor r;
  const std::string ghp = "ghp_" + std::string(36, 'a');
  CHECK(r.Redact("token " + ghp + " printed") == "token <redacted> printed");
  CHECK(r.Redact("hf_abcdefghijklmnopqrstuvwxyz0123") == "<redacted>");
  CHECK(r.Redact("key=sk-proj-abcdefghijklmnopqrstuv") == "key=<redacted>");
  CHECK(r.Redact("slack xoxb-1234567890-abcdefghij done") == "slack <redacted> done");
  CHECK(r.Redact("aws AKIAIOSFODNN7EXAMPLE,") == "aws <redacted>,");
  CHECK(r.Redact("github_pat_11ABCDEFG0123456789_abcdefXYZ") == "<redacted>");
  CHECK(r.Redact("glpat-abcdefghij0123456789") == "<redacted>");
  // Identifiers that share a prefix are not tokens.
  CHECK(r.Redact("from huggingface_hub import hf_hub_download") ==
        "from huggingface_hub import hf_hub_download");
  CHECK(r.Redact("pip install sk-learn; task-ghp_x") == "pip install sk-learn; task-ghp_x");
  CHECK(r.Redact("AKIAIOSFODNN7EXAMPLEX1") == "AKIAIOSFODNN7EXAMPLEX1");
}

TEST_CASE("redacting JSON text keeps it valid: escapes, numbers and braces are not eaten") {
  Redactor r;
  CHECK(r.Redact(R"({"cmd": "echo \"Authorization: Bearer abcdefgh12345678\" >&2"})") ==
        R"({"cmd": "echo \"Authorization: Bearer <redacted>\" >&2"})");
  CHECK(r.Redact(R"({"API_KEY": 12345678})") == R"({"API_KEY": "<redacted>"})");
  CHECK(r.Redact(R"({"TOKEN": "a\"bcdef"})") == R"({"TOKEN": "<redacted>"})");
  CHECK(r.Redact(R"({"auth": {"user": "u"}, "TOKEN": null})") ==
        R"({"auth": {"user": "u"}, "TOKEN": null})");
}
