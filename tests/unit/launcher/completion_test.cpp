#include "launcher/completion.h"

#include <catch2/catch.hpp>

#include "launcher/commands.h"

using sl::launcher::BashCompletion;
using sl::launcher::Commands;

namespace {

// safe-launch's app as main() builds it: every row of the subcommand table set up.
struct App {
  int exit_code = 0;
  CLI::App app{"safe-launch", "safe-launch"};
  App() {
    app.set_version_flag("--version", "safe-launch test");
    for (const auto& c : Commands()) c.setup(*app.add_subcommand(c.name, c.summary), &exit_code);
  }
};

}  // namespace

TEST_CASE("the completion script names every subcommand of the table") {
  App a;
  const std::string script = BashCompletion(a.app);
  std::string names;
  for (const auto& c : Commands()) {
    INFO(c.name);
    CHECK_THAT(script, Catch::Contains("\n    " + std::string(c.name) + ") words=\""));
    names += (names.empty() ? "" : "|") + std::string(c.name);
  }
  // ... and recognises each of them on the command line, in table order.
  CHECK_THAT(script, Catch::Contains("      " + names + ") [[ -z $sub ]]"));
  CHECK_THAT(script, Catch::EndsWith("complete -o default -F _safe_launch safe-launch\n"));
}

TEST_CASE("the completion script offers every flag of every subcommand") {
  App a;
  const std::string script = BashCompletion(a.app);
  for (const CLI::App* sub : a.app.get_subcommands([](const CLI::App*) { return true; })) {
    for (const CLI::Option* o : sub->get_options()) {
      for (const auto& l : o->get_lnames()) {
        INFO(sub->get_name() + " --" + l);
        CHECK_THAT(script, Catch::Contains(" --" + l + " ") || Catch::Contains(" --" + l + "\""));
      }
    }
  }
  CHECK_THAT(script, Catch::Contains("--version"));
}

TEST_CASE("options with a fixed set of values complete to those values") {
  App a;
  const std::string script = BashCompletion(a.app);
  CHECK_THAT(script, Catch::Contains("\"env:--format\") COMPREPLY=($(compgen -W \"sh json\""));
  CHECK_THAT(script, Catch::Contains("completion) words=\"-h --help bash\""));
}
