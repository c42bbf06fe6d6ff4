// weft-fuse through the real kernel mount, against real processes (etcd,
// weft-mds, 3 weft-osd): file data bit-exact across objects, holes, truncate,
// O_APPEND/O_EXCL, the namespace operations, xattrs, statfs, permissions of
// an unprivileged caller, the mount's life cycle (kill -9, bad options), and
// the mount(8) helper (mount.fuse.weft) with fstab-style arguments. The
// POSIX semantics in depth are in fuse_posix_test.cc.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/striping/striping.h"
#include "tests/harness/cluster.h"
#include "tests/harness/mount.h"
#include "tests/harness/mount_fixture.h"

namespace weft::testing {
namespace {

constexpr uint64_t kMiB = 1 << 20;

off_t SizeOf(const std::string& path) { return Lstat(path).st_size; }

// uid/gid 1000 with supplementary group 2000.
const UserIds kUser{1000, 1000, {2000}};

// A started cluster with fs1 (not mounted) and an empty directory `name`
// in its directory, for mounts a test makes itself.
// A cluster with fs1 and a directory for the test's own (detached) mounts,
// which no Mount object cleans up: whatever is still mounted there when the
// test ends, also after a failed REQUIRE, is unmounted (lazily) before the
// cluster stops.
struct ClusterWithDir {
  explicit ClusterWithDir(const std::string& name) : cluster(StartClusterWithFs()) {
    dir = cluster->dir() + "/" + name;
    REQUIRE(mkdir(dir.c_str(), 0755) == 0);
  }
  ~ClusterWithDir() {
    if (Mount::IsMounted(dir)) LazyUnmount(dir);
  }
  std::unique_ptr<Cluster> cluster;
  std::string dir;
};

// A weft.conf naming an MDS address where nothing listens.
std::string UnreachableConf(const Cluster& cluster) {
  const std::string path = cluster.dir() + "/unreachable.conf";
  std::ofstream(path) << "fsid = x\nmds = 127.0.0.1:" << FreePort() << "\n";
  return path;
}

// The output is one line naming `what`.
bool OneLine(const std::string& output, const std::string& what) {
  return output.find(what) != std::string::npos && output.find('\n') == output.size() - 1;
}

TEST_CASE("fuse: file data through the mount", "[fuse]") {
  MountFixture f;

  SECTION("small, unaligned and multi-object writes read back bit-exact") {
    WriteFile(f.P("small"), "hello, weft");
    CHECK(ReadFile(f.P("small")) == "hello, weft");

    const std::string big = RandomBytes(10 * kMiB + 12345, 1);
    int fd = open(f.P("big").c_str(), O_CREAT | O_RDWR, 0644);
    REQUIRE(fd >= 0);
    for (size_t off = 0; off < big.size(); off += 777777) {  // unaligned pieces
      WriteAll(fd, big.substr(off, 777777), off);
    }
    CHECK(fsync(fd) == 0);
    CHECK(ReadAt(fd, 0, big.size() + 100) == big);
    CHECK(ReadAt(fd, 4 * kMiB - 3, 7) == big.substr(4 * kMiB - 3, 7));  // across objects
    struct stat st;
    REQUIRE(fstat(fd, &st) == 0);
    CHECK(st.st_size == static_cast<off_t>(big.size()));
    close(fd);
    CHECK(ReadFile(f.P("big")) == big);

    // The data objects carry the names the MDS purges: "<ino>.<objno>".
    auto client = f.cluster->Client();
    auto pool = client->LookupPool("fs1_data");
    REQUIRE(pool.ok());
    for (uint64_t objno = 0; objno < 3; ++objno) {
      auto s = client->Stat(*pool, striping::DataObjectName(st.st_ino, objno));
      INFO(objno);
      CHECK(s.ok());
    }
    CHECK(!client->Stat(*pool, striping::DataObjectName(st.st_ino, 3)).ok());

    // Truncate down into object 1: object 2 is removed, the rest reads back.
    REQUIRE(truncate(f.P("big").c_str(), 5 * kMiB + 3) == 0);
    CHECK(SizeOf(f.P("big")) == static_cast<off_t>(5 * kMiB + 3));
    CHECK(!client->Stat(*pool, striping::DataObjectName(st.st_ino, 2)).ok());
    // Truncate up: the hole reads as zeros, not as the old bytes.
    REQUIRE(truncate(f.P("big").c_str(), 9 * kMiB) == 0);
    std::string after = ReadFile(f.P("big"));
    REQUIRE(after.size() == 9 * kMiB);
    CHECK(after.substr(0, 5 * kMiB + 3) == big.substr(0, 5 * kMiB + 3));
    CHECK(after.substr(5 * kMiB + 3) == std::string(9 * kMiB - 5 * kMiB - 3, '\0'));
    REQUIRE(truncate(f.P("big").c_str(), 0) == 0);
    CHECK(ReadFile(f.P("big")).empty());
  }

  SECTION("sparse files read zeros in the holes") {
    int fd = open(f.P("sparse").c_str(), O_CREAT | O_RDWR, 0644);
    REQUIRE(fd >= 0);
    WriteAll(fd, "tail", 20 * kMiB);
    WriteAll(fd, "mid", 6 * kMiB);
    close(fd);
    std::string all = ReadFile(f.P("sparse"));
    REQUIRE(all.size() == 20 * kMiB + 4);
    std::string expect(20 * kMiB + 4, '\0');
    expect.replace(20 * kMiB, 4, "tail");
    expect.replace(6 * kMiB, 3, "mid");
    CHECK(all == expect);
  }

  SECTION("O_APPEND, O_EXCL, O_TRUNC") {
    WriteFile(f.P("log"), "0123");
    int a = open(f.P("log").c_str(), O_WRONLY | O_APPEND);
    int b = open(f.P("log").c_str(), O_WRONLY | O_APPEND);
    REQUIRE(a >= 0);
    REQUIRE(b >= 0);
    CHECK(write(a, "ab", 2) == 2);
    CHECK(write(b, "cd", 2) == 2);
    CHECK(pwrite(a, "ef", 2, 0) == 2);  // Linux: pwrite on O_APPEND appends
    close(a);
    close(b);
    CHECK(ReadFile(f.P("log")) == "0123abcdef");

    errno = 0;
    CHECK(open(f.P("log").c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644) < 0);
    CHECK(errno == EEXIST);
    int t = open(f.P("log").c_str(), O_WRONLY | O_TRUNC);
    REQUIRE(t >= 0);
    close(t);
    CHECK(SizeOf(f.P("log")) == 0);

    // A second mount has never looked "again" up, so its kernel sends CREATE
    // (not OPEN) for O_CREAT|O_TRUNC of an existing name: it must truncate too.
    WriteFile(f.P("again"), "old contents");
    auto other = Mount::Start(*f.cluster, "fs1");
    INFO(other.status());
    REQUIRE(other.ok());
    CHECK(ReadFile((*other)->Path("log")).empty());
    WriteFile((*other)->Path("again"), "new");
    CHECK(ReadFile((*other)->Path("again")) == "new");
    CHECK(ReadFile(f.P("again")) == "new");
  }

  SECTION("closing a read-only descriptor keeps a writer's open") {
    WriteFile(f.P("rw"), "one");
    int w = open(f.P("rw").c_str(), O_RDWR);
    int r = open(f.P("rw").c_str(), O_RDONLY);
    REQUIRE(w >= 0);
    REQUIRE(r >= 0);
    CHECK(close(r) == 0);
    CHECK(pwrite(w, "two", 3, 3) == 3);
    CHECK(close(w) == 0);
    CHECK(ReadFile(f.P("rw")) == "onetwo");
  }

  SECTION("an unlinked file stays readable and writable while open") {
    WriteFile(f.P("ghost"), "boo");
    int fd = open(f.P("ghost").c_str(), O_RDWR);
    REQUIRE(fd >= 0);
    REQUIRE(unlink(f.P("ghost").c_str()) == 0);
    struct stat st;
    CHECK(stat(f.P("ghost").c_str(), &st) != 0);
    CHECK(ReadAt(fd, 0, 10) == "boo");
    WriteAll(fd, "!!", 3);
    CHECK(ReadAt(fd, 0, 10) == "boo!!");
    CHECK(close(fd) == 0);
  }
}

TEST_CASE("fuse: namespace operations through the mount", "[fuse]") {
  MountFixture f;

  REQUIRE(mkdir(f.P("d").c_str(), 0755) == 0);
  struct stat st;
  REQUIRE(stat(f.P("d").c_str(), &st) == 0);
  CHECK(S_ISDIR(st.st_mode));
  CHECK(st.st_nlink == 2);
  errno = 0;
  CHECK(mkdir(f.P("d").c_str(), 0755) != 0);
  CHECK(errno == EEXIST);

  // readdir: ".", ".." and every entry, across several pages.
  std::set<std::string> want = {".", ".."};
  for (int i = 0; i < 300; ++i) {
    std::string name = absl::StrCat("file-", i);
    WriteFile(f.P("d/" + name), "x");
    want.insert(name);
  }
  std::set<std::string> got;
  DIR* dir = opendir(f.P("d").c_str());
  REQUIRE(dir != nullptr);
  while (dirent* e = readdir(dir)) {
    CHECK(got.insert(e->d_name).second);  // no duplicates
  }
  closedir(dir);
  CHECK(got == want);

  // rename, with RENAME_NOREPLACE and RENAME_EXCHANGE.
  WriteFile(f.P("a"), "A");
  WriteFile(f.P("b"), "B");
  REQUIRE(rename(f.P("a").c_str(), f.P("d/a2").c_str()) == 0);
  CHECK(ReadFile(f.P("d/a2")) == "A");
  CHECK(access(f.P("a").c_str(), F_OK) != 0);
  errno = 0;
  CHECK(syscall(SYS_renameat2, AT_FDCWD, f.P("d/a2").c_str(), AT_FDCWD, f.P("b").c_str(),
                1 /* RENAME_NOREPLACE */) != 0);
  CHECK(errno == EEXIST);
  CHECK(syscall(SYS_renameat2, AT_FDCWD, f.P("d/a2").c_str(), AT_FDCWD, f.P("b").c_str(),
                2 /* RENAME_EXCHANGE */) == 0);
  CHECK(ReadFile(f.P("b")) == "A");
  CHECK(ReadFile(f.P("d/a2")) == "B");
  REQUIRE(rename(f.P("d/a2").c_str(), f.P("b").c_str()) == 0);  // replaces
  CHECK(ReadFile(f.P("b")) == "B");

  // hard links
  REQUIRE(link(f.P("b").c_str(), f.P("d/b-link").c_str()) == 0);
  REQUIRE(stat(f.P("b").c_str(), &st) == 0);
  CHECK(st.st_nlink == 2);
  REQUIRE(unlink(f.P("b").c_str()) == 0);
  REQUIRE(stat(f.P("d/b-link").c_str(), &st) == 0);
  CHECK(st.st_nlink == 1);
  CHECK(ReadFile(f.P("d/b-link")) == "B");

  // symlinks
  REQUIRE(symlink("d/b-link", f.P("sl").c_str()) == 0);
  char buf[256] = {};
  CHECK(readlink(f.P("sl").c_str(), buf, sizeof(buf)) == 8);
  CHECK(std::string(buf) == "d/b-link");
  CHECK(ReadFile(f.P("sl")) == "B");
  REQUIRE(lstat(f.P("sl").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));

  // rmdir
  errno = 0;
  CHECK(rmdir(f.P("d").c_str()) != 0);
  CHECK(errno == ENOTEMPTY);
  REQUIRE(mkdir(f.P("empty").c_str(), 0700) == 0);
  CHECK(rmdir(f.P("empty").c_str()) == 0);
  CHECK(stat(f.P("empty").c_str(), &st) != 0);

  // chmod / chown as root
  WriteFile(f.P("owned"), "o");
  REQUIRE(chmod(f.P("owned").c_str(), 0600) == 0);
  REQUIRE(chown(f.P("owned").c_str(), 1234, 5678) == 0);
  REQUIRE(stat(f.P("owned").c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0600);
  CHECK(st.st_uid == 1234u);
  CHECK(st.st_gid == 5678u);

  // mknod of a fifo
  REQUIRE(mkfifo(f.P("fifo").c_str(), 0644) == 0);
  REQUIRE(lstat(f.P("fifo").c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));

  // xattrs
  const std::string x = f.P("owned");
  REQUIRE(setxattr(x.c_str(), "user.color", "blue", 4, 0) == 0);
  char val[64] = {};
  CHECK(getxattr(x.c_str(), "user.color", val, sizeof(val)) == 4);
  CHECK(std::string(val, 4) == "blue");
  CHECK(getxattr(x.c_str(), "user.color", nullptr, 0) == 4);
  errno = 0;
  CHECK(setxattr(x.c_str(), "user.color", "red", 3, XATTR_CREATE) != 0);
  CHECK(errno == EEXIST);
  char names[256] = {};
  ssize_t n = listxattr(x.c_str(), names, sizeof(names));
  CHECK(std::string(names, n > 0 ? n : 0).find("user.color") != std::string::npos);
  REQUIRE(removexattr(x.c_str(), "user.color") == 0);
  errno = 0;
  CHECK(getxattr(x.c_str(), "user.color", val, sizeof(val)) < 0);
  CHECK(errno == ENODATA);

  // statfs shows the cluster's capacity
  struct statvfs vfs;
  REQUIRE(statvfs(f.mount->dir().c_str(), &vfs) == 0);
  CHECK(vfs.f_blocks > 0);
  CHECK(vfs.f_bavail > 0);
  CHECK(vfs.f_namemax == 255);

  // a subdir mount shows that directory as its root
  auto sub = Mount::Start(*f.cluster, "fs1", "subdir=/d");
  INFO(sub.status());
  REQUIRE(sub.ok());
  CHECK(ReadFile((*sub)->Path("b-link")) == "B");
  CHECK(access((*sub)->Path("file-7").c_str(), F_OK) == 0);
}

TEST_CASE("fuse: an unprivileged user gets the MDS's permission checks", "[fuse]") {
  MountFixture f;
  REQUIRE(mkdir(f.P("pub").c_str(), 0777) == 0);
  REQUIRE(chmod(f.P("pub").c_str(), 0777) == 0);
  WriteFile(f.P("root-only"), "secret");
  REQUIRE(chmod(f.P("root-only").c_str(), 0600) == 0);
  WriteFile(f.P("group-file"), "g");
  REQUIRE(chown(f.P("group-file").c_str(), 0, 2000) == 0);
  REQUIRE(chmod(f.P("group-file").c_str(), 0660) == 0);

  const std::string pub = f.P("pub"), mine = f.P("pub/mine"), root_file = f.P("root-only"),
                    root_new = f.P("denied"), group_file = f.P("group-file");
  CHECK(RunAs(kUser, [&]() -> std::string {
          USER_CHECK(open(root_new.c_str(), O_CREAT | O_WRONLY, 0644) < 0 && errno == EACCES);
          USER_CHECK(open(root_file.c_str(), O_RDONLY) < 0 && errno == EACCES);
          int fd = open(mine.c_str(), O_CREAT | O_WRONLY, 0666);
          USER_CHECK(fd >= 0);
          USER_CHECK(write(fd, "mine", 4) == 4);
          USER_CHECK(close(fd) == 0);
          USER_CHECK(chmod(root_file.c_str(), 0666) != 0 && errno == EPERM);
          USER_CHECK(access(root_file.c_str(), R_OK) != 0 && errno == EACCES);
          USER_CHECK(access(mine.c_str(), R_OK | W_OK) == 0);
          // a supplementary group grants access
          fd = open(group_file.c_str(), O_RDWR);
          USER_CHECK(fd >= 0);
          close(fd);
          return "";
        }) == "");
  struct stat st;
  REQUIRE(stat(mine.c_str(), &st) == 0);
  CHECK(st.st_uid == 1000u);
  CHECK(st.st_gid == 1000u);
  CHECK((st.st_mode & 0777) == 0644);  // the caller's umask 022
  CHECK(ReadFile(mine) == "mine");
}

TEST_CASE("fuse: mount life cycle - bad options fail cleanly - kill -9 then lazy unmount",
          "[fuse]") {
  ClusterWithDir t("bad");
  std::unique_ptr<Cluster>& cluster = t.cluster;
  const std::string& dir = t.dir;
  const std::string conf = "conf=" + cluster->conf_path();

  CommandResult r = RunCommand({BinPath("weft-fuse"), dir, "-f", "-o", conf + ",fs=fs1,bogus=1"});
  INFO("weft-fuse -o bogus=1: " << r.output);
  CHECK(r.code != 0);
  CHECK(OneLine(r.output, "bogus=1"));
  CHECK(!Mount::IsMounted(dir));
  r = RunCommand({BinPath("weft-fuse"), dir, "-o", "conf=/nonexistent.conf,fs=fs1"});
  CHECK(r.code != 0);
  CHECK(r.output.find("weft-fuse:") != std::string::npos);
  CHECK(!Mount::IsMounted(dir));
  r = RunCommand({BinPath("weft-fuse"), dir, "-o", conf + ",fs=nosuchfs"});
  CHECK(r.code != 0);
  CHECK(!Mount::IsMounted(dir));
  r = RunCommand({BinPath("weft-fuse"), dir, "-o", "conf=" + UnreachableConf(*cluster) + ",fs=fs1"});
  CHECK(r.code != 0);
  CHECK(!Mount::IsMounted(dir));

  // Detached (no -f): the command returns once mounted.
  r = RunCommand({BinPath("weft-fuse"), dir, "-o", conf + ",fs=fs1,log=" + dir + ".log"});
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(Mount::IsMounted(dir));
  WriteFile(dir + "/f", "data");
  CHECK(RunCommand({FusermountPath(), "-u", dir}).code == 0);
  CHECK(!Mount::IsMounted(dir));

  // kill -9 leaves a dead mount that a lazy unmount clears.
  auto m = Mount::Start(*cluster, "fs1");
  REQUIRE(m.ok());
  CHECK(ReadFile((*m)->Path("f")) == "data");
  (*m)->process()->Kill(SIGKILL);
  (*m)->process()->Wait();
  struct stat st;
  errno = 0;
  CHECK(stat((*m)->Path("f").c_str(), &st) != 0);
  CHECK(errno == ENOTCONN);
  CHECK(LazyUnmount((*m)->dir()));
  CHECK(!Mount::IsMounted((*m)->dir()));
}

TEST_CASE("fuse: mount helper - mount(8) and fstab arguments - failures leave nothing mounted",
          "[fuse]") {
  ClusterWithDir t("helper");
  std::unique_ptr<Cluster>& cluster = t.cluster;
  const std::string& dir = t.dir;
  const std::string conf = "conf=" + cluster->conf_path();
  const std::string log = ",log=" + cluster->dir() + "/helper.log";
  // What mount(8) runs for `mount -t fuse.weft fs1 DIR -o ...` and for the
  // README's fstab line.
  const std::string helper = BinPath("mount.fuse.weft");

  const std::string fstab = ",_netdev,noauto,nofail,defaults,x-systemd.automount";
  CommandResult r = RunCommand({helper, "fs1", dir, "-o", "rw," + conf + fstab + log});
  INFO(r.output);
  REQUIRE(r.code == 0);
  REQUIRE(Mount::IsMounted(dir));
  REQUIRE(mkdir((dir + "/sub").c_str(), 0755) == 0);
  WriteFile(dir + "/sub/f", "through the helper");
  CommandResult fm = RunCommand({"/usr/bin/findmnt", "-n", "-o", "FSTYPE,SOURCE", dir});
  CHECK(fm.output.find("fuse.weft") != std::string::npos);
  CHECK(fm.output.find("weft:fs1") != std::string::npos);
  CHECK(RunCommand({FusermountPath(), "-u", dir}).code == 0);
  CHECK(!Mount::IsMounted(dir));

  // mount.weft, a FSNAME:/SUBDIR source, generic options passed to the kernel.
  r = RunCommand({BinPath("mount.weft"), "fs1:/sub", dir, "-o", conf + ",ro,noexec" + log});
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(ReadFile(dir + "/f") == "through the helper");
  errno = 0;
  CHECK(open((dir + "/new").c_str(), O_CREAT | O_WRONLY, 0644) < 0);
  CHECK(errno == EROFS);
  CHECK(RunCommand({FusermountPath(), "-u", dir}).code == 0);

  // -f (fake) checks and mounts nothing.
  r = RunCommand({helper, "-f", "fs1", dir, "-o", conf});
  CHECK(r.code == 0);
  CHECK(!Mount::IsMounted(dir));

  // Every failure: a non-zero exit, one line saying why, nothing mounted.
  struct Bad {
    std::vector<std::string> args;
    std::string reason;
  };
  const std::string unreachable = UnreachableConf(*cluster);
  const std::vector<Bad> bad = {
      {{helper, "fs1", dir, "-o", conf + ",bogus=1"}, "bogus=1"},
      {{helper, "fs1", dir, "-o", "conf=/nonexistent/weft.conf"}, "/nonexistent/weft.conf"},
      {{helper, "nosuchfs", dir, "-o", conf}, "nosuchfs"},
      {{helper, "fs1:/nosuchdir", dir, "-o", conf}, "nosuchdir"},
      {{helper, "fs1", dir, "-o", "conf=" + unreachable}, "no MDS answered"},
      {{helper, "fs1", dir + "/missing-dir", "-o", conf}, "missing-dir"},
      {{helper, "none", dir, "-o", conf}, "fs=NAME"},
      {{helper, "fs1", dir, "-N", "/proc/1/ns/mnt", "-o", conf}, "namespace"},
      {{helper, dir, "-o", conf}, "usage"},
  };
  for (const Bad& b : bad) {
    r = RunCommand(b.args);
    INFO(absl::StrJoin(b.args, " ") << " -> " << r.code << ": " << r.output);
    CHECK(r.code != 0);
    CHECK(OneLine(r.output, b.reason));
    CHECK(!Mount::IsMounted(dir));
  }
}

// Bytes the OSDs have read (their counters in the cluster status).
uint64_t OsdReadBytes(Cluster& c) {
  auto status = c.Admin()->Status();
  INFO(status.status());
  REQUIRE(status.ok());
  uint64_t total = 0;
  for (const pb::OsdIo& io : status->osd_io()) total += io.read_bytes();
  return total;
}

// OsdReadBytes once it counts at least `at_least` and the OSDs have
// published their counters again after that (they do every 500 ms in the
// harness), so that nothing read before the call is missing from it.
uint64_t OsdReadBytesSettled(Cluster& c, uint64_t at_least) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (OsdReadBytes(c) < at_least && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(100));
  absl::SleepFor(absl::Milliseconds(1500));
  return OsdReadBytes(c);
}

TEST_CASE("fuse: random reads move only what they ask for - a sequential read moves the file once",
          "[fuse]") {
  MountFixture f;
  std::string data(64 << 20, '\0');
  for (size_t i = 0; i < data.size(); i += 8) std::memcpy(&data[i], &i, 8);
  WriteFile(f.P("big"), data);
  f.Remount();  // nothing cached

  const uint64_t before = OsdReadBytesSettled(*f.cluster, 0);
  const int fd = open(f.P("big").c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  REQUIRE(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM) == 0);  // no kernel readahead
  std::mt19937_64 rng(7);
  constexpr int kReads = 400;
  std::set<uint64_t> pages;  // a page read twice may come from the page cache
  for (int i = 0; i < kReads; ++i) {
    const uint64_t off = rng() % (data.size() / 4096) * 4096;
    pages.insert(off);
    CHECK(ReadAt(fd, static_cast<off_t>(off), 4096) == data.substr(off, 4096));
  }
  close(fd);
  // The OSDs read at least the distinct pages: the counters are live.
  const uint64_t moved = OsdReadBytesSettled(*f.cluster, before + pages.size() * 4096) - before;
  INFO("OSDs read " << moved << " bytes for " << kReads << " random 4 KiB reads");
  CHECK(moved >= pages.size() * 4096);
  // A read may cost a checksum block or so at the OSD, never a readahead
  // window (an 8 MiB readahead one time in 16 moved 600 KiB per read).
  CHECK(moved <= kReads * (64 << 10));

  // A sequential reader gets the same bytes; read ahead, it moves the file
  // about once (not a 64 KiB block per 4 KiB the kernel asks for).
  f.Remount();
  const uint64_t before_seq = OsdReadBytesSettled(*f.cluster, 0);
  CHECK(ReadFile(f.P("big")) == data);
  const uint64_t seq_moved = OsdReadBytesSettled(*f.cluster, before_seq + data.size()) - before_seq;
  INFO("OSDs read " << seq_moved << " bytes for a sequential read of " << data.size());
  CHECK(seq_moved >= data.size());
  CHECK(seq_moved <= 2 * data.size());
}

// What an NFS server (knfsd, NFS-Ganesha's VFS FSAL) does with a mount:
// name_to_handle_at, and later open_by_handle_at through another mount
// that never saw the inode (the kernel asks the filesystem for ".").
TEST_CASE("fuse: file handles open through a fresh mount - stale once removed", "[fuse]") {
  MountFixture f;
  REQUIRE(mkdir(f.P("d").c_str(), 0755) == 0);
  REQUIRE(mkdir(f.P("d/sub").c_str(), 0755) == 0);
  WriteFile(f.P("d/sub/file"), "handle me");
  WriteFile(f.P("gone"), "x");
  struct Handle {
    std::string path;
    std::vector<char> bytes;
    ino_t ino = 0;
  };
  std::vector<Handle> handles;
  for (const char* rel : {"d/sub/file", "d/sub", "gone"}) {
    Handle h;
    h.path = rel;
    h.bytes.resize(sizeof(file_handle) + MAX_HANDLE_SZ);
    auto* fh = reinterpret_cast<file_handle*>(h.bytes.data());
    fh->handle_bytes = MAX_HANDLE_SZ;
    int mount_id = 0;
    INFO(rel);
    REQUIRE(name_to_handle_at(AT_FDCWD, f.P(rel).c_str(), fh, &mount_id, 0) == 0);
    struct stat st;
    REQUIRE(stat(f.P(rel).c_str(), &st) == 0);
    h.ino = st.st_ino;
    handles.push_back(std::move(h));
  }
  REQUIRE(unlink(f.P("gone").c_str()) == 0);
  f.Remount();  // a new client and kernel superblock: no inode cached
  // Closed also when a REQUIRE fails: an open descriptor keeps the unmount busy.
  struct Fd {
    int fd;
    ~Fd() {
      if (fd >= 0) close(fd);
    }
  } mount{open(f.mount->dir().c_str(), O_RDONLY | O_DIRECTORY)};
  const int mount_fd = mount.fd;
  REQUIRE(mount_fd >= 0);
  for (Handle& h : handles) {
    INFO(h.path);
    auto* fh = reinterpret_cast<file_handle*>(h.bytes.data());
    const int fd = open_by_handle_at(mount_fd, fh, O_RDONLY);
    if (h.path == "gone") {
      CHECK(fd < 0);
      CHECK(errno == ESTALE);
      if (fd >= 0) close(fd);
      continue;
    }
    REQUIRE(fd >= 0);
    Fd opened{fd};
    struct stat st;
    REQUIRE(fstat(fd, &st) == 0);
    CHECK(st.st_ino == h.ino);
    if (S_ISREG(st.st_mode)) {
      char buf[32] = {};
      CHECK(read(fd, buf, sizeof(buf)) == 9);
      CHECK(std::string(buf) == "handle me");
    } else {
      CHECK(S_ISDIR(st.st_mode));
      const int child = openat(fd, "file", O_RDONLY);  // lookups below it work
      CHECK(child >= 0);
      if (child >= 0) close(child);
    }
  }
}

}  // namespace
}  // namespace weft::testing
