// The MDS under faults, against real processes: retried requests after lost
// replies and restarts, kill -9 during concurrent changes, unlinked-but-open
// files across a restart, fragment splits under concurrent readdir, and a
// 100,000-entry directory replayed after kill -9.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/striping/striping.h"
#include "mds/fs/names.h"
#include "tests/harness/cluster.h"
#include "tests/harness/fs_fixture.h"

namespace weft::testing {
namespace {

pb::FsStatusReply Status(client::MetaClient& meta) {
  auto s = meta.FsStatus();
  INFO(s.status());
  REQUIRE(s.ok());
  return *s;
}

TEST_CASE("a retried request is applied once and gets its original answer - across restarts",
          "[mds]") {
  FsFixture f;
  FsCaller fs(f.meta.get());
  pb::MetaRequest create;
  create.mutable_create()->set_parent(fs.root());
  create.mutable_create()->set_name("once");
  create.mutable_create()->set_mode(S_IFREG | 0644);
  create.mutable_create()->set_exclusive(true);
  const uint64_t tid = f.meta->NextTid();
  auto first = f.meta->CallWithTid(create, tid);
  REQUIRE(first.ok());
  CHECK_FALSE(first->replayed());
  auto again = f.meta->CallWithTid(create, tid);  // the reply was "lost"
  REQUIRE(again.ok());
  CHECK(again->replayed());
  CHECK(again->attr().ino() == first->attr().ino());
  CHECK(Errno(fs.Create(fs.root(), "once")) == EEXIST);  // a new request is refused

  // kill -9 before the flusher ran: the answer comes from the journal. (A
  // client retries only its unanswered requests: each request says which is
  // its oldest, and older answers are dropped.)
  f.RestartMds();
  auto after_crash = f.meta->CallWithTid(create, tid);
  INFO(after_crash.status());
  REQUIRE(after_crash.ok());
  CHECK(after_crash->replayed());
  CHECK(after_crash->attr().ino() == first->attr().ino());

  pb::MetaRequest rename;
  rename.mutable_rename()->set_parent(fs.root());
  rename.mutable_rename()->set_name("once");
  rename.mutable_rename()->set_new_parent(fs.root());
  rename.mutable_rename()->set_new_name("moved");
  const uint64_t rename_tid = f.meta->NextTid();
  REQUIRE(f.meta->CallWithTid(rename, rename_tid).ok());
  f.RestartMds();
  auto rename_again = f.meta->CallWithTid(rename, rename_tid);
  REQUIRE(rename_again.ok());
  CHECK(rename_again->replayed());

  // After a flush and trim the table is in the sessions object.
  absl::SleepFor(absl::Seconds(3));
  CHECK(Status(*f.meta).journal_last_seq() < Status(*f.meta).journal_first_seq());
  f.RestartMds();
  auto after_trim = f.meta->CallWithTid(rename, rename_tid);
  REQUIRE(after_trim.ok());
  CHECK(after_trim->replayed());
  auto entries = fs.Readdir(fs.root());
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 1);
  CHECK((*entries)[0].name() == "moved");
  CHECK((*entries)[0].ino() == first->attr().ino());
}

// One writer's acknowledged history in its own directory.
struct Model {
  std::map<std::string, uint64_t> names;  // name -> ino
};

void Writer(FsCaller fs, uint64_t dir, int id, std::atomic<bool>* stop, Model* model,
            std::atomic<int>* failures) {
  for (int i = 0; !stop->load() && i < 100000; ++i) {
    const std::string name = absl::StrCat("w", id, "-", i);
    auto created = fs.Create(dir, name);
    if (!created.ok()) {
      failures->fetch_add(1);
      continue;
    }
    model->names[name] = created->ino();
    if (i % 3 == 1) {
      const std::string renamed = name + "-r";
      if (fs.Rename(dir, name, dir, renamed).ok()) {
        model->names.erase(name);
        model->names[renamed] = created->ino();
      } else {
        failures->fetch_add(1);
      }
    }
    if (i % 5 == 2) {
      auto victim = model->names.begin();
      if (fs.Unlink(dir, victim->first).ok()) {
        model->names.erase(victim);
      } else {
        failures->fetch_add(1);
      }
    }
  }
}

TEST_CASE("kill -9 of the MDS during concurrent creates - renames and unlinks loses nothing",
          "[mds][fault]") {
  FsFixture f;
  FsCaller fs(f.meta.get());
  constexpr int kWriters = 4;
  std::vector<uint64_t> dirs;
  for (int w = 0; w < kWriters; ++w) dirs.push_back(Ino(fs.Mkdir(fs.root(), absl::StrCat("dir", w))));
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    std::atomic<bool> stop{false};
    std::atomic<int> failures{0};
    std::vector<Model> models(kWriters);
    // Writers continue from the state the previous round left.
    for (int w = 0; w < kWriters; ++w) {
      auto entries = fs.Readdir(dirs[w]);
      REQUIRE(entries.ok());
      for (const auto& e : *entries) models[w].names[e.name()] = e.ino();
    }
    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
      threads.emplace_back(Writer, fs, dirs[w], w * 10 + round, &stop, &models[w], &failures);
    }
    absl::SleepFor(absl::Milliseconds(700 + 300 * round));
    f.cluster->KillMds();
    absl::SleepFor(absl::Milliseconds(500));
    auto st = f.cluster->StartMds();
    REQUIRE(st.ok());
    absl::SleepFor(absl::Seconds(1));
    stop = true;
    for (auto& t : threads) t.join();
    CHECK(failures.load() == 0);
    // Every acknowledged change is there exactly once, nothing else is.
    for (int w = 0; w < kWriters; ++w) {
      auto entries = fs.Readdir(dirs[w]);
      REQUIRE(entries.ok());
      std::map<std::string, uint64_t> got;
      for (const auto& e : *entries) {
        CHECK(got.emplace(e.name(), e.ino()).second);
      }
      std::string diff;
      for (const auto& [name, ino] : got) {
        auto m = models[w].names.find(name);
        if (m == models[w].names.end()) {
          absl::StrAppend(&diff, " extra:", name, "=", ino);
        } else if (m->second != ino) {
          absl::StrAppend(&diff, " ino:", name, "=", ino, "/model=", m->second);
        }
      }
      for (const auto& [name, ino] : models[w].names) {
        if (!got.contains(name)) absl::StrAppend(&diff, " missing:", name, "=", ino);
      }
      INFO("writer " << w << ":" << diff);
      CHECK(diff.empty());
      for (const auto& [name, ino] : got) {
        auto attr = fs.Getattr(ino);
        INFO(name << " ino " << ino << ": " << attr.status());
        REQUIRE(attr.ok());
        CHECK(attr->nlink() == 1);
      }
    }
  }
}

// An object client and fs1's data pool, where tests put and look at a
// file's data objects themselves.
std::pair<std::unique_ptr<objects::ObjectClient>, PoolId> DataPool(FsFixture& f) {
  auto objects = f.cluster->Client();
  REQUIRE(objects != nullptr);
  auto pool = objects->LookupPool("fs1_data");
  REQUIRE(pool.ok());
  return {std::move(objects), *pool};
}

TEST_CASE("an unlinked file stays usable while open and its data is purged after the last close - "
          "also across an MDS restart", "[mds][fault]") {
  FsFixture f;
  FsCaller fs(f.meta.get());
  auto [objects, pool] = DataPool(f);
  for (bool restart : {false, true}) {
    INFO("restart " << restart);
    const std::string name = restart ? "b" : "a";
    auto created = fs.Create(fs.root(), name, 0644, false);  // created and open
    uint64_t ino = Ino(created);
    const uint64_t object_size = created->layout().object_size();
    // Two objects of data, written as a client would.
    const std::string full(object_size, 'x');
    REQUIRE(objects->Put(pool, striping::DataObjectName(ino, 0), full).ok());
    REQUIRE(objects->Put(pool, striping::DataObjectName(ino, 1), "tail").ok());
    REQUIRE(fs.Written(ino, object_size + 4).ok());
    REQUIRE(fs.Unlink(fs.root(), name).ok());
    auto attr = fs.Getattr(ino);
    REQUIRE(attr.ok());
    CHECK(attr->nlink() == 0);
    CHECK(fs.Written(ino, object_size + 10).ok());  // still writable through the handle
    if (restart) {
      absl::SleepFor(absl::Milliseconds(1500));  // flushed: the stray is in its table
      f.RestartMds();
    }
    absl::SleepFor(absl::Seconds(1));
    CHECK(objects->Stat(pool, striping::DataObjectName(ino, 0)).ok());
    CHECK(Status(*f.meta).strays() == 1);
    REQUIRE(fs.Release(ino).ok());
    bool gone = false;
    for (int i = 0; i < 100 && !gone; ++i) {
      gone = absl::IsNotFound(objects->Stat(pool, striping::DataObjectName(ino, 0)).status()) &&
             absl::IsNotFound(objects->Stat(pool, striping::DataObjectName(ino, 1)).status());
      if (!gone) absl::SleepFor(absl::Milliseconds(100));
    }
    CHECK(gone);
    CHECK(Errno(fs.Getattr(ino)) == ESTALE);
    auto status = Status(*f.meta);
    CHECK(status.strays() == 0);
    CHECK(status.purge_queue() == 0);
  }
}

// Whether the MDS's purge queue is empty within 30 s.
bool PurgeQueueEmpties(FsFixture& f) {
  for (int i = 0; i < 300; ++i) {
    if (Status(*f.meta).purge_queue() == 0) return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return false;
}

// 2^60 bytes in 4 MiB objects is 2^38 possible objects: removed one by one,
// the purge of this file would never end, and no other file's after it.
TEST_CASE("the purge of a sparse file of the maximum size removes what exists - and ends",
          "[mds][fault]") {
  FsFixture f;
  FsCaller fs(f.meta.get());
  auto [objects, pool] = DataPool(f);
  auto created = fs.Create(fs.root(), "huge", 0644, false);
  const uint64_t ino = Ino(created);
  const pb::FileLayout& layout = created->layout();
  const uint64_t max_size = uint64_t{1} << 60;
  const uint64_t last = max_size / layout.object_size() - 1;  // stripe count 1 or not
  const std::vector<uint64_t> present = {0, 1, 1 << 20, last};
  for (uint64_t objno : present) {
    REQUIRE(objects->Put(pool, striping::DataObjectName(ino, objno), "data").ok());
  }
  // Names that only look alike belong to others and stay.
  const std::string other = striping::DataObjectName(ino * 16, 0);
  REQUIRE(objects->Put(pool, other, "keep").ok());
  REQUIRE(fs.Written(ino, max_size).ok());
  REQUIRE(fs.Unlink(fs.root(), "huge").ok());
  REQUIRE(fs.Release(ino).ok());
  CHECK(PurgeQueueEmpties(f));
  for (uint64_t objno : present) {
    INFO("objno " << objno);
    CHECK(absl::IsNotFound(objects->Stat(pool, striping::DataObjectName(ino, objno)).status()));
  }
  auto kept = objects->Get(pool, other);
  REQUIRE(kept.ok());
  CHECK(*kept == "keep");
}

// One janitor pass purges up to 512 files from one queue of removes, eight
// at a time: each file's objects go, and nothing of a file still linked or
// of a name that only looks alike.
TEST_CASE("the purge of many files at once removes each one's objects and nothing else",
          "[mds][fault]") {
  FsFixture f;
  FsCaller fs(f.meta.get());
  auto [objects, pool] = DataPool(f);
  std::map<uint64_t, uint64_t> removed;  // inode -> its number of objects
  std::vector<std::string> kept;         // object names that must stay
  for (int i = 0; i < 13; ++i) {
    const std::string name = absl::StrCat("f", i);
    auto created = fs.Create(fs.root(), name, 0644, false);
    const uint64_t ino = Ino(created);
    const uint64_t count = (i % 5) * 7 + 1;
    for (uint64_t objno = 0; objno < count; ++objno) {
      REQUIRE(objects->Put(pool, striping::DataObjectName(ino, objno), "data").ok());
    }
    REQUIRE(fs.Written(ino, count * created->layout().object_size()).ok());
    kept.push_back(striping::DataObjectName(ino * 16, 0));  // looks alike, is not
    REQUIRE(objects->Put(pool, kept.back(), "keep").ok());
    if (i == 6) {  // stays linked: its objects stay too
      for (uint64_t objno = 0; objno < count; ++objno) {
        kept.push_back(striping::DataObjectName(ino, objno));
      }
    } else {
      REQUIRE(fs.Unlink(fs.root(), name).ok());
      removed[ino] = count;
    }
    REQUIRE(fs.Release(ino).ok());
  }
  CHECK(PurgeQueueEmpties(f));
  for (const auto& [ino, count] : removed) {
    for (uint64_t objno = 0; objno < count; ++objno) {
      INFO("ino " << ino << " objno " << objno);
      CHECK(absl::IsNotFound(objects->Stat(pool, striping::DataObjectName(ino, objno)).status()));
    }
  }
  for (const std::string& name : kept) {
    INFO(name);
    CHECK(objects->Stat(pool, name).ok());
  }
}

TEST_CASE("unsafe replies lost by kill -9 of the MDS are resent and applied again in order",
          "[mds][fault]") {
  // The journal writer waits 1.5 s before each write: replies come back
  // unsafe long before their events are durable, and the kill loses them.
  ClusterOptions options;
  options.extra_conf = {"mds_debug_journal_delay_ms = 1500", "mds_reconnect_timeout = 20"};
  FsFixture f(options);
  FsCaller fs(f.meta.get());
  REQUIRE(f.meta->Sync().ok());
  const uint64_t dir = Ino(fs.Mkdir(fs.root(), "d"));
  std::map<std::string, uint64_t> expect;  // name in d -> inode
  for (int i = 0; i < 20; ++i) {
    const std::string name = absl::StrCat("f", i);
    expect[name] = Ino(fs.Create(dir, name));
  }
  // Changes that depend on the creates before them.
  REQUIRE(fs.Rename(dir, "f0", dir, "g0").ok());
  expect["g0"] = expect["f0"];
  expect.erase("f0");
  REQUIRE(fs.Unlink(dir, "f1").ok());
  expect.erase("f1");
  const uint64_t sub = Ino(fs.Mkdir(dir, "sub"));
  expect["sub"] = sub;
  const uint64_t link = Ino(fs.Symlink(sub, "ln", "../g0"));
  REQUIRE(fs.Open(expect["f2"], O_RDWR).ok());
  REQUIRE(fs.Written(expect["f2"], 100, 100).ok());
  // What a client library reports as its open files when it reconnects.
  f.meta->SetOpenFiles([ino = expect["f2"]] {
    pb::OpenRef o;
    o.set_ino(ino);
    o.set_handles(1);
    o.set_writers(1);
    return std::vector<pb::OpenRef>{o};
  });
  const size_t unsafe = f.meta->unsafe_count();
  INFO("unsafe replies at the kill: " << unsafe);
  REQUIRE(unsafe >= 20);

  f.RestartMds();  // kill -9: the journal never got most of it

  // The next request meets the new incarnation: the session reconnects,
  // resends, and only then is the lookup answered.
  auto g0 = fs.Lookup(dir, "g0");
  INFO(g0.status());
  REQUIRE(g0.ok());
  CHECK(f.meta->unsafe_count() == 0);
  auto entries = fs.Readdir(dir);
  REQUIRE(entries.ok());
  std::map<std::string, uint64_t> got;
  for (const auto& e : *entries) got[e.name()] = e.ino();
  CHECK(got == expect);  // same names, same inode numbers
  CHECK(Ino(fs.Lookup(sub, "ln")) == link);
  CHECK(fs.Readlink(link).value_or("(error)") == "../g0");
  // The open file survived the restart: this session may still report writes.
  auto written = fs.Written(expect["f2"], 200, 60);
  INFO(written.status());
  REQUIRE(written.ok());
  CHECK(written->size() == 200);
  CHECK(written->allocated() == 160);  // the count survived the restart
  REQUIRE(fs.Release(expect["f2"], true).ok());
  f.meta->SetOpenFiles([] { return std::vector<pb::OpenRef>{}; });
  REQUIRE(f.meta->Sync().ok());

  // A second session (no caches, no resends of its own) sees the same, and
  // so does a third MDS incarnation after everything was made durable.
  f.RestartMds();
  auto other = f.cluster->Meta("fs1");
  REQUIRE(other != nullptr);
  FsCaller fresh(other.get());
  auto again = fresh.Readdir(dir);
  REQUIRE(again.ok());
  std::map<std::string, uint64_t> seen;
  for (const auto& e : *again) seen[e.name()] = e.ino();
  CHECK(seen == expect);
  auto f2 = fresh.Getattr(expect["f2"]);
  REQUIRE(f2.ok());
  CHECK(f2->allocated() == 160);
  // New inode numbers never collide with the ones handed out before.
  const uint64_t fresh_ino = Ino(fresh.Create(dir, "new"));
  for (const auto& [name, ino] : expect) CHECK(ino != fresh_ino);
}

TEST_CASE("readdir under fragment splits and concurrent creates and removes", "[mds]") {
  ClusterOptions options;
  options.extra_conf = {"mds_bal_split_size = 100"};
  FsFixture f(options);
  FsCaller fs(f.meta.get());
  uint64_t dir = Ino(fs.Mkdir(fs.root(), "big"));
  std::set<std::string> stable;
  for (int i = 0; i < 600; ++i) {
    std::string name = absl::StrCat("stable-", i);
    REQUIRE(fs.Create(dir, name).ok());
    stable.insert(name);
  }
  std::atomic<bool> done{false};
  std::thread churn([&] {
    FsCaller writer(f.meta.get());
    for (int i = 0; i < 1500; ++i) {
      std::string name = absl::StrCat("churn-", i);
      (void)writer.Create(dir, name);
      if (i % 2 == 0) (void)writer.Unlink(dir, name);
    }
    done = true;
  });
  int passes = 0;
  int concurrent_passes = 0;  // ended while the churn still ran
  while (!done.load() || passes < 3) {
    ++passes;
    std::map<std::string, int> seen;
    uint64_t cookie = 0;
    for (;;) {
      auto page = fs.ReaddirPage(dir, cookie, 37);
      REQUIRE(page.ok());
      for (const auto& e : page->entries()) {
        ++seen[e.name()];
        CHECK(e.cookie() > cookie);
        cookie = e.cookie();
      }
      if (page->eof()) break;
    }
    for (const auto& [name, count] : seen) {
      INFO(name);
      CHECK(count == 1);
    }
    for (const std::string& name : stable) {
      INFO(name);
      CHECK(seen.count(name) == 1);
    }
    concurrent_passes += !done.load();
  }
  churn.join();
  // Otherwise the churn ended first and nothing above ran concurrently.
  INFO(passes << " passes");
  CHECK(concurrent_passes > 0);
  auto all = fs.Readdir(dir);
  REQUIRE(all.ok());
  CHECK(all->size() == 600 + 750);
}

TEST_CASE("100000 creates in one directory - kill -9 - replay - readdir returns each once",
          "[mds][scale]") {
  FsFixture f;
  FsCaller fs(f.meta.get());
  uint64_t dir = Ino(fs.Mkdir(fs.root(), "huge"));
  constexpr int kThreads = 4, kPerThread = 25000;
  std::atomic<uint64_t> journal_max{0};
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done.load()) {
      auto s = f.meta->FsStatus();
      if (s.ok()) journal_max = std::max<uint64_t>(journal_max.load(), s->journal_bytes());
      absl::SleepFor(absl::Milliseconds(250));
    }
  });
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      FsCaller caller(f.meta.get());
      for (int i = 0; i < kPerThread; ++i) {
        if (!caller.Create(dir, absl::StrCat("f", t, "-", i)).ok()) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  done = true;
  sampler.join();
  REQUIRE(failures.load() == 0);
  auto before = Status(*f.meta);
  WARN("100000 creates in " << seconds << " s (" << 100000 / seconds << "/s); journal peak "
       << journal_max.load() / 1024 << " KiB, at kill " << before.journal_bytes() / 1024
       << " KiB (events " << before.journal_first_seq() << ".." << before.journal_last_seq()
       << ")");
  // Bounded by the rate, not the count: trimmed behind the flusher (every
  // second; pending statistics hold the trim until their next propagation,
  // also every second), the journal holds about two seconds of events plus
  // the segments being written (docs/ARCHITECTURE.md, "Journal"). Three
  // seconds and two 4 MiB segments of margin; untrimmed, the 100,000 events
  // would be several times that at any rate this machine reaches.
  const uint64_t events = before.journal_last_seq() - before.journal_first_seq() + 1;
  REQUIRE(events > 0);
  const double event_bytes = static_cast<double>(before.journal_bytes()) / events;
  const double bound = 2.0 * (4 << 20) + 3.0 * (100000 / seconds) * event_bytes;
  INFO("bound " << bound / 1024 << " KiB, untrimmed " << 100000 * event_bytes / 1024 << " KiB");
  CHECK(static_cast<double>(journal_max.load()) < bound);
  CHECK(bound < 100000 * event_bytes);  // the check still tells trimmed from untrimmed
  f.RestartMds();
  auto entries = fs.Readdir(dir, 4096);
  REQUIRE(entries.ok());
  auto after = Status(*f.meta);
  WARN("replay after kill -9: " << after.replay_ms() << " ms");
  std::set<std::string> names;
  for (const auto& e : *entries) CHECK(names.insert(e.name()).second);
  CHECK(names.size() == 100000);
  CHECK(fs.Getattr(dir)->nlink() == 2);
}

}  // namespace
}  // namespace weft::testing
