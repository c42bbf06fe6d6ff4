// Object layer against real processes: etcd, weft-mds and 3 weft-osd on
// 127.0.0.1 (tests/harness/cluster.h). Every object is checked bit-exact on
// the primary and on every replica's own copy.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "common/placement/placement.h"
#include "tests/harness/cluster.h"

namespace weft::testing {
namespace {

std::unique_ptr<Cluster> StartCluster(ClusterOptions options = {}) {
  auto cluster = Cluster::Start(options);
  REQUIRE(cluster.ok());
  return std::move(*cluster);
}

PoolId CreatePool(Cluster& c, client::ObjectClient& client, const std::string& name) {
  auto pool = c.CreatePool(client, name, 3, 16);
  INFO(pool.status());
  REQUIRE(pool.ok());
  return *pool;
}

// The object's copy on every OSD of its acting set equals `want`.
void CheckReplicas(client::ObjectClient& client, PoolId pool, const std::string& oid,
                   const std::string& want) {
  auto map = client.map();
  const PoolInfo* info = map->FindPool(pool);
  REQUIRE(info != nullptr);
  auto mapping = placement::MapPg(*map, *info, placement::ObjectToPgSeed(oid, info->pg_num));
  REQUIRE(mapping.acting.size() == 3);
  for (OsdId osd : mapping.acting) {
    auto got = client.Get(pool, oid, osd);
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
  client::ObjectOperation op;
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
  client::ObjectOperation bad;
  bad.Write(0, "XXXX").Create(/*exclusive=*/true);
  auto r = client->Execute(pool, "o", bad);
  REQUIRE(absl::IsAlreadyExists(r.status()));
  REQUIRE(*client->Get(pool, "o") == want);

  client::ObjectOperation trunc;
  trunc.Truncate(10);
  auto cut = client->Execute(pool, "o", trunc);
  REQUIRE(cut.ok());
  CHECK(cut->SizeChange() == 10 - 100004);
  REQUIRE(*client->Get(pool, "o") == want.substr(0, 10));

  client::ObjectOperation reads;
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

}  // namespace weft::testing
