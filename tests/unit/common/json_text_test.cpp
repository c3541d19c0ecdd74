#include "common/json_text.h"

#include <catch2/catch.hpp>

TEST_CASE("JSON text replaces invalid UTF-8 instead of throwing") {
  nlohmann::json j = {{"argv", {"echo", std::string("caf\xe9")}},
                      {"line", std::string("NCCL WARN \xff\xfe")}};
  CHECK_THROWS(j.dump());  // what every writer did before
  std::string text = sl::JsonText(j);
  CHECK(text.find("caf\xef\xbf\xbd") != std::string::npos);  // U+FFFD
  auto back = nlohmann::json::parse(text);
  CHECK(back["line"].get<std::string>() == "NCCL WARN \xef\xbf\xbd\xef\xbf\xbd");
  CHECK(sl::JsonText({{"a", 1}}, -1) == "{\"a\":1}");
}
