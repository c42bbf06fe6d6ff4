// Erasure-coded pools against real processes (6 OSDs, failure domain osd):
// profiles refused with reasons, mixed-size objects read back bit-exact with
// two shard OSDs killed, overwrites while a shard is down then rebuilt and
// checked through every combination of k shards, the primary killed in the
// middle of partial-stripe writes, the bytes a one-byte read moves, and a
// primary that serves before it has rebuilt its own shards.
#include <catch2/catch.hpp>

#include <bit>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/placement/placement.h"
#include "proto/osd.grpc.pb.h"
#include "tests/harness/cluster.h"

namespace weft::testing {
namespace {

constexpr uint64_t kChunk = 64 << 10;  // the default chunk size

PoolId MakeEcPool(Cluster& c, objects::ObjectClient& client, const std::string& name,
                  const std::string& profile, int pg_num) {
  CommandResult r = c.Weft({"pool", "create", name, "--ec", profile, "--pg-num",
                            std::to_string(pg_num), "--failure-domain", "osd"});
  INFO(r.output);
  REQUIRE(r.code == 0);
  absl::StatusOr<PoolId> pool = c.WaitPool(client, name);
  INFO(pool.status());
  REQUIRE(pool.ok());
  return *pool;
}

// A cluster of 6 OSDs with the EC 4+2 pool "ec" of `pg_num` PGs (failure
// domain osd), clean, and a client.
struct Ec42 {
  explicit Ec42(int pg_num) {
    auto started = Cluster::Start({.osds = 6});
    REQUIRE(started.ok());
    cluster = std::move(*started);
    client = cluster->Client();
    REQUIRE(client != nullptr);
    pool = MakeEcPool(*cluster, *client, "ec", "4+2", pg_num);
  }
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<objects::ObjectClient> client;
  PoolId pool{};
};

// The index (in the cluster) of OSD `id`.
int IndexOf(Cluster& c, OsdId id, int osds) {
  for (int i = 0; i < osds; ++i) {
    if (c.osd_id(i) == id.value()) return i;
  }
  FAIL("no such osd");
  return -1;
}

placement::PgMapping Mapping(objects::ObjectClient& client, PoolId pool_id,
                             const std::string& oid) {
  auto m = client.map();
  const PoolInfo* pool = m->FindPool(pool_id);
  return placement::MapPg(*m, *pool, placement::ObjectToPgSeed(oid, pool->pg_num));
}

// Every way to choose k of the k + m shards reads back `want` at `offset`.
// A shard refuses the newest write of its PG (Aborted) until it learns the
// write's commit point, osd_ec_commit_delay_ms later at the latest: that
// refusal is retried for a few seconds.
void CheckEveryKShards(objects::ObjectClient& client, PoolId pool, const std::string& oid,
                       uint32_t k, uint32_t m, const std::string& want) {
  for (uint32_t mask = 0; mask < (1u << (k + m)); ++mask) {
    if (std::popcount(mask) != static_cast<int>(k)) continue;
    auto got = client.EcReadUsing(pool, oid, 0, want.size() + 1, mask);
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (!got.ok() && absl::IsAborted(got.status()) && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(100));
      got = client.EcReadUsing(pool, oid, 0, want.size() + 1, mask);
    }
    INFO("shards " << mask << ": " << got.status());
    REQUIRE(got.ok());
    REQUIRE(*got == want);
  }
}

// Starts OSD `osd` again (of 6), waits until every PG is clean (what it
// missed is rebuilt), then reads every object from every k of the 4 + 2 shards.
void RestartAndCheckEveryKShards(Cluster& c, objects::ObjectClient& client, PoolId pool, int osd,
                                 const std::map<std::string, std::string>& objects) {
  REQUIRE(c.StartOsd(osd).ok());
  REQUIRE(c.WaitOsdsUp(6, absl::Seconds(30)).ok());
  absl::Status clean = c.WaitClean(absl::Seconds(90));
  INFO(clean);
  REQUIRE(clean.ok());
  for (const auto& [name, data] : objects) {
    INFO(name);
    CheckEveryKShards(client, pool, name, 4, 2, data);
  }
}

// Waits until the client's map shows exactly `n` OSDs up.
void WaitUpCount(objects::ObjectClient& client, int n) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (;;) {
    auto m = client.map();
    int up = 0;
    for (const OsdInfo& osd : m->osds) up += osd.up;
    if (up == n) return;
    REQUIRE(absl::Now() < deadline);
    client.WaitNewer(m->epoch, absl::Milliseconds(200));
  }
}

// Restarts OSD `victim` (the primary of what comes next) with the fault
// point that makes its next write reach only `shards` shards before it exits.
void RestartWithPartialWriteFault(Cluster& c, int victim, int shards) {
  c.StopOsd(victim);
  ::setenv("WEFT_FAULTS", absl::StrCat("osd.ec_partial_write=", shards).c_str(), 1);
  REQUIRE(c.StartOsd(victim).ok());
  ::unsetenv("WEFT_FAULTS");
  REQUIRE(c.WaitOsdsUp(6, absl::Seconds(30)).ok());
  REQUIRE(c.WaitClean(absl::Seconds(60)).ok());
}

// Lines of the 6 OSDs' logs that carry `event`.
int CountOsdLogEvents(Cluster& c, const std::string& event) {
  int n = 0;
  for (int i = 0; i < 6; ++i) {
    std::ifstream log(absl::StrCat(c.dir(), "/osd.", i, ".log"));
    for (std::string line; std::getline(log, line);) n += line.find(event) != std::string::npos;
  }
  return n;
}

// Per-OSD read byte counters as `weft status` shows them ("io: osd.N read X B").
std::map<int, uint64_t> StatusReadBytes(Cluster& c) {
  CommandResult r = c.Weft({"status"});
  std::map<int, uint64_t> out;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) {
    int id = 0;
    unsigned long bytes = 0;
    if (std::sscanf(line.c_str(), " io: osd.%d read %lu B", &id, &bytes) == 2) out[id] = bytes;
  }
  return out;
}

}  // namespace

TEST_CASE("erasure pool profiles: bad ones refused with the reason - pool ls shows the profile",
          "[cluster][ec]") {
  auto started = Cluster::Start({.osds = 6});
  REQUIRE(started.ok());
  Cluster& c = **started;
  struct Bad {
    std::vector<std::string> args;
    std::string reason;
  };
  for (const Bad& bad : std::vector<Bad>{
           {{"--ec", "0+2"}, "k=0"},
           {{"--ec", "17+2"}, "k=17"},
           {{"--ec", "4+5"}, "m=5"},
           {{"--ec", "4+0"}, "m=0"},
           {{"--ec", "4+3"}, "needs 7 failure domains"},
           {{"--ec", "4+2", "--chunk-size", "5000"}, "multiple of 4096"},
           {{"--ec", "4+2", "--chunk-size", "2097152"}, "at most 1 MiB"},
           {{"--ec", "4+2", "--min-size", "3"}, "--min-size 3"},
           {{"--ec", "4x2"}, "K+M"},
       }) {
    std::vector<std::string> args = {"pool", "create", "bad", "--failure-domain", "osd"};
    args.insert(args.end(), bad.args.begin(), bad.args.end());
    CommandResult r = c.Weft(args);
    INFO(r.output);
    REQUIRE(r.code != 0);
    REQUIRE(r.output.find(bad.reason) != std::string::npos);
  }
  CommandResult ls = c.Weft({"pool", "ls"});
  REQUIRE(ls.output.find("bad") == std::string::npos);
  auto client = c.Client();
  MakeEcPool(c, *client, "ec42", "4+2", 8);
  ls = c.Weft({"pool", "ls"});
  INFO(ls.output);
  REQUIRE(ls.output.find("ec 4+2/64K") != std::string::npos);
  REQUIRE(c.Weft({"pool", "create", "ec33", "--ec", "3+3", "--chunk-size", "4096",
                  "--failure-domain", "osd"}).code == 0);
  // min_size defaults to k + 1.
  auto m = client->WaitNewer(client->map()->epoch, absl::Seconds(2));
  for (int i = 0; i < 20 && m->FindPoolByName("ec33") == nullptr; ++i) {
    m = client->WaitNewer(m->epoch, absl::Milliseconds(250));
  }
  REQUIRE(m->FindPoolByName("ec33") != nullptr);
  REQUIRE(m->FindPoolByName("ec33")->min_size == 4);
  REQUIRE(m->FindPoolByName("ec33")->ec_chunk_bytes == 4096);
}

TEST_CASE("erasure 4+2: 200 mixed objects survive two killed shard OSDs - a 1-byte read moves "
          "at most one chunk",
          "[cluster][ec]") {
  Ec42 f(16);
  Cluster& c = *f.cluster;
  auto& client = f.client;
  const PoolId pool = f.pool;
  std::mt19937 rng(42);
  std::map<std::string, std::string> objects;
  const std::vector<size_t> edge = {0, 1, 4095, 4096, kChunk - 1, kChunk, kChunk + 1,
                                    4 * kChunk, 4 * kChunk + 1, 3 * 4 * kChunk - 7};
  for (int i = 0; i < 200; ++i) {
    size_t size = i < static_cast<int>(edge.size()) ? edge[i] : rng() % (3 << 20);
    std::string name = absl::StrCat("obj-", i);
    objects[name] = RandomBytes(size, i);
    REQUIRE(client->Put(pool, name, objects[name]).ok());
  }
  for (const auto& [name, data] : objects) {
    auto got = client->Get(pool, name);
    INFO(name << ": " << got.status());
    REQUIRE(got.ok());
    REQUIRE(*got == data);
  }
  // Partial reads, including past the end.
  const std::string& big = objects["obj-9"];
  auto part = client->Execute(pool, "obj-9", objects::ObjectOperation().Read(kChunk - 3, 10));
  REQUIRE(part.ok());
  REQUIRE(part->items[0].data == big.substr(kChunk - 3, 10));
  auto past = client->Execute(pool, "obj-9", objects::ObjectOperation().Read(big.size() + 5, 10));
  REQUIRE(past.ok());
  REQUIRE(past->items[0].data.empty());

  // One byte of a 64 MiB object: at most one chunk crosses the network.
  const std::string huge = RandomBytes(64 << 20, 7);
  REQUIRE(client->Put(pool, "huge", huge).ok());
  // The OSDs publish their counters every 2 s; let two periods pass.
  std::this_thread::sleep_for(std::chrono::milliseconds(4500));
  auto osd_before = StatusReadBytes(c);
  REQUIRE(osd_before.size() == 6);
  auto before = client->ReceivedBytes();
  auto one = client->Execute(pool, "huge", objects::ObjectOperation().Read(33'333'333, 1));
  REQUIRE(one.ok());
  REQUIRE(one->items[0].data == huge.substr(33'333'333, 1));
  auto after = client->ReceivedBytes();
  uint64_t moved = 0;
  int osds_read = 0;
  for (const auto& [osd, bytes] : after) {
    uint64_t delta = bytes - (before.count(osd) ? before[osd] : 0);
    moved += delta;
    osds_read += delta > 0;
  }
  INFO("bytes moved for a 1-byte read: " << moved);
  REQUIRE(moved <= kChunk);
  REQUIRE(osds_read == 1);
  // And as the OSDs count what they sent.
  std::this_thread::sleep_for(std::chrono::milliseconds(4500));
  auto osd_after = StatusReadBytes(c);
  uint64_t sent = 0;
  for (const auto& [osd, bytes] : osd_after) sent += bytes - osd_before[osd];
  INFO("bytes the OSDs sent for a 1-byte read: " << sent);
  REQUIRE(sent >= 1);
  REQUIRE(sent <= kChunk);
  objects["huge"] = huge;

  // kill -9 two OSDs (with 6 OSDs and 4+2, two shards of every object).
  c.KillOsd(1);
  c.KillOsd(4);
  for (const auto& [name, data] : objects) {
    auto got = client->Get(pool, name);
    INFO(name << ": " << got.status());
    REQUIRE(got.ok());
    REQUIRE(*got == data);
  }
  // Once the map says so, every PG is below min_size (4 of 6 shards, min_size
  // 5): no writes, but the shards that stayed keep serving decoded reads.
  WaitUpCount(*client, 4);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (const auto& [name, data] : objects) {
    auto got = client->Get(pool, name);
    INFO(name << " (map shows 2 down): " << got.status());
    REQUIRE(got.ok());
    REQUIRE(*got == data);
  }
}

TEST_CASE("erasure 4+2: overwrites while a shard OSD is down are rebuilt on its return",
          "[cluster][ec]") {
  Ec42 f(8);
  Cluster& c = *f.cluster;
  auto& client = f.client;
  const PoolId pool = f.pool;
  std::map<std::string, std::string> objects;
  for (int i = 0; i < 12; ++i) {
    std::string name = absl::StrCat("o", i);
    objects[name] = RandomBytes(3 * 4 * kChunk + 12345 * i, 100 + i);
    REQUIRE(client->Put(pool, name, objects[name]).ok());
  }
  c.KillOsd(2);
  WaitUpCount(*client, 5);
  std::mt19937 rng(3);
  for (auto& [name, data] : objects) {
    // The middle of a stripe, across a stripe boundary, an append, a truncate.
    uint64_t off = 4 * kChunk + 1000 + rng() % 5000;
    std::string patch = RandomBytes(kChunk + 777, rng());
    REQUIRE(client->Execute(pool, name, objects::ObjectOperation().Write(off, patch)).ok());
    data.replace(off, patch.size(), patch);
    std::string tail = RandomBytes(5000, rng());
    REQUIRE(client->Execute(pool, name, objects::ObjectOperation().Append(tail)).ok());
    data += tail;
    if (name == "o3") {
      REQUIRE(client->Execute(pool, name, objects::ObjectOperation().Truncate(70000)).ok());
      data.resize(70000);
    }
    auto got = client->Get(pool, name);
    REQUIRE(got.ok());
    REQUIRE(*got == data);
  }
  {
    // One request that cuts an object and writes past the cut: the cut
    // stripes read back as zeros, not as their old content.
    std::string& data = objects["o5"];
    const uint64_t cut = 4 * kChunk + 10, at = 3 * 4 * kChunk;
    std::string patch = RandomBytes(3000, 77);
    const uint64_t old_size = data.size();
    auto done =
        client->Execute(pool, "o5", objects::ObjectOperation().Truncate(cut).Write(at, patch));
    REQUIRE(done.ok());
    CHECK(done->size_before == old_size);  // the sizes a client counts st_blocks by
    CHECK(done->size_after == at + patch.size());
    data.resize(cut);
    data.resize(at, '\0');
    data += patch;
    auto got = client->Get(pool, "o5");
    REQUIRE(got.ok());
    REQUIRE(*got == data);
  }
  RestartAndCheckEveryKShards(c, *client, pool, 2, objects);
}

TEST_CASE("erasure 4+2 with min_size 4: writes go on with two shard OSDs down - rebuilt on "
          "their return",
          "[cluster][ec]") {
  Ec42 f(8);
  Cluster& c = *f.cluster;
  auto& client = f.client;
  const PoolId pool = f.pool;
  // Bad settings are refused with the reason, and change nothing.
  for (const auto& [key, value, why] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"min_size", "3", "must be within [k=4, k+m=6]"},
           {"min_size", "7", "must be within [k=4, k+m=6]"},
           {"min_size", "many", "is not a number"},
           {"size", "4", "is not one of: min_size"}}) {
    CommandResult r = c.Weft({"pool", "set", "ec", key, value});
    INFO(r.output);
    REQUIRE(r.code != 0);
    REQUIRE(r.output.find(why) != std::string::npos);
  }
  REQUIRE(c.Weft({"pool", "set", "nosuch", "min_size", "4"}).code != 0);
  std::map<std::string, std::string> objects;
  for (int i = 0; i < 8; ++i) {
    std::string name = absl::StrCat("o", i);
    objects[name] = RandomBytes(2 * 4 * kChunk + 4321 * i, 300 + i);
    REQUIRE(client->Put(pool, name, objects[name]).ok());
  }
  c.KillOsd(1);
  c.KillOsd(4);
  WaitUpCount(*client, 4);
  // With the default min_size (k+1) every PG that lost two shards refuses
  // I/O, and the status says which and what to do.
  CommandResult r;
  for (int i = 0; i < 50; ++i) {
    r = c.Weft({"status"});
    if (r.output.find("PG_UNAVAILABLE") != std::string::npos) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  INFO(r.output);
  REQUIRE(r.output.find("PG_UNAVAILABLE") != std::string::npos);
  REQUIRE(r.output.find("< min_size 5") != std::string::npos);
  {
    // The first PG named, queried: it says why it is not active.
    const size_t at = r.output.find("I/O blocked: ") + 13;
    const std::string pg = r.output.substr(at, r.output.find(' ', at) - at);
    CommandResult q = c.Weft({"pg", "query", pg});
    INFO(q.output);
    REQUIRE(q.code == 0);
    REQUIRE(q.output.find("why not active: 4 members up, min_size 5") != std::string::npos);
  }
  r = c.Weft({"pool", "set", "ec", "min_size", "4"});
  INFO(r.output);
  REQUIRE(r.code == 0);
  // Writes go on: new objects, overwrites, appends.
  std::mt19937 rng(9);
  for (int i = 8; i < 12; ++i) {
    std::string name = absl::StrCat("o", i);
    objects[name] = RandomBytes(4 * kChunk + 99 * i, 300 + i);
    auto put = client->Put(pool, name, objects[name]);
    INFO(put);
    REQUIRE(put.ok());
  }
  for (auto& [name, data] : objects) {
    const uint64_t off = kChunk + rng() % 5000;
    std::string patch = RandomBytes(kChunk + 55, rng());
    REQUIRE(client->Execute(pool, name, objects::ObjectOperation().Write(off, patch)).ok());
    if (data.size() < off + patch.size()) data.resize(off + patch.size(), '\0');
    data.replace(off, patch.size(), patch);
    auto got = client->Get(pool, name);
    REQUIRE(got.ok());
    REQUIRE(*got == data);
  }
  r = c.Weft({"status"});
  INFO(r.output);
  REQUIRE(r.output.find("POOL_MIN_SIZE_K") != std::string::npos);
  // Both return: their shards are rebuilt, every k of the 6 read it all.
  REQUIRE(c.StartOsd(1).ok());
  RestartAndCheckEveryKShards(c, *client, pool, 4, objects);
}

// An OSD back from an outage is primary of its PGs again before it has
// rebuilt the shards written meanwhile (recovery held back 15 s here): its
// listings still name those objects (Pg::AddSelfMissing), and reads of them
// decode around its missing shard.
TEST_CASE("erasure 4+2: a primary back without the shards written while it was down lists and "
          "reads them before it rebuilds them",
          "[cluster][ec]") {
  Ec42 f(8);
  Cluster& c = *f.cluster;
  auto& client = f.client;
  const PoolId pool = f.pool;
  std::map<std::string, std::string> objects;
  for (int i = 0; i < 16; ++i) {
    const std::string name = absl::StrCat("a", i);
    objects[name] = RandomBytes(2 * 4 * kChunk + 999 * i, 300 + i);
    REQUIRE(client->Put(pool, name, objects[name]).ok());
  }
  const OsdId victim_id = Mapping(*client, pool, "b0").primary;
  const int victim = IndexOf(c, victim_id, 6);
  c.KillOsd(victim);
  WaitUpCount(*client, 5);
  for (int i = 0; i < 24; ++i) {
    const std::string name = absl::StrCat("b", i);
    objects[name] = RandomBytes(4 * kChunk + 777 * i, 400 + i);
    REQUIRE(client->Put(pool, name, objects[name]).ok());
  }
  constexpr absl::Duration kHeldBack = absl::Seconds(15);
  ::setenv("WEFT_FAULTS",
           absl::StrCat("osd.recovery_delay_ms=", absl::ToInt64Milliseconds(kHeldBack)).c_str(),
           1);
  const absl::Time restarted = absl::Now();
  absl::Status up = c.StartOsd(victim);
  ::unsetenv("WEFT_FAULTS");
  REQUIRE(up.ok());
  REQUIRE(c.WaitOsdsUp(6, absl::Seconds(20)).ok());
  WaitUpCount(*client, 6);  // the client's map too: it decides who leads below
  int lacked = 0;  // objects written while it was down, in PGs it leads again
  for (const auto& [name, data] : objects) {
    if (name[0] == 'b' && Mapping(*client, pool, name).primary == victim_id) ++lacked;
  }
  REQUIRE(lacked > 0);  // b0's at least

  auto listed = client->List(pool);
  INFO(listed.status());
  REQUIRE(listed.ok());
  std::set<std::string> names(listed->begin(), listed->end());
  for (const auto& [name, data] : objects) {
    INFO(name);
    CHECK(names.count(name) == 1);
    auto got = client->Get(pool, name);
    INFO(got.status());
    REQUIRE(got.ok());
    CHECK((*got == data));
  }
  CHECK(names.size() == objects.size());
  INFO("the checks above ran within the window: " << absl::Now() - restarted);
  REQUIRE(absl::Now() - restarted < kHeldBack);

  // Then it rebuilds them, and every k shards read them back.
  absl::Status clean = c.WaitClean(absl::Seconds(90));
  INFO(clean);
  REQUIRE(clean.ok());
  for (const auto& [name, data] : objects) {
    if (name[0] != 'b') continue;
    INFO(name);
    CheckEveryKShards(*client, pool, name, 4, 2, data);
  }
}

TEST_CASE("erasure 4+2 with inline shard data: small objects survive overwrites - a down shard "
          "and its rebuild",
          "[cluster][ec]") {
  // osd_inline_max_bytes keeps shards of up to one chunk in LevelDB: small
  // objects' shards are inline, bigger ones are files, and overwrites move
  // shards between the two.
  auto started = Cluster::Start({.osds = 6, .extra_conf = {"osd_inline_max_bytes = 65536"}});
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  PoolId pool = MakeEcPool(c, *client, "ec", "4+2", 8);
  std::mt19937 rng(11);
  std::map<std::string, std::string> objects;
  for (int i = 0; i < 40; ++i) {
    const size_t size = i % 4 == 3 ? 4 * kChunk + rng() % (4 * kChunk) : rng() % (3 * kChunk);
    std::string name = absl::StrCat("small-", i);
    objects[name] = RandomBytes(size, 300 + i);
    REQUIRE(client->Put(pool, name, objects[name]).ok());
  }
  // 40 objects x 6 shards; only the bigger quarter needs data files (the
  // OSDs' reserve of empty files aside, osd_spare_reserve_files).
  size_t files = 0;
  for (int i = 0; i < 6; ++i) {
    for (const auto& entry : std::filesystem::directory_iterator(c.OsdDataDir(i) + "/data")) {
      if (entry.file_size() > 0) ++files;
    }
  }
  INFO("data files holding bytes on all OSDs: " << files);
  CHECK(files <= 10 * 6);
  c.KillOsd(3);
  WaitUpCount(*client, 5);
  for (auto& [name, data] : objects) {
    // Overwrites in the middle (read-modify-write of inline shards), appends
    // that grow past one chunk per shard, and truncates back under it.
    const uint64_t off = data.empty() ? 0 : rng() % data.size();
    std::string patch = RandomBytes(1 + rng() % 3000, rng());
    REQUIRE(client->Execute(pool, name, objects::ObjectOperation().Write(off, patch)).ok());
    if (data.size() < off + patch.size()) data.resize(off + patch.size(), '\0');
    data.replace(off, patch.size(), patch);
    if (rng() % 2 == 0) {
      std::string tail = RandomBytes(5 * kChunk, rng());
      REQUIRE(client->Execute(pool, name, objects::ObjectOperation().Append(tail)).ok());
      data += tail;
    } else if (data.size() > kChunk) {
      REQUIRE(client->Execute(pool, name, objects::ObjectOperation().Truncate(kChunk / 2)).ok());
      data.resize(kChunk / 2);
    }
    auto got = client->Get(pool, name);
    INFO(name);
    REQUIRE(got.ok());
    REQUIRE(*got == data);
  }
  RestartAndCheckEveryKShards(c, *client, pool, 3, objects);
}

TEST_CASE("erasure 4+2: the primary killed during partial-stripe writes leaves every stripe "
          "old or new",
          "[cluster][ec]") {
  Ec42 f(4);
  Cluster& c = *f.cluster;
  auto& client = f.client;
  const PoolId pool = f.pool;
  const uint64_t w = 4 * kChunk;
  // The region rewritten each time covers the end of stripe 1 and the start
  // of stripe 2: every write is a partial-stripe write on two stripes.
  const uint64_t region_off = w + w / 2, region_len = w - 4096;
  const std::string name = "victim";
  std::string base = RandomBytes(4 * w, 9);
  REQUIRE(client->Put(pool, name, base).ok());
  for (int round = 0; round < 4; ++round) {
    const OsdId primary = Mapping(*client, pool, name).primary;
    const int victim = IndexOf(c, primary, 6);
    std::atomic<bool> stop{false};
    std::atomic<int> acked{0};
    std::thread writer([&] {
      for (int v = 1; !stop; ++v) {
        std::string fill(region_len, static_cast<char>(round * 50 + v % 50));
        auto r = client->Execute(pool, name, objects::ObjectOperation().Write(region_off, fill));
        if (r.ok()) acked++;
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + 97 * round));
    c.KillOsd(victim);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = true;
    writer.join();
    REQUIRE(c.StartOsd(victim).ok());
    REQUIRE(c.WaitOsdsUp(6, absl::Seconds(30)).ok());
    absl::Status clean = c.WaitClean(absl::Seconds(90));
    INFO(clean);
    REQUIRE(clean.ok());
    auto got = client->Get(pool, name);
    REQUIRE(got.ok());
    REQUIRE(got->size() == base.size());
    // Outside the region: untouched. Inside: one write's fill, whole.
    REQUIRE(got->substr(0, region_off) == base.substr(0, region_off));
    REQUIRE(got->substr(region_off + region_len) == base.substr(region_off + region_len));
    const std::string region = got->substr(region_off, region_len);
    INFO("round " << round << " acked " << acked);
    REQUIRE(region.find_first_not_of(region[0]) == std::string::npos);
    base.replace(region_off, region_len, region);
    CheckEveryKShards(*client, pool, name, 4, 2, base);
  }
}

TEST_CASE("erasure 4+2: a primary dying after a partial-stripe write reached N shards: rolled "
          "back below k - forward from k",
          "[cluster][ec]") {
  Ec42 f(4);
  Cluster& c = *f.cluster;
  auto& client = f.client;
  const PoolId pool = f.pool;
  const uint64_t w = 4 * kChunk;
  const uint64_t region_off = w - 5000, region_len = 2 * kChunk + 10000;
  const std::string name = "victim";
  std::string base = RandomBytes(3 * w + 999, 11);
  REQUIRE(client->Put(pool, name, base).ok());
  for (int round = 0; round < 6; ++round) {
    const int shards = 1 + round % 5;  // 1..3 roll back, 4..5 roll forward
    const OsdId primary = Mapping(*client, pool, name).primary;
    const int victim = IndexOf(c, primary, 6);
    RestartWithPartialWriteFault(c, victim, shards);
    const std::string fill(region_len, static_cast<char>('a' + round));
    // The primary dies in the middle; the client retries with the same request
    // id on the next primary: the write ends up applied exactly once.
    auto written = client->Execute(pool, name, objects::ObjectOperation().Write(region_off, fill));
    INFO("round " << round << " shards " << shards << ": " << written.status());
    REQUIRE(written.ok());
    REQUIRE(!c.OsdRunning(victim));
    auto got = client->Get(pool, name);
    REQUIRE(got.ok());
    base.replace(region_off, region_len, fill);
    REQUIRE(*got == base);
    REQUIRE(c.StartOsd(victim).ok());
    REQUIRE(c.WaitOsdsUp(6, absl::Seconds(30)).ok());
    absl::Status clean = c.WaitClean(absl::Seconds(90));
    INFO(clean);
    REQUIRE(clean.ok());
    CheckEveryKShards(*client, pool, name, 4, 2, base);
  }
  // The rounds below k really were rolled back somewhere.
  REQUIRE(CountOsdLogEvents(c, "event=ec_rolled_back") > 0);
}

TEST_CASE("erasure 4+2: a primary dying after a remove reached N shards: the remove rolls forward "
          "from any N",
          "[cluster][ec]") {
  Ec42 f(4);
  Cluster& c = *f.cluster;
  auto& client = f.client;
  const PoolId pool = f.pool;
  const std::string kept_data = RandomBytes(5 * 4 * kChunk + 77, 12);
  REQUIRE(client->Put(pool, "kept", kept_data).ok());
  for (int shards = 1; shards <= 5; ++shards) {
    const std::string name = absl::StrCat("removed", shards);
    const std::string data = RandomBytes(3 * 4 * kChunk + 999, 20 + shards);
    REQUIRE(client->Put(pool, name, data).ok());
    const OsdId primary = Mapping(*client, pool, name).primary;
    const int victim = IndexOf(c, primary, 6);
    RestartWithPartialWriteFault(c, victim, shards);
    // The primary applies the remove on `shards` shards and dies; the
    // client's retry on the next primary finds it done (or does it).
    absl::Status removed = client->Remove(pool, name);
    INFO("shards " << shards << ": " << removed);
    REQUIRE(removed.ok());
    REQUIRE(!c.OsdRunning(victim));
    CHECK(absl::IsNotFound(client->Get(pool, name).status()));
    REQUIRE(c.StartOsd(victim).ok());
    REQUIRE(c.WaitOsdsUp(6, absl::Seconds(30)).ok());
    absl::Status clean = c.WaitClean(absl::Seconds(90));
    INFO(clean);
    REQUIRE(clean.ok());
    // Gone through every k shards, not resurrected from the ones that
    // missed the remove.
    for (uint32_t mask = 0; mask < 64; ++mask) {
      if (std::popcount(mask) != 4) continue;
      auto got = client->EcReadUsing(pool, name, 0, data.size(), mask);
      INFO("mask " << mask << ": " << got.status());
      CHECK(!got.ok());
    }
    CHECK(absl::IsNotFound(client->Get(pool, name).status()));
    CheckEveryKShards(*client, pool, "kept", 4, 2, kept_data);
  }
  // Below k the remove really went forward (before, it was rolled back from
  // a saved copy of the whole shard).
  CHECK(CountOsdLogEvents(c, "event=ec_remove_rolled_forward") > 0);
}

TEST_CASE("erasure 4+2: shard requests for the wrong shard id are refused and change nothing",
          "[cluster][ec]") {
  Ec42 f(4);
  auto& client = f.client;
  const PoolId pool = f.pool;
  const std::string data = RandomBytes(300000, 5);
  REQUIRE(client->Put(pool, "x", data).ok());
  const placement::PgMapping mapping = Mapping(*client, pool, "x");
  auto m = client->map();
  const uint32_t seed = placement::ObjectToPgSeed("x", m->FindPool(pool)->pg_num);
  rpc::ChannelCache channels;
  for (uint32_t pos = 0; pos < 6; ++pos) {
    const OsdInfo* osd = m->FindOsd(mapping.acting[pos]);
    auto stub = pb::Osd::NewStub(channels.Get(osd->addr));
    for (uint32_t asked : {(pos + 1) % 6, 17u}) {
      pb::OpRequest req;
      req.set_map_epoch(m->epoch);
      req.set_pool(pool.value());
      req.set_pg_seed(seed);
      req.set_oid("x");
      req.set_flags(pb::OPF_LOCAL | pb::OPF_SHARD);
      req.set_shard(asked);
      req.add_ops()->set_type(pb::READ);
      grpc::ClientContext ctx;
      pb::OpReply reply;
      REQUIRE(stub->Op(&ctx, req, &reply).ok());
      INFO(reply.status().message());
      REQUIRE(reply.status().code() == static_cast<int>(absl::StatusCode::kFailedPrecondition));
      REQUIRE(reply.status().message().find("does not hold shard") != std::string::npos);
    }
    // A write sent as a shard request is refused too.
    pb::OpRequest write;
    write.set_map_epoch(m->epoch);
    write.set_pool(pool.value());
    write.set_pg_seed(seed);
    write.set_oid("x");
    write.set_flags(pb::OPF_SHARD);
    write.set_shard(pos);
    auto* op = write.add_ops();
    op->set_type(pb::WRITE);
    op->set_data("garbage");
    grpc::ClientContext ctx;
    pb::OpReply reply;
    REQUIRE(stub->Op(&ctx, write, &reply).ok());
    REQUIRE(reply.status().code() == static_cast<int>(absl::StatusCode::kInvalidArgument));
  }
  CheckEveryKShards(*client, pool, "x", 4, 2, data);
  // Reads past the end: empty, not an error; the daemons keep serving.
  auto past = client->Execute(pool, "x", objects::ObjectOperation().Read(10'000'000, 5));
  REQUIRE(past.ok());
  REQUIRE(past->items[0].data.empty());
  REQUIRE(*client->Get(pool, "x") == data);
  // Replacing and removing an object whose shards exceed one store metadata
  // value (72 MiB: 18 MiB shards): the rollback data is kept in pieces.
  const std::string big = RandomBytes(72 << 20, 6);
  REQUIRE(client->Put(pool, "big", big).ok());
  const std::string small = RandomBytes(1 << 20, 7);
  REQUIRE(client->Put(pool, "big", small).ok());
  REQUIRE(*client->Get(pool, "big") == small);
  REQUIRE(client->Put(pool, "big", big).ok());
  REQUIRE(client->Remove(pool, "big").ok());
  REQUIRE(absl::IsNotFound(client->Get(pool, "big").status()));
}

TEST_CASE("erasure 4+2: an OSD marked out has its shards rebuilt on the replacement",
          "[cluster][ec]") {
  auto started = Cluster::Start({.osds = 7});
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  PoolId pool = MakeEcPool(c, *client, "ec", "4+2", 8);
  std::map<std::string, std::string> objects;
  for (int i = 0; i < 24; ++i) {
    std::string name = absl::StrCat("m", i);
    objects[name] = RandomBytes(100000 + 37000 * i, 300 + i);
    REQUIRE(client->Put(pool, name, objects[name]).ok());
  }
  REQUIRE(c.Weft({"osd", "out", std::to_string(c.osd_id(3))}).code == 0);
  client->WaitNewer(client->map()->epoch, absl::Seconds(2));
  absl::Status clean = c.WaitClean(absl::Seconds(120));
  INFO(clean);
  REQUIRE(clean.ok());
  for (const auto& [name, data] : objects) {
    INFO(name);
    CheckEveryKShards(*client, pool, name, 4, 2, data);
  }
  c.KillOsd(3);  // nothing of the pool may depend on it any more
  for (const auto& [name, data] : objects) {
    auto got = client->Get(pool, name);
    REQUIRE(got.ok());
    REQUIRE(*got == data);
  }
}

}  // namespace weft::testing
