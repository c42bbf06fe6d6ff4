// Faults against real processes: an OSD killed with SIGKILL during writes, a
// corrupted byte on disk (repaired on read), how fast clients learn that an OSD is down, and
// what a daemon dying of a fatal signal leaves in its log.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/placement/placement.h"
#include "tests/harness/cluster.h"
#include "tests/harness/file_io.h"

namespace weft::testing {
namespace {

// A daemon's whole log ("" if unreadable).
std::string ReadLog(const std::string& path) { return ReadWholeFile(path).value_or(""); }

// The crash report a daemon tagged `tag` wrote for `signal_name` in `log`:
// its lines from the header to the end marker ("" if there is none).
std::string CrashReport(const std::string& log, const std::string& tag,
                        const std::string& signal_name) {
  const size_t head = log.find(absl::StrCat(" ", tag, " crash] *** ", signal_name, " "));
  if (head == std::string::npos) return "";
  const size_t end = log.find("crash] *** end of stack", head);
  if (end == std::string::npos) return "";
  return log.substr(head, end - head);
}

PoolId MakePool(Cluster& c, objects::ObjectClient& client) {
  auto pool = c.CreatePool(client, "data", 3, 16);
  INFO(pool.status());
  REQUIRE(pool.ok());
  return *pool;
}

}  // namespace

TEST_CASE("kill -9 an OSD during 4 writers: every acknowledged object is intact everywhere",
          "[cluster][fault]") {
  auto started = Cluster::Start();
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  PoolId pool = MakePool(c, *client);

  std::mutex mu;
  std::map<std::string, std::string> acked;  // name -> content the cluster acknowledged
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      for (int n = 0; !stop; ++n) {
        std::string name = absl::StrCat("w", w, "-", n);
        // Overwrite some earlier objects too: recovery must bring the new content.
        if (n % 5 == 4) name = absl::StrCat("w", w, "-", n - 4);
        std::string data = RandomBytes(1000 + (n * 7919) % 300000, w * 100000 + n);
        absl::Status s = client->Put(pool, name, data);
        if (s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          acked[name] = data;
        } else {
          failures++;
        }
      }
    });
  }
  absl::SleepFor(absl::Seconds(2));
  c.KillOsd(1);
  absl::SleepFor(absl::Seconds(6));  // past the lease: writes go on degraded
  REQUIRE(c.StartOsd(1).ok());
  absl::SleepFor(absl::Seconds(3));
  stop = true;
  for (auto& t : writers) t.join();
  INFO("acknowledged " << acked.size() << " objects, " << failures << " puts failed");
  REQUIRE(acked.size() > 20);
  REQUIRE(c.WaitClean(absl::Seconds(60)).ok());

  auto map = client->map();
  const PoolInfo* info = map->FindPool(pool);
  for (const auto& [name, data] : acked) {
    auto mapping = placement::MapPg(*map, *info, placement::ObjectToPgSeed(name, info->pg_num));
    REQUIRE(mapping.acting.size() == 3);
    for (OsdId osd : mapping.acting) {
      auto got = client->GetFrom(pool, name, osd);
      INFO(name << " on osd." << osd.value() << ": " << got.status());
      REQUIRE(got.ok());
      REQUIRE(*got == data);
    }
  }
}

TEST_CASE("a flipped byte on the primary is repaired from a replica - never bad data", "[cluster][fault]") {
  auto started = Cluster::Start();
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  PoolId pool = MakePool(c, *client);
  const std::string marker = "WEFT-CHECKSUM-MARKER-0123456789";
  std::string data = marker + RandomBytes(200000, 5);
  REQUIRE(client->Put(pool, "victim", data).ok());

  // Find the file holding the object on its primary and flip one byte.
  auto map = client->map();
  const PoolInfo* info = map->FindPool(pool);
  auto mapping = placement::MapPg(*map, *info, placement::ObjectToPgSeed("victim", info->pg_num));
  int index = -1;
  for (int i = 0; i < 3; ++i) {
    if (OsdId(c.osd_id(i)) == mapping.primary) index = i;
  }
  REQUIRE(index >= 0);
  std::string victim_file;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(c.OsdDataDir(index))) {
    if (!entry.is_regular_file() || entry.file_size() != data.size()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string head(marker.size(), '\0');
    in.read(head.data(), head.size());
    if (head == marker) victim_file = entry.path();
  }
  REQUIRE(!victim_file.empty());
  {
    int fd = open(victim_file.c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    char b = 0;
    REQUIRE(pread(fd, &b, 1, 100000) == 1);
    b ^= 0x40;
    REQUIRE(pwrite(fd, &b, 1, 100000) == 1);
    fsync(fd);
    close(fd);
  }
  // The page cache holds the flipped byte too, so the OSD reads it: its
  // checksums refuse it, and the primary pulls a good copy before it
  // answers (osd/pg/pg_scrub.cc, read repair).
  auto got = client->Get(pool, "victim");
  INFO(got.status());
  REQUIRE(got.ok());
  REQUIRE(*got == data);
  // Every copy is intact, the primary's own too: it was rewritten.
  for (OsdId osd : mapping.acting) {
    auto copy = client->GetFrom(pool, "victim", osd);
    INFO("osd." << osd.value() << ": " << copy.status());
    REQUIRE(copy.ok());
    REQUIRE(*copy == data);
  }
  // Counted in `weft status` (from the OSD's next statistics).
  CommandResult status;
  bool counted = false;
  for (int i = 0; i < 50 && !counted; ++i) {
    status = c.Weft({"status"});
    counted = status.output.find("damaged copies rewritten on read") != std::string::npos;
    if (!counted) absl::SleepFor(absl::Milliseconds(100));
  }
  INFO(status.output);
  REQUIRE(counted);
  // The OSD keeps serving.
  REQUIRE(client->Put(pool, "after", "still serving").ok());
}

TEST_CASE("clients notice an OSD marked down within the lease time", "[cluster][fault]") {
  ClusterOptions options;
  options.osd_lease_ttl_s = 3;
  auto started = Cluster::Start(options);
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  OsdId victim(c.osd_id(2));
  REQUIRE(client->map()->IsUp(victim));
  absl::Time killed = absl::Now();
  c.KillOsd(2);
  absl::Duration noticed = absl::InfiniteDuration();
  while (absl::Now() - killed < absl::Seconds(20)) {
    auto map = client->WaitNewer(client->map()->epoch, absl::Milliseconds(200));
    if (!map->IsUp(victim)) {
      noticed = absl::Now() - killed;
      break;
    }
  }
  INFO("noticed after " << absl::FormatDuration(noticed));
  // The etcd lease expires after its TTL; the map follows and reaches the
  // client through the MDS stream, with a second of slack for etcd's expiry.
  REQUIRE(noticed <= absl::Seconds(options.osd_lease_ttl_s + 1));
  auto status = c.Weft({"status"});
  REQUIRE(status.output.rfind("HEALTH_WARN", 0) == 0);
  REQUIRE(status.output.find("OSD_DOWN") != std::string::npos);
}

TEST_CASE("an OSD marked out by the down-out timer is in again when it boots - one set out "
          "by hand stays out - a restarted manager waits a whole grace",
          "[cluster][fault]") {
  ClusterOptions options;
  options.osd_lease_ttl_s = 3;
  options.down_out_interval_s = 6;
  auto started = Cluster::Start(options);
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  const OsdId a(c.osd_id(1)), b(c.osd_id(2));

  // Down past the grace: out; back up: in again, with no admin involved.
  c.KillOsd(1);
  REQUIRE(WaitForMap(*client, absl::Seconds(30), [&](const OsdMap& m) { return !m.IsIn(a); }));
  REQUIRE(c.StartOsd(1).ok());
  CHECK(WaitForMap(*client, absl::Seconds(30),
                   [&](const OsdMap& m) { return m.IsUp(a) && m.IsIn(a); }));

  // Out by hand: a restart does not bring it in.
  REQUIRE(c.Weft({"osd", "out", absl::StrCat(b.value())}).code == 0);
  c.KillOsd(2);
  REQUIRE(WaitForMap(*client, absl::Seconds(30), [&](const OsdMap& m) { return !m.IsUp(b); }));
  REQUIRE(c.StartOsd(2).ok());
  REQUIRE(WaitForMap(*client, absl::Seconds(30), [&](const OsdMap& m) { return m.IsUp(b); }));
  CHECK_FALSE(client->map()->IsIn(b));
  REQUIRE(c.Weft({"osd", "in", absl::StrCat(b.value())}).code == 0);
  REQUIRE(WaitForMap(*client, absl::Seconds(30), [&](const OsdMap& m) { return m.IsIn(b); }));

  // The manager stopped for longer than the grace while an OSD was down
  // (a whole cluster stopped and started again): the new leader does not
  // mark it out at once; it has a grace to boot in.
  c.KillOsd(1);
  REQUIRE(WaitForMap(*client, absl::Seconds(30), [&](const OsdMap& m) { return !m.IsUp(a); }));
  c.KillMds();
  absl::SleepFor(absl::Seconds(options.down_out_interval_s + 2));
  const absl::Time restarted = absl::Now();
  REQUIRE(c.StartMds().ok());
  auto fresh = c.Client();  // follows the new manager's maps
  REQUIRE(fresh != nullptr);
  REQUIRE(c.StartOsd(1).ok());
  REQUIRE(WaitForMap(*fresh, absl::Seconds(30), [&](const OsdMap& m) { return m.IsUp(a); }));
  INFO("up again " << absl::FormatDuration(absl::Now() - restarted) << " after the restart");
  // It never went out after the restart. Its being in proves nothing (it
  // would be in again by now either way: auto-out-in), so the manager's log
  // says: one osd_out, the first one.
  std::ifstream log(c.dir() + "/mds.a.log");
  const std::string needle = absl::StrCat("event=osd_out osd=", a.value(), " ");
  int outs = 0;
  for (std::string line; std::getline(log, line);) outs += line.find(needle) != std::string::npos;
  CHECK(outs == 1);
}

TEST_CASE("a daemon dying of a fatal signal logs its stack and dies of it - then restarts",
          "[cluster][fault]") {
  auto started = Cluster::Start();
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  PoolId pool = MakePool(c, *client);
  const std::string data = RandomBytes(100000, 7);
  REQUIRE(client->Put(pool, "before", data).ok());

  // An OSD: the exit status is the signal's, as without the handler.
  REQUIRE(c.SignalOsd(0, SIGSEGV) == 128 + SIGSEGV);
  const std::string osd_log = ReadLog(c.OsdLogPath(0));
  const std::string osd_report =
      CrashReport(osd_log, absl::StrCat("osd.", c.osd_id(0)), "SIGSEGV");
  INFO(osd_log.substr(osd_log.size() - std::min<size_t>(osd_log.size(), 3000)));
  REQUIRE_FALSE(osd_report.empty());
  REQUIRE(osd_report.find("sent by pid") != std::string::npos);
  REQUIRE(osd_report.find("crash]     @ 0x") != std::string::npos);  // frames
  REQUIRE(c.StartOsd(0).ok());

  // The MDS (a failed CHECK or LOG(FATAL) ends in SIGABRT).
  REQUIRE(c.SignalMds(SIGABRT) == 128 + SIGABRT);
  const std::string mds_log = ReadLog(c.MdsLogPath());
  const std::string mds_report = CrashReport(mds_log, "mds.a", "SIGABRT");
  INFO(mds_log.substr(mds_log.size() - std::min<size_t>(mds_log.size(), 3000)));
  REQUIRE_FALSE(mds_report.empty());
  REQUIRE(c.StartMds().ok());

  // Both serve again, and nothing acknowledged was lost.
  REQUIRE(c.WaitOsdsUp(3, absl::Seconds(30)).ok());
  REQUIRE(c.WaitClean(absl::Seconds(60)).ok());
  auto got = client->Get(pool, "before");
  INFO(got.status());
  REQUIRE(got.ok());
  REQUIRE(*got == data);
  REQUIRE(client->Put(pool, "after", data).ok());
}

}  // namespace weft::testing
