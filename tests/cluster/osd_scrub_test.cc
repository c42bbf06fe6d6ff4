// Self-healing against real processes (6 OSDs, a 3x pool and an EC 4+2
// pool): copies damaged on disk under running OSDs are never served, read
// repair rewrites them, deep scrub finds every damaged copy and says where,
// `weft status` turns HEALTH_ERR until repair rewrote them, and the schedule
// scrubs by itself.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/placement/placement.h"
#include "tests/harness/cluster.h"
#include "tests/harness/file_io.h"
#include "tests/harness/mount_fixture.h"

namespace weft::testing {
namespace {

// Flips one byte in the middle of every non-empty data file of OSD `i`
// (through the page cache, so the OSD reads the flipped byte). Returns how
// many files it changed.
int CorruptEveryDataFile(Cluster& c, int i, uint32_t seed) {
  std::mt19937 rng(seed);
  int changed = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(c.OsdDataDir(i) + "/data")) {
    if (!entry.is_regular_file() || entry.file_size() == 0) continue;
    const int fd = open(entry.path().c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    const off_t at = static_cast<off_t>(rng() % entry.file_size());
    char b = 0;
    REQUIRE(pread(fd, &b, 1, at) == 1);
    b ^= 0x5a;
    REQUIRE(pwrite(fd, &b, 1, at) == 1);
    fsync(fd);
    close(fd);
    ++changed;
  }
  return changed;
}

PoolId WaitPool(Cluster& c, objects::ObjectClient& client, const std::string& name) {
  absl::StatusOr<PoolId> pool = c.WaitPool(client, name);
  INFO(pool.status());
  REQUIRE(pool.ok());
  return *pool;
}

// Six OSDs with a 3x pool "rep" and an EC 4+2 pool "ec", each holding
// objects of 1 to 16 MiB (and a few small ones), remembered in `data`.
struct Damaged {
  explicit Damaged(ClusterOptions options = {}) {
    options.osds = 6;
    auto started = Cluster::Start(options);
    REQUIRE(started.ok());
    cluster = std::move(*started);
    client = cluster->Client();
    REQUIRE(client != nullptr);
    CommandResult r = cluster->Weft({"pool", "create", "rep", "--size", "3", "--pg-num", "8",
                                     "--failure-domain", "osd"});
    INFO(r.output);
    REQUIRE(r.code == 0);
    r = cluster->Weft(
        {"pool", "create", "ec", "--ec", "4+2", "--pg-num", "8", "--failure-domain", "osd"});
    INFO(r.output);
    REQUIRE(r.code == 0);
    rep = WaitPool(*cluster, *client, "rep");
    ec = WaitPool(*cluster, *client, "ec");
    const std::vector<uint64_t> sizes = {1 << 20, (3 << 20) + 17, 9 << 20, 16 << 20, 4097, 100};
    for (PoolId pool : {rep, ec}) {
      for (size_t n = 0; n < sizes.size(); ++n) {
        const std::string name = absl::StrCat("obj-", n);
        std::string bytes = RandomBytes(sizes[n], static_cast<uint32_t>(pool.value() * 100 + n));
        REQUIRE(client->Put(pool, name, bytes).ok());
        data[{pool.value(), name}] = std::move(bytes);
      }
    }
  }

  // The OSDs holding a copy (a shard) of `name`, and the shard of each.
  std::map<int32_t, int> Holders(PoolId pool, const std::string& name) {
    auto map = client->map();
    const PoolInfo* info = map->FindPool(pool);
    auto mapping =
        placement::MapPg(*map, *info, placement::ObjectToPgSeed(name, info->pg_num));
    std::map<int32_t, int> out;
    for (size_t s = 0; s < mapping.acting.size(); ++s) {
      if (mapping.acting[s] != kNoOsd) {
        out[mapping.acting[s].value()] = pool == ec ? static_cast<int>(s) : -1;
      }
    }
    return out;
  }

  // Every object read back through the client, bit-exact.
  void ReadAllExact() {
    for (const auto& [key, bytes] : data) {
      auto got = client->Get(PoolId(key.first), key.second);
      INFO("pool " << key.first << " " << key.second << ": " << got.status());
      REQUIRE(got.ok());
      REQUIRE(got->size() == bytes.size());
      REQUIRE(*got == bytes);
    }
  }

  // Every copy on OSD `osd` is good: its own copy read alone (3x), or
  // decoded from exactly k shards that include its shard (EC: with only k
  // shards, one bad shard leaves too few to decode).
  void CopiesOnExact(int32_t osd) {
    for (const auto& [key, bytes] : data) {
      const PoolId pool(key.first);
      auto holders = Holders(pool, key.second);
      if (!holders.contains(osd)) continue;
      INFO("pool " << key.first << " " << key.second << " on osd." << osd);
      if (pool == rep) {
        auto got = client->GetFrom(pool, key.second, OsdId(osd));
        INFO(got.status());
        REQUIRE(got.ok());
        REQUIRE(*got == bytes);
        continue;
      }
      const int shard = holders[osd];
      uint32_t mask = 1u << shard;
      for (int s = 0; std::popcount(mask) < 4; ++s) mask |= 1u << s;
      auto got = client->EcReadUsing(pool, key.second, 0, bytes.size(), mask);
      // Shards serve a write once they heard it committed everywhere (up
      // to osd_ec_commit_delay_ms after it): until then, Aborted.
      for (int i = 0; i < 50 && absl::IsAborted(got.status()); ++i) {
        absl::SleepFor(absl::Milliseconds(100));
        got = client->EcReadUsing(pool, key.second, 0, bytes.size(), mask);
      }
      INFO("mask " << mask << ": " << got.status());
      REQUIRE(got.ok());
      REQUIRE(*got == bytes);
    }
  }

  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<objects::ObjectClient> client;
  PoolId rep, ec;
  std::map<std::pair<uint32_t, std::string>, std::string> data;
};

bool Has(const CommandResult& r, const std::string& text) {
  return absl::StrContains(r.output, text);
}

}  // namespace

TEST_CASE("one OSD's every copy damaged - deep scrub finds each - repair rewrites them",
          "[cluster][scrub]") {
  Damaged d;
  Cluster& c = *d.cluster;
  const int32_t victim = c.osd_id(0);
  REQUIRE(CorruptEveryDataFile(c, 0, 7) > 0);

  // Deep scrub first, before any read repaired a copy: it names every object
  // with a copy (a non-empty shard) on the victim.
  CommandResult r = c.Weft({"osd", "deep-scrub", "all", "--wait"});
  INFO(r.output);
  REQUIRE(r.code == 0);
  std::set<std::string> expected;  // "pgid oid"
  for (const auto& [key, bytes] : d.data) {
    auto holders = d.Holders(PoolId(key.first), key.second);
    if (!holders.contains(victim)) continue;
    // A data shard past a small object's bytes holds nothing to damage.
    const int shard = holders[victim];
    if (shard >= 0 && shard < 4 && bytes.size() <= static_cast<uint64_t>(shard) * (64 << 10)) {
      continue;
    }
    auto map = d.client->map();
    const PoolInfo* info = map->FindPool(PoolId(key.first));
    const PgId pg{PoolId(key.first), placement::ObjectToPgSeed(key.second, info->pg_num)};
    expected.insert(absl::StrCat(pg.ToString(), " ", key.second));
  }
  REQUIRE(!expected.empty());
  for (const std::string& line : expected) {
    INFO(line);
    REQUIRE(Has(r, line));
  }
  REQUIRE(Has(r, absl::StrCat("osd.", victim)));
  REQUIRE(Has(r, "read error"));

  // The cluster says so (from the primaries' next statistics), and where.
  for (int i = 0; i < 50 && !Has(r, "HEALTH_ERR"); ++i) {
    r = c.Weft({"status"});
    if (!Has(r, "HEALTH_ERR")) absl::SleepFor(absl::Milliseconds(100));
  }
  INFO(r.output);
  REQUIRE(Has(r, "HEALTH_ERR"));
  REQUIRE(Has(r, "OSD_SCRUB_ERRORS"));
  REQUIRE(Has(r, "PG_DAMAGED"));
  CommandResult ls = c.Weft({"pg", "ls", "inconsistent"});
  INFO(ls.output);
  REQUIRE(ls.code == 0);
  const std::string first_pg = expected.begin()->substr(0, expected.begin()->find(' '));
  REQUIRE(Has(ls, first_pg));
  r = c.Weft({"pg", "list-inconsistent-obj", first_pg});
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(Has(r, expected.begin()->substr(expected.begin()->find(' ') + 1)));

  // Reads never return the damage.
  d.ReadAllExact();

  // Repair rewrites every bad copy; the health clears once the primaries
  // report (every stats interval).
  r = c.Weft({"osd", "repair", "all", "--wait"});
  INFO(r.output);
  REQUIRE(r.code == 0);
  d.CopiesOnExact(victim);
  r = c.Weft({"osd", "deep-scrub", "all", "--wait"});
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(Has(r, ": 0 inconsistent"));
  bool clear = false;
  for (int i = 0; i < 50 && !clear; ++i) {
    r = c.Weft({"status"});
    clear = !Has(r, "PG_DAMAGED") && c.Weft({"pg", "ls", "inconsistent"}).output.empty();
    if (!clear) absl::SleepFor(absl::Milliseconds(200));
  }
  INFO(r.output);
  REQUIRE(clear);

  // The same damage on a second OSD still reads back bit-exact: with the
  // first repaired, every object keeps enough good copies.
  REQUIRE(CorruptEveryDataFile(c, 1, 11) > 0);
  d.ReadAllExact();
  // The OSDs keep serving.
  REQUIRE(d.client->Put(d.rep, "after", "still serving").ok());
  REQUIRE(d.client->Put(d.ec, "after", "still serving").ok());
}

namespace {

// Files written through a mount, then every data file of one OSD damaged
// (the metadata pool's objects too): a fresh mount reads every file back
// bit-exact, and repair leaves nothing for a deep scrub to find.
void FilesSurviveOneDamagedOsd(const DataPoolOptions& data) {
  MountFixture f({.osds = 6}, data);
  Cluster& c = *f.cluster;
  std::map<std::string, std::string> files;
  const std::vector<uint64_t> sizes = {100, 70000, 1 << 20, (5 << 20) + 3, 9 << 20};
  for (size_t i = 0; i < sizes.size(); ++i) {
    const std::string name = absl::StrCat("f", i);
    files[name] = RandomBytes(sizes[i], static_cast<uint32_t>(500 + i));
    WriteFile(f.P(name), files[name]);
    SyncFile(f.P(name));
  }
  f.Remount();  // nothing cached by the kernel or the client
  REQUIRE(CorruptEveryDataFile(c, 0, 42) > 0);
  for (const auto& [name, bytes] : files) {
    INFO(name);
    REQUIRE(ReadFile(f.P(name)) == bytes);
  }
  CommandResult r = c.Weft({"osd", "repair", "all", "--wait"});
  INFO(r.output);
  REQUIRE(r.code == 0);
  r = c.Weft({"osd", "deep-scrub", "all", "--wait"});
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(!Has(r, "read error"));
  f.Remount();
  for (const auto& [name, bytes] : files) {
    INFO(name);
    REQUIRE(ReadFile(f.P(name)) == bytes);
  }
}

}  // namespace

TEST_CASE("files read back right through a mount with one OSD's every copy damaged - 3x",
          "[cluster][scrub][fuse]") {
  FilesSurviveOneDamagedOsd({});
}

TEST_CASE("files read back right through a mount with one OSD's every copy damaged - ec 4+2",
          "[cluster][scrub][fuse]") {
  FilesSurviveOneDamagedOsd({.ec_k = 4, .ec_m = 2});
}

TEST_CASE("read repair - a damaged copy is rewritten from a good one on read", "[cluster][scrub]") {
  Damaged d;
  Cluster& c = *d.cluster;
  REQUIRE(CorruptEveryDataFile(c, 0, 3) > 0);
  const int32_t victim = c.osd_id(0);
  // Reads through the primaries: right bytes. A replicated primary repairs
  // its own copy before it answers; a damaged shard is decoded around and
  // rebuilt in the background.
  d.ReadAllExact();
  // A replica's own copy read directly is an error (never bad bytes), and
  // the primary rewrites it soon after.
  for (const auto& [key, bytes] : d.data) {
    if (PoolId(key.first) != d.rep || !d.Holders(d.rep, key.second).contains(victim)) continue;
    (void)d.client->GetFrom(d.rep, key.second, OsdId(victim));
  }
  bool repaired = false;
  for (int i = 0; i < 100 && !repaired; ++i) {
    repaired = true;
    for (const auto& [key, bytes] : d.data) {
      const PoolId pool(key.first);
      if (pool != d.rep || !d.Holders(pool, key.second).contains(victim)) continue;
      auto got = d.client->GetFrom(pool, key.second, OsdId(victim));
      if (!got.ok()) {
        // Damaged (never bad bytes), or being rewritten right now.
        INFO(got.status());
        REQUIRE((absl::IsDataLoss(got.status()) || absl::IsUnavailable(got.status())));
        repaired = false;
      } else {
        REQUIRE(*got == bytes);
      }
    }
    if (!repaired) absl::SleepFor(absl::Milliseconds(100));
  }
  REQUIRE(repaired);
  // The shards too: read from exactly k shards including the victim's.
  for (int i = 0; i < 100; ++i) {
    bool all = true;
    for (const auto& [key, bytes] : d.data) {
      const PoolId pool(key.first);
      auto holders = d.Holders(pool, key.second);
      if (pool != d.ec || !holders.contains(victim)) continue;
      uint32_t mask = 1u << holders[victim];
      for (int s = 0; std::popcount(mask) < 4; ++s) mask |= 1u << s;
      auto got = d.client->EcReadUsing(pool, key.second, 0, bytes.size(), mask);
      if (!got.ok()) {
        all = false;
        // The client's own read reported it; the primary rebuilds it.
      } else {
        REQUIRE(*got == bytes);
      }
    }
    if (all) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  d.CopiesOnExact(victim);
  // Counted.
  CommandResult r = c.Weft({"status"});
  INFO(r.output);
  REQUIRE(Has(r, "damaged copies rewritten on read"));
  // Nothing left for a scrub to find.
  r = c.Weft({"osd", "deep-scrub", "all", "--wait"});
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(Has(r, ": 0 inconsistent"));
}

TEST_CASE("every copy damaged - a data-loss error naming the object - never bad bytes",
          "[cluster][scrub]") {
  Damaged d;
  Cluster& c = *d.cluster;
  for (int i = 0; i < 6; ++i) CorruptEveryDataFile(c, i, 20 + i);
  // Objects of 1 MiB and more: a byte of every copy is wrong.
  auto got = d.client->Get(d.rep, "obj-0");
  INFO(got.status());
  REQUIRE(!got.ok());
  REQUIRE(absl::IsDataLoss(got.status()));
  REQUIRE(absl::StrContains(got.status().message(), "obj-0"));
  // Repair cannot invent the bytes: the damage stays reported.
  CommandResult r = c.Weft({"osd", "repair", "all", "--wait"});
  INFO(r.output);
  REQUIRE(Has(r, "obj-0"));
  r = c.Weft({"status"});
  INFO(r.output);
  bool reported = false;
  for (int i = 0; i < 50 && !reported; ++i) {
    r = c.Weft({"status"});
    reported = Has(r, "PG_DAMAGED");
    if (!reported) absl::SleepFor(absl::Milliseconds(200));
  }
  REQUIRE(reported);
  // What the scrub left is kept on disk: the primary of obj-0's PG restarts
  // and still reports it.
  auto map = d.client->map();
  const PoolInfo* info = map->FindPool(d.rep);
  const PgId pg{d.rep, placement::ObjectToPgSeed("obj-0", info->pg_num)};
  const OsdId primary = placement::MapPg(*map, *info, pg.seed).primary;
  int index = -1;
  for (int i = 0; i < 6; ++i) {
    if (c.osd_id(i) == primary.value()) index = i;
  }
  REQUIRE(index >= 0);
  c.StopOsd(index);
  REQUIRE(c.StartOsd(index).ok());
  REQUIRE(c.WaitOsdsUp(6, absl::Seconds(30)).ok());
  bool kept = false;
  for (int i = 0; i < 100 && !kept; ++i) {
    r = c.Weft({"pg", "list-inconsistent-obj", pg.ToString()});
    kept = Has(r, "obj-0");
    if (!kept) absl::SleepFor(absl::Milliseconds(200));
  }
  INFO(r.output);
  REQUIRE(kept);
  r = c.Weft({"pg", "query", pg.ToString()});
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(Has(r, "inconsistent objects: 1"));
  REQUIRE(d.client->Put(d.rep, "after", "still serving").ok());
}

TEST_CASE("the schedule deep-scrubs by itself and finds damage", "[cluster][scrub]") {
  ClusterOptions options;
  // Due at once and every few seconds; the load threshold out of the way
  // (a loaded CI machine must still scrub here).
  options.extra_conf = {"osd_scrub_min_interval = 2", "osd_deep_scrub_interval = 3",
                        "osd_scrub_load_threshold_pct = 100000"};
  Damaged d(options);
  Cluster& c = *d.cluster;
  REQUIRE(CorruptEveryDataFile(c, 2, 5) > 0);
  bool found = false;
  CommandResult r;
  for (int i = 0; i < 120 && !found; ++i) {
    r = c.Weft({"status"});
    found = Has(r, "PG_DAMAGED");
    if (!found) absl::SleepFor(absl::Milliseconds(250));
  }
  INFO(r.output);
  REQUIRE(found);
}

TEST_CASE("scrub commands refuse what does not exist", "[cluster][scrub]") {
  auto started = Cluster::Start();
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  auto pool = c.CreatePool(*client, "data", 3, 4);
  REQUIRE(pool.ok());
  const std::string id = absl::StrCat(pool->value());
  CommandResult r = c.Weft({"pg", "repair", absl::StrCat(pool->value() + 7, ".0")});
  INFO(r.output);
  REQUIRE(r.code != 0);
  REQUIRE(Has(r, "does not exist"));
  r = c.Weft({"pg", "repair", id + ".ff"});
  INFO(r.output);
  REQUIRE(r.code != 0);
  REQUIRE(Has(r, "does not exist"));
  r = c.Weft({"pg", "scrub", "not-a-pg"});
  INFO(r.output);
  REQUIRE(r.code != 0);
  r = c.Weft({"osd", "scrub", "42"});
  INFO(r.output);
  REQUIRE(r.code != 0);
  REQUIRE(Has(r, "does not exist"));
  r = c.Weft({"pg", "query", id + ".0"});
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(Has(r, "state: active+clean"));
  REQUIRE(Has(r, "acting: ["));
  r = c.Weft({"pg", "deep-scrub", id + ".0", "--wait"});
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(Has(r, ": 0 inconsistent"));
}

}  // namespace weft::testing
