// Inline data through real mounts: a small file's bytes live in the MDS
// (InodeRec.data_inline) until a write takes it past the limit (64 KiB by
// default), when the MDS moves them to the file's first object. Every step
// is checked against a model of the file, through the mount that wrote it,
// through another mount and after a kill -9 of the MDS; two mounts writing
// one file lose nothing, also across the move.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/striping/striping.h"
#include "fuse-client/lib/file_system_client.h"
#include "tests/harness/mount_fixture.h"

namespace weft::testing {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kInlineMax = 64 * kKiB;  // the MDS default (mds_inline_max_bytes)

uint64_t InoOf(const std::string& path) { return Lstat(path).st_ino; }

// The data pool of fs1, to look at a file's objects.
struct DataObjects {
  explicit DataObjects(Cluster& cluster) : objects(cluster.Client()) {
    REQUIRE(objects != nullptr);
    auto p = objects->LookupPool("fs1_data");
    REQUIRE(p.ok());
    pool = *p;
  }
  bool HasFirst(uint64_t ino) {
    return objects->Stat(pool, striping::DataObjectName(ino, 0)).ok();
  }
  std::unique_ptr<objects::ObjectClient> objects;
  PoolId pool;
};

// pwrite + fsync through a new descriptor, and the same on the model.
void WriteAt(const std::string& path, uint64_t off, const std::string& data, std::string* model) {
  const int fd = open(path.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  WriteAll(fd, data, static_cast<off_t>(off));
  REQUIRE(fsync(fd) == 0);
  REQUIRE(close(fd) == 0);
  if (model->size() < off + data.size()) model->resize(off + data.size(), '\0');
  model->replace(off, data.size(), data);
}

void TruncateTo(const std::string& path, uint64_t size, std::string* model) {
  REQUIRE(truncate(path.c_str(), static_cast<off_t>(size)) == 0);
  model->resize(size, '\0');
}

TEST_CASE("inline data: a small file reads back exact through writes - truncates - holes - the "
          "move to objects - another mount and an MDS restart",
          "[fuse][inline]") {
  MountFixture f;
  DataObjects data(*f.cluster);
  auto second = Mount::Start(*f.cluster, "fs1");
  REQUIRE(second.ok());
  const std::string path = f.P("small");
  const std::string other = (*second)->Path("small");
  std::string model;
  WriteFile(path, "hello");
  model = "hello";
  const uint64_t ino = InoOf(path);
  auto check = [&](const std::string& step) {
    INFO(step);
    CHECK(ReadFile(path) == model);
    CHECK(ReadFile(other) == model);
    CHECK(static_cast<uint64_t>(Lstat(path).st_size) == model.size());
  };
  SyncFile(path);
  check("created");
  CHECK(!data.HasFirst(ino));  // the bytes are in the MDS, no object

  WriteAt(path, 1000, RandomBytes(3000, 1), &model);
  check("a write past a hole");
  TruncateTo(path, 3, &model);
  check("cut to 3 bytes");
  TruncateTo(path, 50000, &model);
  check("grown to 50000 bytes: zeros");
  WriteAt(path, 60000, RandomBytes(kInlineMax - 60000, 2), &model);
  check("a write up to the limit");
  CHECK(!data.HasFirst(ino));
  // The read of another mount, then a write of this one, then that mount
  // reads again: its copy of the bytes is not reused (a newer version).
  WriteAt(path, 10, "changed", &model);
  check("overwritten while the other mount had read it");

  WriteAt(path, 70000, RandomBytes(5000, 3), &model);
  check("a write past the limit: moved to objects");
  CHECK(data.HasFirst(ino));
  WriteAt(path, 20, "after the move", &model);
  TruncateTo(path, 65000, &model);
  check("written and cut after the move");

  // Inline files with data, one of each size around the limit, through a
  // kill -9 of the MDS.
  std::vector<std::pair<std::string, std::string>> files;
  for (uint64_t size : {uint64_t{1}, uint64_t{4095}, uint64_t{4096}, kInlineMax - 1, kInlineMax,
                        kInlineMax + 1}) {
    const std::string name = absl::StrCat("sized.", size);
    files.emplace_back(name, RandomBytes(size, size));
    WriteFile(f.P(name), files.back().second);
  }
  REQUIRE(system(absl::StrCat("sync ", f.mount->dir()).c_str()) == 0);
  CHECK(!data.HasFirst(InoOf(f.P(absl::StrCat("sized.", kInlineMax)))));
  CHECK(data.HasFirst(InoOf(f.P(absl::StrCat("sized.", kInlineMax + 1)))));
  second->reset();
  f.cluster->KillMds();
  auto started = f.cluster->StartMds();
  REQUIRE(started.ok());
  f.Remount();
  CHECK(ReadFile(f.P("small")) == model);
  for (const auto& [name, bytes] : files) {
    INFO(name);
    CHECK(ReadFile(f.P(name)) == bytes);
    // st_blocks counts the bytes kept: never less than the data needs.
    CHECK(static_cast<uint64_t>(Lstat(f.P(name)).st_blocks) * 512 >= bytes.size());
  }
  // Removed: the one file that moved has its object purged; the others never
  // had one.
  std::vector<uint64_t> inos;
  for (const auto& [name, bytes] : files) {
    inos.push_back(InoOf(f.P(name)));
    REQUIRE(unlink(f.P(name).c_str()) == 0);
  }
  bool purged = false;
  for (int i = 0; i < 100 && !purged; ++i) {
    purged = !data.HasFirst(inos.back());
    if (!purged) absl::SleepFor(absl::Milliseconds(100));
  }
  CHECK(purged);
  for (uint64_t ino : inos) CHECK(!data.HasFirst(ino));
}

TEST_CASE("inline data: two mounts writing different ranges of one file lose nothing - across "
          "the move to objects too",
          "[fuse][inline]") {
  MountFixture f;
  auto second = Mount::Start(*f.cluster, "fs1");
  REQUIRE(second.ok());
  const std::string a = f.P("shared");
  const std::string b = (*second)->Path("shared");
  WriteFile(a, "");
  // Each mount writes every other 2 KiB block, 1 KiB of it, with an fsync
  // after each write, both at once; the blocks run past the inline limit, so
  // one of the writers meets the move while the other still writes inline.
  constexpr int kBlocks = 48;  // 96 KiB
  auto writer = [&](const std::string& path, int parity, char fill) {
    const int fd = open(path.c_str(), O_WRONLY);
    if (fd < 0) return std::string("open failed");
    for (int i = parity; i < kBlocks; i += 2) {
      const std::string bytes(1024, static_cast<char>(fill + i % 7));
      if (pwrite(fd, bytes.data(), bytes.size(), i * 2048) != 1024 || fsync(fd) != 0) {
        close(fd);
        return absl::StrCat("write of block ", i, " failed: errno ", errno);
      }
    }
    return close(fd) == 0 ? std::string() : std::string("close failed");
  };
  std::string failed_a, failed_b;
  std::thread ta([&] { failed_a = writer(a, 0, 'a'); });
  std::thread tb([&] { failed_b = writer(b, 1, 'A'); });
  ta.join();
  tb.join();
  CHECK(failed_a.empty());
  CHECK(failed_b.empty());
  std::string model((kBlocks - 1) * 2048 + 1024, '\0');
  for (int i = 0; i < kBlocks; ++i) {
    model.replace(i * 2048, 1024, std::string(1024, static_cast<char>((i % 2 ? 'A' : 'a') + i % 7)));
  }
  CHECK(ReadFile(a) == model);
  CHECK(ReadFile(b) == model);
  f.Remount();
  CHECK(ReadFile(f.P("shared")) == model);

  // Sequential turns: each write lands where the other mount then reads it.
  std::string turns;
  WriteFile(f.P("turns"), "");
  for (int i = 0; i < 40; ++i) {
    const std::string& path = i % 2 ? (*second)->Path("turns") : f.P("turns");
    const uint64_t off = (static_cast<uint64_t>(i) * 7919) % (i < 30 ? 60000 : 90000);
    WriteAt(path, off, RandomBytes(1 + i * 37, 100 + i), &turns);
    INFO("turn " << i);
    REQUIRE(ReadFile(i % 2 ? f.P("turns") : (*second)->Path("turns")) == turns);
  }
}

TEST_CASE("inline data: mds_inline_max_bytes = 0 keeps every file's data in objects - and a "
          "file made inline before still reads and grows",
          "[fuse][inline]") {
  MountFixture f;
  DataObjects data(*f.cluster);
  const std::string before = RandomBytes(3000, 7);
  WriteFile(f.P("before"), before);
  SyncFile(f.P("before"));
  REQUIRE(!data.HasFirst(InoOf(f.P("before"))));

  // The same cluster with inline data turned off: a restarted MDS.
  f.mount.reset();
  f.cluster->StopMds();
  {
    std::ofstream conf(f.cluster->conf_path(), std::ios::app);
    conf << "mds_inline_max_bytes = 0\n";
    REQUIRE(conf.good());
  }
  auto started = f.cluster->StartMds();
  REQUIRE(started.ok());
  f.Remount();
  WriteFile(f.P("after"), "small");
  SyncFile(f.P("after"));
  CHECK(data.HasFirst(InoOf(f.P("after"))));
  CHECK(ReadFile(f.P("after")) == "small");
  // The file made inline keeps its bytes; its next write moves them.
  CHECK(ReadFile(f.P("before")) == before);
  std::string model = before;
  WriteAt(f.P("before"), 100, "grown", &model);
  CHECK(data.HasFirst(InoOf(f.P("before"))));
  f.Remount();
  CHECK(ReadFile(f.P("before")) == model);
}

TEST_CASE("inline data: a client that may keep no copy reads every byte from the MDS",
          "[fuse][inline]") {
  auto cluster = StartClusterWithFs();
  client::FileSystemClientOptions o;
  o.mds_addrs = cluster->mds_addrs();
  o.fs = "fs1";
  o.inline_copy_bytes = 0;
  auto c = client::FileSystemClient::Connect(o);
  INFO(c.status());
  REQUIRE(c.ok());
  client::FileSystemClient& fs = **c;
  const client::Creds root;
  auto created = fs.Create(root, fs.root(), "f", 0644, O_RDWR | O_CREAT);
  REQUIRE(created.ok());
  REQUIRE(created->attr.data_inline);
  REQUIRE(fs.Write(root, created->fh, 0, "hello world").ok());
  REQUIRE(fs.Fsync(created->fh).ok());
  CHECK(*fs.Read(created->fh, 0, 100) == "hello world");
  CHECK(*fs.Read(created->fh, 6, 5) == "world");
  REQUIRE(fs.Write(root, created->fh, 20, "past a hole").ok());
  CHECK(*fs.Read(created->fh, 0, 100) == std::string("hello world\0\0\0\0\0\0\0\0\0past a hole", 31));
  REQUIRE(fs.Release(created->fh).ok());
  auto opened = fs.Open(root, created->attr.ino, O_RDONLY);
  REQUIRE(opened.ok());
  CHECK(*fs.Read(opened->fh, 12, 100) == std::string("\0\0\0\0\0\0\0\0past a hole", 19));
  REQUIRE(fs.Release(opened->fh).ok());
}

TEST_CASE("inline data: an MDS killed between a move's object write and its record loses no "
          "acknowledged byte - the write that moved it lands once the MDS is back",
          "[fuse][inline][fault]") {
  MountFixture f;
  DataObjects data(*f.cluster);
  const std::string path = f.P("moving");
  std::string model = RandomBytes(40000, 21);
  WriteFile(path, model);
  SyncFile(path);
  const uint64_t ino = InoOf(path);
  REQUIRE(!data.HasFirst(ino));

  // The MDS exits right after its next move's object write (a fault point).
  f.cluster->StopMds();
  ::setenv("WEFT_FAULTS", "mds.exit_after_inline_move", 1);
  auto started = f.cluster->StartMds();
  ::unsetenv("WEFT_FAULTS");
  REQUIRE(started.ok());

  // A write past the limit: its flush asks for the move, which dies halfway.
  const std::string tail = RandomBytes(5000, 22);
  std::atomic<int> synced{-1};
  std::thread writer([&] {
    const int fd = open(path.c_str(), O_WRONLY);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0) {
      if (pwrite(fd, tail.data(), tail.size(), 70000) != static_cast<ssize_t>(tail.size()) ||
          fsync(fd) != 0) {
        err = errno;
      }
      close(fd);
    }
    synced = err;
  });
  for (int i = 0; i < 600 && f.cluster->MdsRunning(); ++i) absl::SleepFor(absl::Milliseconds(100));
  const bool died = !f.cluster->MdsRunning();
  CHECK(died);
  CHECK(data.HasFirst(ino));  // the object was written, its record was not
  if (died) REQUIRE(f.cluster->StartMds().ok());
  writer.join();
  CHECK(synced == 0);
  model.resize(70000, '\0');
  model += tail;
  CHECK(ReadFile(path) == model);
  f.Remount();
  CHECK(ReadFile(f.P("moving")) == model);
}

TEST_CASE("inline data: a move answered early is not made again over the objects written after "
          "it when the MDS dies before recording it",
          "[fuse][inline][fault]") {
  // A wide journal window, so that the kill below surely falls inside it:
  // every change answered early in the last second is still unrecorded.
  ClusterOptions options;
  options.extra_conf = {"mds_journal_batch_ms = 1000"};
  TwoMountFixture f(options);
  const std::string path = f.P("grown");
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  // Past the inline limit in one buffered write: its flush asks the MDS for
  // the move, then writes the object and reports it.
  const std::string first = RandomBytes(100000, 31);
  WriteAll(fd, first, 0);
  CHECK(ReadFile(f.Q("grown")) == first);  // the other mount's look flushes it
  f.cluster->KillMds();
  auto started = f.cluster->StartMds();
  INFO(started);
  REQUIRE(started.ok());
  DataObjects data(*f.cluster);
  CHECK(data.HasFirst(InoOf(path)));
  const std::string second = RandomBytes(30000, 32);
  WriteAll(fd, second, 100000);
  const std::string all = first + second;
  CHECK(ReadFile(f.Q("grown")) == all);
  REQUIRE(close(fd) == 0);
  CHECK(ReadFile(path) == all);
  CHECK(ReadFile(f.Q("grown")) == all);
}

}  // namespace
}  // namespace weft::testing
