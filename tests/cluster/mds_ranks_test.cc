// Several MDS ranks of one filesystem (issue 47, first part): `weft fs set
// NAME max_mds N` brings ranks up on standbys, each with its own journal
// and tables in the metadata pool, taken over like rank 0 when its daemon
// dies, and stopped again (flushed first) when max_mds goes down. No
// subtree is pinned to a rank yet: rank 0 still serves the whole namespace,
// which the mount checks throughout.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <functional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/harness/file_io.h"
#include "tests/harness/mount_fixture.h"

namespace weft::testing {
namespace {

bool StatusUntil(Cluster& cluster, const std::function<bool(const std::string&)>& ok,
                 absl::Duration timeout, std::string* last) {
  return cluster.FsStatusUntil("fs1", ok, timeout, last);
}

bool RankActiveOn(const std::string& status, uint32_t rank, const std::string& name) {
  const std::string head = absl::StrCat("fs1: rank ", rank, " on ", name, " ");
  const size_t at = status.find(head);
  return at != std::string::npos &&
         status.find("  state: active", at) != std::string::npos;
}

TEST_CASE("mds ranks: max_mds 2 brings rank 1 up on a standby with a journal of its own - taken "
          "over when its daemon dies - stopped when max_mds goes back to 1",
          "[mds][ha][fuse]") {
  ClusterOptions options;
  options.mds = 3;
  MountFixture f(options);
  REQUIRE(f.cluster->ActiveMds("fs1") == 0);
  REQUIRE(mkdir(f.P("before").c_str(), 0755) == 0);

  // Bad values, with their reasons.
  CommandResult four = f.cluster->Weft({"fs", "set", "fs1", "max_mds", "4"});
  CHECK(four.code != 0);
  CHECK(absl::StrContains(four.output,
                          "max_mds 4 needs 4 MDS daemons, one per active rank; 3 are running"));
  CommandResult zero = f.cluster->Weft({"fs", "set", "fs1", "max_mds", "0"});
  CHECK(zero.code != 0);
  CHECK(absl::StrContains(zero.output, "max_mds must be at least 1"));
  CommandResult no_rank = f.cluster->Weft({"mds", "fail", "fs1:1"});
  CHECK(no_rank.code != 0);
  CHECK(absl::StrContains(no_rank.output, "no rank 1 in fs1"));

  CommandResult two = f.cluster->Weft({"fs", "set", "fs1", "max_mds", "2"});
  INFO(two.output);
  REQUIRE(two.code == 0);
  std::string status;
  int holder = -1;
  {
    const bool up = StatusUntil(*f.cluster, [&](const std::string& s) {
      holder = f.cluster->ActiveMds("fs1", 1);
      return holder > 0 && RankActiveOn(s, 1, Cluster::MdsName(holder));
    }, absl::Seconds(20), &status);
    INFO(status);
    REQUIRE(up);
  }
  CHECK(absl::StrContains(status, "fs1: max_mds 2, 2 ranks"));
  CHECK(RankActiveOn(status, 0, "a"));
  // Its own journal and tables, beside rank 0's.
  CommandResult head = f.cluster->Weft({"obj", "stat", "fs1_meta", "fs1.r1.journal.head"});
  INFO(head.output);
  CHECK(head.code == 0);
  CommandResult inotable = f.cluster->Weft({"obj", "stat", "fs1_meta", "fs1.r1.inotable"});
  CHECK(inotable.code == 0);
  CommandResult top = f.cluster->Weft({"status"});
  INFO(top.output);
  CHECK(absl::StrContains(top.output, absl::StrCat("rank 1 on ", Cluster::MdsName(holder))));
  CHECK(absl::StrContains(top.output,
                          absl::StrCat(Cluster::MdsName(holder), " holds rank 1 of fs1")));

  // Rank 1's daemon dies: the third daemon takes it over; rank 0 and the
  // mount are untouched.
  const int third = holder == 1 ? 2 : 1;
  f.cluster->KillMds(holder);
  {
    const bool moved = StatusUntil(*f.cluster, [&](const std::string& s) {
      return RankActiveOn(s, 1, Cluster::MdsName(third));
    }, absl::Seconds(20), &status);
    INFO(status);
    REQUIRE(moved);
  }
  CHECK(f.cluster->ActiveMds("fs1") == 0);
  REQUIRE(mkdir(f.P("after-rank1-takeover").c_str(), 0755) == 0);
  // Two ranks, two live daemons: max_mds 3 is refused now.
  CommandResult three = f.cluster->Weft({"fs", "set", "fs1", "max_mds", "3"});
  CHECK(three.code != 0);
  CHECK(absl::StrContains(three.output, "2 are running"));

  // Back to one rank: rank 1 flushes, stops and leaves the map; its daemon
  // stands by again.
  REQUIRE(f.cluster->StartMds(holder).ok());
  CommandResult one = f.cluster->Weft({"fs", "set", "fs1", "max_mds", "1"});
  INFO(one.output);
  REQUIRE(one.code == 0);
  {
    const bool gone = StatusUntil(*f.cluster, [&](const std::string& s) {
      return !absl::StrContains(s, "fs1: rank 1 ") && absl::StrContains(s, ": standby") &&
             RankActiveOn(s, 0, "a");
    }, absl::Seconds(20), &status);
    INFO(status);
    REQUIRE(gone);
  }
  auto log = ReadWholeFile(f.cluster->MdsLogPath(third));
  REQUIRE(log.ok());
  CHECK(absl::StrContains(*log, "event=rank_stopped fs=fs1 rank=1 reason=max_mds"));
  CommandResult health = f.cluster->Weft({"status"});
  INFO(health.output);
  CHECK(!absl::StrContains(health.output, "MDS_RANK_DOWN"));
  struct stat st;
  CHECK(stat(f.P("before").c_str(), &st) == 0);
  CHECK(stat(f.P("after-rank1-takeover").c_str(), &st) == 0);

  // And up again: rank 1 reuses its journal and tables.
  CommandResult again = f.cluster->Weft({"fs", "set", "fs1", "max_mds", "2"});
  REQUIRE(again.code == 0);
  {
    const bool up = StatusUntil(*f.cluster, [&](const std::string& s) {
      const int h = f.cluster->ActiveMds("fs1", 1);
      return h > 0 && RankActiveOn(s, 1, Cluster::MdsName(h));
    }, absl::Seconds(20), &status);
    INFO(status);
    CHECK(up);
  }
}

}  // namespace
}  // namespace weft::testing
