// Standby MDS daemons taking rank 0 over (issue 47): two weft-mds, two
// FUSE mounts, four writers creating, renaming, linking and unlinking while
// the active daemon is killed or frozen; every acknowledged operation must
// be there exactly once, no writer may see an error, and the daemon that
// lost the rank must come back as a standby.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "tests/harness/file_io.h"
#include "tests/harness/mount_fixture.h"
#include "tests/harness/net_cut.h"

namespace weft::testing {
namespace {

// One writer's directory as the writer believes it is: name -> contents,
// after each acknowledged call. A hard link shares its target's contents.
struct Model {
  std::map<std::string, std::string> files;
};

struct WriterState {
  Model model;
  int errors = 0;
  std::string first_error;
  // The longest a call waited after the fault (from the fault or its own
  // start, whichever is later): every call in flight when the daemon went
  // waits for the takeover, so this is the time until service came back
  // (as bench/takeover_bench.sh measures it).
  absl::Duration longest_wait_after_fault;
  long calls_after_fault = 0;
};

absl::Time KillTime(const std::atomic<int64_t>& kill_ns) {
  const int64_t ns = kill_ns.load();
  return ns == 0 ? absl::InfiniteFuture() : absl::FromUnixNanos(ns);
}

// Creates, renames, links and unlinks in `dir` (a path through one of the
// mounts) until `stop`; no Catch assertion here (not thread-safe).
void Writer(const std::string& dir, int id, const std::atomic<bool>* stop,
            const std::atomic<int64_t>* kill_ns, WriterState* st) {
  auto fail = [&](const std::string& what) {
    if (st->errors++ == 0) st->first_error = absl::StrCat(what, ": ", std::strerror(errno));
  };
  auto note = [&](absl::Time started) {
    const absl::Time fault = KillTime(*kill_ns), now = absl::Now();
    if (now > fault) {
      st->longest_wait_after_fault = std::max(st->longest_wait_after_fault, now - std::max(started, fault));
      ++st->calls_after_fault;
    }
  };
  for (uint64_t n = 0; !stop->load(); ++n) {
    const std::string name = absl::StrCat("w", id, ".", n);
    const std::string path = absl::StrCat(dir, "/", name);
    const std::string body = absl::StrCat("writer ", id, " file ", n, "\n");
    absl::Time started = absl::Now();
    int fd = open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) {
      fail("create " + path);
      continue;
    }
    const bool wrote = write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size());
    if (close(fd) != 0 || !wrote) {
      fail("write " + path);
      continue;
    }
    st->model.files[name] = body;
    note(started);
    switch (n % 4) {
      case 1: {  // rename
        const std::string to = name + ".r";
        started = absl::Now();
        if (rename(path.c_str(), absl::StrCat(dir, "/", to).c_str()) != 0) {
          fail("rename " + path);
          break;
        }
        st->model.files[to] = body;
        st->model.files.erase(name);
        note(started);
        break;
      }
      case 2: {  // hard link
        started = absl::Now();
        if (link(path.c_str(), absl::StrCat(path, ".l").c_str()) != 0) {
          fail("link " + path);
          break;
        }
        st->model.files[name + ".l"] = body;
        note(started);
        break;
      }
      case 3: {  // unlink the previous round's file
        const std::string victim = absl::StrCat("w", id, ".", n - 1);
        started = absl::Now();
        if (unlink(absl::StrCat(dir, "/", victim).c_str()) != 0) {
          fail("unlink " + victim);
          break;
        }
        st->model.files.erase(victim);
        note(started);
        break;
      }
      default:
        break;
    }
  }
}

// `dir` as listed and read through a mount, against the writer's model.
std::string DiffAgainst(const std::string& dir, const Model& model) {
  std::map<std::string, std::string> got;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return absl::StrCat("opendir ", dir, ": ", std::strerror(errno));
  std::string diff;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    auto body = ReadWholeFile(dir + "/" + name);
    if (!got.emplace(name, body.ok() ? *body : "<unreadable>").second) {
      absl::StrAppend(&diff, " twice:", name);
    }
  }
  closedir(d);
  for (const auto& [name, body] : got) {
    auto m = model.files.find(name);
    if (m == model.files.end()) {
      absl::StrAppend(&diff, " extra:", name);
    } else if (m->second != body) {
      absl::StrAppend(&diff, " content:", name);
    }
  }
  for (const auto& [name, body] : model.files) {
    if (!got.contains(name)) absl::StrAppend(&diff, " missing:", name);
  }
  return diff;
}

// The line `weft fs status` shows for MDS `i` standing by.
std::string StandbyLine(Cluster& cluster, int i) {
  return absl::StrCat("  ", Cluster::MdsName(i), " (", cluster.mds_addrs()[i], "): standby\n");
}

// Waits up to `timeout` for `weft fs status` to show `want`.
bool FsStatusShows(Cluster& cluster, const std::string& want, absl::Duration timeout,
                   std::string* last) {
  return cluster.FsStatusUntil(
      "fs1", [&](const std::string& out) { return absl::StrContains(out, want); }, timeout, last);
}

// Two MDS daemons: mds.a holds rank 0, mds.b stands by.
ClusterOptions TwoMds() {
  ClusterOptions options;
  options.mds = 2;
  return options;
}

// Every writer's directory through both mounts against its model.
void CheckWriters(TwoMountFixture& f, const std::vector<WriterState>& states) {
  for (size_t w = 0; w < states.size(); ++w) {
    const std::string rel = absl::StrCat("writer", w);
    INFO("writer " << w << " through mount A:" << DiffAgainst(f.P(rel), states[w].model));
    CHECK(DiffAgainst(f.P(rel), states[w].model).empty());
    INFO("writer " << w << " through mount B:" << DiffAgainst(f.Q(rel), states[w].model));
    CHECK(DiffAgainst(f.Q(rel), states[w].model).empty());
  }
}

// Four writers (two per mount) in their own directories; `fault` is done to
// the active MDS `active` once they run, and returns when the test may let
// them go on; then they run one more second. Checks every writer's
// directory through both mounts against its model; returns the models.
std::vector<WriterState> RunWritersThrough(TwoMountFixture& f, int active,
                                           const std::function<void()>& fault,
                                           std::atomic<int64_t>* kill_ns) {
  constexpr int kWriters = 4;
  std::vector<std::string> dirs;
  for (int w = 0; w < kWriters; ++w) {
    const std::string rel = absl::StrCat("writer", w);
    REQUIRE(mkdir(f.P(rel).c_str(), 0755) == 0);
    dirs.push_back(w % 2 == 0 ? f.P(rel) : f.Q(rel));
  }
  std::atomic<bool> stop{false};
  std::vector<WriterState> states(kWriters);
  {
    std::vector<std::jthread> threads;
    for (int w = 0; w < kWriters; ++w) {
      threads.emplace_back(Writer, dirs[w], w, &stop, kill_ns, &states[w]);
    }
    absl::SleepFor(absl::Seconds(1));
    fault();
    absl::SleepFor(absl::Seconds(1));
    stop = true;
  }
  absl::Duration takeover;
  long after = 0;
  for (int w = 0; w < kWriters; ++w) {
    INFO("writer " << w << ": " << states[w].first_error);
    CHECK(states[w].errors == 0);
    CHECK(states[w].model.files.size() > 4);
    takeover = std::max(takeover, states[w].longest_wait_after_fault);
    after += states[w].calls_after_fault;
  }
  REQUIRE(after > 0);  // the writers went on after the takeover
  std::printf("takeover: the longest call waited %.2f s after the fault on MDS %s\n",
              absl::ToDoubleSeconds(takeover), Cluster::MdsName(active).c_str());
  CheckWriters(f, states);
  return states;
}

// Until MDS `i` holds rank 0 of fs1 (at most `timeout`).
bool WaitActive(Cluster& cluster, int i, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (cluster.ActiveMds("fs1") != i) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return true;
}

// The journal and namespace as stored, not as the new holder caches them:
// kill -9 the holder `active`, let the other daemon `next` replay them, and
// check every writer's directory again. Whatever a deposed holder managed
// to write after its fence would show here (an entry from the past, a
// journal frame overwritten).
void CheckAfterReplayBy(TwoMountFixture& f, int active, int next,
                        const std::vector<WriterState>& states) {
  f.cluster->KillMds(active);
  REQUIRE(WaitActive(*f.cluster, next, absl::Seconds(30)));
  CheckWriters(f, states);
  REQUIRE(mkdir(f.P("after-replay").c_str(), 0755) == 0);
  struct stat st;
  CHECK(stat(f.Q("after-replay").c_str(), &st) == 0);
}

TEST_CASE("mds takeover: a standby takes rank 0 from a killed active - four writers on two "
          "mounts lose nothing and see no error", "[mds][ha][fuse]") {
  TwoMountFixture f(TwoMds());
  const int active = f.cluster->ActiveMds("fs1");
  REQUIRE(active == 0);
  std::string status;
  {
    const bool shown = FsStatusShows(*f.cluster, StandbyLine(*f.cluster, 1), absl::Seconds(10), &status);
    INFO(status);
    REQUIRE(shown);
  }

  std::atomic<int64_t> kill_ns{0};
  const std::vector<WriterState> states = RunWritersThrough(f, active, [&] {
    kill_ns = absl::ToUnixNanos(absl::Now());
    f.cluster->KillMds(active);
  }, &kill_ns);
  CHECK(f.cluster->ActiveMds("fs1") == 1);

  // The killed daemon comes back as a standby; the rank stays where it is.
  REQUIRE(f.cluster->StartMds(0).ok());
  {
    const bool shown = FsStatusShows(*f.cluster, StandbyLine(*f.cluster, 0), absl::Seconds(15), &status);
    INFO(status);
    CHECK(shown);
  }
  CHECK(f.cluster->ActiveMds("fs1") == 1);
  CommandResult top = f.cluster->Weft({"status"});
  INFO(top.output);
  CHECK(absl::StrContains(top.output, "mds:     2 up: b holds rank 0 of fs1; standby a"));
  // And back: b killed, a replays what b journaled.
  CheckAfterReplayBy(f, 1, 0, states);
}

TEST_CASE("mds takeover: a frozen active is replaced - woken up it serves nothing and rejoins as "
          "a standby", "[mds][ha][fuse]") {
  TwoMountFixture f(TwoMds());
  const int active = f.cluster->ActiveMds("fs1");
  REQUIRE(active == 0);
  std::atomic<int64_t> kill_ns{0};
  const std::vector<WriterState> states = RunWritersThrough(f, active, [&] {
    kill_ns = absl::ToUnixNanos(absl::Now());
    f.cluster->SendMds(SIGSTOP, active);
    // Frozen past the grace: the standby holds the rank once writers go on.
    WaitActive(*f.cluster, 1, absl::Seconds(20));
  }, &kill_ns);
  REQUIRE(f.cluster->ActiveMds("fs1") == 1);

  f.cluster->SendMds(SIGCONT, active);
  std::string status;
  {
    const bool shown = FsStatusShows(*f.cluster, StandbyLine(*f.cluster, 0), absl::Seconds(20), &status);
    INFO(status);
    CHECK(shown);
  }
  auto log = ReadWholeFile(f.cluster->MdsLogPath(active));
  REQUIRE(log.ok());
  CHECK(absl::StrContains(*log, "event=restart reason=liveness_lease_lost"));
  // Still one rank holder, and the namespace as the writers left it, also
  // as stored: whatever the woken daemon had queued was refused.
  CHECK(f.cluster->ActiveMds("fs1") == 1);
  CheckWriters(f, states);
  CheckAfterReplayBy(f, 1, active, states);
}

TEST_CASE("mds takeover: an active cut off the network is replaced - no split brain - nothing "
          "it sent lands",
          "[mds][ha][fuse]") {
  // mds.a's packets are dropped both ways (no reset, as a pulled cable):
  // it keeps running, believes it holds rank 0 until its own lease clock
  // says otherwise, and its connections to etcd, the OSDs and the clients
  // just stop moving; when the cut heals, what it had in flight reaches
  // the OSDs after the standby fenced it.
  NetCut cut;
  if (!cut.Available().ok()) {
    WARN("skipped: this machine cannot cut a process off: " << cut.Available());
    return;
  }
  ClusterOptions options = TwoMds();
  options.mds_cgroup_procs = {cut.cgroup_procs()};
  TwoMountFixture f(options);
  const int active = f.cluster->ActiveMds("fs1");
  REQUIRE(active == 0);
  std::atomic<int64_t> kill_ns{0};
  const std::vector<WriterState> states = RunWritersThrough(f, active, [&] {
    kill_ns = absl::ToUnixNanos(absl::Now());
    const absl::Status cutting = cut.Cut();
    INFO(cutting);
    REQUIRE(cutting.ok());
    WaitActive(*f.cluster, 1, absl::Seconds(30));
  }, &kill_ns);
  REQUIRE(f.cluster->ActiveMds("fs1") == 1);

  const absl::Status healed = cut.Heal();
  INFO(healed);
  REQUIRE(healed.ok());
  std::string status;
  {
    const bool shown = FsStatusShows(*f.cluster, StandbyLine(*f.cluster, 0), absl::Seconds(30), &status);
    INFO(status);
    CHECK(shown);
  }
  auto log = ReadWholeFile(f.cluster->MdsLogPath(active));
  REQUIRE(log.ok());
  INFO(*log);
  CHECK(absl::StrContains(*log, "event=restart reason="));
  CHECK(f.cluster->ActiveMds("fs1") == 1);
  CheckWriters(f, states);
  CheckAfterReplayBy(f, 1, active, states);
}

// The events a rank's start replayed and those it had followed before, from
// the MDS log's rank_started line of `fs` (the last one): {-1, -1} if none.
std::pair<long, long> ReplayCounts(const std::string& log, const std::string& fs) {
  std::pair<long, long> out{-1, -1};
  const std::string key = absl::StrCat("event=rank_started fs=", fs, " replayed_events=");
  for (size_t at = log.find(key); at != std::string::npos; at = log.find(key, at + 1)) {
    long replayed = -1, followed = -1;
    if (std::sscanf(log.c_str() + at + key.size(), "%ld followed_events=%ld", &replayed,
                    &followed) == 2) {
      out = {replayed, followed};
    }
  }
  return out;
}

TEST_CASE("mds takeover: a standby-replay daemon follows the journal - the takeover replays only "
          "its last events",
          "[mds][ha][fuse]") {
  TwoMountFixture f(TwoMds());
  REQUIRE(f.cluster->ActiveMds("fs1") == 0);
  CommandResult bad = f.cluster->Weft({"fs", "set", "fs1", "allow_standby_replay", "2"});
  CHECK(bad.code != 0);
  CHECK(absl::StrContains(bad.output, "allow_standby_replay takes 0 or 1"));
  CommandResult set = f.cluster->Weft({"fs", "set", "fs1", "allow_standby_replay", "1"});
  INFO(set.output);
  REQUIRE(set.code == 0);
  std::string status;
  auto follower_line = [&](int i) {
    return absl::StrCat("  ", Cluster::MdsName(i), " (", f.cluster->mds_addrs()[i],
                        "): standby-replay for rank 0 of fs1\n");
  };
  {
    const bool shown = FsStatusShows(*f.cluster, follower_line(1), absl::Seconds(10), &status);
    INFO(status);
    REQUIRE(shown);
  }
  CommandResult top = f.cluster->Weft({"status"});
  INFO(top.output);
  CHECK(absl::StrContains(top.output, "mds:     2 up: a holds rank 0 of fs1; standby-replay b"));

  std::atomic<int64_t> kill_ns{0};
  const std::vector<WriterState> states = RunWritersThrough(f, 0, [&] {
    kill_ns = absl::ToUnixNanos(absl::Now());
    f.cluster->KillMds(0);
  }, &kill_ns);
  REQUIRE(f.cluster->ActiveMds("fs1") == 1);
  auto log = ReadWholeFile(f.cluster->MdsLogPath(1));
  REQUIRE(log.ok());
  const auto [replayed, followed] = ReplayCounts(*log, "fs1");
  std::printf("standby-replay takeover: %ld events followed before the kill, %ld replayed after\n",
              followed, replayed);
  // The follower had read most of the writers' second before the kill; the
  // takeover replayed at most what came after its last read.
  CHECK(followed > 0);
  CHECK(replayed >= 0);
  CHECK(replayed < followed);

  // The killed daemon comes back and follows the new holder; then it takes
  // the rank back the same way.
  REQUIRE(f.cluster->StartMds(0).ok());
  {
    const bool shown = FsStatusShows(*f.cluster, follower_line(0), absl::Seconds(15), &status);
    INFO(status);
    CHECK(shown);
  }
  absl::SleepFor(absl::Milliseconds(500));  // a read or two of the journal
  CheckAfterReplayBy(f, 1, 0, states);
  // a, the only daemon left, is the map manager: it gave the rank to itself
  // as b's follower.
  auto log_a = ReadWholeFile(f.cluster->MdsLogPath(0));
  REQUIRE(log_a.ok());
  bool as_follower = false;
  for (absl::string_view line : absl::StrSplit(*log_a, '\n')) {
    as_follower |= absl::StrContains(line, "event=rank_assigned fs=fs1 rank=0 to=a ") &&
                   absl::StrContains(line, " standby_replay=1 ");
  }
  INFO(*log_a);
  CHECK(as_follower);
}

TEST_CASE("mds takeover: weft mds fail hands rank 0 to the standby - health says when standbys "
          "are missing", "[mds][ha][fuse]") {
  MountFixture f(TwoMds());
  REQUIRE(f.cluster->ActiveMds("fs1") == 0);
  REQUIRE(mkdir(f.P("before").c_str(), 0755) == 0);
  CommandResult set = f.cluster->Weft({"fs", "set", "fs1", "standby_count_wanted", "1"});
  INFO(set.output);
  REQUIRE(set.code == 0);
  // Bad input: each refused with its reason, nothing changed.
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"fs", "set", "fs1", "max_mds", "0"}, "max_mds must be at least 1"},
      {{"fs", "set", "fs1", "max_mds", "3"}, "max_mds 3 needs 3 MDS daemons"},
      {{"fs", "set", "fs1", "allow_standby_replay", "yes"}, "takes a number"},
      {{"fs", "set", "fs1", "standby_count_wanted", "many"}, "takes a number"},
      {{"fs", "set", "fs1", "colour", "1"}, "no setting 'colour'"},
      {{"fs", "set", "nofs", "standby_count_wanted", "1"}, "no filesystem nofs"},
      {{"mds", "fail", "zz"}, "no MDS daemon named 'zz'"},
      {{"mds", "fail", "3"}, "no rank 3"},
      {{"mds", "fail", "nofs:0"}, "no filesystem nofs"},
  };
  for (const auto& [args, want] : bad) {
    CommandResult r = f.cluster->Weft(args);
    INFO(absl::StrJoin(args, " ") << ": " << r.output);
    CHECK(r.code != 0);
    CHECK(absl::StrContains(r.output, want));
  }
  std::string status;
  {
    const bool shown = FsStatusShows(*f.cluster, StandbyLine(*f.cluster, 1), absl::Seconds(10), &status);
    INFO(status);
    REQUIRE(shown);
  }

  CommandResult failed = f.cluster->Weft({"mds", "fail", "fs1:0"});
  INFO(failed.output);
  REQUIRE(failed.code == 0);
  CHECK(absl::StrContains(failed.output, "failed a"));
  const absl::Time deadline = absl::Now() + absl::Seconds(15);
  while (f.cluster->ActiveMds("fs1") != 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(100));
  }
  REQUIRE(f.cluster->ActiveMds("fs1") == 1);
  // The mount goes on with the new holder; the failed daemon starts over
  // as a standby.
  struct stat st;
  CHECK(stat(f.P("before").c_str(), &st) == 0);
  CHECK(mkdir(f.P("after").c_str(), 0755) == 0);
  {
    const bool shown = FsStatusShows(*f.cluster, StandbyLine(*f.cluster, 0), absl::Seconds(20), &status);
    INFO(status);
    CHECK(shown);
  }
  auto log = ReadWholeFile(f.cluster->MdsLogPath(0));
  REQUIRE(log.ok());
  CHECK(absl::StrContains(*log, "event=restart reason=blocklisted"));
  // (PG states may lag the blocklist's map epoch a moment: only the MDS
  // checks are looked at.)
  CommandResult healthy = f.cluster->Weft({"status"});
  INFO(healthy.output);
  CHECK(absl::StrContains(healthy.output, "mds:     2 up: b holds rank 0 of fs1; standby a"));
  CHECK_FALSE(absl::StrContains(healthy.output, "MDS_"));

  // No standby left: health warns; the map manager cannot fail itself.
  f.cluster->StopMds(0);
  CommandResult warn;
  for (int i = 0; i < 50; ++i) {
    warn = f.cluster->Weft({"status"});
    if (absl::StrContains(warn.output, "MDS_INSUFFICIENT_STANDBY")) break;
    absl::SleepFor(absl::Milliseconds(200));
  }
  INFO(warn.output);
  CHECK(absl::StrContains(warn.output, "HEALTH_WARN"));
  CHECK(absl::StrContains(warn.output, "fs1 wants 1 standby MDS daemons, 0 running"));
  CommandResult alone = f.cluster->Weft({"mds", "fail", "b"});
  INFO(alone.output);
  CHECK(alone.code != 0);
  CHECK(absl::StrContains(alone.output, "no other MDS daemon is alive to take over from b"));
  CHECK(f.cluster->ActiveMds("fs1") == 1);
}

TEST_CASE("mds takeover: a second daemon with the name of a running one refuses to start",
          "[mds][ha]") {
  auto c = Cluster::Start();
  REQUIRE(c.ok());
  CommandResult r = RunCommand({BinPath("weft-mds"), "--name", "a", "-c", (*c)->conf_path(),
                                "--addr", "127.0.0.1:1", "--lease_ttl_s", "3"});
  INFO(r.output);
  CHECK(r.code != 0);
  CHECK(absl::StrContains(r.output, "an MDS named a is already running at"));
  CommandResult bad = RunCommand({BinPath("weft-mds"), "--name", "a/b", "-c", (*c)->conf_path()});
  INFO(bad.output);
  CHECK(bad.code != 0);
  CHECK(absl::StrContains(bad.output, "--name must be"));
}

}  // namespace
}  // namespace weft::testing
