// Eviction through real mounts (MdsRank::Evict, `weft client evict`, and
// the rank's own on a lapsed session or an unanswered recall): a
// mount with buffered writes that stops answering (SIGSTOP of its
// weft-fuse) is evicted by the operator; its OSD identity is blocklisted
// before its session goes, so when it resumes its late writes are refused
// at the OSDs and it reports EIO, never a silent success, while another
// mount's write of the same range stands, bit-exact, as a third mount reads
// it. The evicted mount cannot open a session again; a new mount can.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <functional>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "proto/mds_client.grpc.pb.h"
#include "tests/harness/mount_fixture.h"
#include "tests/harness/net_cut.h"

namespace weft::testing {
namespace {

// The session of the mount whose weft-fuse is `pid`, as `weft client ls`
// lists it (client names are client.<host>.<pid>.<n>); 0 if not listed.
uint64_t SessionOf(const std::string& listing, pid_t pid) {
  const std::string tag = absl::StrCat(".", pid, ".");
  for (absl::string_view line : absl::StrSplit(listing, '\n')) {
    if (line.find(tag) == absl::string_view::npos) continue;
    const size_t at = line.find("session ");
    if (at == absl::string_view::npos) continue;
    absl::string_view rest = line.substr(at + 8);
    uint64_t id = 0;
    if (absl::SimpleAtoi(rest.substr(0, rest.find(':')), &id)) return id;
  }
  return 0;
}

// Waits until no session holds a file open at the MDS. A close returns
// before the kernel's release reaches the mount (FUSE sends it after), so
// a file one mount just wrote and closed may still count as open there
// for a moment; a writer that opens it meanwhile shares it and writes
// through to the OSDs instead of buffering.
void WaitForNoOpenFiles(Cluster& cluster) {
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  std::string listing;
  while (absl::Now() < give_up) {
    listing = cluster.Weft({"client", "ls", "fs1"}).output;
    bool open = false;
    for (absl::string_view line : absl::StrSplit(listing, '\n')) {
      open |= line.find("open files ") != absl::string_view::npos &&
              line.find("open files 0,") == absl::string_view::npos;
    }
    if (!open) return;
    absl::SleepFor(absl::Milliseconds(20));
  }
  INFO(listing);
  FAIL("a file stayed open at the MDS for 10 s");
}

// SIGCONT on the way out, whatever happened: a stopped weft-fuse would hang
// the unmount.
struct Resume {
  pid_t pid = -1;
  ~Resume() {
    if (pid > 0) kill(pid, SIGCONT);
  }
};

// A child that writes `data` into `path` (buffered: not flushed), says 'w',
// then waits for a byte and reports fsync's and close's errno.
struct BufferedWriter {
  pid_t pid = -1;
  int to_child[2] = {-1, -1};
  int from_child[2] = {-1, -1};

  void Start(const std::string& path, const std::string& data) {
    REQUIRE(pipe(to_child) == 0);
    REQUIRE(pipe(from_child) == 0);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      const int fd = open(path.c_str(), O_WRONLY);
      char ready = fd >= 0 && pwrite(fd, data.data(), data.size(), 0) ==
                                  static_cast<ssize_t>(data.size()) ? 'w' : 'x';
      if (write(from_child[1], &ready, 1) != 1) _exit(1);
      char go = 0;
      if (read(to_child[0], &go, 1) != 1) _exit(1);
      int result[2] = {0, 0};
      if (fsync(fd) != 0) result[0] = errno;
      if (close(fd) != 0) result[1] = errno;
      if (write(from_child[1], result, sizeof(result)) != sizeof(result)) _exit(1);
      _exit(0);
    }
    char ready = 0;
    REQUIRE(read(from_child[0], &ready, 1) == 1);
    REQUIRE(ready == 'w');
  }
  // fsync's and close's errno once told to go on.
  std::pair<int, int> Finish() {
    const char go = 'g';
    REQUIRE(write(to_child[1], &go, 1) == 1);
    int result[2] = {-1, -1};
    REQUIRE(read(from_child[0], result, sizeof(result)) == sizeof(result));
    int status = 0;
    waitpid(pid, &status, 0);
    pid = -1;
    return {result[0], result[1]};
  }
  ~BufferedWriter() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    for (int p : {to_child[0], to_child[1], from_child[0], from_child[1]}) {
      if (p >= 0) close(p);
    }
  }
};

// After the writer mount `w` was evicted: `other` writes the same range and
// fsyncs, `resume` lets w go on (SIGCONT, the network back); its writer
// reports EIO, the other's bytes stand as `third` reads them, and the
// eviction shows with `reason`.
void CheckEvictedWriter(Cluster& cluster, Mount& w, Mount& other, BufferedWriter& writer,
                        Mount& third, const std::string& reason,
                        const std::function<void()>& resume) {
  const std::string after(1 << 20, 'B');
  const int fd = open(other.Path("f").c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  WriteAll(fd, after, 0);
  REQUIRE(fsync(fd) == 0);
  REQUIRE(close(fd) == 0);
  resume();
  const auto [fsync_errno, close_errno] = writer.Finish();
  CHECK(fsync_errno == EIO);
  CHECK((close_errno == 0 || close_errno == EIO));
  CHECK(ReadFile(third.Path("f")) == after);
  CHECK(ReadFile(other.Path("f")) == after);
  CommandResult status = cluster.Weft({"fs", "status", "fs1"});
  INFO(status.output);
  CHECK(status.output.find("evictions: 1") != std::string::npos);
  CHECK(status.output.find(reason) != std::string::npos);
  CommandResult ls = cluster.Weft({"client", "ls", "fs1"});
  INFO(ls.output);
  CHECK(SessionOf(ls.output, w.pid()) == 0);
}

// The same for the stopped writer of a TwoMountFixture (its first mount).
void CheckEvictedWriter(TwoMountFixture& f, BufferedWriter& writer, Mount& third,
                        const std::string& reason) {
  CheckEvictedWriter(*f.cluster, *f.mount, *f.other, writer, third, reason,
                     [&] { REQUIRE(kill(f.mount->pid(), SIGCONT) == 0); });
}

// A cluster with `conf` (if any) in weft.conf and three mounts; a file "f" of 1 MiB
// of 'o' on the OSDs; the first mount's writer holds 1 MiB of 'A' buffered
// for it and is stopped (SIGSTOP), resumed whatever happens.
struct StoppedWriter {
  static ClusterOptions With(const std::string& conf) {
    ClusterOptions options;
    if (!conf.empty()) options.extra_conf = {conf};
    return options;
  }
  explicit StoppedWriter(const std::string& conf) : f(With(conf)) {
    auto m = Mount::Start(*f.cluster, "fs1");
    REQUIRE(m.ok());
    third = std::move(*m);
    WriteFile(f.P("f"), std::string(1 << 20, 'o'));
    SyncFile(f.P("f"));
    WaitForNoOpenFiles(*f.cluster);
    writer.Start(f.P("f"), std::string(1 << 20, 'A'));
    resume.pid = f.mount->pid();
    REQUIRE(kill(f.mount->pid(), SIGSTOP) == 0);
  }
  TwoMountFixture f;
  std::unique_ptr<Mount> third;
  BufferedWriter writer;
  Resume resume;  // last: first to go
};

TEST_CASE("fuse evict: a stopped writer is fenced - its late writes are refused and it reports EIO",
          "[fuse][caps]") {
  // mount: the writer that stops; other: the one that writes after. The
  // writer's descriptor lives in a child process: a fork of the test (the
  // CLI below) would inherit it, and closing a descriptor of a stopped FUSE
  // daemon's file waits for that daemon.
  StoppedWriter s("");
  TwoMountFixture& f = s.f;
  CommandResult ls = f.cluster->Weft({"client", "ls", "fs1"});
  INFO(ls.output);
  REQUIRE(ls.code == 0);
  CHECK(ls.output.find("fs1: 3 sessions") != std::string::npos);
  const uint64_t writer = SessionOf(ls.output, f.mount->pid());
  REQUIRE(writer != 0);
  CHECK(SessionOf(ls.output, f.other->pid()) != 0);
  CHECK(ls.output.find("osd identity client.") != std::string::npos);

  CommandResult evict = f.cluster->Weft(
      {"client", "evict", absl::StrCat(writer), "--reason", "test: writer stopped"});
  INFO(evict.output);
  REQUIRE(evict.code == 0);
  CHECK(evict.output.find("blocklisted at the OSDs from osdmap epoch") != std::string::npos);

  // Another mount writes the same range; the writer resumes: its buffered
  // megabyte is refused and it says so; the other's bytes stand.
  CheckEvictedWriter(f, s.writer, *s.third, "test: writer stopped");
  const std::string after(1 << 20, 'B');
  // Nothing it asks of the MDS succeeds any more.
  errno = 0;
  CHECK(open(f.P("new").c_str(), O_CREAT | O_WRONLY, 0644) == -1);
  CHECK(errno == EIO);

  ls = f.cluster->Weft({"client", "ls", "fs1"});
  INFO(ls.output);
  CHECK(ls.output.find("fs1: 2 sessions") != std::string::npos);
  CommandResult status = f.cluster->Weft({"fs", "status", "fs1"});
  INFO(status.output);
  CHECK(status.output.find("evictions: 1, last: session " + absl::StrCat(writer)) !=
        std::string::npos);
  CommandResult cluster_status = f.cluster->Weft({"status"});
  INFO(cluster_status.output);
  CHECK(cluster_status.output.find("evicted: fs1: 1 clients evicted") != std::string::npos);

  // Bad input: a clear error, nothing else evicted.
  CommandResult again = f.cluster->Weft({"client", "evict", absl::StrCat(writer)});
  CHECK(again.code != 0);
  CHECK(again.output.find("no session") != std::string::npos);
  CommandResult junk = f.cluster->Weft({"client", "evict", "twelve"});
  CHECK(junk.code != 0);
  CHECK(junk.output.find("not a session id") != std::string::npos);
  CommandResult nofs = f.cluster->Weft({"client", "evict", "12345"});
  CHECK(nofs.code != 0);
  CHECK(nofs.output.find("no filesystem has session") != std::string::npos);
  CHECK(f.cluster->Weft({"client", "evict"}).code == 2);
  CHECK(f.cluster->Weft({"client", "ls", "nosuchfs"}).code != 0);
  CHECK(ReadFile(f.Q("f")) == after);

  // A new mount (a new OSD identity, a new session) works as before.
  f.Remount();
  CHECK(ReadFile(f.P("f")) == after);
  WriteFile(f.P("g"), "fresh");
  CHECK(ReadFile(f.Q("g")) == "fresh");
}

TEST_CASE("fuse evict: a writer that does not answer a recall is evicted after mds_revoke_timeout",
          "[fuse][caps]") {
  StoppedWriter s("mds_revoke_timeout = 2");
  // The other mount looks at the file: the MDS recalls the stopped
  // writer's bytes, gets no answer, fences it and answers with what it has.
  const absl::Time start = absl::Now();
  const std::string seen = ReadFile(s.f.Q("f"));
  const absl::Duration waited = absl::Now() - start;
  CHECK(seen == std::string(1 << 20, 'o'));
  CHECK(waited >= absl::Seconds(2));
  CHECK(waited < absl::Seconds(20));
  CheckEvictedWriter(s.f, s.writer, *s.third,
                     "a recall of buffered writes not answered within 2 s");
}

TEST_CASE("fuse evict: a writer cut off the network is evicted - fenced - refused when it is back",
          "[fuse][caps]") {
  // As the stopped writer above, but its weft-fuse keeps running: its
  // packets are dropped both ways (no reset, as a pulled cable), so its
  // connections just stop moving.
  NetCut cut;
  if (!cut.Available().ok()) {
    WARN("skipped: this machine cannot cut a process off: " << cut.Available());
    return;
  }
  ClusterOptions options;
  options.extra_conf = {"mds_revoke_timeout = 2"};
  MountFixture f(options);  // f.mount: the other mount, which writes after
  auto third = Mount::Start(*f.cluster, "fs1");
  REQUIRE(third.ok());
  auto cut_off = Mount::Start(*f.cluster, "fs1", "", cut.cgroup_procs());
  INFO(cut_off.status());
  REQUIRE(cut_off.ok());
  Mount& w = **cut_off;
  WriteFile(f.P("f"), std::string(1 << 20, 'o'));
  SyncFile(f.P("f"));
  WaitForNoOpenFiles(*f.cluster);
  BufferedWriter writer;
  writer.Start(w.Path("f"), std::string(1 << 20, 'A'));
  const absl::Status cutting = cut.Cut();
  INFO(cutting);
  REQUIRE(cutting.ok());
  // The other mount looks at the file: the recall of the writer's bytes
  // gets no answer; the MDS fences the writer and answers with what it has.
  const absl::Time start = absl::Now();
  CHECK(ReadFile(f.P("f")) == std::string(1 << 20, 'o'));
  const absl::Duration waited = absl::Now() - start;
  CHECK(waited >= absl::Seconds(2));
  CHECK(waited < absl::Seconds(30));
  CheckEvictedWriter(*f.cluster, w, *f.mount, writer, **third,
                     "a recall of buffered writes not answered within 2 s", [&] {
                       const absl::Status healed = cut.Heal();
                       INFO(healed);
                       REQUIRE(healed.ok());
                     });
}

// Acks that are not the holder's (a wrong or old sequence number, an
// inode it holds nothing on, a session that does not exist) and a flood of
// them, while the holder is stopped and a change waits on its lease: they
// release nothing, so the change waits until the lease runs out, and the
// MDS keeps serving what does not wait on that lease. (An ack that names
// the holder's session and its cap's number is the holder's own until
// sessions are authenticated: issue 49.)
TEST_CASE("fuse evict: acks that are not the holder's release nothing - a flood of them holds up "
          "nobody else",
          "[fuse][caps]") {
  TwoMountFixture f;
  REQUIRE(mkdir(f.P("d").c_str(), 0755) == 0);
  CHECK(StatErrno(f.P("d/x")) == ENOENT);  // the first mount holds d's lease
  // e is the other mount's alone: a mkdir leases the new directory to its
  // maker, and a change in a directory the stopped mount held would wait
  // on it too.
  REQUIRE(mkdir(f.Q("e").c_str(), 0755) == 0);
  const uint64_t d = Lstat(f.P("d")).st_ino;
  CommandResult ls = f.cluster->Weft({"client", "ls", "fs1"});
  INFO(ls.output);
  const uint64_t holder = SessionOf(ls.output, f.mount->pid());
  REQUIRE(holder != 0);
  Resume resume{f.mount->pid()};
  REQUIRE(kill(f.mount->pid(), SIGSTOP) == 0);
  const absl::Time stopped = absl::Now();

  // The other mount's create in d waits on the stopped holder's lease.
  // No Catch assertion in this thread (Catch is not thread-safe: a race
  // with the main thread's once crashed the test, leaving its mounts); a
  // jthread joins even when an assertion below throws.
  std::atomic<bool> created{false};
  std::atomic<int> create_errno{0};
  std::atomic<int64_t> created_at_ms{0};
  const std::string made = f.Q("d/x");
  std::jthread creator([&] {
    const int fd = open(made.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "made", 4) != 4 || close(fd) != 0) create_errno = errno;
    created_at_ms = absl::ToInt64Milliseconds(absl::Now() - stopped);
    created = true;
  });

  auto channel = grpc::CreateChannel(f.cluster->mds_addrs()[0], grpc::InsecureChannelCredentials());
  std::unique_ptr<pb::Mds::Stub> stub = pb::Mds::NewStub(channel);
  auto send = [&](const pb::LeaseAckRequest& request) {
    pb::SessionReply reply;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    const grpc::Status rpc = stub->LeaseAck(&ctx, request, &reply);
    INFO(rpc.error_message());
    REQUIRE(rpc.ok());
    return reply.status().code();
  };
  constexpr uint64_t kFar = uint64_t{1} << 40;  // no cap's number comes near it
  pb::LeaseAckRequest wrong;
  wrong.set_session(holder);
  for (uint64_t seq : {uint64_t{0}, kFar, UINT64_MAX}) {
    for (uint32_t bits : {0u, 1u, 0xffffffffu}) {
      pb::LeaseEvent* e = wrong.add_acks();
      e->set_ino(d);
      e->set_seq(seq);
      e->set_caps(bits);
      e->set_released(true);
    }
  }
  wrong.add_acks()->set_ino(1ull << 50);      // an inode nobody holds
  wrong.add_acks()->set_hello(true);          // not an ack at all
  wrong.add_acks()->set_recall_caps(1000000);
  pb::LeaseEvent* flush = wrong.add_acks();  // a flush nobody asked for
  flush->set_ino(d);
  flush->set_flush(true);
  flush->set_seq(kFar);
  CHECK(send(wrong) == 0);
  // Another session's acks of d, every number a cap of d could have.
  pb::LeaseAckRequest stranger;
  stranger.set_session(holder + 1000000);
  for (uint64_t seq = 0; seq < 100; ++seq) {
    pb::LeaseEvent* e = stranger.add_acks();
    e->set_ino(d);
    e->set_seq(seq);
    e->set_caps(0xffffffffu);
  }
  CHECK(send(stranger) != 0);  // no such session
  // A flood: 50 requests of 20,000 acks each for the holder's session.
  pb::LeaseAckRequest flood;
  flood.set_session(holder);
  for (uint64_t i = 0; i < 20000; ++i) {
    pb::LeaseEvent* e = flood.add_acks();
    e->set_ino(i % 7 == 0 ? d : i);
    e->set_seq(kFar + i);
    e->set_caps(0xffffffffu);
  }
  const absl::Time flood_start = absl::Now();
  for (int i = 0; i < 50; ++i) CHECK(send(flood) == 0);
  INFO("the flood took " << absl::FormatDuration(absl::Now() - flood_start));

  // The MDS serves what does not wait on d's lease meanwhile: the flood
  // takes well under a second, the lease about four more.
  WriteFile(f.Q("e/y"), "other");
  CHECK(ReadFile(f.Q("e/y")) == "other");
  CHECK_FALSE(created.load());
  creator.join();
  CHECK(create_errno.load() == 0);
  INFO("the create waited " << created_at_ms.load() << " ms after the holder stopped");
  // The lease ran out at the holder's last renewal (at most a second
  // before it stopped) plus 5 s: nothing released it before.
  CHECK(created_at_ms.load() >= 3500);
  CHECK(created_at_ms.load() < 30000);

  // Resumed, the holder trusts nothing it knew of d: its lease ran out.
  REQUIRE(kill(f.mount->pid(), SIGCONT) == 0);
  resume.pid = -1;
  CHECK(ReadFile(f.P("d/x")) == "made");
  CHECK(ReadFile(f.P("e/y")) == "other");
}

TEST_CASE("fuse evict: kill -9 of the MDS with revokes outstanding - the change is applied once",
          "[fuse][caps][mds-restart]") {
  TwoMountFixture f;
  WriteFile(f.P("f"), "data");
  // The first mount holds the file's cap and the root's lease, then stops
  // answering: the other mount's link waits on their revokes.
  CHECK(Lstat(f.P("f")).st_nlink == 1);
  CHECK(access(f.P("g").c_str(), F_OK) != 0);
  Resume resume{f.mount->pid()};
  REQUIRE(kill(f.mount->pid(), SIGSTOP) == 0);
  std::atomic<int> linked{-1}, link_errno{0};
  std::thread linker([&] {
    const int rc = link(f.Q("f").c_str(), f.Q("g").c_str());
    link_errno = rc == 0 ? 0 : errno;
    linked = rc;
  });
  absl::SleepFor(absl::Milliseconds(300));
  CHECK(linked.load() == -1);  // still waiting on the revokes
  f.cluster->KillMds();
  REQUIRE(kill(f.mount->pid(), SIGCONT) == 0);
  auto started = f.cluster->StartMds();
  INFO(started);
  REQUIRE(started.ok());
  linker.join();
  INFO("link errno " << link_errno.load());
  CHECK(linked.load() == 0);  // resent after the restart and applied once (not EEXIST)
  // Both mounts see it at once: the first dropped what it knew at the new boot.
  CHECK(Lstat(f.Q("f")).st_nlink == 2);
  CHECK(Lstat(f.P("f")).st_nlink == 2);
  CHECK(Lstat(f.P("g")).st_ino == Lstat(f.P("f")).st_ino);
  REQUIRE(chmod(f.P("g").c_str(), 0600) == 0);
  CHECK((Lstat(f.Q("f")).st_mode & 07777) == 0600);
}

TEST_CASE("fuse evict: after an MDS restart a client that does not reconnect is evicted - fenced",
          "[fuse][caps][mds-restart]") {
  // The stopped writer cannot reconnect: when the window closes the rank
  // evicts it (fenced), the other mounts go on, and its buffered bytes are
  // refused when it resumes.
  StoppedWriter s("mds_reconnect_timeout = 4");
  s.f.cluster->KillMds();
  auto started = s.f.cluster->StartMds();
  INFO(started);
  REQUIRE(started.ok());
  const absl::Time start = absl::Now();
  CHECK(ReadFile(s.f.Q("f")) == std::string(1 << 20, 'o'));
  CHECK(absl::Now() - start < absl::Seconds(30));
  CheckEvictedWriter(s.f, s.writer, *s.third, "did not reconnect within mds_reconnect_timeout");
}

TEST_CASE("fuse evict: a session that lapses is evicted - fenced - not just closed",
          "[fuse][caps]") {
  StoppedWriter s("mds_session_timeout = 5");
  // Nobody looks at the file: the session lapses on its own.
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  uint64_t evictions = 0;
  while (absl::Now() < give_up) {
    evictions = FsStatusOf(*s.f.cluster).evictions();
    if (evictions > 0) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  REQUIRE(evictions == 1);
  CheckEvictedWriter(s.f, s.writer, *s.third, "session lapsed: no renewal for");
}

TEST_CASE("fuse evict: a mount with recover_session=clean starts over after its eviction",
          "[fuse][caps]") {
  ClusterOptions options;
  options.extra_conf = {"mds_revoke_timeout = 2"};
  MountFixture f(options);  // mount: the other mount, which writes after
  // Bad input first: a clear refusal, nothing mounted.
  auto bad = Mount::Start(*f.cluster, "fs1", "recover_session=sometimes");
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("recover_session") != std::string::npos);
  auto recovering = Mount::Start(*f.cluster, "fs1", "recover_session=clean");
  INFO(recovering.status());
  REQUIRE(recovering.ok());
  Mount& w = **recovering;
  WriteFile(f.P("f"), std::string(1 << 20, 'o'));
  SyncFile(f.P("f"));
  WaitForNoOpenFiles(*f.cluster);
  BufferedWriter writer;
  writer.Start(w.Path("f"), std::string(1 << 20, 'A'));
  Resume resume{w.pid()};
  REQUIRE(kill(w.pid(), SIGSTOP) == 0);
  CHECK(ReadFile(f.P("f")) == std::string(1 << 20, 'o'));  // recalled, unanswered: evicted
  const std::string after(1 << 20, 'B');
  WriteFile(f.P("f"), after);
  SyncFile(f.P("f"));

  REQUIRE(kill(w.pid(), SIGCONT) == 0);
  // Its descriptor from before the eviction fails; its bytes never land.
  const auto [fsync_errno, close_errno] = writer.Finish();
  CHECK(fsync_errno == EIO);
  CHECK((close_errno == 0 || close_errno == EIO));
  // A new session under a new OSD identity: new opens work again.
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  absl::StatusOr<std::string> seen = ReadWholeFile(w.Path("f"));
  while (!seen.ok() && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(200));
    seen = ReadWholeFile(w.Path("f"));
  }
  INFO(seen.status());
  REQUIRE(seen.ok());
  CHECK(*seen == after);
  WriteFile(w.Path("g"), "after recovery");
  CHECK(ReadFile(f.P("g")) == "after recovery");
  CHECK(ReadFile(f.P("f")) == after);
  CommandResult ls = f.cluster->Weft({"client", "ls", "fs1"});
  INFO(ls.output);
  CHECK(ls.output.find("fs1: 2 sessions") != std::string::npos);
  CHECK(SessionOf(ls.output, w.pid()) != 0);
  CHECK(FsStatusOf(*f.cluster).evictions() == 1);
}

}  // namespace
}  // namespace weft::testing
