// The OSD blocklist: `weft osd blocklist add|rm|ls`, OSDs refusing every
// request of a listed client, and an MDS taking rank 0 fencing the holder
// before it (a restart of the same daemon is another holder: each process
// has its own client name).
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "tests/harness/cluster.h"
#include "tests/harness/fs_fixture.h"

namespace weft::testing {
namespace {

bool Refused(const absl::Status& status) {
  return absl::IsPermissionDenied(status) &&
         status.message().find("blocklisted") != std::string::npos;
}

// The holder of fs1's rank 0 as `weft fs status` names it.
std::string RankHolder(Cluster& c) {
  CommandResult status = c.Weft({"fs", "status", "fs1"});
  INFO(status.output);
  REQUIRE(status.code == 0);
  const std::string key = "holder: client ";
  const size_t at = status.output.find(key);
  REQUIRE(at != std::string::npos);
  const size_t from = at + key.size();
  return status.output.substr(from, status.output.find_first_of(" ,\n", from) - from);
}

}  // namespace

TEST_CASE("a blocklisted client gets nothing from the OSDs until it is removed or expires",
          "[cluster]") {
  auto started = Cluster::Start();
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto fenced = c.Client();
  auto other = c.Client();
  REQUIRE(fenced != nullptr);
  REQUIRE(other != nullptr);
  auto pool = c.CreatePool(*other, "data", 3, 16);
  INFO(pool.status());
  REQUIRE(pool.ok());
  REQUIRE(fenced->Put(*pool, "obj", "before").ok());

  CommandResult add = c.Weft({"osd", "blocklist", "add", fenced->name(), "--seconds", "0"});
  INFO(add.output);
  REQUIRE(add.code == 0);
  CommandResult ls = c.Weft({"osd", "blocklist", "ls"});
  CHECK(ls.code == 0);
  CHECK(ls.output.find(fenced->name()) != std::string::npos);
  CHECK(ls.output.find("never") != std::string::npos);

  // Writes and reads alike, with the reason; nothing changes.
  absl::Status put = fenced->Put(*pool, "obj", "after");
  INFO(put);
  CHECK(Refused(put));
  CHECK(Refused(fenced->Get(*pool, "obj").status()));
  CHECK(Refused(fenced->Put(*pool, "new", "x")));
  auto seen = other->Get(*pool, "obj");
  REQUIRE(seen.ok());
  CHECK(*seen == "before");
  CHECK(absl::IsNotFound(other->Get(*pool, "new").status()));
  CHECK(other->Put(*pool, "obj2", "other").ok());

  CommandResult rm = c.Weft({"osd", "blocklist", "rm", fenced->name()});
  INFO(rm.output);
  REQUIRE(rm.code == 0);
  REQUIRE(fenced->Put(*pool, "obj", "after").ok());
  seen = other->Get(*pool, "obj");
  REQUIRE(seen.ok());
  CHECK(*seen == "after");

  // An entry with an expiry lapses by itself, without a new map.
  REQUIRE(c.Weft({"osd", "blocklist", "add", fenced->name(), "--seconds", "2"}).code == 0);
  CHECK(Refused(fenced->Put(*pool, "obj", "refused")));
  absl::SleepFor(absl::Milliseconds(2500));
  CHECK(fenced->Put(*pool, "obj", "later").ok());
  CHECK(c.Weft({"osd", "blocklist", "ls"}).output.find(fenced->name()) == std::string::npos);

  // Bad input: a clear error, and the list unchanged.
  CommandResult missing = c.Weft({"osd", "blocklist", "rm", "client.nobody"});
  CHECK(missing.code != 0);
  CHECK(missing.output.find("not blocklisted") != std::string::npos);
  CHECK(c.Weft({"osd", "blocklist", "add"}).code != 0);
  CommandResult negative = c.Weft({"osd", "blocklist", "add", "client.x", "--seconds", "-1"});
  CHECK(negative.code != 0);
  CHECK(negative.output.find("--seconds") != std::string::npos);
  CHECK(c.Weft({"osd", "blocklist", "ls"}).output.find("client.x") == std::string::npos);
}

TEST_CASE("an MDS taking rank 0 fences the holder before it on every OSD", "[cluster][mds]") {
  FsFixture f;
  Cluster& c = *f.cluster;
  const uint64_t dir = Ino(f.fs().Mkdir(f.fs().root(), "kept"));
  const std::string first = RankHolder(c);
  REQUIRE(first.rfind("mds.a.", 0) == 0);

  f.RestartMds();
  auto meta = c.Meta("fs1");
  REQUIRE(meta != nullptr);
  FsCaller fs(meta.get());
  const std::string second = RankHolder(c);
  CHECK(second != first);
  CHECK(c.Weft({"osd", "blocklist", "ls"}).output.find(first) != std::string::npos);

  // Whatever the old holder still sends is refused: its journal appends and
  // namespace writes go to the metadata pool, and so does this probe.
  objects::ClientOptions as_old;
  as_old.mds_addrs = c.mds_addrs();
  as_old.name = first;
  as_old.op_timeout_ms = 30000;
  auto old = objects::ObjectClient::Connect(as_old);
  REQUIRE(old.ok());
  const PoolId meta_pool = (*old)->map()->FindPoolByName("fs1_meta")->id;
  absl::Status probe = (*old)->Put(meta_pool, "fence-probe", "stale write");
  INFO(probe);
  CHECK(Refused(probe));

  // The new holder serves: what was there is there, and changes work.
  auto kept = fs.Lookup(fs.root(), "kept");
  REQUIRE(kept.ok());
  CHECK(kept->ino() == dir);
  CHECK(fs.Create(dir, "after-takeover").ok());

  // And is fenced in turn by the next one; the first stays listed.
  f.RestartMds();
  REQUIRE(c.Meta("fs1") != nullptr);
  CHECK(RankHolder(c) != second);
  CommandResult ls = c.Weft({"osd", "blocklist", "ls"});
  CHECK(ls.output.find(first) != std::string::npos);
  CHECK(ls.output.find(second) != std::string::npos);
}

}  // namespace weft::testing
