#include "watchdog/hang/redact.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/json_text.h"

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

TEST_CASE("every row of the pattern table redacts its example") {
  Redactor r;
  for (const RedactionPattern& p : RedactionPatterns()) {
    DYNAMIC_SECTION(p.id) {
      const std::string out = r.Redact(p.example);
      INFO(out);
      CHECK(out.find(p.secret) == std::string::npos);
      CHECK(out.find("<redacted>") != std::string::npos);
    }
  }
}

TEST_CASE("name classes: SSHPASS, *_CREDS, GH_PAT are secrets, PATH, AUTHOR, BYPASS are not") {
  CHECK(IsSecretName("SSHPASS"));
  CHECK(IsSecretName("GOOGLE_APPLICATION_CREDS"));
  CHECK(IsSecretName("GH_PAT"));
  CHECK(IsSecretName("OAUTH_TOKEN"));
  CHECK(IsSecretName("CLIENT_SECRETS"));
  CHECK_FALSE(IsSecretName("PATH"));
  CHECK_FALSE(IsSecretName("LD_LIBRARY_PATH"));
  CHECK_FALSE(IsSecretName("GIT_AUTHOR_NAME"));
  CHECK_FALSE(IsSecretName("NCCL_BYPASS_X"));
  CHECK_FALSE(IsSecretName("TOKENIZERS_PARALLELISM"));
}

TEST_CASE("key = value with spaces loses its value, a comparison does not") {
  Redactor r;
  CHECK(r.Redact("aws_secret_access_key = wJalrXUtnFEMI") == "aws_secret_access_key = <redacted>");
  CHECK(r.Redact("if key == other:") == "if key == other:");
}

TEST_CASE("a DSN-style URL with the key as its user loses the key, the host stays") {
  Redactor r;
  CHECK(r.Redact("SENTRY_DSN https://abc123def456@o1.ingest.sentry.io/5") ==
        "SENTRY_DSN https://<redacted>@o1.ingest.sentry.io/5");
}

TEST_CASE("a PEM private key block loses its body across lines, a certificate keeps it") {
  Redactor r;
  const std::string key =
      "a\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\nZZZZsecond\n"
      "-----END OPENSSH PRIVATE KEY-----\nafter\n";
  const std::string out = r.Redact(key);
  CHECK(out.find("b3BlbnNzaC1rZXktdjEAAAA") == std::string::npos);
  CHECK(out.find("ZZZZsecond") == std::string::npos);
  CHECK(out.find("after") != std::string::npos);
  CHECK(r.Redact("-----BEGIN PRIVATE KEY-----\ncut off here") ==
        "-----BEGIN PRIVATE KEY-----\n<redacted>\n");
  const std::string cert = "-----BEGIN CERTIFICATE-----\nMIIBpublic\n-----END CERTIFICATE-----\n";
  CHECK(r.Redact(cert) == cert);
}

TEST_CASE("a JWT is redacted by its shape, a dotted identifier is not") {
  Redactor r;
  CHECK(r.Redact("t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig_nature-1 end") ==
        "t=<redacted> end");
  CHECK(r.Redact("module eyJsomething.attr") == "module eyJsomething.attr");
}

TEST_CASE("netrc's password keyword loses its value, prose about a password does not") {
  Redactor r;
  CHECK(r.Redact("machine h login u password pw-netrc-1") ==
        "machine h login u password <redacted>");
  CHECK(r.Redact("the password is wrong") == "the password is wrong");
}

TEST_CASE("Stripe live and test keys are redacted by their prefix") {
  Redactor r;
  CHECK(r.Redact("key sk_live_4eC39HqLyjWDarjtT1zdp7dc") == "key <redacted>");
  CHECK(r.Redact("key rk_test_4eC39HqLyjWDarjtT1zdp7dc") == "key <redacted>");
}

// JSON files of the run directory carry argv and environment values escaped: a learned secret
// must go in its escaped form too, and a replacement must never split an escape sequence.
TEST_CASE("a learned secret with a quote or a backslash goes from JSON text too") {
  Redactor r;
  const std::string secret = "pa\"ss\\word-42";
  r.LearnArgv({"train.py", "--api-key", secret});
  const std::string doc = sl::JsonText(nlohmann::json{{"argv", {"train.py", "--api-key", secret}}});
  REQUIRE(doc.find("pa\\\"ss\\\\word-42") != std::string::npos);  // as JSON holds it
  const std::string out = r.Redact(doc);
  REQUIRE(nlohmann::json::accept(out));
  auto argv = nlohmann::json::parse(out)["argv"];
  CHECK(argv[0] == "train.py");
  CHECK(argv[2] == std::string(kRedacted));
  CHECK(out.find("word-42") == std::string::npos);
}

TEST_CASE("a secret that starts with a quote leaves JSON text valid (fuzz_redact's find)") {
  // The shape fuzz_redact found: `--_"Authorization": "Basic dXNlcjpw"` split into words makes
  // `"Basic` a learned secret; inside JSON it follows the backslash of \".
  Redactor r;
  r.RedactArgv({"--_\"Authorization\":", "\"Basic", "dXNlcjpw\"}"});
  const std::string doc =
      sl::JsonText(nlohmann::json{{"text", "--_\"Authorization\": \"Basic dXNlcjpw\"}"}});
  const std::string out = r.Redact(doc);
  INFO(out);
  CHECK(nlohmann::json::accept(out));
  CHECK(out.find("Basic") == std::string::npos);
}

TEST_CASE("a secret matched inside a JSON unicode escape takes the whole escape") {
  // Text, not a JSON document (a log line that carries one): the learned value is searched in
  // the escaped bytes as they are, and here matches from the middle of \u001f.
  Redactor r;
  r.AddSecret("001fxyz123");
  const std::string object = sl::JsonText(nlohmann::json{{"s", "\x1fxyz123 rest"}}, -1);
  REQUIRE(object.find("\\u001fxyz123") != std::string::npos);
  const std::string out = r.Redact("event " + object + " tail");
  INFO(out);
  REQUIRE(out.rfind("event ", 0) == 0);
  const std::string redacted_object = out.substr(6, out.size() - 6 - 5);
  REQUIRE(nlohmann::json::accept(redacted_object));
  CHECK(nlohmann::json::parse(redacted_object)["s"] == std::string(kRedacted) + " rest");
}

TEST_CASE("a JSON document is redacted string by string and keeps its bytes elsewhere") {
  Redactor r;
  r.AddSecret("hunter2-secret");
  const std::string doc =
      "{\n  \"API_TOKEN\": 12345,\n  \"Authorization\": \"Bearer abcdefgh12345678\",\n"
      "  \"log\": \"pw=hunter2-secret \\\"quoted\\\"\\n\",\n  \"ok\": [1, true, null]\n}";
  REQUIRE(nlohmann::json::accept(doc));
  const std::string out = r.Redact(doc);
  INFO(out);
  REQUIRE(nlohmann::json::accept(out));
  auto j = nlohmann::json::parse(out);
  CHECK(j["API_TOKEN"] == std::string(kRedacted));
  CHECK(j["Authorization"] == "Bearer " + std::string(kRedacted));
  CHECK(j["log"] == "pw=" + std::string(kRedacted) + " \"quoted\"\n");
  CHECK(out.find("\"ok\": [1, true, null]\n}") != std::string::npos);  // untouched bytes
}

TEST_CASE("bytes after a NUL are not taken for the end of a JSON document") {
  // nlohmann's lexer stops at NUL: `{"":""}` NUL ... parsed as a document would leave what
  // follows, outside any string, unredacted (fuzz_redact's third find).
  Redactor r;
  const std::string text =
      std::string("{\"\":\"\"}") + '\0' + "\"\"\"\" ghp_0123456789abcdefghijklmnopqrstuvwxyz ";
  const std::string out = r.Redact(text);
  CHECK(out.find("ghp_0123456789") == std::string::npos);
  CHECK(out.find(kRedacted) != std::string::npos);
}
