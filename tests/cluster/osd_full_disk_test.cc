// A real full data disk (real processes): one OSD's data directory on a
// small file system of its own (a tmpfs of 192 MiB), a 3x pool written
// until the cluster refuses. Clients get ENOSPC before anything breaks,
// every acknowledged object reads back bit-exact from every copy, the OSD
// keeps serving, and after deletes writes work again.
#include <catch2/catch.hpp>

#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/placement/placement.h"
#include "tests/harness/cluster.h"
#include "tests/harness/file_io.h"

namespace weft::testing {
namespace {

// A tmpfs of `bytes` mounted at `dir`, detached when this goes away: declared
// after the cluster, so that it goes first. The OSD on it keeps what it has
// open until the cluster stops it, and the cluster then removes its whole
// directory; detached after the cluster instead, the mount made that
// removal fail and left the test's directory (500 MB) behind in /tmp.
class SmallDisk {
 public:
  ~SmallDisk() {
    if (!dir_.empty()) umount2(dir_.c_str(), MNT_DETACH);
  }
  absl::Status Mount(const std::string& dir, uint64_t bytes) {
    const std::string opts = absl::StrCat("size=", bytes);
    if (mount("tmpfs", dir.c_str(), "tmpfs", 0, opts.c_str()) != 0) {
      return absl::InternalError(absl::StrCat("mount tmpfs at ", dir, ": ", strerror(errno)));
    }
    dir_ = dir;
    return absl::OkStatus();
  }

 private:
  std::string dir_;
};

}  // namespace

TEST_CASE("a real full data disk: ENOSPC to clients before corruption - every copy intact - "
          "writes again after deletes",
          "[cluster][fault]") {
  auto started = Cluster::Start({.osds = 3});
  REQUIRE(started.ok());
  SmallDisk disk;
  Cluster& c = **started;
  auto client = c.Client();
  auto pool = c.CreatePool(*client, "fill", 3, 8);
  REQUIRE(pool.ok());

  // osd index 2 moves onto its own small file system, data and all.
  namespace fs = std::filesystem;
  const std::string dir = c.OsdDataDir(2);
  c.StopOsd(2);
  fs::rename(dir, dir + ".old");
  fs::create_directory(dir);
  const absl::Status mounted = disk.Mount(dir, 192ull << 20);
  INFO(mounted);
  REQUIRE(mounted.ok());
  fs::copy(dir + ".old", dir, fs::copy_options::recursive);
  fs::remove_all(dir + ".old");
  REQUIRE(c.StartOsd(2).ok());
  REQUIRE(c.WaitClean(absl::Seconds(60)).ok());

  // Objects of 1 MiB until the cluster refuses (192 MiB could never hold
  // 400 of them).
  std::map<std::string, std::string> acked;
  absl::Status refused;
  for (int n = 0; n < 400; ++n) {
    const std::string name = absl::StrCat("f-", n);
    std::string data = RandomBytes(1 << 20, n);
    refused = client->Put(*pool, name, data);
    if (!refused.ok()) break;
    acked[name] = std::move(data);
  }
  INFO(refused << " after " << acked.size() << " objects");
  REQUIRE(!refused.ok());
  REQUIRE(acked.size() > 20);
  CHECK(refused.ToString().find("full") != std::string::npos);
  // It stays refused, with a clear reason, and the OSD on the full disk runs.
  auto again = client->Put(*pool, "again", RandomBytes(1 << 20, 9999));
  INFO(again);
  REQUIRE(!again.ok());
  REQUIRE(c.OsdRunning(2));
  CommandResult status = c.Weft({"status"});
  INFO(status.output);
  CHECK(status.output.find("OSD_FULL") != std::string::npos);

  // Everything acknowledged reads back; every copy is right or (on the
  // full disk, for a write its refusal interrupted) not there yet, never
  // wrong; and the full disk was never filled to its last byte.
  int waiting = 0;
  for (const auto& [name, data] : acked) {
    auto got = client->Get(*pool, name);
    INFO(name << ": " << got.status());
    REQUIRE(got.ok());
    REQUIRE(*got == data);
    for (int i = 0; i < 3; ++i) {
      auto copy = client->GetFrom(*pool, name, OsdId(c.osd_id(i)));
      INFO(name << " on osd." << c.osd_id(i) << ": " << copy.status());
      if (!copy.ok() && i == 2 && absl::IsUnavailable(copy.status())) {
        ++waiting;
        continue;
      }
      REQUIRE(copy.ok());
      REQUIRE(*copy == data);
    }
  }
  CHECK(waiting <= 2);
  struct statvfs st;
  REQUIRE(statvfs(dir.c_str(), &st) == 0);
  INFO("free on the small disk: " << st.f_bavail * st.f_frsize);
  CHECK(st.f_bavail * st.f_frsize >= (1u << 20));

  // Deletes work while full and give the space back: writes work again.
  int removed = 0;
  for (auto it = acked.begin(); it != acked.end() && removed < static_cast<int>(acked.size()) / 2;) {
    REQUIRE(client->Remove(*pool, it->first).ok());
    it = acked.erase(it);
    ++removed;
  }
  REQUIRE(WaitForMap(*client, absl::Seconds(60),
                     [](const OsdMap& m) { return m.FirstFull() == nullptr; }));
  const std::string after = RandomBytes(1 << 20, 12345);
  absl::Status put;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  do {
    put = client->Put(*pool, "after", after);
    if (!put.ok()) absl::SleepFor(absl::Milliseconds(500));
  } while (!put.ok() && absl::Now() < deadline);
  INFO(put);
  REQUIRE(put.ok());
  acked["after"] = after;
  // Recovery, held back while the disk was full, completes.
  REQUIRE(c.WaitClean(absl::Seconds(60)).ok());
  for (const auto& [name, data] : acked) {
    for (int i = 0; i < 3; ++i) {
      auto got = client->GetFrom(*pool, name, OsdId(c.osd_id(i)));
      INFO(name << " on osd." << c.osd_id(i) << ": " << got.status());
      REQUIRE(got.ok());
      REQUIRE(*got == data);
    }
  }
}

}  // namespace weft::testing
