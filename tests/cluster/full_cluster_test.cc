// A full cluster: the map manager marks OSDs full from their statistics when
// their file system passes the full ratio; then writes that add data get
// ENOSPC (through the object API and through the mount), while reads,
// deletes and namespace changes (the MDS's writes carry OPF_FULL_TRY) keep
// working, and nothing already written changes. The test makes the cluster
// "full" by lowering the ratio under the disk's real fill, as an operator
// would see it with a full disk.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <utility>
#include <vector>
#include <random>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/harness/cluster.h"
#include "tests/harness/mount_fixture.h"

namespace weft::testing {
namespace {

// Writes `data` to a new file at `path` and fsyncs it: the errno of the
// write or of the fsync that failed (0 if both succeeded).
int WriteRefused(const std::string& path, const std::string& data) {
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  int err = 0;
  if (write(fd, data.data(), data.size()) < 0) {
    err = errno;
  } else if (fsync(fd) != 0) {
    err = errno;
  }
  close(fd);
  return err;
}

// Waits until the map's full flags say `full` (some up+in OSD marked full,
// or none).
bool MapFull(objects::ObjectClient& client, bool full) {
  return WaitForMap(client, absl::Seconds(30),
                    [full](const OsdMap& m) { return (m.FirstFull() != nullptr) == full; });
}

TEST_CASE("a full cluster refuses new data with ENOSPC - reads - deletes and namespace "
          "changes still work - nothing written changes",
          "[cluster][fuse][fault]") {
  MountFixture f;
  Cluster& c = *f.cluster;
  auto objects = c.Client();
  REQUIRE(objects != nullptr);
  auto pool = c.CreatePool(*objects, "objs", 3, 8);  // waits for active+clean
  INFO(pool.status());
  REQUIRE(pool.ok());

  const std::string before = RandomBytes(3 << 20, 1);
  WriteFile(f.P("before"), before);
  REQUIRE(c.Weft({"obj", "put", "objs", "kept", f.P("before")}).code == 0);
  WriteFile(f.P("doomed"), RandomBytes(1 << 20, 2));

  // Any disk that holds an operating system is more than 0.1 % full.
  REQUIRE(c.Weft({"osd", "set-nearfull-ratio", "0.0005"}).code == 0);
  REQUIRE(c.Weft({"osd", "set-backfillfull-ratio", "0.0008"}).code == 0);
  REQUIRE(c.Weft({"osd", "set-full-ratio", "0.001"}).code == 0);
  REQUIRE(MapFull(*objects, true));
  CommandResult status = c.Weft({"status"});
  CHECK(status.output.rfind("HEALTH_ERR", 0) == 0);
  CHECK(status.output.find("OSD_FULL") != std::string::npos);

  // The object API: a clear error, nothing stored.
  CommandResult put = c.Weft({"obj", "put", "objs", "refused", f.P("before")});
  INFO(put.output);
  CHECK(put.code != 0);
  CHECK(put.output.find("cluster full") != std::string::npos);
  CHECK(c.Weft({"obj", "stat", "objs", "refused"}).code != 0);

  // Through the mount: the write is buffered, its flush fails with ENOSPC,
  // and fsync reports it (close then has nothing left to report). A small
  // file, whose bytes the MDS would keep inline, is refused the same.
  CHECK(WriteRefused(f.P("after"), RandomBytes(1 << 20, 3)) == ENOSPC);
  CHECK(WriteRefused(f.P("small"), "small") == ENOSPC);
  // Namespace changes and deletes go on: they are how space comes back.
  CHECK(mkdir(f.P("dir").c_str(), 0755) == 0);
  const int empty = open(f.P("dir/empty").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
  CHECK(empty >= 0);
  if (empty >= 0) CHECK(close(empty) == 0);
  CHECK(unlink(f.P("doomed").c_str()) == 0);
  CHECK(c.Weft({"obj", "rm", "objs", "kept"}).code == 0);

  // What was written before reads back unchanged, through a fresh mount.
  f.Remount();
  CHECK(ReadFile(f.P("before")) == before);

  // Room again: writes work.
  REQUIRE(c.Weft({"osd", "set-full-ratio", "0.95"}).code == 0);
  REQUIRE(c.Weft({"osd", "set-backfillfull-ratio", "0.90"}).code == 0);
  REQUIRE(c.Weft({"osd", "set-nearfull-ratio", "0.85"}).code == 0);
  REQUIRE(MapFull(*objects, false));
  const std::string after = RandomBytes(1 << 20, 4);
  WriteFile(f.P("after"), after);
  f.Remount();
  CHECK(ReadFile(f.P("after")) == after);
  CHECK(ReadFile(f.P("before")) == before);
  CHECK(c.Weft({"obj", "put", "objs", "again", f.P("before")}).code == 0);
}

TEST_CASE("full ratios: bad values are refused with the reason", "[cluster]") {
  auto started = Cluster::Start();
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  REQUIRE(client != nullptr);
  // 0.98: above the OSDs' failsafe (0.97), which no ratio may switch off.
  for (const char* bad : {"0", "-0.5", "0.98", "1.5", "abc", "nan"}) {
    CommandResult r = c.Weft({"osd", "set-full-ratio", bad});
    INFO(bad << ": " << r.output);
    CHECK(r.code != 0);
    CHECK(absl::AsciiStrToLower(r.output).find("ratio") != std::string::npos);
  }
  // Out of order: nearfull above full (0.95), backfillfull above full or
  // under nearfull (0.85).
  for (const auto& [which, value] : std::vector<std::pair<std::string, std::string>>{
           {"set-nearfull-ratio", "0.96"},
           {"set-backfillfull-ratio", "0.96"},
           {"set-backfillfull-ratio", "0.5"}}) {
    CommandResult r = c.Weft({"osd", which, value});
    INFO(which << " " << value << ": " << r.output);
    CHECK(r.code != 0);
    CHECK(r.output.find("nearfull <= backfillfull <= full") != std::string::npos);
  }
  client->WaitNewer(client->map()->epoch, absl::Milliseconds(500));
  CHECK(client->map()->full_ratio == 0.95);  // nothing changed
  CHECK(client->map()->backfillfull_ratio == 0.90);
  CHECK(client->map()->nearfull_ratio == 0.85);
  CHECK(c.Weft({"osd", "set-full-ratio", "0.9"}).code == 0);
  CHECK(c.Weft({"osd", "set-nearfull-ratio", "0.8"}).code == 0);
  CHECK(WaitForMap(*client, absl::Seconds(10), [](const OsdMap& m) {
    return m.full_ratio == 0.9 && m.nearfull_ratio == 0.8;
  }));
}

TEST_CASE("an OSD past the backfillfull ratio takes no backfill - health warns - writes go on - "
          "backfill resumes below it",
          "[cluster]") {
  auto started = Cluster::Start({.osds = 4});
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  auto pool = c.CreatePool(*client, "bf", 3, 8);
  REQUIRE(pool.ok());
  std::map<std::string, std::string> data;
  for (int n = 0; n < 16; ++n) {
    const std::string name = absl::StrCat("bf-", n);
    data[name] = RandomBytes(100000 + n * 1000, n);
    REQUIRE(client->Put(*pool, name, data[name]).ok());
  }
  // Any disk that holds an operating system is more than 0.1 % full: every
  // OSD is past backfillfull, none past full.
  REQUIRE(c.Weft({"osd", "set-nearfull-ratio", "0.0005"}).code == 0);
  REQUIRE(c.Weft({"osd", "set-backfillfull-ratio", "0.001"}).code == 0);
  REQUIRE(WaitForMap(*client, absl::Seconds(30), [](const OsdMap& m) {
    return std::all_of(m.osds.begin(), m.osds.end(),
                       [](const OsdInfo& o) { return o.backfillfull && !o.full; });
  }));
  CommandResult status = c.Weft({"status"});
  INFO(status.output);
  CHECK(status.output.rfind("HEALTH_WARN", 0) == 0);
  CHECK(status.output.find("OSD_BACKFILLFULL") != std::string::npos);
  CHECK(status.output.find("OSD_FULL") == std::string::npos);
  data["during"] = RandomBytes(50000, 99);
  REQUIRE(client->Put(*pool, "during", data["during"]).ok());

  // One OSD out: its PGs get a member new to them, which may not be filled.
  const OsdId out(c.osd_id(3));
  REQUIRE(c.Weft({"osd", "out", std::to_string(out.value())}).code == 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  do {
    absl::SleepFor(absl::Milliseconds(500));
    status = c.Weft({"status"});
  } while (status.output.find("backfill_toofull") == std::string::npos && absl::Now() < deadline);
  INFO(status.output);
  REQUIRE(status.output.find("backfill_toofull") != std::string::npos);
  absl::SleepFor(absl::Seconds(2));
  REQUIRE(c.Weft({"status"}).output.find("backfill_toofull") != std::string::npos);
  for (const auto& [name, bytes] : data) {  // served meanwhile
    auto got = client->Get(*pool, name);
    INFO(name << ": " << got.status());
    REQUIRE(got.ok());
    REQUIRE(*got == bytes);
  }

  // Room again: the backfill goes on and every copy is complete.
  REQUIRE(c.Weft({"osd", "set-backfillfull-ratio", "0.90"}).code == 0);
  REQUIRE(c.Weft({"osd", "set-nearfull-ratio", "0.85"}).code == 0);
  REQUIRE(c.WaitClean(absl::Seconds(60)).ok());
  const absl::Status copies = EveryCopyMatches(*client, *pool, data, 3);  // out is not acting
  INFO(copies);
  REQUIRE(copies.ok());
}

}  // namespace
}  // namespace weft::testing
