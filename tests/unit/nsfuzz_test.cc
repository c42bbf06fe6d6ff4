// The namespace exerciser (tests/harness/nsfuzz.h) against local disk on
// both sides: two directories of the same filesystem agree over many seeds
// and callers, the calls it draws both succeed and fail, and a tree changed
// behind its back is reported.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "tests/harness/nsfuzz.h"
#include "tests/harness/temp_dir.h"

namespace weft::testing {
namespace {

NsFuzzOptions Options(const TempDir& a, const TempDir& b, uint64_t seed) {
  NsFuzzOptions o;
  o.reference = a.path;
  o.tested = b.path;
  o.seed = seed;
  o.ops = 300;
  o.users = {{1000, 1000, {1000, 2000}}, {1001, 1001, {1001}}};
  return o;
}

TEST_CASE("nsfuzz: two local trees agree - and the calls both succeed and fail", "[nsfuzz]") {
  std::map<std::string, std::pair<int, int>> total;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    TempDir a, b;
    const NsFuzzReport report = RunNsFuzz(Options(a, b, seed));
    INFO("seed " << seed << ": " << Describe(report));
    REQUIRE(report.divergence.empty());
    REQUIRE(report.calls == 300);
    for (const auto& [kind, counts] : report.outcomes) {
      total[kind].first += counts.first;
      total[kind].second += counts.second;
    }
  }
  for (const char* kind : {"mkdir", "rmdir", "create", "open", "write", "truncate", "unlink",
                           "rename", "link", "symlink", "chmod", "chown", "utimensat",
                           "setxattr", "setacl", "stat", "readdir", "readlink", "handle"}) {
    INFO(kind << ": " << total[kind].first << " ok, " << total[kind].second << " failed");
    CHECK(total[kind].first > 0);
    CHECK(total[kind].second > 0);
  }
}

TEST_CASE("nsfuzz: a tree changed behind its back is reported", "[nsfuzz]") {
  TempDir a, b;
  NsFuzzOptions o = Options(a, b, 9);
  o.after_call = [&b](int n) {
    if (n == 20) close(open((b.path + "/intruder").c_str(), O_CREAT | O_WRONLY, 0644));
  };
  const NsFuzzReport report = RunNsFuzz(o);
  INFO(Describe(report));
  // Seen by the checks of the root after that call, or by the tree
  // comparison after call 50 at the latest.
  REQUIRE(!report.divergence.empty());
  CHECK(report.calls >= 20);
  CHECK(report.calls <= 50);
}

// Hidden: replays one seed on two local trees and prints its calls, to see
// what the reference did in a run that diverged on a mount:
//   NSFUZZ_SEED=7 NSFUZZ_CALLS=85 build/bin/nsfuzz_test '[.replay]'
TEST_CASE("nsfuzz: replay a seed on local disk", "[.replay]") {
  const char* seed = getenv("NSFUZZ_SEED");
  const char* calls = getenv("NSFUZZ_CALLS");
  if (seed == nullptr || calls == nullptr) return;
  TempDir a, b;
  NsFuzzOptions o = Options(a, b, std::stoull(seed));
  o.ops = std::stoi(calls);
  o.devices = false;  // as on a mount
  WARN(Describe(RunNsFuzz(o)));
}

}  // namespace
}  // namespace weft::testing
