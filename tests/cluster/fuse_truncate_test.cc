// Truncates across mounts, through the kernel: the MDS cuts a truncated
// file's objects before it answers, another mount's writer is held while it
// cuts (its write lands after the cut, not under it), and a cut that an MDS
// kill interrupted is finished by the restarted MDS, so that no byte past
// the new size comes back when the file grows again.
//
// Files here have 64 KiB objects and one byte at the start of each of
// hundreds of them: a cut of them takes long enough for the other mount to
// write in the middle of it.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "common/striping/striping.h"
#include "common/objects/data_objects.h"
#include "tests/harness/cluster.h"
#include "tests/harness/mount_fixture.h"

namespace weft::testing {
namespace {

constexpr uint64_t kObject = 64 * 1024;
constexpr uint64_t kObjects = 1500;

// fs1 mounted twice, a directory whose files have 64 KiB objects, and an
// object client to look at them.
struct TwoMounts : TwoMountFixture {
  TwoMounts() {
    objects = cluster->Client();
    REQUIRE(objects != nullptr);
    auto pool = objects->LookupPool("fs1_data");
    REQUIRE(pool.ok());
    data_pool = *pool;
    REQUIRE(mkdir(P("small").c_str(), 0755) == 0);
    const std::string layout = "stripe_unit=64K stripe_count=1 object_size=64K pool=fs1_data";
    REQUIRE(setxattr(P("small").c_str(), "weft.dir.layout", layout.data(), layout.size(), 0) == 0);
  }
  // A file of `n` objects with the byte 'M' at the start of each, synced.
  void MakeMarked(const std::string& path, uint64_t n) {
    const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    for (uint64_t i = 0; i < n; ++i) WriteAll(fd, "M", static_cast<off_t>(i * kObject));
    REQUIRE(fsync(fd) == 0);
    REQUIRE(close(fd) == 0);
  }
  // The file's data objects that exist among its first `n`.
  std::vector<uint64_t> ObjectsOf(uint64_t ino, uint64_t n) {
    auto found = objects::DataObjectsIn(objects.get(), data_pool, ino, 0, n);
    INFO(found.status());
    REQUIRE(found.ok());
    std::vector<uint64_t> existing;
    for (uint64_t objno : *found) {
      if (objects->Stat(data_pool, striping::DataObjectName(ino, objno)).ok()) {
        existing.push_back(objno);
      }
    }
    return existing;
  }

  std::unique_ptr<objects::ObjectClient> objects;
  PoolId data_pool;
};

// truncate(2) of `path` to `size` on its own thread: 0 or the errno.
struct TruncateThread {
  TruncateThread(const std::string& path, off_t size)
      : thread([this, path, size] {
          result = truncate(path.c_str(), size) == 0 ? 0 : errno;
          done = true;
        }) {}
  ~TruncateThread() {
    if (thread.joinable()) thread.join();
  }
  int Join() {
    thread.join();
    return result;
  }
  std::atomic<bool> done{false};
  int result = -1;
  std::thread thread;
};

bool AllZero(const std::string& bytes) {
  return bytes.find_first_not_of('\0') == std::string::npos;
}

TEST_CASE("fuse truncate: the MDS cuts the objects past the new size and growing reads zeros",
          "[fuse][truncate]") {
  TwoMounts f;
  std::string data(2 * 1024 * 1024, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>('a' + i % 23);
  WriteFile(f.P("small/f"), data);
  SyncFile(f.P("small/f"));
  const uint64_t ino = Lstat(f.P("small/f")).st_ino;
  REQUIRE(f.ObjectsOf(ino, 64).size() == 32);

  // The other mount truncates: when truncate() returns, object 1 holds what
  // is left of the file and nothing past it exists.
  REQUIRE(truncate(f.Q("small/f").c_str(), 100000) == 0);
  CHECK(f.ObjectsOf(ino, 64) == std::vector<uint64_t>{0, 1});
  auto last = f.objects->Stat(f.data_pool, striping::DataObjectName(ino, 1));
  REQUIRE(last.ok());
  CHECK(last->size == 100000 - kObject);

  // Growing it again (this mount) shows zeros past the cut, never old bytes.
  REQUIRE(truncate(f.P("small/f").c_str(), static_cast<off_t>(data.size())) == 0);
  const std::string back = ReadFile(f.P("small/f"));
  REQUIRE(back.size() == data.size());
  CHECK(back.substr(0, 100000) == data.substr(0, 100000));
  CHECK(AllZero(back.substr(100000)));
}

TEST_CASE("fuse truncate: a write of the other mount during the cut lands after it",
          "[fuse][truncate]") {
  TwoMounts f;
  f.MakeMarked(f.P("small/f"), kObjects);
  const int writer = open(f.Q("small/f").c_str(), O_RDWR);  // open before the truncate
  REQUIRE(writer >= 0);

  // In the last object, which a cut in object order reaches last: while
  // the truncate is on its way the other mount writes and syncs there.
  const std::string mine = "written while the truncate cut";
  const off_t at = static_cast<off_t>((kObjects - 1) * kObject + 100);
  const absl::Time start = absl::Now();
  TruncateThread cut(f.P("small/f"), 0);
  absl::SleepFor(absl::Milliseconds(100));
  const bool during = !cut.done;
  WriteAll(writer, mine, at);
  const int synced = fsync(writer);
  const absl::Duration sync_took = absl::Now() - start;
  REQUIRE(close(writer) == 0);
  REQUIRE(synced == 0);
  REQUIRE(cut.Join() == 0);
  INFO("write began during the truncate: " << during << ", synced after " << sync_took);

  // Either the write came first (the truncate then cut it: an empty file)
  // or the truncate did (the write is all there, after zeros); never the
  // size with the write's bytes lost, never a marker back.
  const std::string back = ReadFile(f.P("small/f"));
  if (back.empty()) {
    WARN("the write reached the MDS before the truncate: nothing to check under the cut");
    return;
  }
  REQUIRE(back.size() == static_cast<size_t>(at) + mine.size());
  CHECK(back.substr(at) == mine);
  CHECK(AllZero(back.substr(0, at)));
}

TEST_CASE("fuse truncate: a cut interrupted by an MDS kill is finished after the restart",
          "[fuse][truncate][mds-restart]") {
  TwoMounts f;
  f.MakeMarked(f.P("small/f"), kObjects);
  const uint64_t ino = Lstat(f.P("small/f")).st_ino;
  {
    TruncateThread cut(f.P("small/f"), 0);
    absl::SleepFor(absl::Milliseconds(150));
    f.cluster->KillMds();
    const absl::Status started = f.cluster->StartMds();
    INFO(started);
    REQUIRE(started.ok());
    REQUIRE(cut.Join() == 0);  // answered by the restarted MDS
  }
  std::stringstream log;
  log << std::ifstream(f.cluster->MdsLogPath()).rdbuf();
  INFO("the restarted MDS resumed a cut: " << (log.str().find("event=trims_resumed") !=
                                               std::string::npos));
  CHECK(f.ObjectsOf(ino, kObjects).empty());
  // Grown back through the other mount, the file is zeros: no marker left.
  REQUIRE(truncate(f.Q("small/f").c_str(), static_cast<off_t>(kObjects * kObject)) == 0);
  const std::string back = ReadFile(f.Q("small/f"));
  REQUIRE(back.size() == kObjects * kObject);
  CHECK(AllZero(back));
}

}  // namespace
}  // namespace weft::testing
