#include "common/placement/placement.h"

#include <algorithm>
#include <chrono>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/cluster_map/osd_map.h"
#include "common/placement/balancer.h"

namespace weft::placement {
namespace {

struct OsdSpec {
  std::string host;
  double weight;
  std::string rack;
};
OsdSpec Osd(std::string host, double weight = 1.0, std::string rack = "") {
  return OsdSpec{std::move(host), weight, std::move(rack)};
}

OsdMap MakeMap(const std::vector<OsdSpec>& specs) {
  OsdMap map;
  map.fsid = "test";
  map.epoch = 1;
  for (const OsdSpec& s : specs) {
    OsdInfo o;
    o.id = OsdId(map.next_osd_id++);
    o.addr = absl::StrCat("127.0.0.1:", 6800 + o.id.value());
    o.host = s.host;
    o.rack = s.rack;
    o.weight = s.weight;
    o.up = true;
    o.in = true;
    map.osds.push_back(o);
  }
  return map;
}

// `n` OSDs spread round-robin over `hosts` hosts named h0, h1, ...
OsdMap HostsMap(int n, int hosts) {
  std::vector<OsdSpec> specs;
  for (int i = 0; i < n; ++i) specs.push_back(Osd(absl::StrCat("h", i % hosts)));
  return MakeMap(specs);
}

PoolInfo Replicated(uint32_t size, uint32_t pg_num, FailureDomain fd = FailureDomain::kHost) {
  PoolInfo p;
  p.id = PoolId(1);
  p.name = "data";
  p.type = PoolType::kReplicated;
  p.size = size;
  p.min_size = std::min<uint32_t>(size, 2);
  p.pg_num = pg_num;
  p.failure_domain = fd;
  return p;
}

PoolInfo Erasure(uint32_t k, uint32_t m, uint32_t pg_num) {
  PoolInfo p = Replicated(k + m, pg_num);
  p.id = PoolId(2);
  p.name = "ec";
  p.type = PoolType::kErasure;
  p.min_size = k;
  p.ec_k = k;
  p.ec_m = m;
  p.ec_chunk_bytes = 4096;
  return p;
}

std::vector<PgMapping> MapAll(const OsdMap& map, const PoolInfo& pool) {
  PoolPlacement placement(map, pool);
  std::vector<PgMapping> out;
  for (uint32_t seed = 0; seed < pool.pg_num; ++seed) out.push_back(placement.Map(seed));
  return out;
}

// Largest ratio of an OSD's PG count to its weight share of all replicas, for
// any list of mappings (balancer.h has MaxOverShare for a pool in a map; the
// two agree on the layouts here, which have no domain above 1/size of the
// weight). Prints the spread unless `label` is empty.
double MaxOverWeightShare(const OsdMap& map, const PoolInfo& pool,
                          const std::vector<PgMapping>& all, absl::string_view label) {
  absl::flat_hash_map<OsdId, int> count;
  size_t replicas = 0;
  for (const PgMapping& m : all) {
    for (OsdId id : m.up) ++count[id];
    replicas += m.up.size();
  }
  double total_weight = 0;
  for (const OsdInfo& o : map.osds) total_weight += o.weight;
  double worst = 0, least = 1e9, sq = 0;
  for (const OsdInfo& o : map.osds) {
    const double share = replicas * o.weight / total_weight;
    const double ratio = count[o.id] / share;
    worst = std::max(worst, ratio);
    least = std::min(least, ratio);
    sq += (ratio - 1) * (ratio - 1);
  }
  if (!label.empty()) {
    std::printf("[placement] %-32s pgs=%u replicas=%zu max/share=%.3f min/share=%.3f rms=%.4f\n",
                std::string(label).c_str(), pool.pg_num, replicas, worst, least,
                std::sqrt(sq / map.osds.size()));
  }
  return worst;
}

// (pg, osd) replica assignments present in `after` but not in `before`.
size_t MovedReplicas(const std::vector<PgMapping>& before, const std::vector<PgMapping>& after) {
  size_t moved = 0;
  for (size_t pg = 0; pg < before.size(); ++pg) {
    for (OsdId id : after[pg].up) {
      if (std::find(before[pg].up.begin(), before[pg].up.end(), id) == before[pg].up.end()) {
        ++moved;
      }
    }
  }
  return moved;
}

std::string HostOf(const OsdMap& map, OsdId id) { return map.FindOsd(id)->host; }

// ---- object -> PG ----

TEST_CASE("ObjectToPgSeed is in range and deterministic") {
  for (uint32_t pg_num : {1u, 2u, 3u, 12u, 64u, 100u, 1000u}) {
    for (int i = 0; i < 1000; ++i) {
      const std::string name = absl::StrCat("obj.", i);
      const uint32_t seed = ObjectToPgSeed(name, pg_num);
      REQUIRE(seed < pg_num);
      REQUIRE(seed == ObjectToPgSeed(name, pg_num));
    }
  }
  REQUIRE(ObjectToPgSeed("x", 0) == 0);
  REQUIRE(ObjectToPg(Replicated(3, 16), "x") ==
          PgId{PoolId(1), ObjectToPgSeed("x", 16)});
  // XXH3-64 of the empty input (from the xxHash reference). Object names hash
  // this way on disk: a change here would move every object.
  REQUIRE(HashObjectName("") == 0x2D06800538D394C2ull);
}

TEST_CASE("growing pg_num only splits PGs") {
  const std::vector<std::pair<uint32_t, uint32_t>> growths = {
      {12, 20}, {16, 32}, {64, 100}, {100, 128}, {128, 200}, {200, 512}, {7, 8}};
  for (auto [from, to] : growths) {
    std::map<uint32_t, std::set<uint32_t>> parents;  // new PG -> old PGs feeding it
    int moved = 0;
    const int kObjects = 20000;
    for (int i = 0; i < kObjects; ++i) {
      const std::string name = absl::StrCat("file.", i, ".chunk");
      const uint32_t before = ObjectToPgSeed(name, from);
      const uint32_t after = ObjectToPgSeed(name, to);
      if (after != before) {
        ++moved;
        // An object that moves, moves to a PG that did not exist before.
        REQUIRE(after >= from);
      }
      parents[after].insert(before);
    }
    // A new PG is split off a single parent.
    for (const auto& [pg, from_pgs] : parents) REQUIRE(from_pgs.size() == 1);
    std::printf("[placement] pg_num %u -> %u moved %.3f of objects (new PGs hold %.3f)\n", from,
                to, double(moved) / kObjects, double(to - from) / to);
  }
}

// ---- balance ----

// The bound: max/mean PGs per OSD <= 1.15 at ~100 PG replicas per OSD.
// Plain rendezvous hashing cannot meet it reliably at this PG count: over 1000
// pool ids (test "[stats]") these three layouts exceed it 37%, 41% and 32% of
// the time, the same rates as the same selection driven by std::mt19937_64.
// The balancer (balancer.h) stores per-PG exceptions in the map (Ceph's
// upmap); with them the pool meets kBalanceGoal (stricter than the bound).
constexpr double kBalanceBound = 1.15;
constexpr double kBalanceGoal = 1.10;
constexpr int kBalanceItemsMax = 200;

// Balances `pool` as the map manager does, checks the result, and returns the
// number of items.
size_t CheckBalance(const OsdMap& map, PoolInfo pool, absl::string_view label) {
  const double before = MaxOverWeightShare(map, pool, MapAll(map, pool), "");
  pool.upmap_items = Balance(map, pool, kBalanceGoal, kBalanceItemsMax);
  const double after = MaxOverWeightShare(map, pool, MapAll(map, pool), "");
  std::printf("[placement] balance %-28s max/share %.3f -> %.3f with %zu upmap items\n",
              std::string(label).c_str(), before, after, pool.upmap_items.size());
  CHECK(before > kBalanceGoal);  // otherwise the layout tests nothing
  // (A ratio can equal the goal exactly, e.g. 110 of a share of 100.)
  REQUIRE(after <= kBalanceBound);
  REQUIRE(after <= kBalanceGoal + 1e-9);
  // Balancer and placement agree on the result.
  REQUIRE(std::abs(MaxOverShare(map, pool) - after) < 1e-9);
  // The map accepts the items.
  OsdMap with_pool = map;
  with_pool.pools = {pool};
  with_pool.next_pool_id = pool.id.value() + 1;
  REQUIRE(with_pool.Validate().ok());
  return pool.upmap_items.size();
}

TEST_CASE("balance: 10 OSDs on 10 hosts") {
  const OsdMap map = HostsMap(10, 10);
  const PoolInfo pool = Replicated(3, 333);  // 999 replicas, ~100 per OSD
  REQUIRE(CheckBalance(map, pool, "10 osds / 10 hosts") <= 40);
}

TEST_CASE("balance: 12 OSDs on 4 hosts") {
  const OsdMap map = HostsMap(12, 4);
  const PoolInfo pool = Replicated(3, 400);  // 1200 replicas, 100 per OSD
  REQUIRE(CheckBalance(map, pool, "12 osds / 4 hosts") <= 40);
}

TEST_CASE("balance: mixed weights are proportional to weight") {
  std::vector<OsdSpec> specs;
  for (int i = 0; i < 10; ++i) specs.push_back(Osd(absl::StrCat("h", i), i < 3 ? 2.0 : 1.0));
  const OsdMap map = MakeMap(specs);
  // Total weight 13; 433 PGs * 3 = 1299 replicas: ~100 per unit of weight.
  const PoolInfo pool = Replicated(3, 433);
  REQUIRE(CheckBalance(map, pool, "mixed 3x2 + 7x1, 10 hosts") <= 40);
}

TEST_CASE("balance: mixed weights inside hosts") {
  // Four hosts of three OSDs; host h0 has weight-2 OSDs (host weights 6,3,3,3).
  std::vector<OsdSpec> specs;
  for (int i = 0; i < 12; ++i) {
    specs.push_back(Osd(absl::StrCat("h", i % 4), i % 4 == 0 ? 2.0 : 1.0));
  }
  const OsdMap map = MakeMap(specs);
  // h0 holds 6/15 > 1/3 of the weight: it is in every PG and cannot get its
  // share; the other hosts split the other two replicas by weight.
  const PoolInfo pool = Replicated(3, 400);
  const std::vector<PgMapping> all = MapAll(map, pool);
  absl::flat_hash_map<std::string, int> per_host;
  for (const PgMapping& m : all) {
    for (OsdId id : m.up) ++per_host[HostOf(map, id)];
  }
  REQUIRE(per_host["h0"] == 400);
  for (const char* h : {"h1", "h2", "h3"}) {
    REQUIRE(std::abs(per_host[h] / (800.0 / 3) - 1) <= 0.15);
  }
}

// The bound above allows for sampling noise at ~100 PGs per OSD; with many PGs
// the counts must converge on the weight shares, which checks the hash, the
// float math and the multi-pick correction without noise hiding a bias.
TEST_CASE("balance converges on weight shares with many PGs") {
  std::vector<OsdSpec> specs;
  for (int i = 0; i < 10; ++i) specs.push_back(Osd(absl::StrCat("h", i), i < 3 ? 2.0 : 1.0));
  const OsdMap mixed = MakeMap(specs);
  const PoolInfo pool = Replicated(3, 100000);
  std::vector<PgMapping> all = MapAll(mixed, pool);
  const double worst = MaxOverWeightShare(mixed, pool, all, "mixed, 100k PGs");
  REQUIRE(worst <= 1.02);

  const OsdMap even = HostsMap(12, 4);
  all = MapAll(even, pool);
  REQUIRE(MaxOverWeightShare(even, pool, all, "12 osds / 4 hosts, 100k PGs") <= 1.02);
}

// Not run by default: how often the ~100-PGs-per-OSD bound above holds across
// many pool ids (each an independent placement), next to the same selection
// driven by a PRNG instead of xxHash. Run: placement_test "[stats]".
TEST_CASE("balance statistics over pool ids", "[.][stats]") {
  struct Config {
    const char* name;
    OsdMap map;
    uint32_t pg_num;
  };
  std::vector<OsdSpec> mixed;
  for (int i = 0; i < 10; ++i) mixed.push_back(Osd(absl::StrCat("h", i), i < 3 ? 2.0 : 1.0));
  const std::vector<Config> configs = {{"10 osds / 10 hosts, 333 pgs", HostsMap(10, 10), 333},
                                       {"12 osds / 4 hosts, 400 pgs", HostsMap(12, 4), 400},
                                       {"mixed weights, 433 pgs", MakeMap(mixed), 433}};
  constexpr int kTrials = 1000;
  std::mt19937_64 rng(20240601);
  auto unit = [&rng] { return static_cast<double>((rng() >> 11) + 1) * 0x1.0p-53; };
  auto summary = [](const char* what, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const double over = std::count_if(v.begin(), v.end(), [](double x) { return x > 1.15; });
    std::printf("[placement]   %-8s mean=%.3f p50=%.3f p95=%.3f P(>1.15)=%.3f\n", what,
                std::accumulate(v.begin(), v.end(), 0.0) / v.size(), v[v.size() / 2],
                v[v.size() * 95 / 100], over / v.size());
  };
  for (const Config& c : configs) {
    // Hosts and their members, as placement sees them (all in, no racks).
    std::map<std::string, std::vector<const OsdInfo*>> hosts;
    for (const OsdInfo& o : c.map.osds) hosts[o.host].push_back(&o);
    std::vector<double> host_weight;
    std::vector<std::vector<const OsdInfo*>> members;
    for (const auto& [name, osds] : hosts) {
      double w = 0;
      for (const OsdInfo* o : osds) w += o->weight;
      host_weight.push_back(w);
      members.push_back(osds);
    }
    std::vector<bool> capped;
    const std::vector<double> v = internal::AdjustWeights(host_weight, 3, &capped);
    std::vector<double> hashed, prng;
    for (int t = 0; t < kTrials; ++t) {
      PoolInfo pool = Replicated(3, c.pg_num);
      pool.id = PoolId(t + 1);
      hashed.push_back(MaxOverWeightShare(c.map, pool, MapAll(c.map, pool), ""));
      std::vector<PgMapping> sim(c.pg_num);
      for (PgMapping& m : sim) {
        std::vector<std::pair<double, size_t>> draws;
        for (size_t h = 0; h < v.size(); ++h) draws.push_back({std::log(unit()) / v[h], h});
        std::sort(draws.rbegin(), draws.rend());
        for (size_t r = 0; r < 3 && r < draws.size(); ++r) {
          const OsdInfo* best = nullptr;
          double best_draw = 0;
          for (const OsdInfo* o : members[draws[r].second]) {
            const double d = std::log(unit()) / o->weight;
            if (best == nullptr || d > best_draw) best = o, best_draw = d;
          }
          m.up.push_back(best->id);
        }
      }
      prng.push_back(MaxOverWeightShare(c.map, pool, sim, ""));
    }
    std::printf("[placement] max/share over %d pool ids, %s\n", kTrials, c.name);
    summary("xxhash", hashed);
    summary("mt19937", prng);
  }
}

// Not run by default: the cost of building a PoolPlacement for a large map.
TEST_CASE("placement setup cost", "[.][perf]") {
  for (int hosts : {100, 1000}) {
    std::vector<OsdSpec> specs;
    for (int i = 0; i < hosts * 4; ++i) {
      specs.push_back(Osd(absl::StrCat("h", i % hosts), 1.0 + (i % 7) * 0.25));
    }
    const OsdMap map = MakeMap(specs);
    for (const PoolInfo& pool : {Replicated(3, 4096), Erasure(8, 4, 4096)}) {
      const auto start = std::chrono::steady_clock::now();
      PoolPlacement placement(map, pool);
      const auto built = std::chrono::steady_clock::now();
      for (uint32_t seed = 0; seed < pool.pg_num; ++seed) placement.Map(seed);
      const auto mapped = std::chrono::steady_clock::now();
      auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
      std::printf("[placement] %d hosts, %d osds, size %u: setup %.1f ms, %u PGs %.1f ms\n",
                  hosts, hosts * 4, pool.size, ms(built - start), pool.pg_num,
                  ms(mapped - built));
    }
  }
  // MapPg builds the PoolPlacement on every call.
  std::vector<OsdSpec> specs;
  for (int i = 0; i < 10; ++i) specs.push_back(Osd(absl::StrCat("h", i), i < 3 ? 2.0 : 1.0));
  const OsdMap mixed = MakeMap(specs);
  for (const bool equal : {true, false}) {
    const OsdMap map = equal ? HostsMap(10, 10) : mixed;
    PoolInfo pool = Replicated(3, 1000);
    for (const bool items : {false, true}) {
      if (items) pool.upmap_items = Balance(map, pool, 1.02, 1000);
      const auto start = std::chrono::steady_clock::now();
      for (uint32_t seed = 0; seed < pool.pg_num; ++seed) MapPg(map, pool, seed);
      const double us = std::chrono::duration<double, std::micro>(
                            std::chrono::steady_clock::now() - start).count() / pool.pg_num;
      std::printf("[placement] MapPg on 10 hosts (%s weights, %zu upmap items): %.1f us/call\n",
                  equal ? "equal" : "mixed", pool.upmap_items.size(), us);
    }
  }
}

// ---- movement ----
// Plain placement, without upmap items: the balancer's own movement is
// measured in balancer_test.

TEST_CASE("movement: adding an 11th OSD moves only its share - all to it") {
  OsdMap map = HostsMap(10, 10);
  const PoolInfo pool = Replicated(3, 333);
  const std::vector<PgMapping> before = MapAll(map, pool);
  OsdInfo added = map.osds.back();
  added.id = OsdId(map.next_osd_id++);
  added.host = "h10";
  map.osds.push_back(added);
  const std::vector<PgMapping> after = MapAll(map, pool);

  const size_t moved = MovedReplicas(before, after);
  const double fraction = double(moved) / (3.0 * pool.pg_num);
  const double ideal = 1.0 / 11;
  std::printf("[placement] add 11th osd: moved %.4f of replicas, ideal %.4f (x%.3f)\n", fraction,
              ideal, fraction / ideal);
  REQUIRE(fraction <= 1.2 * ideal);
  for (size_t pg = 0; pg < before.size(); ++pg) {
    for (OsdId id : after[pg].up) {
      const bool was_there =
          std::find(before[pg].up.begin(), before[pg].up.end(), id) != before[pg].up.end();
      REQUIRE((was_there || id == added.id));
    }
  }
}

TEST_CASE("movement: marking one OSD out moves only its replicas") {
  OsdMap map = HostsMap(10, 10);
  const PoolInfo pool = Replicated(3, 333);
  const std::vector<PgMapping> before = MapAll(map, pool);
  const OsdId victim(3);
  size_t held = 0;
  for (const PgMapping& m : before) held += std::count(m.up.begin(), m.up.end(), victim);
  map.FindOsd(victim)->in = false;
  const std::vector<PgMapping> after = MapAll(map, pool);

  const size_t moved = MovedReplicas(before, after);
  const double share = 1.0 / 10;
  const double fraction = double(moved) / (3.0 * pool.pg_num);
  std::printf("[placement] mark osd out: moved %.4f of replicas, its share %.4f (x%.3f)\n",
              fraction, share, fraction / share);
  REQUIRE(fraction <= 1.2 * share);
  REQUIRE(moved == held);  // exactly the victim's replicas, nothing else
  for (size_t pg = 0; pg < before.size(); ++pg) {
    REQUIRE(std::count(after[pg].up.begin(), after[pg].up.end(), victim) == 0);
    REQUIRE(after[pg].up.size() == 3);
  }
}

TEST_CASE("movement: adding an OSD to an existing host (measured)") {
  // Not the minimum: host h0 gets heavier, so it also takes PGs from other hosts
  // onto its old OSDs. Reported, and bounded loosely, to see regressions.
  OsdMap map = HostsMap(12, 4);
  const PoolInfo pool = Replicated(3, 400);
  const std::vector<PgMapping> before = MapAll(map, pool);
  OsdInfo added = map.osds.front();
  added.id = OsdId(map.next_osd_id++);
  map.osds.push_back(added);
  const std::vector<PgMapping> after = MapAll(map, pool);
  const double fraction = double(MovedReplicas(before, after)) / (3.0 * pool.pg_num);
  const double ideal = 1.0 / 13;
  std::printf("[placement] add osd to a host of 12/4: moved %.4f, its share %.4f (x%.3f)\n",
              fraction, ideal, fraction / ideal);
  REQUIRE(fraction <= 2.5 * ideal);
}

// Shards whose position names another OSD after the change, over all shards.
double MovedShards(const std::vector<PgMapping>& before, const std::vector<PgMapping>& after) {
  size_t moved = 0, total = 0;
  for (size_t pg = 0; pg < before.size(); ++pg) {
    for (size_t r = 0; r < before[pg].up.size(); ++r) {
      moved += r >= after[pg].up.size() || before[pg].up[r] != after[pg].up[r];
      ++total;
    }
  }
  return double(moved) / total;
}

TEST_CASE("movement: erasure shards keep their positions when an OSD is added") {
  // Ideal: the new OSD takes its share of the shards and nothing else moves.
  // Per-position draws ("indep") add the moves that collisions between
  // positions cause, more when positions are a larger fraction of the domains
  // (measured x1.44 for 6 of 11, x1.24 for 6 of 21; bounds leave a margin).
  // Ranking the set in one order instead (as replicated pools do) would shift
  // every position after the newcomer: the second number, ~x3.7.
  for (uint32_t hosts : {10u, 20u}) {
    OsdMap map = HostsMap(hosts, hosts);
    const PoolInfo pool = Erasure(4, 2, 2000);
    PoolInfo ranked = Replicated(6, 2000);
    const std::vector<PgMapping> before = MapAll(map, pool);
    const std::vector<PgMapping> ranked_before = MapAll(map, ranked);
    OsdInfo added = map.osds.back();
    added.id = OsdId(map.next_osd_id++);
    added.host = "new";
    map.osds.push_back(added);
    const std::vector<PgMapping> after = MapAll(map, pool);
    for (const PgMapping& m : after) REQUIRE(m.up.size() == 6);
    const double fraction = MovedShards(before, after);
    const double ranked_fraction = MovedShards(ranked_before, MapAll(map, ranked));
    const double ideal = 1.0 / (hosts + 1);
    std::printf("[placement] ec 4+2, %u -> %u hosts: moved %.4f of shards, ideal %.4f (x%.3f); "
                "one ranking for all positions would move x%.3f\n",
                hosts, hosts + 1, fraction, ideal, fraction / ideal, ranked_fraction / ideal);
    REQUIRE(fraction <= (hosts == 10 ? 1.6 : 1.4) * ideal);
  }
}

TEST_CASE("a down OSD keeps its PGs in up: nothing moves") {
  OsdMap map = HostsMap(10, 10);
  const PoolInfo pool = Replicated(3, 128);
  const std::vector<PgMapping> before = MapAll(map, pool);
  map.FindOsd(OsdId(4))->up = false;
  const std::vector<PgMapping> after = MapAll(map, pool);
  int affected = 0;
  for (size_t pg = 0; pg < before.size(); ++pg) {
    REQUIRE(after[pg].up == before[pg].up);
    std::vector<OsdId> expect;
    for (OsdId id : before[pg].up) {
      if (id != OsdId(4)) expect.push_back(id);
    }
    REQUIRE(after[pg].acting == expect);
    REQUIRE(after[pg].primary == expect.front());
    affected += expect.size() != before[pg].up.size();
  }
  REQUIRE(affected > 0);
}

// ---- failure domains ----

TEST_CASE("every mapping uses distinct failure domains") {
  SECTION("hosts") {
    const OsdMap map = HostsMap(24, 6);
    for (const PoolInfo& pool : {Replicated(3, 256), Erasure(4, 2, 256)}) {
      for (const PgMapping& m : MapAll(map, pool)) {
        REQUIRE(m.up.size() == pool.size);
        std::set<std::string> hosts;
        for (OsdId id : m.up) hosts.insert(HostOf(map, id));
        REQUIRE(hosts.size() == m.up.size());
      }
    }
  }
  SECTION("racks") {
    std::vector<OsdSpec> specs;
    for (int i = 0; i < 12; ++i) {
      specs.push_back(Osd(absl::StrCat("h", i / 2), 1.0, absl::StrCat("r", i / 4)));
    }
    const OsdMap map = MakeMap(specs);  // 3 racks x 2 hosts x 2 OSDs
    const PoolInfo pool = Replicated(3, 128, FailureDomain::kRack);
    for (const PgMapping& m : MapAll(map, pool)) {
      std::set<std::string> racks;
      for (OsdId id : m.up) racks.insert(map.FindOsd(id)->rack);
      REQUIRE(racks.size() == 3);
    }
    // Four copies over three racks: short, never two in one rack.
    for (const PgMapping& m : MapAll(map, Replicated(4, 64, FailureDomain::kRack))) {
      REQUIRE(m.up.size() == 3);
    }
  }
  SECTION("osd level allows two replicas on one host") {
    const OsdMap map = HostsMap(4, 1);
    for (const PgMapping& m : MapAll(map, Replicated(3, 64, FailureDomain::kOsd))) {
      REQUIRE(m.up.size() == 3);
      REQUIRE(std::set<OsdId>(m.up.begin(), m.up.end()).size() == 3);
    }
  }
  SECTION("OSDs without a host label are their own domain") {
    const OsdMap map = MakeMap({Osd(""), Osd(""), Osd("")});
    for (const PgMapping& m : MapAll(map, Replicated(3, 32))) REQUIRE(m.up.size() == 3);
  }
}

TEST_CASE("failure domain keys and counts") {
  std::vector<OsdSpec> specs = {Osd("a", 1, "r1"), Osd("a", 1, "r1"), Osd("b", 1, ""),
                                Osd("", 1, ""), Osd("c", 0, "r2")};
  OsdMap map = MakeMap(specs);
  CHECK(FailureDomainKey(map.osds[0], FailureDomain::kOsd) == "osd.0");
  CHECK(FailureDomainKey(map.osds[0], FailureDomain::kHost) == "host:a");
  CHECK(FailureDomainKey(map.osds[0], FailureDomain::kRack) == "rack:r1");
  CHECK(FailureDomainKey(map.osds[2], FailureDomain::kRack) == "host:b");
  CHECK(FailureDomainKey(map.osds[3], FailureDomain::kHost) == "osd.3");
  CHECK(FailureDomainKey(map.osds[3], FailureDomain::kRack) == "osd.3");
  // osd.4 has weight 0: it holds nothing, so its rack r2 does not count.
  CHECK(CountFailureDomains(map, FailureDomain::kOsd) == 4);
  CHECK(CountFailureDomains(map, FailureDomain::kHost) == 3);
  CHECK(CountFailureDomains(map, FailureDomain::kRack) == 3);
  map.osds[2].in = false;
  CHECK(CountFailureDomains(map, FailureDomain::kHost) == 2);
  // The count is the longest up set placement produces.
  for (FailureDomain fd : {FailureDomain::kOsd, FailureDomain::kHost, FailureDomain::kRack}) {
    for (const PgMapping& m : MapAll(map, Replicated(4, 32, fd))) {
      REQUIRE(m.up.size() == std::min<size_t>(4, CountFailureDomains(map, fd)));
    }
  }
}

TEST_CASE("not enough failure domains gives a shorter up set") {
  const OsdMap map = HostsMap(6, 2);
  for (const PgMapping& m : MapAll(map, Replicated(3, 64))) {
    REQUIRE(m.up.size() == 2);
    REQUIRE(HostOf(map, m.up[0]) != HostOf(map, m.up[1]));
  }
  for (const PgMapping& m : MapAll(HostsMap(8, 4), Erasure(4, 2, 64))) {
    REQUIRE(m.up.size() == 4);
    REQUIRE(m.acting.size() == 4);
  }
  REQUIRE(MapPg(OsdMap{}, Replicated(3, 8), 0) == PgMapping{});
}

TEST_CASE("out and zero-weight OSDs are never chosen") {
  OsdMap map = HostsMap(8, 8);
  map.FindOsd(OsdId(1))->in = false;
  map.FindOsd(OsdId(2))->weight = 0;
  map.FindOsd(OsdId(5))->up = false;  // down but in: still chosen
  bool saw_down = false;
  for (const PgMapping& m : MapAll(map, Replicated(3, 256))) {
    for (OsdId id : m.up) {
      REQUIRE(id != OsdId(1));
      REQUIRE(id != OsdId(2));
      saw_down |= id == OsdId(5);
    }
  }
  REQUIRE(saw_down);
}

// ---- erasure holes and primaries ----

TEST_CASE("erasure: a down OSD leaves a hole at its position") {
  OsdMap map = HostsMap(8, 8);
  const PoolInfo pool = Erasure(4, 2, 128);
  const std::vector<PgMapping> before = MapAll(map, pool);
  map.FindOsd(OsdId(0))->up = false;
  map.FindOsd(OsdId(6))->up = false;
  const std::vector<PgMapping> after = MapAll(map, pool);
  int holes = 0;
  for (size_t pg = 0; pg < before.size(); ++pg) {
    const PgMapping& m = after[pg];
    REQUIRE(m.up == before[pg].up);
    REQUIRE(m.acting.size() == m.up.size());
    for (size_t r = 0; r < m.up.size(); ++r) {
      const bool down = m.up[r] == OsdId(0) || m.up[r] == OsdId(6);
      REQUIRE(m.acting[r] == (down ? kNoOsd : m.up[r]));
      holes += down;
    }
    const auto first = std::find_if(m.acting.begin(), m.acting.end(),
                                    [](OsdId id) { return id != kNoOsd; });
    REQUIRE(m.primary == *first);
  }
  REQUIRE(holes > 0);
}

TEST_CASE("primary is the first member of acting") {
  OsdMap map = HostsMap(5, 5);
  for (int down = 0; down < 5; ++down) map.osds[down].up = false;
  for (const PgMapping& m : MapAll(map, Replicated(3, 16))) {
    REQUIRE(m.acting.empty());
    REQUIRE(m.primary == kNoOsd);
  }
  for (const PgMapping& m : MapAll(map, Erasure(2, 1, 16))) {
    REQUIRE(m.acting == std::vector<OsdId>(3, kNoOsd));
    REQUIRE(m.primary == kNoOsd);
  }
}

// ---- upmap items ----

// An OSD of `map` outside `up` whose host no member of `up` uses, other than
// the one at position `keep_host_of` (-1: none).
OsdId FreeOsd(const OsdMap& map, const std::vector<OsdId>& up, int keep_host_of = -1) {
  for (const OsdInfo& o : map.osds) {
    bool free = true;
    for (size_t r = 0; r < up.size(); ++r) {
      if (static_cast<int>(r) != keep_host_of && HostOf(map, up[r]) == o.host) free = false;
    }
    if (free && std::find(up.begin(), up.end(), o.id) == up.end()) return o.id;
  }
  FAIL("no free osd");
  return kNoOsd;
}

TEST_CASE("upmap items replace one member at its position") {
  const OsdMap map = HostsMap(10, 10);
  PoolInfo pool = Replicated(3, 64);
  const std::vector<PgMapping> plain = MapAll(map, pool);
  const std::vector<OsdId> raw = plain[5].up;
  const OsdId x = FreeOsd(map, raw);
  const OsdId y = FreeOsd(map, {raw[0], raw[1], raw[2], x});
  SECTION("a middle member") {
    pool.upmap_items = {UpmapItem{5, raw[1], x}};
    const PgMapping m = MapPg(map, pool, 5);
    REQUIRE(m.up == std::vector<OsdId>{raw[0], x, raw[2]});
    REQUIRE(m.acting == m.up);
    REQUIRE(m.primary == raw[0]);
  }
  SECTION("the primary, and two items in one PG, applied in order") {
    pool.upmap_items = {UpmapItem{5, raw[0], x}, UpmapItem{5, raw[2], y}};
    std::sort(pool.upmap_items.begin(), pool.upmap_items.end());
    const PgMapping m = MapPg(map, pool, 5);
    REQUIRE(m.up == std::vector<OsdId>{x, raw[1], y});
    REQUIRE(m.primary == x);
  }
  SECTION("a down target is in up, not in acting") {
    OsdMap down = map;
    down.FindOsd(x)->up = false;
    pool.upmap_items = {UpmapItem{5, raw[0], x}};
    const PgMapping m = MapPg(down, pool, 5);
    REQUIRE(m.up == std::vector<OsdId>{x, raw[1], raw[2]});
    REQUIRE(m.acting == std::vector<OsdId>{raw[1], raw[2]});
    REQUIRE(m.primary == raw[1]);
  }
  SECTION("other PGs are untouched; MapPg and PoolPlacement agree") {
    pool.upmap_items = {UpmapItem{5, raw[1], x}};
    const std::vector<PgMapping> all = MapAll(map, pool);
    for (uint32_t seed = 0; seed < pool.pg_num; ++seed) {
      if (seed != 5) REQUIRE(all[seed] == plain[seed]);
      REQUIRE(MapPg(map, pool, seed) == all[seed]);
    }
  }
}

TEST_CASE("upmap items for erasure pools keep the shard position") {
  OsdMap map = HostsMap(10, 10);
  PoolInfo pool = Erasure(4, 2, 64);
  const std::vector<OsdId> raw = MapPg(map, pool, 9).up;
  REQUIRE(raw.size() == 6);
  const OsdId x = FreeOsd(map, raw);
  pool.upmap_items = {UpmapItem{9, raw[3], x}};
  std::vector<OsdId> want = raw;
  want[3] = x;
  REQUIRE(MapPg(map, pool, 9).up == want);
  // A down target leaves a hole at that position.
  map.FindOsd(x)->up = false;
  const PgMapping m = MapPg(map, pool, 9);
  REQUIRE(m.up == want);
  want[3] = kNoOsd;
  REQUIRE(m.acting == want);
}

TEST_CASE("stale upmap items are ignored") {
  // Two OSDs per host: osd i and osd i + 10 share host h(i % 10).
  const OsdMap base = HostsMap(20, 10);
  PoolInfo pool = Replicated(3, 64);
  const std::vector<OsdId> raw = MapPg(base, pool, 7).up;
  const OsdId x = FreeOsd(base, raw);
  auto mapped_with = [&](const OsdMap& map, UpmapItem item) {
    PoolInfo p = pool;
    p.upmap_items = {item};
    return MapPg(map, p, 7);
  };
  const PgMapping plain = MapPg(base, pool, 7);
  OsdMap map = base;
  SECTION("target out") {
    map.FindOsd(x)->in = false;
    REQUIRE(mapped_with(map, UpmapItem{7, raw[0], x}) == plain);
  }
  SECTION("target weight 0") {
    map.FindOsd(x)->weight = 0;
    REQUIRE(mapped_with(map, UpmapItem{7, raw[0], x}) == plain);
  }
  SECTION("target not in the map") {
    REQUIRE(mapped_with(map, UpmapItem{7, raw[0], OsdId(99)}) == plain);
  }
  SECTION("target already in the set") {
    REQUIRE(mapped_with(map, UpmapItem{7, raw[0], raw[2]}) == plain);
  }
  SECTION("source not in the set") {
    REQUIRE(mapped_with(map, UpmapItem{7, x, raw[0]}) == plain);
  }
  SECTION("target shares a failure domain with another member") {
    const OsdId sibling((raw[2].value() + 10) % 20);  // on raw[2]'s host
    REQUIRE(HostOf(map, sibling) == HostOf(map, raw[2]));
    REQUIRE(mapped_with(map, UpmapItem{7, raw[0], sibling}) == plain);
    // ... but may share the domain of the member it replaces.
    REQUIRE(mapped_with(map, UpmapItem{7, raw[2], sibling}).up ==
            std::vector<OsdId>{raw[0], raw[1], sibling});
  }
  SECTION("a rack rule counts racks, not hosts") {
    std::vector<OsdSpec> specs;
    for (int i = 0; i < 12; ++i) {
      specs.push_back(Osd(absl::StrCat("h", i / 2), 1.0, absl::StrCat("r", i / 3)));
    }
    const OsdMap racks = MakeMap(specs);  // 4 racks of 3 OSDs
    PoolInfo rack_pool = Replicated(3, 16, FailureDomain::kRack);
    const std::vector<OsdId> up = MapPg(racks, rack_pool, 3).up;
    auto rack = [&racks](OsdId id) { return racks.FindOsd(id)->rack; };
    OsdId same_rack_other_host = kNoOsd;
    for (const OsdInfo& o : racks.osds) {
      if (rack(o.id) == rack(up[1]) && o.host != HostOf(racks, up[1])) same_rack_other_host = o.id;
    }
    REQUIRE(same_rack_other_host != kNoOsd);
    rack_pool.upmap_items = {UpmapItem{3, up[0], same_rack_other_host}};
    REQUIRE(MapPg(racks, rack_pool, 3).up == up);
  }
}

// ---- determinism ----

TEST_CASE("placement depends only on the placement-relevant parts of the map") {
  OsdMap a = HostsMap(9, 3);
  OsdMap b = a;
  b.epoch = 77;
  b.fsid = "other";
  for (OsdInfo& o : b.osds) o.addr = "10.0.0.1:1";
  const PoolInfo pool = Replicated(3, 64);
  REQUIRE(MapAll(a, pool) == MapAll(b, pool));
  for (uint32_t seed = 0; seed < 64; ++seed) {
    REQUIRE(MapPg(a, pool, seed) == PoolPlacement(a, pool).Map(seed));
  }
  // Another pool id gives an independent placement.
  PoolInfo other = pool;
  other.id = PoolId(9);
  REQUIRE(MapAll(a, pool) != MapAll(a, other));
}

TEST_CASE("placement golden values") {
  // Placement is an on-disk contract: a change to hashing, draws, weight
  // adjustment or ordering moves data in every existing cluster, and daemons of
  // two versions would disagree. Update these only with a migration plan.
  std::vector<OsdSpec> specs;
  for (int i = 0; i < 8; ++i) specs.push_back(Osd(absl::StrCat("h", i % 4), 1.0 + (i % 3) * 0.5));
  const OsdMap map = MakeMap(specs);
  auto render = [&map](const PoolInfo& pool) {
    std::string out;
    for (uint32_t seed = 0; seed < 6; ++seed) {
      for (OsdId id : MapPg(map, pool, seed).up) absl::StrAppend(&out, id.value(), " ");
      out += "| ";
    }
    return out;
  };
  CHECK(render(Replicated(3, 64)) == "3 2 5 | 7 1 2 | 1 0 3 | 3 1 0 | 4 5 6 | 3 5 4 | ");
  CHECK(render(Erasure(2, 1, 64)) == "2 0 5 | 2 3 5 | 6 3 5 | 5 2 7 | 4 2 1 | 6 4 7 | ");
  CHECK(ObjectToPgSeed("inode.1234.0", 64) == 22);
  CHECK(HashObjectName("weft") == 0x15d05235f1304082ull);
}

// ---- the multi-pick correction ----

// Exact inclusion probabilities of successive weighted sampling, by enumerating
// ordered k-prefixes.
void Enumerate(const std::vector<double>& w, uint32_t k, std::vector<bool>* used, double prob,
               double left, uint32_t depth, std::vector<double>* pi) {
  if (depth == k) return;
  for (size_t i = 0; i < w.size(); ++i) {
    if ((*used)[i]) continue;
    const double p = prob * w[i] / left;
    (*pi)[i] += p;
    (*used)[i] = true;
    Enumerate(w, k, used, p, left - w[i], depth + 1, pi);
    (*used)[i] = false;
  }
}

TEST_CASE("inclusion probabilities match enumeration") {
  const std::vector<std::vector<double>> cases = {
      {2, 2, 1, 1, 1, 0.5, 3}, {100, 1, 1, 1, 1, 0.1, 3}, {1, 1, 1, 1, 1, 1, 1}, {5, 1}};
  for (const auto& w : cases) {
    for (uint32_t k = 1; k < w.size(); ++k) {
      std::vector<double> exact(w.size(), 0.0);
      std::vector<bool> used(w.size(), false);
      Enumerate(w, k, &used, 1.0, std::accumulate(w.begin(), w.end(), 0.0), 0, &exact);
      const std::vector<double> pi = internal::InclusionProbabilities(w, k);
      for (size_t i = 0; i < w.size(); ++i) REQUIRE(std::abs(pi[i] - exact[i]) < 1e-12);
    }
  }
}

TEST_CASE("adjusted weights give weight-proportional inclusion") {
  const std::vector<std::vector<double>> cases = {
      {2, 2, 2, 1, 1, 1, 1, 1, 1, 1}, {4, 3, 3, 3}, {6, 3, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8},
      {10, 1, 1, 1, 1, 1}, {0.5, 3, 1, 1}};
  for (const auto& w : cases) {
    for (uint32_t k = 1; k <= w.size(); ++k) {
      INFO("case of " << w.size() << " items, k=" << k);
      std::vector<bool> capped;
      const std::vector<double> v = internal::AdjustWeights(w, k, &capped);
      // Placement always takes the capped items and chooses the rest among the
      // others by their adjusted weights.
      std::vector<double> rest_w, rest_v;
      double capped_min = 1e300, rest_max = 0;
      for (size_t i = 0; i < w.size(); ++i) {
        if (capped[i]) {
          capped_min = std::min(capped_min, w[i]);
        } else {
          rest_w.push_back(w[i]);
          rest_v.push_back(v[i]);
          rest_max = std::max(rest_max, w[i]);
        }
      }
      const uint32_t rest_k = k - (w.size() - rest_w.size());
      if (k >= w.size()) {
        REQUIRE(rest_w.empty());
        continue;
      }
      REQUIRE(rest_w.size() > rest_k);
      if (rest_w.size() < w.size()) REQUIRE(capped_min >= rest_max);  // only the heaviest
      const double rest_total = std::accumulate(rest_w.begin(), rest_w.end(), 0.0);
      const std::vector<double> pi = internal::InclusionProbabilities(rest_v, rest_k);
      for (size_t j = 0; j < rest_w.size(); ++j) {
        const double want = rest_k * rest_w[j] / rest_total;
        REQUIRE(want < 1);
        REQUIRE(std::abs(pi[j] - want) < 1e-9);
      }
    }
  }
}

}  // namespace
}  // namespace weft::placement
