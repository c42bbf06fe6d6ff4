// POSIX (fcntl) and flock locks through two weft-fuse mounts of one
// filesystem: they exclude each other as processes on one host do, because
// the MDS holds every session's locks (mds/rank_locks.cc,
// fuse-client/lib/file_locks.h).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <functional>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "proto/mds_client.pb.h"
#include "tests/harness/mount_fixture.h"

namespace weft::testing {
namespace {

struct TwoMounts : TwoMountFixture {
  explicit TwoMounts(ClusterOptions options = {}, const std::string& other_options = "")
      : TwoMountFixture(std::move(options), other_options) {
    WriteFile(P("f"), "data");  // the file every test locks
  }
};

// A descriptor closed at the end of the scope (before the mounts go).
struct Fd {
  explicit Fd(const std::string& path, int flags = O_RDWR) : fd(open(path.c_str(), flags)) {
    INFO("open " << path << ": errno " << errno);
    REQUIRE(fd >= 0);
  }
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  int fd;
};

// fcntl(F_SETLK or F_SETLKW) of [start, start + len); 0 or the errno.
int SetLock(int fd, short type, off_t start, off_t len, int cmd = F_SETLK) {
  struct flock fl = {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  fl.l_len = len;
  return fcntl(fd, cmd, &fl) == 0 ? 0 : errno;
}

struct flock GetLock(int fd, short type, off_t start, off_t len) {
  struct flock fl = {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = start;
  fl.l_len = len;
  REQUIRE(fcntl(fd, F_GETLK, &fl) == 0);
  return fl;
}

int Flock(int fd, int op) { return flock(fd, op) == 0 ? 0 : errno; }

// Runs `blocking` (0 or an errno) on a thread; after `blocked_for` it must
// still be blocked, and `release` runs, which should let it go (with CHECKs
// only: a REQUIRE would leave the thread unjoined). Returns what `blocking`
// returned, or kReturnedEarly.
constexpr int kReturnedEarly = -2;
int BlockedUntil(const std::function<int()>& blocking, absl::Duration blocked_for,
                 const std::function<void()>& release) {
  std::atomic<int> result{-1};
  std::thread waiter([&] { result = blocking(); });
  absl::SleepFor(blocked_for);
  const bool blocked = result.load() == -1;
  release();
  waiter.join();
  return blocked ? result.load() : kReturnedEarly;
}

// Runs `body` in a forked child that opens `path` read-write first (only
// async-signal-safe calls there: the test has threads) and exits with what
// `body` returns; returns that exit code (-1: the child did not exit).
int InChild(const std::string& path, int (*body)(int fd)) {
  const pid_t child = fork();
  if (child == 0) {
    const int fd = open(path.c_str(), O_RDWR);
    _exit(fd < 0 ? 2 : body(fd));
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// Retries `fn` (0 = done) for up to `seconds`: for what follows a close,
// whose FUSE release the kernel sends without waiting for it.
template <typename Fn>
int Eventually(Fn fn, double seconds = 5) {
  const absl::Time until = absl::Now() + absl::Seconds(seconds);
  int err = fn();
  while (err != 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(50));
    err = fn();
  }
  return err;
}

TEST_CASE("fuse locks: POSIX byte ranges exclude across mounts and F_GETLK shows the holder",
          "[fuse][locks]") {
  TwoMounts f;
  WriteFile(f.P("f"), std::string(4096, 'x'));
  Fd a(f.P("f")), b(f.Q("f"));

  REQUIRE(SetLock(a.fd, F_WRLCK, 0, 100) == 0);
  CHECK(SetLock(b.fd, F_WRLCK, 50, 10) == EAGAIN);
  CHECK(SetLock(b.fd, F_RDLCK, 99, 1) == EAGAIN);
  CHECK(SetLock(b.fd, F_WRLCK, 100, 10) == 0);  // right after it: no overlap
  // Through mount A again, the same process owns [0, 100): no conflict with
  // itself, and a read lock over part of it splits it.
  CHECK(SetLock(a.fd, F_RDLCK, 0, 10) == 0);

  struct flock held = GetLock(b.fd, F_WRLCK, 0, 0);
  CHECK(held.l_type == F_RDLCK);  // the first conflict: A's [0, 10) read lock
  CHECK(held.l_start == 0);
  CHECK(held.l_len == 10);
  CHECK(held.l_pid == 0);  // another host's process id would mean nothing here
  held = GetLock(b.fd, F_RDLCK, 0, 0);
  CHECK(held.l_type == F_WRLCK);  // readers only conflict with A's [10, 100)
  CHECK(held.l_start == 10);
  CHECK(held.l_len == 90);
  CHECK(GetLock(b.fd, F_WRLCK, 200, 0).l_type == F_UNLCK);
  // A's view: B holds [100, 110).
  held = GetLock(a.fd, F_RDLCK, 0, 0);
  CHECK(held.l_type == F_WRLCK);
  CHECK(held.l_start == 100);
  CHECK(held.l_len == 10);

  // Readers share.
  CHECK(SetLock(b.fd, F_RDLCK, 0, 10) == 0);
  // An unlock of part of a range frees that part only.
  REQUIRE(SetLock(a.fd, F_UNLCK, 0, 60) == 0);
  CHECK(SetLock(b.fd, F_WRLCK, 20, 40) == 0);
  CHECK(SetLock(b.fd, F_WRLCK, 60, 1) == EAGAIN);

  // "To the end of the file" (l_len 0) covers any offset past it.
  REQUIRE(SetLock(b.fd, F_UNLCK, 0, 0) == 0);
  REQUIRE(SetLock(a.fd, F_WRLCK, 1 << 20, 0) == 0);
  CHECK(SetLock(b.fd, F_WRLCK, (off_t{1} << 40), 1) == EAGAIN);
  CHECK(SetLock(b.fd, F_WRLCK, (1 << 20) - 1, 1) == 0);
}

TEST_CASE("fuse locks: any close of the process's descriptors releases its POSIX locks",
          "[fuse][locks]") {
  TwoMounts f;
  Fd b(f.Q("f"));
  {
    Fd a(f.P("f"));
    REQUIRE(SetLock(a.fd, F_WRLCK, 0, 0) == 0);
    CHECK(SetLock(b.fd, F_RDLCK, 0, 1) == EAGAIN);
    const CommandResult status = f.cluster->Weft({"fs", "status", "fs1"});
    CHECK(status.code == 0);
    CHECK_THAT(status.output, Catch::Contains("locks: 1 held, 0 waiting"));
    // Another descriptor of the same file, read-only, opened and closed:
    // POSIX says the process's locks on the file go with it.
    const int r = open(f.P("f").c_str(), O_RDONLY);
    REQUIRE(r >= 0);
    close(r);
    CHECK(SetLock(b.fd, F_RDLCK, 0, 1) == 0);
    REQUIRE(SetLock(b.fd, F_UNLCK, 0, 0) == 0);
    REQUIRE(SetLock(a.fd, F_WRLCK, 0, 0) == 0);
    CHECK(SetLock(b.fd, F_RDLCK, 0, 1) == EAGAIN);
  }  // closes a
  CHECK(SetLock(b.fd, F_WRLCK, 0, 0) == 0);
}

TEST_CASE("fuse locks: F_SETLKW waits until the other mount unlocks", "[fuse][locks]") {
  TwoMounts f;
  Fd a(f.P("f")), b(f.Q("f"));
  REQUIRE(SetLock(a.fd, F_WRLCK, 0, 0) == 0);

  // Longer than one MDS wait slice (3 s): the client asks again.
  CHECK(BlockedUntil([&] { return SetLock(b.fd, F_WRLCK, 0, 10, F_SETLKW); },
                     absl::Milliseconds(3500),
                     [&] { CHECK(SetLock(a.fd, F_UNLCK, 0, 0) == 0); }) == 0);
  CHECK(SetLock(a.fd, F_RDLCK, 5, 1) == EAGAIN);  // B has it now
  CHECK(SetLock(a.fd, F_RDLCK, 10, 1) == 0);
}

TEST_CASE("fuse locks: waiting on each other across mounts is EDEADLK", "[fuse][locks]") {
  TwoMounts f;
  Fd a(f.P("f")), b(f.Q("f"));
  REQUIRE(SetLock(a.fd, F_WRLCK, 0, 1) == 0);
  REQUIRE(SetLock(b.fd, F_WRLCK, 1, 1) == 0);
  // A waits for B; B waiting for A would close the cycle.
  CHECK(BlockedUntil([&] { return SetLock(a.fd, F_WRLCK, 1, 1, F_SETLKW); },
                     absl::Milliseconds(500), [&] {
                       CHECK(SetLock(b.fd, F_WRLCK, 0, 1, F_SETLKW) == EDEADLK);
                       CHECK(SetLock(b.fd, F_UNLCK, 1, 1) == 0);  // lets A go
                     }) == 0);
}

TEST_CASE("fuse locks: a signal interrupts F_SETLKW and nothing is granted later",
          "[fuse][locks]") {
  TwoMounts f;
  Fd a(f.P("f"));
  REQUIRE(SetLock(a.fd, F_WRLCK, 0, 0) == 0);
  // 0: F_SETLKW failed with EINTR when SIGALRM (no SA_RESTART) came.
  CHECK(InChild(f.Q("f"), [](int fd) {
          struct sigaction sa = {};
          sa.sa_handler = [](int) {};
          sigaction(SIGALRM, &sa, nullptr);
          alarm(1);
          struct flock fl = {};
          fl.l_type = F_WRLCK;
          fl.l_whence = SEEK_SET;
          return fcntl(fd, F_SETLKW, &fl) == -1 && errno == EINTR ? 0 : 3;
        }) == 0);
  REQUIRE(SetLock(a.fd, F_UNLCK, 0, 0) == 0);
  // The abandoned wait never takes the lock (its MDS slice ends within 3 s).
  absl::SleepFor(absl::Seconds(4));
  Fd b(f.Q("f"));
  CHECK(GetLock(b.fd, F_WRLCK, 0, 0).l_type == F_UNLCK);
  CHECK(SetLock(b.fd, F_WRLCK, 0, 0) == 0);
}

TEST_CASE("fuse locks: flock is per open file description and apart from POSIX locks",
          "[fuse][locks]") {
  TwoMounts f;
  Fd b(f.Q("f"));
  int a = open(f.P("f").c_str(), O_RDONLY);
  REQUIRE(a >= 0);
  REQUIRE(Flock(a, LOCK_EX) == 0);
  CHECK(Flock(b.fd, LOCK_EX | LOCK_NB) == EWOULDBLOCK);
  CHECK(Flock(b.fd, LOCK_SH | LOCK_NB) == EWOULDBLOCK);
  CHECK(SetLock(b.fd, F_WRLCK, 0, 0) == 0);  // POSIX locks are another space
  REQUIRE(SetLock(b.fd, F_UNLCK, 0, 0) == 0);
  // A duplicate shares the description: closing the original keeps the lock.
  const int dup_a = dup(a);
  REQUIRE(dup_a >= 0);
  close(a);
  absl::SleepFor(absl::Milliseconds(300));
  CHECK(Flock(b.fd, LOCK_SH | LOCK_NB) == EWOULDBLOCK);
  // Downgrade: readers share.
  REQUIRE(Flock(dup_a, LOCK_SH) == 0);
  CHECK(Flock(b.fd, LOCK_SH | LOCK_NB) == 0);
  CHECK(Flock(dup_a, LOCK_EX | LOCK_NB) == EWOULDBLOCK);
  REQUIRE(Flock(b.fd, LOCK_UN) == 0);
  // The last close releases it.
  close(dup_a);
  CHECK(Eventually([&] { return Flock(b.fd, LOCK_EX | LOCK_NB); }) == 0);

  // A blocking flock waits for the other mount.
  Fd a2(f.P("f"));
  CHECK(BlockedUntil([&] { return Flock(a2.fd, LOCK_EX); }, absl::Milliseconds(500),
                     [&] { CHECK(Flock(b.fd, LOCK_UN) == 0); }) == 0);
}

TEST_CASE("fuse locks: OFD locks belong to the open file description and go with its last close",
          "[fuse][locks]") {
  TwoMounts f;
  Fd b(f.Q("f"));
  Fd a2(f.P("f"));
  int a = open(f.P("f").c_str(), O_RDWR);
  REQUIRE(a >= 0);
  REQUIRE(SetLock(a, F_WRLCK, 0, 0, F_OFD_SETLK) == 0);
  // Another description of this process conflicts, as do POSIX locks of
  // the same process and anyone on the other mount.
  CHECK(SetLock(a2.fd, F_RDLCK, 0, 1, F_OFD_SETLK) == EAGAIN);
  CHECK(SetLock(a2.fd, F_RDLCK, 0, 1) == EAGAIN);
  CHECK(SetLock(b.fd, F_RDLCK, 0, 1, F_OFD_SETLK) == EAGAIN);
  // The close of another descriptor of the process does not release it
  // (it would a POSIX lock).
  const int other = open(f.P("f").c_str(), O_RDONLY);
  REQUIRE(other >= 0);
  close(other);
  absl::SleepFor(absl::Milliseconds(300));
  CHECK(SetLock(b.fd, F_RDLCK, 0, 1, F_OFD_SETLK) == EAGAIN);
  // A duplicate keeps the description open; its last close releases it.
  const int dup_a = dup(a);
  REQUIRE(dup_a >= 0);
  close(a);
  absl::SleepFor(absl::Milliseconds(300));
  CHECK(SetLock(b.fd, F_RDLCK, 0, 1, F_OFD_SETLK) == EAGAIN);
  close(dup_a);
  CHECK(Eventually([&] { return SetLock(b.fd, F_WRLCK, 0, 0, F_OFD_SETLK); }) == 0);
  CHECK(SetLock(a2.fd, F_RDLCK, 0, 1, F_OFD_SETLK) == EAGAIN);
}

TEST_CASE("fuse locks: processes of one mount exclude each other through the MDS",
          "[fuse][locks]") {
  MountFixture f;
  WriteFile(f.P("f"), "data");
  Fd a(f.P("f"));
  REQUIRE(SetLock(a.fd, F_WRLCK, 0, 0) == 0);
  CHECK(InChild(f.P("f"), [](int fd) {
          struct flock fl = {};
          fl.l_type = F_RDLCK;
          fl.l_whence = SEEK_SET;
          if (fcntl(fd, F_SETLK, &fl) == 0 || errno != EAGAIN) return 3;
          if (fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type != F_WRLCK) return 4;
          if (fl.l_pid != getppid()) return 5;  // a holder on this mount shows its pid
          return 0;
        }) == 0);
}

TEST_CASE("fuse locks: locks held survive an MDS restart", "[fuse][locks][mds-restart]") {
  TwoMounts f;
  Fd a(f.P("f")), b(f.Q("f"));
  REQUIRE(SetLock(a.fd, F_WRLCK, 0, 10) == 0);
  REQUIRE(Flock(a.fd, LOCK_EX) == 0);
  f.cluster->KillMds();
  auto st = f.cluster->StartMds();
  INFO(st);
  REQUIRE(st.ok());
  // The first call waits for the reconnect, which gives A's locks back.
  CHECK(SetLock(b.fd, F_WRLCK, 5, 1) == EAGAIN);
  CHECK(Flock(b.fd, LOCK_EX | LOCK_NB) == EWOULDBLOCK);
  CHECK(SetLock(b.fd, F_WRLCK, 10, 1) == 0);
  REQUIRE(SetLock(a.fd, F_UNLCK, 0, 0) == 0);
  CHECK(SetLock(b.fd, F_WRLCK, 5, 1) == 0);
  REQUIRE(Flock(a.fd, LOCK_UN) == 0);
  CHECK(Flock(b.fd, LOCK_EX | LOCK_NB) == 0);
}

TEST_CASE("fuse locks: a killed client's locks go when its session times out",
          "[fuse][locks][fault]") {
  ClusterOptions options;
  options.extra_conf = {"mds_session_timeout = 5"};
  TwoMounts f(options);
  Fd b(f.Q("f"));
  {
    Fd a(f.P("f"));
    REQUIRE(SetLock(a.fd, F_WRLCK, 0, 0) == 0);
    CHECK(SetLock(b.fd, F_WRLCK, 0, 1) == EAGAIN);
    f.mount->process()->Kill(SIGKILL);
    f.mount->process()->Wait();
  }  // a's close fails: its mount is dead
  CHECK(SetLock(b.fd, F_WRLCK, 0, 1) == EAGAIN);  // until the session times out
  CHECK(Eventually([&] { return SetLock(b.fd, F_WRLCK, 0, 1); }, 30) == 0);
}

TEST_CASE("fuse locks: locks=local leaves locks to each mount's kernel", "[fuse][locks]") {
  TwoMounts f({}, "locks=local");
  Fd a(f.P("f")), b(f.Q("f"));
  REQUIRE(SetLock(a.fd, F_WRLCK, 0, 0) == 0);
  // Mount B does not ask the MDS: A's lock does not reach it.
  CHECK(SetLock(b.fd, F_WRLCK, 0, 0) == 0);
  auto bad = Mount::Start(*f.cluster, "fs1", "locks=sometimes");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("locks=sometimes"));
}

TEST_CASE("fuse locks: malformed lock requests are refused and the MDS carries on",
          "[fuse][locks][bad-input]") {
  MountFixture f;
  WriteFile(f.P("f"), "data");
  auto meta = f.cluster->Meta("fs1");
  REQUIRE(meta != nullptr);
  auto call = [&](const pb::LockOp& op) {
    pb::MetaRequest r;
    *r.mutable_lock() = op;
    return StatusToErrno(meta->Call(r).status());
  };
  pb::LockOp op;
  op.mutable_lock()->set_ino(1);
  op.mutable_lock()->set_type(pb::LK_WRITE);
  op.mutable_lock()->set_end(10);
  CHECK(call(op) == EBADF);  // not open in this session
  op.mutable_lock()->set_start(11);
  CHECK(call(op) == EINVAL);  // start past end
  op.mutable_lock()->set_start(0);
  op.mutable_lock()->set_end(~uint64_t{0});
  CHECK(call(op) == EINVAL);  // past the largest offset
  op.mutable_lock()->set_end(10);
  op.mutable_lock()->set_type(static_cast<pb::LockType>(9));
  CHECK(call(op) == EINVAL);
  op.mutable_lock()->set_type(pb::LK_READ);
  op.mutable_lock()->set_kind(static_cast<pb::LockKind>(5));
  CHECK(call(op) == EINVAL);
  op.mutable_lock()->set_ino(0);
  CHECK(call(op) == EINVAL);
  // The mount still locks.
  Fd a(f.P("f"));
  CHECK(SetLock(a.fd, F_WRLCK, 0, 0) == 0);
}

}  // namespace
}  // namespace weft::testing
