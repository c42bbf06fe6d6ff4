// The MDS daemon's configuration (DaemonOptions::FromConfig): defaults, and a
// clear refusal of values out of range.
#include <catch2/catch.hpp>

#include <string>

#include "common/config/config.h"
#include "mds/mds_daemon.h"

namespace weft::mds {
namespace {

absl::StatusOr<DaemonOptions> OptionsOf(const std::string& text) {
  auto config = Config::Parse(text, "test.conf");
  REQUIRE(config.ok());
  return DaemonOptions::FromConfig(*config);
}

TEST_CASE("mds options: cap limits - defaults and what is refused", "[unit][mds]") {
  auto defaults = OptionsOf("");
  REQUIRE(defaults.ok());
  CHECK(defaults->max_caps_per_client == 1000000);
  CHECK(defaults->recall_max_caps == 30000);
  CHECK(defaults->recall_interval_ms == 1000);
  auto set = OptionsOf(
      "mds_max_caps_per_client = 0\nmds_recall_max_caps = 5\nmds_recall_interval_ms = 250\n");
  REQUIRE(set.ok());
  CHECK(set->max_caps_per_client == 0);  // no limit
  CHECK(set->recall_max_caps == 5);
  CHECK(set->recall_interval_ms == 250);
  for (const std::string bad :
       {"mds_max_caps_per_client = -1", "mds_max_caps_per_client = many",
        "mds_recall_max_caps = 0", "mds_recall_interval_ms = 1", "mds_recall_interval_ms = 1e9"}) {
    INFO(bad);
    auto refused = OptionsOf(bad + "\n");
    REQUIRE_FALSE(refused.ok());
    CHECK(absl::IsInvalidArgument(refused.status()));
    const std::string key = bad.substr(0, bad.find(' '));
    CHECK(std::string(refused.status().message()).find(key) != std::string::npos);
  }
}

}  // namespace
}  // namespace weft::mds
