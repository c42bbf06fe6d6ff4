// Bad input of every kind gets a clear error, changes nothing, and the
// daemons keep serving.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/placement/placement.h"
#include "proto/osd.grpc.pb.h"
#include "tests/harness/cluster.h"

namespace weft::testing {
namespace {

std::unique_ptr<Cluster> Boot() {
  auto c = Cluster::Start();
  INFO(c.status());
  REQUIRE(c.ok());
  auto client = (*c)->Client();
  REQUIRE(client != nullptr);
  REQUIRE((*c)->CreatePool(*client, "data", 3, 8).ok());
  return std::move(*c);
}

// Sends raw bytes as the body of /weft.pb.Osd/Op.
grpc::Status SendRaw(const std::string& addr, const std::string& bytes) {
  return CallRaw(grpc::CreateChannel(addr, grpc::InsecureChannelCredentials()), "/weft.pb.Osd/Op",
                 bytes)
      .status;
}

}  // namespace

TEST_CASE("object requests with bad input are refused and change nothing", "[cluster]") {
  auto c = Boot();
  auto client = c->Client();
  client->WaitNewer(0, absl::Seconds(1));
  auto pool = client->LookupPool("data");
  REQUIRE(pool.ok());
  REQUIRE(absl::IsNotFound(client->LookupPool("nope").status()));
  REQUIRE(absl::IsNotFound(client->Get(*pool, "never-written").status()));
  REQUIRE(absl::IsNotFound(client->Remove(*pool, "never-written")));
  REQUIRE(client->Put(*pool, "keep", "original").ok());

  std::string long_name(4097, 'n');
  auto s = client->Put(*pool, long_name, "x");
  REQUIRE(absl::IsInvalidArgument(s));
  REQUIRE(client->Put(*pool, std::string(4096, 'n'), "x").ok());  // the limit itself is fine

  objects::ObjectOperation far;
  far.Write((128ull << 20) - 1, "ab");
  REQUIRE(absl::IsOutOfRange(client->Execute(*pool, "keep", far).status()));
  objects::ObjectOperation big_xattr;
  big_xattr.SetXattr("user.big", std::string((64 << 10) + 1, 'x'));
  REQUIRE(absl::IsInvalidArgument(client->Execute(*pool, "keep", big_xattr).status()));
  objects::ObjectOperation big_key;
  big_key.OmapSet({{std::string(4097, 'k'), "v"}});
  REQUIRE(absl::IsInvalidArgument(client->Execute(*pool, "keep", big_key).status()));
  objects::ObjectOperation mixed;
  mixed.Write(0, "zz").Read(0, 2);
  REQUIRE(absl::IsInvalidArgument(client->Execute(*pool, "keep", mixed).status()));
  REQUIRE(*client->Get(*pool, "keep") == "original");

  // Straight to the OSDs, bypassing the client library's checks.
  auto map = client->map();
  const PoolInfo* info = map->FindPool(*pool);
  uint32_t seed = placement::ObjectToPgSeed("keep", info->pg_num);
  auto mapping = placement::MapPg(*map, *info, seed);
  const OsdInfo* primary = map->FindOsd(mapping.primary);
  const OsdInfo* replica = map->FindOsd(mapping.acting[1]);
  pb::OpRequest req;
  req.set_map_epoch(map->epoch);
  req.set_pool(pool->value());
  req.set_pg_seed(seed);
  req.set_oid("keep");
  auto* op = req.add_ops();
  op->set_type(pb::WRITE_FULL);
  op->set_data("overwritten?");
  auto send = [&](const std::string& addr, const pb::OpRequest& r) {
    auto stub = pb::Osd::NewStub(grpc::CreateChannel(addr, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    pb::OpReply reply;
    REQUIRE(stub->Op(&ctx, r, &reply).ok());
    return reply;
  };
  // Not the primary.
  REQUIRE(send(replica->addr, req).status().code() == pb::NOT_PRIMARY);
  // An old epoch: the OSD answers with its newer map.
  pb::OpRequest stale = req;
  stale.set_map_epoch(1);
  auto stale_reply = send(primary->addr, stale);
  REQUIRE(stale_reply.status().code() == pb::STALE_MAP);
  REQUIRE(!stale_reply.osdmap().empty());
  // Unknown pool, a PG seed the name does not map to, an unknown op type.
  pb::OpRequest unknown_pool = req;
  unknown_pool.set_pool(999);
  REQUIRE(send(primary->addr, unknown_pool).status().code() ==
          static_cast<int>(absl::StatusCode::kNotFound));
  pb::OpRequest wrong_seed = req;
  wrong_seed.set_pg_seed((seed + 1) % info->pg_num);
  REQUIRE(send(primary->addr, wrong_seed).status().code() ==
          static_cast<int>(absl::StatusCode::kInvalidArgument));
  pb::OpRequest bad_type = req;
  bad_type.mutable_ops(0)->set_type(static_cast<pb::OpType>(99));
  REQUIRE(send(primary->addr, bad_type).status().code() ==
          static_cast<int>(absl::StatusCode::kInvalidArgument));
  // Malformed and truncated messages.
  std::string valid = req.SerializeAsString();
  REQUIRE(!SendRaw(primary->addr, "\xff\xff\xff\xff\xff garbage").ok());
  REQUIRE(!SendRaw(primary->addr, valid.substr(0, valid.size() / 2)).ok());
  // Nothing changed and the daemons keep serving.
  REQUIRE(*client->Get(*pool, "keep") == "original");
  REQUIRE(client->Put(*pool, "after", "ok").ok());
  for (int i = 0; i < 3; ++i) REQUIRE(c->OsdRunning(i));
}

TEST_CASE("admin commands refuse bad input with the reason", "[cluster]") {
  auto c = Boot();
  auto r = c->Weft({"pool", "create", "big", "--size", "4"});
  REQUIRE(r.code == 1);
  REQUIRE(r.output.find("needs 4 failure domains") != std::string::npos);
  r = c->Weft({"pool", "create", "data", "--size", "3"});
  REQUIRE(r.code == 1);
  REQUIRE(r.output.find("already exists") != std::string::npos);
  r = c->Weft({"pool", "create", "bad/name", "--size", "1"});
  REQUIRE(r.code == 1);
  r = c->Weft({"pool", "create", "x", "--size", "many"});
  REQUIRE(r.code == 1);
  REQUIRE(r.output.find("not an integer") != std::string::npos);
  r = c->Weft({"pool", "rm", "data"});
  REQUIRE(r.code == 1);
  REQUIRE(r.output.find("--yes-i-really-mean-it") != std::string::npos);
  r = c->Weft({"osd", "out", "77"});
  REQUIRE(r.code == 1);
  REQUIRE(r.output.find("does not exist") != std::string::npos);
  r = c->Weft({"frobnicate"});
  REQUIRE(r.code == 2);
  r = c->Weft({"obj", "get", "nopool", "x"});
  REQUIRE(r.code == 1);
  REQUIRE(r.output.find("does not exist") != std::string::npos);
  // Out and in change the map; pool rm with confirmation works.
  REQUIRE(c->Weft({"osd", "out", std::to_string(c->osd_id(0))}).code == 0);
  REQUIRE(c->Weft({"osd", "ls"}).output.find("out") != std::string::npos);
  REQUIRE(c->Weft({"osd", "in", std::to_string(c->osd_id(0))}).code == 0);
  REQUIRE(c->Weft({"pool", "rm", "data", "--yes-i-really-mean-it"}).code == 0);
  REQUIRE(c->Weft({"pool", "ls"}).output.find("data") == std::string::npos);
  auto status = c->Weft({"status"});
  INFO(status.output);
  REQUIRE(status.code == 0);
  REQUIRE(status.output.rfind("HEALTH_", 0) == 0);
}

TEST_CASE("daemons with a bad data dir or unreachable etcd exit with one line", "[cluster]") {
  auto c = Boot();
  // Missing data dir.
  auto r = RunCommand({BinPath("weft-osd"), "--id", "0", "--data", c->dir() + "/missing", "-c",
                       c->conf_path()});
  REQUIRE(r.code == 1);
  REQUIRE(std::count(r.output.begin(), r.output.end(), '\n') == 1);
  // A directory that is not a store.
  std::filesystem::create_directories(c->dir() + "/junk/meta");
  std::ofstream(c->dir() + "/junk/meta/CURRENT") << "garbage\n";
  r = RunCommand({BinPath("weft-osd"), "--id", "0", "--data", c->dir() + "/junk", "-c",
                  c->conf_path()});
  REQUIRE(r.code == 1);
  // Another OSD's data dir.
  r = RunCommand({BinPath("weft-osd"), "--id", "5", "--data", c->OsdDataDir(1), "-c",
                  c->conf_path()});
  REQUIRE(r.code == 1);
  // Unreachable etcd.
  std::string conf = c->dir() + "/dead.conf";
  std::ofstream(conf) << "fsid = dead\netcd = 127.0.0.1:" << FreePort()
                      << "\nmds = 127.0.0.1:" << FreePort() << "\n";
  std::filesystem::create_directories(c->dir() + "/fresh");
  REQUIRE(RunCommand({BinPath("weft-osd"), "--mkfs", "--id", "9", "--data", c->dir() + "/fresh",
                      "-c", conf})
              .code == 0);
  r = RunCommand({BinPath("weft-osd"), "--id", "9", "--data", c->dir() + "/fresh", "-c", conf});
  INFO(r.output);
  REQUIRE(r.code == 1);
  REQUIRE(r.output.find("etcd") != std::string::npos);
  r = RunCommand({BinPath("weft-mds"), "--name", "z", "-c", conf});
  REQUIRE(r.code == 1);
  // Bad settings are refused by name before anything starts.
  for (const std::string bad : {"osd_memory_trim_ms = -1", "osd_memory_trim_ms = 3600001",
                                "osd_memory_trim_free_bytes = -5",
                                "osd_memory_trim_free_bytes = lots",
                                "osd_spare_reserve_files = -1",
                                "osd_spare_reserve_files = 16385"}) {
    const std::string bad_conf = c->dir() + "/bad.conf";
    std::ofstream(bad_conf) << "fsid = dead\netcd = 127.0.0.1:" << FreePort() << "\n"
                            << bad << "\n";
    r = RunCommand({BinPath("weft-osd"), "--id", "9", "--data", c->dir() + "/fresh", "-c",
                    bad_conf});
    INFO(bad << ": " << r.output);
    CHECK(r.code == 1);
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(r.output.find(bad.substr(0, bad.find(' '))) != std::string::npos);
  }
  // The running cluster did not notice.
  for (int i = 0; i < 3; ++i) REQUIRE(c->OsdRunning(i));
}

}  // namespace weft::testing
