// Recovery within bounds (real processes): objects far larger than
// osd_recovery_max_chunk come back bit-exact on an OSD that missed their
// writes, replicated and erasure coded, with never more than
// osd_recovery_max_active objects in flight per OSD; a bytes-per-second
// limit holds on every OSD. Both are read from the OSDs' own metrics.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/placement/placement.h"
#include "tests/harness/cluster.h"
#include "tests/harness/file_io.h"
#include "tests/harness/http.h"

namespace weft::testing {
namespace {

double OsdMetric(Cluster& c, int i, const std::string& name) {
  auto page = HttpGet(c.OsdMetricsAddr(i), "/metrics");
  INFO("osd index " << i << ": " << page.status());
  REQUIRE(page.ok());
  const std::string series = absl::StrCat(name, "{osd=\"", c.osd_id(i), "\"}");
  auto v = MetricValue(page->body, series);
  INFO(series << ": " << v.status());
  REQUIRE(v.ok());
  return *v;
}

PoolId MakePool(Cluster& c, objects::ObjectClient& client, const std::vector<std::string>& args) {
  CommandResult r = c.Weft(args);
  INFO(r.output);
  REQUIRE(r.code == 0);
  auto pool = c.WaitPool(client, args[2]);
  INFO(pool.status());
  REQUIRE(pool.ok());
  return *pool;
}

void CheckEveryCopy(objects::ObjectClient& client, PoolId pool,
                    const std::map<std::string, std::string>& objects) {
  const absl::Status copies = EveryCopyMatches(client, pool, objects);
  INFO(copies);
  REQUIRE(copies.ok());
}

void ReadAll(objects::ObjectClient& client, PoolId pool,
             const std::map<std::string, std::string>& objects) {
  for (const auto& [name, data] : objects) {
    auto got = client.Get(pool, name);
    INFO(name << ": " << got.status());
    REQUIRE(got.ok());
    REQUIRE(got->size() == data.size());
    REQUIRE(*got == data);
  }
}

}  // namespace

TEST_CASE("recovery moves big objects in pieces with at most osd_recovery_max_active at once - "
          "every copy and shard bit-exact",
          "[cluster][recovery]") {
  auto started = Cluster::Start({.osds = 6,
                                 .extra_conf = {"osd_recovery_max_active = 1",
                                                "osd_recovery_max_chunk = 262144"},
                                 .metrics = true});
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  const PoolId rep = MakePool(
      c, *client, {"pool", "create", "rep", "--size", "3", "--pg-num", "8", "--failure-domain", "osd"});
  const PoolId ec = MakePool(
      c, *client, {"pool", "create", "ec", "--ec", "4+2", "--pg-num", "8", "--failure-domain", "osd"});
  REQUIRE(c.Weft({"pool", "set", "ec", "min_size", "4"}).code == 0);
  const std::vector<uint64_t> sizes = {1 << 20, (3 << 20) + 17, 9 << 20, 16 << 20, 4097, 100};
  std::map<PoolId, std::map<std::string, std::string>> data;
  auto write_all = [&](uint32_t round) {
    for (PoolId pool : {rep, ec}) {
      for (size_t n = 0; n < sizes.size(); ++n) {
        const std::string name = absl::StrCat("big-", n);
        std::string bytes = RandomBytes(sizes[n], round * 1000 + pool.value() * 100 + n);
        auto put = client->Put(pool, name, bytes);
        INFO(name << ": " << put.ToString());
        REQUIRE(put.ok());
        data[pool][name] = std::move(bytes);
      }
    }
  };
  write_all(0);
  // osd index 1 misses a whole round of overwrites, then comes back.
  c.KillOsd(1);
  const OsdId gone(c.osd_id(1));
  REQUIRE(WaitForMap(*client, absl::Seconds(30), [&](const OsdMap& m) { return !m.IsUp(gone); }));
  write_all(1);
  REQUIRE(c.StartOsd(1).ok());
  REQUIRE(c.WaitClean(absl::Seconds(180)).ok());

  double peak = 0, moved = 0;
  for (int i = 0; i < c.osd_count(); ++i) {
    const double p = OsdMetric(c, i, "weft_osd_recovery_active_peak");
    INFO("osd index " << i << " peak " << p);
    REQUIRE(p <= 1);
    peak = std::max(peak, p);
    moved += OsdMetric(c, i, "weft_osd_recovery_bytes_total");
  }
  REQUIRE(peak == 1);      // recovery ran ...
  REQUIRE(moved > 16 << 20);  // ... and moved the big objects

  CheckEveryCopy(*client, rep, data[rep]);
  ReadAll(*client, ec, data[ec]);
  // The rebuilt shards decode: with two other OSDs down, every erasure PG
  // that holds a shard on the returned OSD has to read it.
  c.KillOsd(2);
  c.KillOsd(3);
  const OsdId d2(c.osd_id(2)), d3(c.osd_id(3));
  REQUIRE(WaitForMap(*client, absl::Seconds(30),
                     [&](const OsdMap& m) { return !m.IsUp(d2) && !m.IsUp(d3); }));
  ReadAll(*client, ec, data[ec]);
}

TEST_CASE("osd_recovery_max_bytes_per_sec holds on every OSD during recovery", "[cluster][recovery]") {
  constexpr double kRate = 2 << 20;
  constexpr double kChunk = 1 << 20;
  auto started = Cluster::Start({.osds = 4,
                                 .extra_conf = {"osd_recovery_max_bytes_per_sec = 2097152",
                                                "osd_recovery_max_chunk = 1048576"},
                                 .metrics = true});
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  const PoolId rep = MakePool(
      c, *client, {"pool", "create", "rep", "--size", "3", "--pg-num", "8", "--failure-domain", "osd"});
  std::map<std::string, std::string> data;
  c.KillOsd(0);
  const OsdId gone(c.osd_id(0));
  REQUIRE(WaitForMap(*client, absl::Seconds(30), [&](const OsdMap& m) { return !m.IsUp(gone); }));
  for (int n = 0; n < 24; ++n) {
    const std::string name = absl::StrCat("obj-", n);
    data[name] = RandomBytes(3 << 20, n);
    REQUIRE(client->Put(rep, name, data[name]).ok());
  }
  // Every OSD's recovery byte counter, every 100 ms, while the returned OSD
  // catches up (its metrics answer once it runs).
  struct Sample {
    absl::Time at;
    double bytes;
  };
  std::vector<std::vector<Sample>> samples(c.osd_count());
  std::atomic<bool> stop{false};
  std::thread sampler([&] {
    while (!stop) {
      for (int i = 0; i < c.osd_count(); ++i) {
        auto page = HttpGet(c.OsdMetricsAddr(i), "/metrics");
        if (!page.ok() || page->code != 200) continue;
        auto v = MetricValue(page->body, absl::StrCat("weft_osd_recovery_bytes_total{osd=\"",
                                                      c.osd_id(i), "\"}"));
        if (v.ok()) samples[i].push_back({absl::Now(), *v});
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  });
  REQUIRE(c.StartOsd(0).ok());
  const absl::Status clean = c.WaitClean(absl::Seconds(180));
  absl::SleepFor(absl::Milliseconds(300));
  stop = true;
  sampler.join();
  REQUIRE(clean.ok());

  double total = 0;
  for (int i = 0; i < c.osd_count(); ++i) {
    const auto& s = samples[i];
    REQUIRE(!s.empty());
    const double base = i == 0 ? 0 : s.front().bytes;  // osd index 0 restarted from zero
    const double moved = s.back().bytes - base;
    total += moved;
    if (moved == 0) continue;
    // From the first sample that moved to the first that shows it all: at
    // most the rate over that time (plus the sampling step before it), the
    // bucket's one second, and the piece charged before it moved.
    absl::Time first = absl::InfiniteFuture(), last = absl::InfiniteFuture();
    for (const Sample& x : s) {
      if (x.bytes > base && first == absl::InfiniteFuture()) first = x.at;
      if (x.bytes == s.back().bytes && last == absl::InfiniteFuture()) last = x.at;
    }
    const double secs = absl::ToDoubleSeconds(last - first) + 0.3;
    INFO("osd index " << i << " moved " << moved << " B in about " << secs << " s");
    REQUIRE(moved <= kRate * secs + kRate + kChunk);
  }
  // The returned OSD got every object it missed (of the PGs it is in), and
  // that is more than the bound allows without a limit.
  double missed = 0;
  auto map = client->map();
  const PoolInfo* info = map->FindPool(rep);
  for (const auto& [name, bytes] : data) {
    const auto up = placement::MapPg(*map, *info, placement::ObjectToPgSeed(name, info->pg_num)).up;
    if (std::find(up.begin(), up.end(), gone) != up.end()) missed += bytes.size();
  }
  INFO("total " << total << " missed " << missed);
  REQUIRE(missed > 4 * (kRate + kChunk));
  REQUIRE(total >= missed);
  CheckEveryCopy(*client, rep, data);
}

TEST_CASE("an OSD taken out gives its space back once its PGs are clean elsewhere - every copy "
          "bit-exact",
          "[cluster][recovery]") {
  auto started = Cluster::Start({.osds = 4, .metrics = true});
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  const PoolId rep = MakePool(
      c, *client, {"pool", "create", "rep", "--size", "3", "--pg-num", "8", "--failure-domain", "osd"});
  std::map<std::string, std::string> data;
  for (int n = 0; n < 20; ++n) {
    const std::string name = absl::StrCat("s-", n);
    data[name] = RandomBytes(200000 + n * 1000, n);
    REQUIRE(client->Put(rep, name, data[name]).ok());
  }
  REQUIRE(OsdMetric(c, 3, "weft_osd_objects") > 0);
  REQUIRE(c.Weft({"osd", "out", std::to_string(c.osd_id(3))}).code == 0);
  REQUIRE(c.WaitClean(absl::Seconds(60)).ok());
  // The sweep runs every 15 s; the PGs' primaries must say clean first.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  double objects = 0, pgs = 0;
  do {
    absl::SleepFor(absl::Seconds(1));
    objects = OsdMetric(c, 3, "weft_osd_objects");
    pgs = OsdMetric(c, 3, "weft_osd_pgs");
  } while ((objects > 0 || pgs > 0) && absl::Now() < deadline);
  INFO("osd index 3 still holds " << objects << " objects in " << pgs << " pgs");
  REQUIRE(objects == 0);
  REQUIRE(pgs == 0);
  REQUIRE(c.OsdRunning(3));
  CheckEveryCopy(*client, rep, data);
  // And it comes back in: it gets its share again.
  REQUIRE(c.Weft({"osd", "in", std::to_string(c.osd_id(3))}).code == 0);
  REQUIRE(c.WaitClean(absl::Seconds(60)).ok());
  CheckEveryCopy(*client, rep, data);
}

}  // namespace weft::testing
