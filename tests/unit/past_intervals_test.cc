#include "common/placement/past_intervals.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cluster_map/osd_map.h"
#include "common/placement/placement.h"

namespace weft::placement {
namespace {

// Six OSDs on six hosts, one pool (replicated 3, min_size 2, or EC 2+1).
OsdMap SixOsds(PoolType type) {
  OsdMap map;
  map.fsid = "test";
  map.epoch = 10;
  for (int i = 0; i < 6; ++i) {
    OsdInfo o;
    o.id = OsdId(map.next_osd_id++);
    o.addr = absl::StrCat("127.0.0.1:", 6800 + i);
    o.host = absl::StrCat("h", i);
    o.up = true;
    map.osds.push_back(o);
  }
  PoolInfo pool;
  pool.id = PoolId(1);
  pool.name = "p";
  pool.type = type;
  pool.size = 3;
  pool.min_size = 2;
  pool.pg_num = 8;
  if (type == PoolType::kErasure) {
    pool.ec_k = 2;
    pool.ec_m = 1;
    pool.ec_chunk_bytes = 4096;
  }
  map.pools.push_back(pool);
  map.next_pool_id = 2;
  return map;
}

// The next epoch of `map` after `change`, with intervals recorded.
OsdMap Next(const OsdMap& map, const std::function<void(OsdMap*)>& change) {
  OsdMap next = map;
  change(&next);
  RecordPastIntervals(map, &next);
  next.epoch = map.epoch + 1;
  REQUIRE(next.Validate().ok());
  return next;
}

std::vector<OsdId> Acting(const OsdMap& map, uint32_t seed) {
  std::vector<OsdId> out;
  for (OsdId o : MapPg(map, map.pools[0], seed).acting) {
    if (o != kNoOsd) out.push_back(o);
  }
  return out;
}

void SetUp(OsdMap* m, OsdId id, bool up) { m->FindOsd(id)->up = up; }
void SetIn(OsdMap* m, OsdId id, bool in) { m->FindOsd(id)->in = in; }

}  // namespace

TEST_CASE("past intervals: a PG whose writers all left waits for them and a clean report "
          "drops the record",
          "[placement][past_intervals]") {
  OsdMap m0 = SixOsds(PoolType::kReplicated);
  const std::vector<OsdId> first = Acting(m0, 0);
  REQUIRE(first.size() == 3);
  REQUIRE(m0.pools[0].past_intervals.empty());

  // The third member dies: [a, b] may take writes. Recorded: [a, b, c].
  OsdMap m1 = Next(m0, [&](OsdMap* m) { SetUp(m, first[2], false); });
  // a and b die too: [] takes nothing, but [a, b] ends.
  OsdMap m2 = Next(m1, [&](OsdMap* m) {
    SetUp(m, first[0], false);
    SetUp(m, first[1], false);
  });
  // c comes back alone (under min_size: no record for it), then all three go out.
  OsdMap m3 = Next(m2, [&](OsdMap* m) { SetUp(m, first[2], true); });
  OsdMap m4 = Next(m3, [&](OsdMap* m) {
    for (OsdId o : first) SetIn(m, o, false);
  });
  std::vector<PastInterval> mine;
  for (const PastInterval& p : m4.pools[0].past_intervals) {
    if (p.pg_seed == 0) mine.push_back(p);
  }
  REQUIRE(mine.size() == 2);
  CHECK(mine[0].acting == first);
  CHECK(mine[0].last_epoch == m0.epoch);
  CHECK(mine[1].acting == std::vector<OsdId>{first[0], first[1]});
  CHECK(mine[1].last_epoch == m1.epoch);

  // The new acting set cannot hear from [a, b]: down, waiting for a or b.
  // [a, b, c] is heard through c (up, out): probed.
  const std::vector<OsdId> now = Acting(m4, 0);
  REQUIRE(now.size() == 3);
  PastIntervalCheck check = CheckPastIntervals(m4, m4.pools[0], 0, now);
  REQUIRE(check.blocked_by.size() == 1);
  CHECK(check.blocked_by[0] == absl::StrCat("osd.", first[0].value(), ", osd.", first[1].value(),
                                            " (acting until epoch ", m1.epoch, ")"));
  CHECK(check.waiting_for == std::set<OsdId>{first[0], first[1]});
  CHECK(check.probe == std::set<OsdId>{first[2]});

  // a returns (still out): it is probed and nothing blocks.
  OsdMap m5 = Next(m4, [&](OsdMap* m) { SetUp(m, first[0], true); });
  check = CheckPastIntervals(m5, m5.pools[0], 0, Acting(m5, 0));
  CHECK(check.blocked_by.empty());
  CHECK(check.probe == std::set<OsdId>{first[0], first[2]});

  // A clean report from an interval that began before the last record keeps
  // it; one from after drops every record of that PG, and only of that PG.
  const size_t others = m5.pools[0].past_intervals.size() - 2;
  CHECK(!PrunePastIntervals({{PgId{PoolId(1), 0}, m0.epoch}}, &m5));
  CHECK(PrunePastIntervals({{PgId{PoolId(1), 0}, m4.epoch}}, &m5));
  CHECK(m5.pools[0].past_intervals.size() == others);
  for (const PastInterval& p : m5.pools[0].past_intervals) CHECK(p.pg_seed != 0);
  CHECK(CheckPastIntervals(m5, m5.pools[0], 0, Acting(m5, 0)).probe.empty());
}

TEST_CASE("past intervals: unchanged acting sets record nothing - one record per member set",
          "[placement][past_intervals]") {
  OsdMap m0 = SixOsds(PoolType::kReplicated);
  OsdMap m1 = Next(m0, [](OsdMap* m) { m->blocklist.push_back({"client.x", 0, 0}); });
  CHECK(m1.pools[0].past_intervals.empty());
  // One OSD flaps twice: every PG it serves records its full set once, with
  // the last epoch it ended.
  const OsdId flapper = m0.osds[0].id;
  OsdMap m2 = Next(m1, [&](OsdMap* m) { SetUp(m, flapper, false); });
  OsdMap m3 = Next(m2, [&](OsdMap* m) { SetUp(m, flapper, true); });
  OsdMap m4 = Next(m3, [&](OsdMap* m) { SetUp(m, flapper, false); });
  OsdMap m5 = Next(m4, [&](OsdMap* m) { SetUp(m, flapper, true); });
  int with_flapper = 0;
  for (uint32_t seed = 0; seed < 8; ++seed) {
    std::vector<PastInterval> mine;
    for (const PastInterval& p : m5.pools[0].past_intervals) {
      if (p.pg_seed == seed) mine.push_back(p);
    }
    const std::vector<OsdId> acting = Acting(m0, seed);
    if (std::find(acting.begin(), acting.end(), flapper) == acting.end()) {
      CHECK(mine.empty());
      continue;
    }
    ++with_flapper;
    // The full set (last ended at m3) and the two others (last ended at m4):
    // one record each, however often it flapped.
    REQUIRE(mine.size() == 2);
    CHECK(mine[0].last_epoch == m3.epoch);
    CHECK(mine[0].acting.size() == 3);
    CHECK(mine[1].last_epoch == m4.epoch);
    CHECK(mine[1].acting.size() == 2);
  }
  CHECK(with_flapper > 0);
  // Round trip through the map's encoding.
  auto decoded = OsdMap::Decode(m5.Encode());
  REQUIRE(decoded.ok());
  CHECK(decoded->pools[0].past_intervals == m5.pools[0].past_intervals);
}

TEST_CASE("past intervals: an erasure PG needs k members of each interval in its acting set",
          "[placement][past_intervals]") {
  OsdMap m0 = SixOsds(PoolType::kErasure);
  const std::vector<OsdId> first = Acting(m0, 3);
  REQUIRE(first.size() == 3);
  // Two of the three shards go out while up: the new acting set holds one of
  // the old shards, fewer than k = 2; their OSDs are up but cannot be read.
  OsdMap m1 = Next(m0, [&](OsdMap* m) {
    SetIn(m, first[0], false);
    SetIn(m, first[1], false);
  });
  PastIntervalCheck check = CheckPastIntervals(m1, m1.pools[0], 3, Acting(m1, 3));
  REQUIRE(check.blocked_by.size() == 1);
  CHECK(check.probe.empty());
  CHECK(check.blocked_by[0].find("needs 2 of them") != std::string::npos);
  CHECK(check.blocked_by[0].find("up, no longer mapped here") != std::string::npos);
  // Back in: two of them are acting again.
  OsdMap m2 = Next(m1, [&](OsdMap* m) { SetIn(m, first[0], true); });
  CHECK(CheckPastIntervals(m2, m2.pools[0], 3, Acting(m2, 3)).blocked_by.empty());
}

}  // namespace weft::placement
