// Attribute caps through two real mounts of one filesystem
// (mds/caps/leases.h): a mount keeps a file's attributes, in its client and
// in its kernel, for as long as it holds the file's attribute cap, and the
// MDS revokes the cap before any other mount changes the file. So every
// change made through one mount is seen by the very next stat on the
// other, with no sleep: mode, owner, times, size, links, xattrs, of files
// and of directories (whose times and link count also move with the names
// in them). A file another mount writes is never answered from a cap.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/posix/acl.h"
#include "tests/harness/http.h"
#include "tests/harness/mount_fixture.h"

namespace weft::testing {
namespace {

using TwoMounts = TwoMountFixture;

// Attribute caps alive at the MDS.
uint64_t CapsAtMds(Cluster& cluster) { return FsStatusOf(cluster).attr_caps(); }

int64_t Nanos(const struct timespec& t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

// At most 200 caps per client, recalled every 200 ms above 90 % of it.
ClusterOptions CapLimitOptions() {
  ClusterOptions options;
  options.extra_conf = {"mds_max_caps_per_client = 200", "mds_recall_interval_ms = 200"};
  return options;
}

// d/f0 .. d/f(n-1) through the fixture's mount, file i holding i % 50 bytes.
std::string Numbered(int i) { return absl::StrCat("d/f", i); }
void MakeNumbered(const MountFixture& f, int n) {
  REQUIRE(mkdir(f.P("d").c_str(), 0755) == 0);
  for (int i = 0; i < n; ++i) WriteFile(f.P(Numbered(i)), std::string(i % 50, 'x'));
}

TEST_CASE("fuse caps: a change of a file through one mount is seen by the other's next stat",
          "[fuse][caps]") {
  TwoMounts f;
  WriteFile(f.P("f"), "twelve bytes");
  // The other mount looks: from now on it holds the file's cap, and its
  // kernel keeps the attributes.
  CHECK(Lstat(f.Q("f")).st_size == 12);
  CHECK(Lstat(f.Q("f")).st_size == 12);
  CHECK(CapsAtMds(*f.cluster) >= 1);

  for (int i = 0; i < 20; ++i) {
    INFO("round " << i);
    const mode_t mode = i % 2 == 0 ? 0600 : 0644;
    REQUIRE(chmod(f.P("f").c_str(), mode) == 0);
    CHECK((Lstat(f.Q("f")).st_mode & 07777) == mode);
    REQUIRE(chown(f.P("f").c_str(), 1000 + i, 2000 + i) == 0);
    struct stat st = Lstat(f.Q("f"));
    CHECK(st.st_uid == static_cast<uid_t>(1000 + i));
    CHECK(st.st_gid == static_cast<gid_t>(2000 + i));
    const struct timespec times[2] = {{1000000000 + i, 5}, {1100000000 + i, 7}};
    REQUIRE(utimensat(AT_FDCWD, f.P("f").c_str(), times, 0) == 0);
    st = Lstat(f.Q("f"));
    CHECK(st.st_atim.tv_sec == 1000000000 + i);
    CHECK(st.st_mtim.tv_sec == 1100000000 + i);
    CHECK(st.st_mtim.tv_nsec == 7);
    REQUIRE(truncate(f.P("f").c_str(), 100 + i) == 0);
    CHECK(Lstat(f.Q("f")).st_size == 100 + i);
    // The other way round too: each mount holds the cap in turn.
    REQUIRE(chmod(f.Q("f").c_str(), 0640) == 0);
    CHECK((Lstat(f.P("f")).st_mode & 07777) == 0640);
  }

  // Links: the link count and ctime the other mount shows move at once.
  const struct stat before = Lstat(f.Q("f"));
  REQUIRE(link(f.P("f").c_str(), f.P("g").c_str()) == 0);
  struct stat st = Lstat(f.Q("f"));
  CHECK(st.st_nlink == 2);
  CHECK(Nanos(st.st_ctim) >= Nanos(before.st_ctim));
  REQUIRE(unlink(f.P("g").c_str()) == 0);
  CHECK(Lstat(f.Q("f")).st_nlink == 1);
  const struct stat renamed_before = Lstat(f.Q("f"));
  REQUIRE(rename(f.P("f").c_str(), f.P("h").c_str()) == 0);
  CHECK(Nanos(Lstat(f.Q("h")).st_ctim) >= Nanos(renamed_before.st_ctim));

  // Xattrs: a value the other mount read is not answered again after a change.
  REQUIRE(setxattr(f.P("h").c_str(), "user.k", "one", 3, 0) == 0);
  CHECK(Xattr(f.Q("h"), "user.k") == "one");
  REQUIRE(setxattr(f.P("h").c_str(), "user.k", "two", 3, 0) == 0);
  CHECK(Xattr(f.Q("h"), "user.k") == "two");
  REQUIRE(removexattr(f.P("h").c_str(), "user.k") == 0);
  char buf[16];
  CHECK(getxattr(f.Q("h").c_str(), "user.k", buf, sizeof buf) < 0);
  CHECK(errno == ENODATA);

  // Data written and closed through one mount: the size at the next stat.
  for (int i = 1; i <= 5; ++i) {
    const std::string data(1000 * i, static_cast<char>('a' + i));
    WriteFile(f.P("h"), data);
    INFO("write " << i);
    CHECK(Lstat(f.Q("h")).st_size == 1000 * i);
    CHECK(ReadFile(f.Q("h")) == data);
  }

  // Removed through one mount: the other's next stat says so.
  REQUIRE(unlink(f.P("h").c_str()) == 0);
  struct stat gone;
  CHECK(lstat(f.Q("h").c_str(), &gone) != 0);
  CHECK(errno == ENOENT);
}

// The attributes both mounts show of `rel` (Q's stat right after P's).
void CheckSameAttrs(const TwoMounts& f, const std::string& rel) {
  const struct stat p = Lstat(f.P(rel));
  const struct stat q = Lstat(f.Q(rel));
  INFO(rel);
  CHECK(q.st_mode == p.st_mode);
  CHECK(q.st_uid == p.st_uid);
  CHECK(q.st_gid == p.st_gid);
  CHECK(q.st_nlink == p.st_nlink);
  CHECK(q.st_size == p.st_size);
  CHECK(Nanos(q.st_mtim) == Nanos(p.st_mtim));
  CHECK(Nanos(q.st_ctim) == Nanos(p.st_ctim));
}

TEST_CASE("fuse caps: a change of a directory through one mount is seen by the other's next stat",
          "[fuse][caps]") {
  TwoMounts f;
  REQUIRE(mkdir(f.P("d").c_str(), 0755) == 0);
  // The other mount looks, twice: its kernel and client keep what they saw.
  const uint64_t caps_before = CapsAtMds(*f.cluster);
  CheckSameAttrs(f, "d");
  CheckSameAttrs(f, "d");
  CHECK(CapsAtMds(*f.cluster) > caps_before);  // directories are granted caps too

  for (int i = 0; i < 10; ++i) {
    INFO("round " << i);
    const mode_t mode = i % 2 == 0 ? 0700 : 0755;
    REQUIRE(chmod(f.P("d").c_str(), mode) == 0);
    CHECK((Lstat(f.Q("d")).st_mode & 07777) == mode);
    REQUIRE(chown(f.P("d").c_str(), 1000 + i, 2000 + i) == 0);
    CHECK(Lstat(f.Q("d")).st_uid == static_cast<uid_t>(1000 + i));
    const struct timespec times[2] = {{1000000000 + i, 5}, {1100000000 + i, 7}};
    REQUIRE(utimensat(AT_FDCWD, f.P("d").c_str(), times, 0) == 0);
    CHECK(Lstat(f.Q("d")).st_mtim.tv_sec == 1100000000 + i);
    CheckSameAttrs(f, "d");
    // A name made or removed in it moves its times (and a subdirectory its
    // link count), from either mount.
    const std::string file = absl::StrCat("d/f", i);
    WriteFile(f.P(file), "x");
    CheckSameAttrs(f, "d");
    REQUIRE(mkdir(f.Q(absl::StrCat("d/s", i)).c_str(), 0755) == 0);
    CheckSameAttrs(f, "d");
    CHECK(Lstat(f.P("d")).st_nlink == 3);
    REQUIRE(rename(f.P(file).c_str(), f.P(absl::StrCat("d/g", i)).c_str()) == 0);
    CheckSameAttrs(f, "d");
    REQUIRE(unlink(f.Q(absl::StrCat("d/g", i)).c_str()) == 0);
    CheckSameAttrs(f, "d");
    REQUIRE(rmdir(f.P(absl::StrCat("d/s", i)).c_str()) == 0);
    CHECK(Lstat(f.Q("d")).st_nlink == 2);
    CheckSameAttrs(f, "d");
  }

  // A subdirectory moved between directories: both parents' link counts,
  // and its own ctime.
  REQUIRE(mkdir(f.P("e").c_str(), 0755) == 0);
  REQUIRE(mkdir(f.P("d/sub").c_str(), 0755) == 0);
  CheckSameAttrs(f, "d");
  CheckSameAttrs(f, "e");
  CheckSameAttrs(f, "d/sub");
  REQUIRE(rename(f.P("d/sub").c_str(), f.P("e/sub").c_str()) == 0);
  CHECK(Lstat(f.Q("d")).st_nlink == 2);
  CHECK(Lstat(f.Q("e")).st_nlink == 3);
  CheckSameAttrs(f, "d");
  CheckSameAttrs(f, "e");
  CheckSameAttrs(f, "e/sub");

  // Xattrs on a directory: the value and the ctime.
  REQUIRE(setxattr(f.P("d").c_str(), "user.k", "one", 3, 0) == 0);
  CHECK(Xattr(f.Q("d"), "user.k") == "one");
  CheckSameAttrs(f, "d");
  REQUIRE(setxattr(f.Q("d").c_str(), "user.k", "two", 3, 0) == 0);
  CHECK(Xattr(f.P("d"), "user.k") == "two");
  CheckSameAttrs(f, "d");

  // The mount's root too.
  CheckSameAttrs(f, "");
  WriteFile(f.P("top"), "x");
  CheckSameAttrs(f, "");
  REQUIRE(chmod(f.Q("").c_str(), 0751) == 0);
  CHECK((Lstat(f.P("")).st_mode & 07777) == 0751);

  // Removed through one mount: the other's next stat says so.
  REQUIRE(rmdir(f.P("e/sub").c_str()) == 0);
  struct stat gone;
  CHECK(lstat(f.Q("e/sub").c_str(), &gone) != 0);
  CHECK(errno == ENOENT);
}

// The kernel checks permissions itself from what the mount gave it (and is
// the only check of an open of a FIFO): a chmod, chown or ACL through one
// mount decides the other's very next open.
TEST_CASE("fuse caps: a permission change through one mount decides the other's next open",
          "[fuse][caps]") {
  TwoMounts f;
  const UserIds user{1000, 1000, {1000}};
  REQUIRE(mkdir(f.P("d").c_str(), 0755) == 0);
  REQUIRE(mknod(f.P("d/fifo").c_str(), S_IFIFO | 0600, 0) == 0);
  WriteFile(f.P("d/file"), "x", 0600);
  const std::string fifo = f.Q("d/fifo"), file = f.Q("d/file");
  auto opens = [&](const std::string& path) {
    return RunAs(user, [&]() -> std::string {
      const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK);
      USER_CHECK(fd >= 0);
      close(fd);
      return "";
    });
  };
  auto refused = [&](const std::string& path) {
    return RunAs(user, [&]() -> std::string {
      const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK);
      if (fd >= 0) close(fd);
      USER_CHECK(fd < 0 && errno == EACCES);
      return "";
    });
  };
  for (int i = 0; i < 3; ++i) {
    INFO("round " << i);
    CHECK(refused(fifo) == "");
    CHECK(refused(file) == "");
    REQUIRE(chmod(f.P("d/fifo").c_str(), 0644) == 0);
    REQUIRE(chmod(f.P("d/file").c_str(), 0644) == 0);
    CHECK(opens(fifo) == "");
    CHECK(opens(file) == "");
    REQUIRE(chown(f.P("d/fifo").c_str(), 1000, 1000) == 0);
    REQUIRE(chmod(f.P("d/fifo").c_str(), 0400) == 0);
    CHECK(opens(fifo) == "");
    REQUIRE(chown(f.P("d/fifo").c_str(), 0, 0) == 0);
    CHECK(refused(fifo) == "");
    REQUIRE(chmod(f.P("d/file").c_str(), 0600) == 0);
    CHECK(refused(file) == "");
    // The directory: no search permission, nothing inside opens.
    REQUIRE(chmod(f.P("d/fifo").c_str(), 0644) == 0);
    REQUIRE(chmod(f.P("d").c_str(), 0700) == 0);
    CHECK(refused(fifo) == "");
    REQUIRE(chmod(f.P("d").c_str(), 0755) == 0);
    CHECK(opens(fifo) == "");
    REQUIRE(chmod(f.P("d/fifo").c_str(), 0600) == 0);
  }
  // An ACL set through one mount grants the user on the other.
  posix::Acl grant;
  grant.entries = {{posix::kAclUserObj, 6}, {posix::kAclUser, 4, 1000}, {posix::kAclGroupObj, 0},
                   {posix::kAclMask, 4},    {posix::kAclOther, 0}};
  const std::string acl = posix::EncodeAcl(grant);
  REQUIRE(setxattr(f.P("d/fifo").c_str(), "system.posix_acl_access", acl.data(), acl.size(), 0) ==
          0);
  CHECK(opens(fifo) == "");
  REQUIRE(removexattr(f.P("d/fifo").c_str(), "system.posix_acl_access") == 0);
  CHECK(refused(fifo) == "");
}

TEST_CASE("fuse caps: a file another mount writes is never answered from a cap",
          "[fuse][caps]") {
  TwoMounts f;
  WriteFile(f.P("w"), "");
  CHECK(Lstat(f.Q("w")).st_size == 0);  // the cap
  // The open for writing takes the cap back first; from then on each stat
  // on the other mount asks the MDS, which recalls the buffered writes.
  const int fd = open(f.P("w").c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  std::string all;
  for (int i = 0; i < 10; ++i) {
    const std::string piece(3000, static_cast<char>('0' + i));
    WriteAll(fd, piece, static_cast<off_t>(all.size()));
    all += piece;
    INFO("piece " << i);
    CHECK(static_cast<size_t>(Lstat(f.Q("w")).st_size) == all.size());
  }
  REQUIRE(close(fd) == 0);
  CHECK(ReadFile(f.Q("w")) == all);
  // Both mounts writing: neither keeps the attributes.
  const int a = open(f.P("w").c_str(), O_WRONLY | O_APPEND);
  const int b = open(f.Q("w").c_str(), O_WRONLY | O_APPEND);
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  REQUIRE(write(a, "x", 1) == 1);
  CHECK(static_cast<size_t>(Lstat(f.Q("w")).st_size) == all.size() + 1);
  REQUIRE(close(a) == 0);
  REQUIRE(close(b) == 0);
}

TEST_CASE("fuse caps: the session heartbeat keeps caps past their grant - revokes still reach them",
          "[fuse][caps]") {
  ClusterOptions options;
  options.metrics = true;
  TwoMounts f(options);
  REQUIRE(mkdir(f.P("d").c_str(), 0755) == 0);
  WriteFile(f.P("d/f"), "data");
  CHECK(Lstat(f.P("d/f")).st_size == 4);
  CHECK(Lstat(f.P("d")).st_nlink == 2);
  // Longer than a grant lives (5 s) with nothing asked of the MDS: only
  // the heartbeat renews what the mount holds.
  absl::SleepFor(absl::Seconds(7));
  const double getattrs = MdsRequests(*f.cluster, "getattr");
  const double lookups = MdsRequests(*f.cluster, "lookup");
  for (int i = 0; i < 3; ++i) {
    CHECK(Lstat(f.P("d/f")).st_size == 4);
    CHECK(Lstat(f.P("d")).st_nlink == 2);
    CHECK(StatErrno(f.P("d/none")) == ENOENT);
  }
  CHECK(MdsRequests(*f.cluster, "getattr") == getattrs);
  // The names are answered under the renewed leases: d in the mount's
  // root (made by this mount), d/f and d/none (it made d, so it knows all
  // of d's names).
  CHECK(MdsRequests(*f.cluster, "lookup") == lookups);
  // Renewed caps are revoked like fresh ones: the other mount's changes
  // are seen by this one's next call.
  REQUIRE(chmod(f.Q("d/f").c_str(), 0600) == 0);
  CHECK((Lstat(f.P("d/f")).st_mode & 07777) == 0600);
  WriteFile(f.Q("d/none"), "now");
  CHECK(Lstat(f.P("d/none")).st_size == 3);
  REQUIRE(mkdir(f.Q("d/sub").c_str(), 0755) == 0);
  CHECK(Lstat(f.P("d")).st_nlink == 3);
}

TEST_CASE("fuse caps: a holder killed with a cap delays a change only until the cap runs out",
          "[fuse][caps]") {
  TwoMounts f;
  WriteFile(f.P("f"), "data");
  CHECK(Lstat(f.P("f")).st_size == 4);
  CHECK(Lstat(f.Q("f")).st_size == 4);
  f.mount->process()->Kill(SIGKILL);
  f.mount->process()->Wait();
  // The MDS cannot reach the dead holder: the chmod waits for the cap (5 s)
  // to run out, then goes through.
  const absl::Time start = absl::Now();
  REQUIRE(chmod(f.Q("f").c_str(), 0600) == 0);
  const absl::Duration waited = absl::Now() - start;
  INFO("chmod waited " << absl::FormatDuration(waited));
  CHECK(waited < absl::Seconds(30));  // far from any timeout: it did not hang
  CHECK((Lstat(f.Q("f")).st_mode & 07777) == 0600);
}

TEST_CASE("fuse caps: a client holds at most mds_max_caps_per_client - gives back when recalled",
          "[fuse][caps]") {
  TwoMounts f(CapLimitOptions());
  constexpr int kFiles = 600;
  MakeNumbered(f, kFiles);
  // The other mount looks at every file (each stat asks the MDS or its caps).
  for (int i = 0; i < kFiles; ++i) {
    INFO(Numbered(i));
    CHECK(Lstat(f.Q(Numbered(i))).st_size == i % 50);
  }
  pb::FsStatusReply st = FsStatusOf(*f.cluster);
  CHECK(st.max_caps_per_client() == 200);
  REQUIRE(st.clients_size() >= 2);  // the two mounts, and the test's own session
  for (const pb::ClientInfo& c : st.clients()) {
    INFO("client " << c.session() << " caps " << c.caps() << " (Ls " << c.dir_leases()
                    << ", AsFs " << c.attr_caps() << ")");
    CHECK(c.caps() <= 200);
    CHECK(c.attr_caps() <= c.caps());
    CHECK(c.dir_leases() <= c.caps());
  }
  CHECK(st.caps_refused() > 0);  // both mounts saw more than 200 inodes within a lease
  // Above 90 % of the limit the MDS asks for caps back and the clients give them.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (FsStatusOf(*f.cluster).caps_released() == 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  st = FsStatusOf(*f.cluster);
  CHECK(st.caps_recalled() > 0);
  CHECK(st.caps_released() > 0);
  CHECK(st.caps_released() <= st.caps_recalled());
  // Coherence holds whatever was given back or refused: every change through
  // one mount is seen by the other's next stat.
  for (int i = 0; i < kFiles; i += 25) {
    INFO(Numbered(i));
    REQUIRE(chmod(f.P(Numbered(i)).c_str(), 0600) == 0);
    CHECK((Lstat(f.Q(Numbered(i))).st_mode & 07777) == 0600);
    REQUIRE(truncate(f.Q(Numbered(i)).c_str(), 1000 + i) == 0);
    CHECK(Lstat(f.P(Numbered(i))).st_size == 1000 + i);
  }
}

TEST_CASE("fuse caps: files whose caps a recall took are dropped from the kernel - open ones stay",
          "[fuse][caps]") {
  MountFixture f(CapLimitOptions());
  // Under the limit, over the 90 % at which the MDS asks for caps back (to 80 %).
  constexpr int kFiles = 190;
  MakeNumbered(f, kFiles);
  f.Remount();  // a kernel and a client that hold nothing yet
  // Held open first, so its cap is the least recently used: given back, but
  // the kernel keeps the file (its name must not read "(deleted)").
  const int fd = open(f.P(Numbered(0)).c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  for (int i = 1; i < kFiles; ++i) {
    INFO(Numbered(i));
    CHECK(Lstat(f.P(Numbered(i))).st_size == i % 50);
  }
  // The mount is the one session that caches inodes (the test's own has none).
  auto mount_info = [&f]() {
    const pb::FsStatusReply st = FsStatusOf(*f.cluster);
    pb::ClientInfo found;
    for (const pb::ClientInfo& c : st.clients()) {
      if (c.cached_inodes() > 0) found = c;
    }
    return found;
  };
  // Every inode the kernel holds came with a cap; once the recall took some
  // back, the kernel no longer holds those files either (the root and "d"
  // are directories: kept). Without the drop it kept all of them.
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  pb::ClientInfo c = mount_info();
  while (!(FsStatusOf(*f.cluster).caps_released() > 0 && c.cached_inodes() > 0 &&
           c.cached_inodes() <= c.caps() + 2) &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
    c = mount_info();
  }
  INFO("mount caches " << c.cached_inodes() << " inodes, holds " << c.caps() << " caps");
  CHECK(FsStatusOf(*f.cluster).caps_released() > 0);
  CHECK(c.caps() <= 200);
  CHECK(c.cached_inodes() > 0);
  CHECK(c.cached_inodes() <= c.caps() + 2);
  CHECK(c.cached_inodes() < kFiles);
  // The open file kept its name and its data.
  char link[4096] = {};
  const ssize_t n =
      readlink(absl::StrCat("/proc/self/fd/", fd).c_str(), link, sizeof(link) - 1);
  REQUIRE(n > 0);
  CHECK(std::string(link, n) == f.P(Numbered(0)));
  char byte = 'q';
  CHECK(pread(fd, &byte, 1, 0) == 0);  // f0 is empty
  REQUIRE(close(fd) == 0);
  // Files dropped from the kernel are looked up again, as they are.
  for (int i = 0; i < kFiles; i += 7) {
    INFO(Numbered(i));
    CHECK(Lstat(f.P(Numbered(i))).st_size == i % 50);
  }
}

TEST_CASE("fuse caps: after an MDS restart a mount trusts no attributes it had",
          "[fuse][caps]") {
  TwoMounts f;
  WriteFile(f.P("f"), "data");
  CHECK((Lstat(f.Q("f")).st_mode & 07777) == 0644);
  f.cluster->KillMds();
  auto started = f.cluster->StartMds();
  INFO(started);
  REQUIRE(started.ok());
  REQUIRE(chmod(f.P("f").c_str(), 0600) == 0);
  CHECK((Lstat(f.Q("f")).st_mode & 07777) == 0600);
  // Caps work again with the new incarnation.
  CHECK((Lstat(f.Q("f")).st_mode & 07777) == 0600);
  REQUIRE(chmod(f.P("f").c_str(), 0640) == 0);
  CHECK((Lstat(f.Q("f")).st_mode & 07777) == 0640);
}

TEST_CASE("fuse caps: a file two mounts held open is purged after an MDS restart once the last "
          "one closes it",
          "[fuse][caps]") {
  TwoMounts f;
  const std::string data(3 << 20, 'd');
  WriteFile(f.P("f"), data);
  const int a = open(f.P("f").c_str(), O_RDONLY);
  const int b = open(f.Q("f").c_str(), O_RDONLY);
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  REQUIRE(unlink(f.P("f").c_str()) == 0);
  // The first mount closes: the other still holds it, so the MDS journals
  // nothing for that release.
  REQUIRE(close(a) == 0);
  auto open_files = [&f]() {
    uint64_t n = 0;
    const pb::FsStatusReply st = FsStatusOf(*f.cluster);
    for (const pb::ClientInfo& c : st.clients()) n += c.open_files();
    return n;
  };
  const absl::Time settle = absl::Now() + absl::Seconds(10);
  while (open_files() > 1 && absl::Now() < settle) absl::SleepFor(absl::Milliseconds(50));
  REQUIRE(open_files() == 1);
  f.cluster->KillMds();
  auto started = f.cluster->StartMds();
  INFO(started);
  REQUIRE(started.ok());
  // The other mount reconnects with its handle: the stray is still its file.
  std::string got(data.size(), '\0');
  REQUIRE(pread(b, got.data(), got.size(), 0) == static_cast<ssize_t>(data.size()));
  CHECK(got == data);
  CHECK(FsStatusOf(*f.cluster).strays() == 1);
  // Its last close purges it. Before the reconnect took each mount's own
  // list of open files, the restarted MDS believed the first mount still
  // held it (from its journal), and the stray and its data stayed forever.
  REQUIRE(close(b) == 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (FsStatusOf(*f.cluster).strays() != 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  CHECK(FsStatusOf(*f.cluster).strays() == 0);
  CHECK(open_files() == 0);
}

}  // namespace
}  // namespace weft::testing
