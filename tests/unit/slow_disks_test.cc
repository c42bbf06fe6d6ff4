// mds/manager/slow_disks: which OSD's disk `weft status` calls slow.
#include <catch2/catch.hpp>

#include <vector>

#include "mds/manager/slow_disks.h"

namespace weft::mds {
namespace {

std::vector<int32_t> Ids(const std::vector<DiskLatency>& disks) {
  std::vector<int32_t> out;
  for (const DiskLatency& d : disks) out.push_back(d.osd);
  return out;
}

TEST_CASE("one disk far slower than the others is slow", "[unit]") {
  const SlowDiskOptions o;
  double median = 0;
  auto slow = SlowDisks({{0, 100, 3}, {1, 100, 4}, {2, 100, 260}, {3, 100, 5}}, o, &median);
  REQUIRE(Ids(slow) == std::vector<int32_t>{2});
  REQUIRE(median == Approx(4.5));
  REQUIRE(slow[0].latency_ms == 260);
}

TEST_CASE("slow needs the ratio - the floor - and enough commits", "[unit]") {
  const SlowDiskOptions o;  // ratio 5, floor 50 ms, absolute 1 s, 20 commits
  // Under the ratio: 4x the median.
  REQUIRE(SlowDisks({{0, 50, 60}, {1, 50, 60}, {2, 50, 240}}, o).empty());
  // At the ratio but under the floor: 1 ms against 0.1 ms is noise.
  REQUIRE(SlowDisks({{0, 50, 0.1}, {1, 50, 0.1}, {2, 50, 1}}, o).empty());
  // Too few commits to judge (an idle OSD, or one just started).
  REQUIRE(SlowDisks({{0, 50, 2}, {1, 50, 2}, {2, 19, 900}}, o).empty());
  // Two OSDs give nothing to compare with; three do.
  REQUIRE(SlowDisks({{0, 50, 2}, {1, 50, 900}}, o).empty());
  REQUIRE(Ids(SlowDisks({{0, 50, 2}, {1, 50, 900}, {2, 50, 3}}, o)) == std::vector<int32_t>{1});
}

TEST_CASE("past the absolute bound every disk is slow - also with nothing to compare", "[unit]") {
  const SlowDiskOptions o;
  REQUIRE(Ids(SlowDisks({{0, 30, 1500}}, o)) == std::vector<int32_t>{0});
  REQUIRE(Ids(SlowDisks({{0, 30, 1200}, {1, 30, 1100}, {2, 30, 1300}}, o)) ==
          std::vector<int32_t>{0, 1, 2});
}

TEST_CASE("the median of an even count is the mean of the middle two", "[unit]") {
  SlowDiskOptions o;
  o.floor_ms = 0;
  double median = 0;
  auto slow = SlowDisks({{0, 20, 1}, {1, 20, 3}, {2, 20, 5}, {3, 20, 20}}, o, &median);
  REQUIRE(median == Approx(4));
  REQUIRE(Ids(slow) == std::vector<int32_t>{3});
  (void)SlowDisks({{0, 20, 1}, {1, 20, 3}}, o, &median);
  REQUIRE(median == -1);
}

}  // namespace
}  // namespace weft::mds
