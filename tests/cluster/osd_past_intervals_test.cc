// Past intervals at peering (real processes): a PG whose newest writes were
// acknowledged by members that are all gone does not go active on other OSDs
// with older data. It stays down, says which OSDs it waits for, blocks I/O,
// and when one of them comes back (even as an OSD no longer mapped to it)
// peers with it and serves the newest acknowledged bytes.
#include <catch2/catch.hpp>

#include <future>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/placement/placement.h"
#include "tests/harness/cluster.h"
#include "tests/harness/file_io.h"

namespace weft::testing {
namespace {

// Names of `n` objects of PG `seed`.
std::vector<std::string> NamesIn(uint32_t pg_num, uint32_t seed, int n) {
  std::vector<std::string> out;
  for (int i = 0; static_cast<int>(out.size()) < n; ++i) {
    std::string name = absl::StrCat("pi-", i);
    if (placement::ObjectToPgSeed(name, pg_num) == seed) out.push_back(name);
  }
  return out;
}

int IndexOf(Cluster& c, OsdId osd) {
  for (int i = 0; i < c.osd_count(); ++i) {
    if (c.osd_id(i) == osd.value()) return i;
  }
  FAIL("osd." << osd.value() << " is not in the cluster");
  return -1;
}

}  // namespace

TEST_CASE("a PG whose last writers are all down stays down until one returns - then serves "
          "their newest bytes",
          "[cluster][peering]") {
  auto started = Cluster::Start({.osds = 6});
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  constexpr uint32_t kPgNum = 8;
  auto pool = c.CreatePool(*client, "rep", 3, kPgNum);
  REQUIRE(pool.ok());
  const uint32_t seed = 5;
  const std::string pgid = PgId{*pool, seed}.ToString();
  const PoolInfo info = *client->map()->FindPool(*pool);
  const std::vector<OsdId> first = placement::MapPg(*client->map(), info, seed).acting;
  REQUIRE(first.size() == 3);
  const int a = IndexOf(c, first[0]), b = IndexOf(c, first[1]), cc = IndexOf(c, first[2]);

  const std::vector<std::string> names = NamesIn(kPgNum, seed, 12);
  std::map<std::string, std::string> acked;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string data = RandomBytes(5000 + i * 3000, i);
    REQUIRE(client->Put(*pool, names[i], data).ok());
    acked[names[i]] = std::move(data);
  }
  // c dies; [a, b] take newer writes: overwrites and new objects.
  c.KillOsd(cc);
  REQUIRE(WaitForMap(*client, absl::Seconds(30),
                     [&](const OsdMap& m) { return !m.IsUp(first[2]); }));
  for (size_t i = 0; i < names.size(); i += 2) {
    std::string data = RandomBytes(7000 + i * 100, 1000 + i);
    auto put = client->Put(*pool, names[i], data);
    INFO(put.ToString());
    REQUIRE(put.ok());
    acked[names[i]] = std::move(data);
  }
  // Then a and b die, and the operator takes all three out: the PG maps to
  // three OSDs that never held it.
  c.KillOsd(a);
  c.KillOsd(b);
  for (OsdId osd : first) REQUIRE(c.Weft({"osd", "out", std::to_string(osd.value())}).code == 0);
  REQUIRE(WaitForMap(*client, absl::Seconds(30), [&](const OsdMap& m) {
    return !m.IsUp(first[0]) && !m.IsUp(first[1]) && !m.IsIn(first[0]) && !m.IsIn(first[1]) &&
           !m.IsIn(first[2]);
  }));
  // c, whose copy is older, comes back: not enough; the PG must not go
  // active on c's data.
  REQUIRE(c.StartOsd(cc).ok());
  REQUIRE(WaitForMap(*client, absl::Seconds(30),
                     [&](const OsdMap& m) { return m.IsUp(first[2]); }));
  const std::vector<OsdId> now = placement::MapPg(*client->map(), info, seed).acting;
  REQUIRE(now.size() == 3);
  for (OsdId osd : now) REQUIRE(std::find(first.begin(), first.end(), osd) == first.end());

  const std::string waiting = absl::StrCat("osd.", first[0].value(), ", osd.", first[1].value());
  CommandResult status;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  do {
    absl::SleepFor(absl::Milliseconds(500));
    status = c.Weft({"status"});
  } while (!absl::StrContains(status.output, "PG_DOWN") && absl::Now() < deadline);
  INFO(status.output);
  REQUIRE(absl::StrContains(status.output, "PG_DOWN"));
  REQUIRE(absl::StrContains(status.output, absl::StrCat(pgid, " waits for ", waiting)));
  CommandResult query = c.Weft({"pg", "query", pgid});
  INFO(query.output);
  REQUIRE(absl::StrContains(query.output, "state: down"));
  REQUIRE(absl::StrContains(query.output, waiting));

  // A read waits (the PG is down, not empty) ...
  const std::string probe = names[0];
  auto read = std::async(std::launch::async, [&] { return client->Get(*pool, probe); });
  REQUIRE(read.wait_for(std::chrono::seconds(3)) == std::future_status::timeout);
  // ... and still waits a while later: nothing made the PG active.
  REQUIRE(c.Weft({"pg", "query", pgid}).output.find("state: down") != std::string::npos);

  // a returns, still out: the primary hears from it, takes its newer log and
  // objects, and the read gets the newest acknowledged bytes.
  REQUIRE(c.StartOsd(a).ok());
  REQUIRE(read.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  auto got = read.get();
  INFO(got.status());
  REQUIRE(got.ok());
  REQUIRE(*got == acked[probe]);
  REQUIRE(c.WaitClean(absl::Seconds(120)).ok());
  for (const auto& [name, data] : acked) {
    for (OsdId osd : now) {
      auto copy = client->GetFrom(*pool, name, osd);
      INFO(name << " on osd." << osd.value() << ": " << copy.status());
      REQUIRE(copy.ok());
      REQUIRE(*copy == data);
    }
  }
  // Clean again: the map drops the PG's past intervals (alone, at most every
  // 10 s), and health clears.
  REQUIRE(WaitForMap(*client, absl::Seconds(60), [&](const OsdMap& m) {
    for (const PastInterval& p : m.FindPool(*pool)->past_intervals) {
      if (p.pg_seed == seed) return false;
    }
    return true;
  }));
  status = c.Weft({"status"});
  INFO(status.output);
  REQUIRE(!absl::StrContains(status.output, "PG_DOWN"));
}

}  // namespace weft::testing
