#include "watchdog/status.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace sl::watchdog;

namespace {

std::string StatusTempRoot() {
  char tmpl[] = "/tmp/sl-status-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

std::string SlurpStatus(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

mode_t StatusModeOf(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("status.json keeps the command but not the secrets in it or in the environment") {
  const std::string dir = StatusTempRoot();
  const std::vector<std::string> argv = {
      "python", "train.py", "--api-key", "K-4242-secret", "--password=pw-9999-x", "--lr", "3"};
  auto redactor = MakeJobRedactor({{"HF_TOKEN", "hf-env-value-77"}}, argv);
  nlohmann::json j = {{"state", "running"},
                      {"command", argv},
                      {"stop", {{"reason", "job printed hf-env-value-77"}}}};
  REQUIRE(WriteStatusFile(dir, j, *redactor).ok());
  const std::string text = SlurpStatus(dir + "/status.json");
  CHECK(text.find("K-4242-secret") == std::string::npos);
  CHECK(text.find("pw-9999-x") == std::string::npos);
  CHECK(text.find("hf-env-value-77") == std::string::npos);
  auto back = nlohmann::json::parse(text);
  CHECK(back["command"] == nlohmann::json({"python", "train.py", "--api-key", "<redacted>",
                                           "--password=<redacted>", "--lr", "3"}));
  CHECK(back["state"] == "running");
  CHECK(StatusModeOf(dir + "/status.json") == 0600);
  std::filesystem::remove_all(dir);
}

TEST_CASE("output tails are redacted and private") {
  const std::string dir = StatusTempRoot();
  auto redactor = MakeJobRedactor({}, {"job", "--token", "tok-abc-123456"});
  REQUIRE(
      WriteTailFile(dir, "stdout.tail",
                    {"step 1", "using tok-abc-123456", "Authorization: Bearer eyJhbGciOiJIUzI1"},
                    *redactor)
          .ok());
  const std::string text = SlurpStatus(dir + "/stdout.tail");
  CHECK(text.find("step 1\n") == 0);
  CHECK(text.find("tok-abc-123456") == std::string::npos);
  CHECK(text.find("eyJhbGciOiJIUzI1") == std::string::npos);
  CHECK(StatusModeOf(dir + "/stdout.tail") == 0600);
  std::filesystem::remove_all(dir);
}

TEST_CASE("status.json with invalid UTF-8 in the command is still written") {
  const std::string dir = StatusTempRoot();
  auto redactor = MakeJobRedactor({}, {});
  nlohmann::json j = {{"command", {std::string("bad\xff\xfe")}}};
  REQUIRE(WriteStatusFile(dir, j, *redactor).ok());
  CHECK(nlohmann::json::parse(SlurpStatus(dir + "/status.json"))["command"].size() == 1);
  std::filesystem::remove_all(dir);
}
