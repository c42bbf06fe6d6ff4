// OSDs added, reweighted, drained and removed while a cluster takes writes
// (real processes): the new OSD gets close to its share of the PGs, every
// acknowledged object reads back bit-exact from every copy afterwards, and
// the commands refuse what would lose data or makes no sense.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/placement/placement.h"
#include "tests/harness/cluster.h"
#include "tests/harness/file_io.h"

namespace weft::testing {
namespace {

constexpr int kPgNum = 32;

// Writers putting (and overwriting) objects until stopped; `acked` keeps
// what the cluster acknowledged last for each name.
class Load {
 public:
  Load(objects::ObjectClient& client, PoolId pool, int round) {
    for (int w = 0; w < 2; ++w) {
      threads_.emplace_back([this, &client, pool, round, w] {
        for (int n = 0; !stop_; ++n) {
          std::string name = absl::StrCat("r", round, "w", w, "-", n % 40);
          std::string data = RandomBytes(1000 + (n * 7919) % 200000, round * 1000000 + w * 1000 + n);
          if (client.Put(pool, name, data).ok()) {
            std::lock_guard<std::mutex> lock(mu_);
            acked_[name] = std::move(data);
          } else {
            ++failures_;
          }
        }
      });
    }
  }
  ~Load() { Stop(); }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  std::map<std::string, std::string> acked() {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_;
  }
  int failures() const { return failures_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> failures_{0};
  std::mutex mu_;
  std::map<std::string, std::string> acked_;
  std::vector<std::thread> threads_;
};

// Every object of `objects` from every acting member's own copy.
void CheckEveryCopy(objects::ObjectClient& client, PoolId pool,
                    const std::map<std::string, std::string>& objects) {
  const absl::Status copies = EveryCopyMatches(client, pool, objects, 3);
  INFO(copies);
  REQUIRE(copies.ok());
}

// PGs of `pool` with `osd` in their acting set.
int PgsOn(objects::ObjectClient& client, PoolId pool, int32_t osd) {
  auto map = client.map();
  const PoolInfo* info = map->FindPool(pool);
  int n = 0;
  for (uint32_t seed = 0; seed < info->pg_num; ++seed) {
    for (OsdId o : placement::MapPg(*map, *info, seed).acting) n += o.value() == osd;
  }
  return n;
}

void WaitMapShows(objects::ObjectClient& client, const std::function<bool(const OsdMap&)>& ok) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!ok(*client.map())) {
    REQUIRE(absl::Now() < deadline);
    client.WaitNewer(client.map()->epoch, absl::Milliseconds(200));
  }
}

}  // namespace

TEST_CASE("an OSD added under writes gets its share - one drained and removed under writes - "
          "every copy bit-exact",
          "[cluster][lifecycle]") {
  auto started = Cluster::Start({.osds = 6});
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  auto pool = c.CreatePool(*client, "rep", 3, kPgNum);
  REQUIRE(pool.ok());

  // A seventh OSD joins while two writers run.
  std::map<std::string, std::string> objects;
  {
    Load load(*client, *pool, 0);
    absl::SleepFor(absl::Seconds(1));
    auto added = c.AddOsd();
    INFO(added.status());
    REQUIRE(added.ok());
    REQUIRE(c.WaitOsdsUp(7, absl::Seconds(30)).ok());
    absl::SleepFor(absl::Seconds(2));
    load.Stop();
    objects = load.acked();
    INFO("failures " << load.failures());
    REQUIRE(objects.size() > 20);
  }
  REQUIRE(c.WaitClean(absl::Seconds(120)).ok());
  const int32_t added = c.osd_id(6);
  // Its share: 3 copies of 32 PGs over 7 equal OSDs, 13.7; the balancer
  // keeps every OSD within 10 % of its share.
  const int on_new = PgsOn(*client, *pool, added);
  INFO("pgs on the new osd." << added << ": " << on_new);
  REQUIRE(on_new >= 12);
  REQUIRE(on_new <= 16);
  CheckEveryCopy(*client, *pool, objects);

  // Bad input changes nothing.
  const int32_t victim = c.osd_id(2);
  for (const auto& [args, why] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"osd", "reweight", std::to_string(victim), "1.5"}, "outside [0, 1]"},
           {{"osd", "reweight", std::to_string(victim), "-0.1"}, "outside [0, 1]"},
           {{"osd", "reweight", "99", "0.5"}, "does not exist"},
           {{"osd", "rm", std::to_string(victim)}, "is up"},
           {{"osd", "rm", "99"}, "does not exist"}}) {
    CommandResult r = c.Weft(args);
    INFO(r.output);
    REQUIRE(r.code != 0);
    REQUIRE(absl::StrContains(r.output, why));
  }

  // Reweight halves what it holds, about.
  const int before = PgsOn(*client, *pool, victim);
  REQUIRE(c.Weft({"osd", "reweight", std::to_string(victim), "0.5"}).code == 0);
  WaitMapShows(*client, [&](const OsdMap& m) { return m.FindOsd(OsdId(victim))->reweight == 0.5; });
  REQUIRE(c.WaitClean(absl::Seconds(120)).ok());
  const int halved = PgsOn(*client, *pool, victim);
  INFO("pgs on osd." << victim << ": " << before << " -> " << halved);
  REQUIRE(halved < before);
  REQUIRE(halved <= before * 3 / 4);
  CommandResult ls = c.Weft({"osd", "ls"});
  INFO(ls.output);
  REQUIRE(absl::StrContains(ls.output, "0.500"));
  CheckEveryCopy(*client, *pool, objects);

  // Drain it under writes, then remove it: refused while it is in or up.
  {
    Load load(*client, *pool, 1);
    absl::SleepFor(absl::Milliseconds(500));
    CommandResult r = c.Weft({"osd", "rm", std::to_string(victim)});
    INFO(r.output);
    REQUIRE(r.code != 0);
    REQUIRE(absl::StrContains(r.output, "is up"));
    REQUIRE(c.Weft({"osd", "out", std::to_string(victim)}).code == 0);
    absl::SleepFor(absl::Seconds(2));
    load.Stop();
    for (auto& [name, data] : load.acked()) objects[name] = data;
  }
  REQUIRE(c.WaitClean(absl::Seconds(120)).ok());
  REQUIRE(PgsOn(*client, *pool, victim) == 0);
  c.StopOsd(2);
  WaitMapShows(*client, [&](const OsdMap& m) { return !m.FindOsd(OsdId(victim))->up; });
  REQUIRE(c.WaitClean(absl::Seconds(60)).ok());
  CommandResult r = c.Weft({"osd", "purge", std::to_string(victim)});
  INFO(r.output);
  REQUIRE(r.code == 0);
  WaitMapShows(*client, [&](const OsdMap& m) { return m.FindOsd(OsdId(victim)) == nullptr; });
  ls = c.Weft({"osd", "ls"});
  INFO(ls.output);
  REQUIRE(!absl::StrContains(ls.output, absl::StrCat("\n", victim, " ")));
  REQUIRE(c.WaitClean(absl::Seconds(60)).ok());
  CheckEveryCopy(*client, *pool, objects);
  // And writes go on.
  REQUIRE(client->Put(*pool, "after", "still serving").ok());
}

TEST_CASE("osd rm refuses an OSD whose PGs are not all clean", "[cluster][lifecycle]") {
  auto started = Cluster::Start({.osds = 4});
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  auto pool = c.CreatePool(*client, "rep", 3, 8);
  REQUIRE(pool.ok());
  for (int i = 0; i < 20; ++i) {
    REQUIRE(client->Put(*pool, absl::StrCat("o", i), RandomBytes(50000, i)).ok());
  }
  // Two OSDs stopped: one marked out, the other still in and down. PGs that
  // had both are degraded: removing the out one is refused.
  const int32_t a = c.osd_id(0), b = c.osd_id(1);
  c.StopOsd(0);
  c.StopOsd(1);
  WaitMapShows(*client, [&](const OsdMap& m) {
    return !m.FindOsd(OsdId(a))->up && !m.FindOsd(OsdId(b))->up;
  });
  // Down but in: refused, and the reason names the next step.
  CommandResult in = c.Weft({"osd", "rm", std::to_string(b)});
  INFO(in.output);
  REQUIRE(in.code != 0);
  REQUIRE(absl::StrContains(in.output, "is in: mark it out"));
  REQUIRE(c.Weft({"osd", "out", std::to_string(a)}).code == 0);
  CommandResult r;
  for (int i = 0; i < 50; ++i) {
    r = c.Weft({"osd", "rm", std::to_string(a)});
    if (absl::StrContains(r.output, "not safe")) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  INFO(r.output);
  REQUIRE(r.code != 0);
  REQUIRE(absl::StrContains(r.output, "not safe to remove"));
  // Still in the map: `osd ls` has a line that starts with its id.
  CommandResult ls = c.Weft({"osd", "ls"});
  INFO(ls.output);
  REQUIRE(absl::StrContains(ls.output, absl::StrCat("\n", a, " ")));
}

}  // namespace weft::testing
