// Every value on the command line goes through a validator, and a flag that needs another is a
// usage error naming both (issue 24, class 9). The app is built as main() builds it.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "launcher/commands.h"
#include "launcher/config.h"

using sl::launcher::Commands;

namespace {

// Parses `argv` (after "safe-launch") without running any command: "" when it parses, else the
// error message. Callbacks are what run a command; parse errors come first.
std::string ParseError(std::vector<std::string> argv) {
  int exit_code = 0;
  CLI::App app{"safe-launch", "safe-launch"};
  app.require_subcommand(1, 1);
  for (const auto& c : Commands()) c.setup(*app.add_subcommand(c.name, c.summary), &exit_code);
  sl::launcher::ValidateEveryValue(app);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    sub->callback([] {});  // parse only
  }
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every option that takes a value has a validator") {
  int exit_code = 0;
  CLI::App app{"safe-launch", "safe-launch"};
  for (const auto& c : Commands()) c.setup(*app.add_subcommand(c.name, c.summary), &exit_code);
  sl::launcher::ValidateEveryValue(app);
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    for (CLI::Option* o : sub->get_options()) {
      if (o->get_positional() || o->get_type_size_max() == 0) continue;
      INFO(sub->get_name() << " " << o->get_name());
      CHECK_NOTHROW(o->get_validator(0));
    }
  }
}

TEST_CASE("a bad bench --sizes is a usage error, not an internal one") {
  for (const char* bad : {"8X", "0", "k", "99999999999999999999", "-1M", "1e3"}) {
    INFO(bad);
    CHECK_THAT(ParseError({"bench", "--sizes", bad}), Catch::Contains("--sizes"));
  }
  CHECK(ParseError({"bench", "--sizes", "1M,8M"}).empty());
}

TEST_CASE("a timeout below a millisecond is refused, 0 still means off where it does") {
  CHECK_THAT(ParseError({"run", "--stall-timeout", "1e-300", "--", "true"}),
             Catch::Contains("at least 0.001"));
  CHECK_THAT(ParseError({"run", "--kill-grace", "1e-9", "--", "true"}), Catch::Contains("0.001"));
  CHECK(ParseError({"run", "--stall-timeout", "0", "--", "true"}).empty());
  CHECK(ParseError({"run", "--stall-timeout", "0.5", "--", "true"}).empty());
}

TEST_CASE("an empty value is refused instead of silently meaning the default") {
  CHECK_THAT(ParseError({"bench", "--sysroot", ""}), Catch::Contains("must not be empty"));
  CHECK_THAT(ParseError({"bench", "--import", ""}), Catch::Contains("must not be empty"));
  CHECK_THAT(ParseError({"bench", "--sizes", ""}), Catch::Contains("--sizes"));
  CHECK_THAT(ParseError({"preflight", "--sysroot", ""}), Catch::Contains("must not be empty"));
  CHECK_THAT(ParseError({"diagnose", "--out", "", "x"}), Catch::Contains("must not be empty"));
}

TEST_CASE("a flag that needs another is a usage error naming both") {
  auto both = [](const std::string& msg, const char* a, const char* b) {
    INFO(msg);
    CHECK_THAT(msg, Catch::Contains(a) && Catch::Contains(b));
  };
  both(ParseError({"preflight", "--codes"}), "--codes", "--list");
  both(ParseError({"diagnose", "--html", "/tmp/x.html", "dir"}), "--html", "--flight-recorder");
  both(ParseError({"preflight", "--node-name", "n1"}), "--node-name", "--slurm");
  both(ParseError({"bench", "--history-runs", "3"}), "--history-runs", "--history");
  CHECK(ParseError({"preflight", "--list", "--codes"}).empty());
}
