// Object layer against real processes: etcd, weft-mds and 3 weft-osd on
// 127.0.0.1 (tests/harness/cluster.h). Every object is checked bit-exact on
// the primary and on every replica's own copy.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/placement/placement.h"
#include "tests/harness/cluster.h"

namespace weft::testing {
namespace {

std::unique_ptr<Cluster> StartCluster(ClusterOptions options = {}) {
  auto cluster = Cluster::Start(options);
  REQUIRE(cluster.ok());
  return std::move(*cluster);
}

PoolId CreatePool(Cluster& c, objects::ObjectClient& client, const std::string& name) {
  auto pool = c.CreatePool(client, name, 3, 16);
  INFO(pool.status());
  REQUIRE(pool.ok());
  return *pool;
}

// The number after `label` in a `weft bench` report ("Total writes made:").
uint64_t ReportCount(const std::string& report, const std::string& label) {
  const size_t at = report.find(label);
  if (at == std::string::npos) return 0;
  absl::string_view value = absl::string_view(report).substr(at + label.size());
  value = value.substr(0, value.find('\n'));  // the whole rest when it is the last line
  uint64_t n = 0;
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(value), &n) ? n : 0;
}

// The object's copy on every OSD of its acting set equals `want`.
void CheckReplicas(objects::ObjectClient& client, PoolId pool, const std::string& oid,
                   const std::string& want) {
  auto map = client.map();
  const PoolInfo* info = map->FindPool(pool);
  REQUIRE(info != nullptr);
  auto mapping = placement::MapPg(*map, *info, placement::ObjectToPgSeed(oid, info->pg_num));
  REQUIRE(mapping.acting.size() == 3);
  for (OsdId osd : mapping.acting) {
    auto got = client.GetFrom(pool, oid, osd);
    INFO("object " << oid << " on osd." << osd.value());
    REQUIRE(got.ok());
    REQUIRE(got->size() == want.size());
    REQUIRE(*got == want);
  }
}

}  // namespace

TEST_CASE("put and get are bit-exact for every size - on every replica", "[cluster]") {
  auto c = StartCluster();
  auto client = c->Client();
  REQUIRE(client != nullptr);
  PoolId pool = CreatePool(*c, *client, "data");
  const std::vector<size_t> sizes = {0, 1, 4095, (4u << 20) + 1, 64u << 20};
  for (size_t size : sizes) {
    std::string name = absl::StrCat("obj-", size);
    std::string data = RandomBytes(size, size + 7);
    REQUIRE(client->Put(pool, name, data).ok());
    auto got = client->Get(pool, name);
    REQUIRE(got.ok());
    REQUIRE(got->size() == size);
    REQUIRE(*got == data);
    auto st = client->Stat(pool, name);
    REQUIRE(st.ok());
    REQUIRE(st->size == size);
    CheckReplicas(*client, pool, name, data);
  }
  // The CLI round trip, as a user would do it.
  std::string in = c->dir() + "/in.bin", out = c->dir() + "/out.bin";
  {
    std::ofstream f(in, std::ios::binary);
    std::string data = RandomBytes(3 << 20, 99);
    f.write(data.data(), data.size());
  }
  REQUIRE(c->Weft({"obj", "put", "data", "cli-object", in}).code == 0);
  REQUIRE(c->Weft({"obj", "get", "data", "cli-object", out}).code == 0);
  REQUIRE(RunCommand({"/usr/bin/cmp", in, out}).code == 0);
  auto ls = c->Weft({"obj", "ls", "data"});
  REQUIRE(ls.code == 0);
  REQUIRE(ls.output.find("cli-object") != std::string::npos);
  REQUIRE(ls.output.find("obj-4095") != std::string::npos);
  REQUIRE(c->Weft({"obj", "rm", "data", "cli-object"}).code == 0);
  auto gone = c->Weft({"obj", "stat", "data", "cli-object"});
  REQUIRE(gone.code != 0);
  INFO(gone.output);
  REQUIRE(gone.output.find("obj stat") != std::string::npos);
  REQUIRE(absl::IsNotFound(client->Stat(pool, "cli-object").status()));
  REQUIRE(absl::IsNotFound(client->Get(pool, "never-written").status()));
}

TEST_CASE("partial writes - appends - truncates - xattrs and omap apply atomically", "[cluster]") {
  auto c = StartCluster();
  auto client = c->Client();
  PoolId pool = CreatePool(*c, *client, "meta");
  std::string want = RandomBytes(100000, 1);
  REQUIRE(client->Put(pool, "o", want).ok());
  objects::ObjectOperation op;
  std::string patch = RandomBytes(5000, 2);
  op.Write(40000, patch).Append("tail").SetXattr("user.a", "1").OmapSet({{"k1", "v1"}, {"k2", "v2"}});
  auto done = client->Execute(pool, "o", op);
  REQUIRE(done.ok());
  // A mutation's reply tells how the object's size changed (st_blocks).
  CHECK(done->size_before == 100000);
  CHECK(done->size_after == 100004);
  want.replace(40000, patch.size(), patch);
  want += "tail";
  REQUIRE(*client->Get(pool, "o") == want);
  CheckReplicas(*client, pool, "o", want);

  // A request whose last op fails changes nothing.
  objects::ObjectOperation bad;
  bad.Write(0, "XXXX").Create(/*exclusive=*/true);
  auto r = client->Execute(pool, "o", bad);
  REQUIRE(absl::IsAlreadyExists(r.status()));
  REQUIRE(*client->Get(pool, "o") == want);

  objects::ObjectOperation trunc;
  trunc.Truncate(10);
  auto cut = client->Execute(pool, "o", trunc);
  REQUIRE(cut.ok());
  CHECK(cut->SizeChange() == 10 - 100004);
  REQUIRE(*client->Get(pool, "o") == want.substr(0, 10));

  objects::ObjectOperation reads;
  reads.GetXattr("user.a").OmapList("", "k", 10).OmapGet({"k2", "missing"});
  auto got = client->Execute(pool, "o", reads);
  REQUIRE(got.ok());
  REQUIRE(got->items[0].data == "1");
  REQUIRE(got->items[1].kvs.size() == 2);
  REQUIRE(got->items[2].kvs.size() == 1);
  REQUIRE(got->items[2].kvs[0].second == "v2");
}

}  // namespace weft::testing

namespace weft::testing {

TEST_CASE("the map manager balances PGs over the OSDs with upmap items", "[cluster]") {
  ClusterOptions options;
  options.osds = 6;
  auto c = StartCluster(options);
  auto client = c->Client();
  // 140 PGs x 3 copies over these 6 OSDs: plain rendezvous hashing puts 81
  // replicas on the fullest OSD (max/mean 1.157), above the 1.15 bound, so
  // only the manager's upmap items can pass this.
  auto pool = c->CreatePool(*client, "balanced", 3, 140);
  REQUIRE(pool.ok());
  auto map = client->map();
  const PoolInfo* info = map->FindPool(*pool);
  REQUIRE(info != nullptr);
  std::map<int32_t, int> per_osd;
  for (uint32_t seed = 0; seed < info->pg_num; ++seed) {
    for (OsdId osd : placement::MapPg(*map, *info, seed).up) per_osd[osd.value()]++;
  }
  REQUIRE(per_osd.size() == 6);
  int max = 0;
  for (const auto& [osd, n] : per_osd) max = std::max(max, n);
  double mean = 140.0 * 3 / 6;
  INFO("max " << max << " mean " << mean << " items " << info->upmap_items.size());
  REQUIRE(max / mean <= 1.15);
  REQUIRE(!info->upmap_items.empty());
  // The OSDs follow the same map: every PG goes active+clean.
  REQUIRE(c->WaitClean(absl::Seconds(30)).ok());
  REQUIRE(client->Put(*pool, "x", "y").ok());
}

TEST_CASE("weft status follows a map change at once - not at the OSDs' next statistics tick",
          "[cluster]") {
  ClusterOptions options;
  options.osds = 4;
  // Statistics would reach etcd only every 10 minutes: every state the
  // status shows below comes from the early publish after peering and
  // recovery.
  options.extra_conf = {"osd_stats_interval_ms = 600000"};
  auto c = StartCluster(options);
  auto client = c->Client();
  const PoolId pool = CreatePool(*c, *client, "followed");  // waits for active+clean
  for (int i = 0; i < 40; ++i) REQUIRE(client->Put(pool, absl::StrCat("o", i), "data").ok());

  const std::string out = absl::StrCat(c->osd_id(0));
  REQUIRE(c->Weft({"osd", "out", out}).code == 0);
  auto status = c->Admin()->Status();
  REQUIRE(status.ok());
  CHECK(status->osds_in() == 3);
  // Recovered onto the other three: clean again, as reported under the map
  // that took the OSD out.
  absl::Status clean = c->WaitClean(absl::Seconds(30));
  INFO(clean);
  REQUIRE(clean.ok());

  REQUIRE(c->Weft({"osd", "in", out}).code == 0);
  clean = c->WaitClean(absl::Seconds(30));
  INFO(clean);
  REQUIRE(clean.ok());
  for (int i = 0; i < 40; ++i) {
    auto got = client->Get(pool, absl::StrCat("o", i));
    REQUIRE(got.ok());
    CHECK(*got == "data");
  }
}

TEST_CASE("weft bench writes - reads back verified - and removes what it wrote", "[cluster]") {
  auto c = StartCluster();
  auto client = c->Client();
  REQUIRE(client != nullptr);
  PoolId pool = CreatePool(*c, *client, "bench");

  // A write's buffer comes back to a caller that asks for it, unchanged, once
  // gRPC holds none of it (weft bench reuses it as rados bench does).
  int back = 0;
  for (int i = 0; i < 10; ++i) {
    const std::string data = RandomBytes(1 << 20, 500 + i);
    const std::string name = absl::StrCat("spent-", i);
    objects::ObjectOperation op;
    op.WriteFull(data);
    std::vector<std::string> spent;
    auto r = client->ExecuteReusing(pool, name, std::move(op), &spent);
    REQUIRE(r.ok());
    REQUIRE(spent.size() <= 1);
    if (!spent.empty()) {
      REQUIRE(spent[0] == data);
      ++back;
    }
    auto got = client->Get(pool, name);
    REQUIRE(got.ok());
    REQUIRE(*got == data);
  }
  INFO("buffers back: " << back);
  REQUIRE(back > 0);

  // Write, then read back every object (seq stops after one pass), verified.
  auto w = c->Weft({"bench", "bench", "write", "--seconds", "2", "--threads", "4",
                    "--block-size", "1M"});
  INFO(w.output);
  REQUIRE(w.code == 0);
  REQUIRE(w.output.find("Errors:") == std::string::npos);
  REQUIRE(w.output.find("p99 Latency(s):") != std::string::npos);
  const uint64_t written = ReportCount(w.output, "Total writes made:");
  REQUIRE(written > 0);
  REQUIRE(ReportCount(w.output, "Op size:") == (1u << 20));
  auto seq = c->Weft({"bench", "bench", "seq", "--seconds", "60", "--threads", "4"});
  INFO(seq.output);
  REQUIRE(seq.code == 0);
  REQUIRE(seq.output.find("Errors:") == std::string::npos);
  REQUIRE(ReportCount(seq.output, "Total reads made:") == written);
  auto rand = c->Weft({"bench", "bench", "rand", "--seconds", "1", "--threads", "2"});
  INFO(rand.output);
  REQUIRE(rand.code == 0);
  REQUIRE(ReportCount(rand.output, "Total reads made:") > 0);

  // An object with other bytes is reported, not counted as read.
  auto names = client->List(pool, "benchmark_data_");
  REQUIRE(names.ok());
  REQUIRE(names->size() == written);
  REQUIRE(client->Put(pool, names->back(), RandomBytes(1 << 20, 7)).ok());
  seq = c->Weft({"bench", "bench", "seq", "--seconds", "60", "--threads", "4"});
  INFO(seq.output);
  REQUIRE(seq.code == 1);
  REQUIRE(seq.output.find("read back different bytes") != std::string::npos);
  REQUIRE(ReportCount(seq.output, "Total reads made:") == written - 1);

  // Bad options and pools are refused with the reason.
  auto bad = c->Weft({"bench", "bench", "write", "--threads", "0"});
  REQUIRE(bad.code != 0);
  REQUIRE(bad.output.find("--threads 1..1024") != std::string::npos);
  bad = c->Weft({"bench", "nopool", "write", "--seconds", "1"});
  REQUIRE(bad.code != 0);
  REQUIRE(bad.output.find("nopool") != std::string::npos);

  // cleanup removes every object it wrote and its own record of them.
  auto cleanup = c->Weft({"bench", "bench", "cleanup"});
  INFO(cleanup.output);
  REQUIRE(cleanup.code == 0);
  REQUIRE(cleanup.output.find(absl::StrCat("removed ", written, " objects")) != std::string::npos);
  names = client->List(pool);
  REQUIRE(names.ok());
  REQUIRE(names->size() == 10);  // the spent-N objects above, nothing of the benchmark's
  for (const std::string& name : *names) REQUIRE(name.rfind("spent-", 0) == 0);
  auto after = c->Weft({"bench", "bench", "seq"});
  REQUIRE(after.code != 0);
  REQUIRE(after.output.find("no benchmark objects") != std::string::npos);
}

}  // namespace weft::testing
