// Crash consistency of the object store.
//
// Each scenario sets a store up, then runs one "victim" operation. A clean run
// counts the victim's I/O steps (file creates, writes, truncates, fsyncs,
// directory syncs, KV batches) and records the store's contents before and
// after it. Then, for EVERY step k, a fresh store repeats the setup, the
// machine "dies" at step k of the victim (that step and all later I/O fail;
// a write dying midway lands half), power is lost (unsynced file data and
// directory entries dropped, or randomly kept in part), and the store is
// reopened. It must open, pass a deep fsck (every checksum verifies, no
// orphan files, no stray keys), and hold exactly the old or exactly the new
// contents -- the new ones if the victim returned OK.
#include <catch2/catch.hpp>

#include <functional>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/checksum/checksum.h"
#include "common/kv/mem_store.h"
#include "osd/store/fault_file_io.h"
#include "osd/store/object_store.h"

namespace weft::osd {
namespace {

using LossMode = FaultInjectionFileIo::LossMode;

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (char& c : s) c = static_cast<char>('a' + rng() % 26);
  return s;
}

// A machine: an in-memory disk and KV, both dying at the same op.
struct Machine {
  // Objects live in data files unless `inline_max_bytes` says otherwise;
  // spare files are emptied unless `spare_keep_bytes` lets them keep blocks.
  explicit Machine(uint64_t inline_max_bytes = 0, uint64_t spare_keep_bytes = 0) {
    options.dir = "/osd";
    options.io = &fio;
    options.kv = &kv;
    options.csum_block_bytes = 4096;
    // Two blocks per checksum key: writes that change part of a group
    // rewrite it from its committed checksums in the same batch.
    options.csum_group_blocks = 2;
    options.deferred_max_bytes = 8192;
    options.inline_max_bytes = inline_max_bytes;
    options.spare_keep_bytes = spare_keep_bytes;
    kv.SetWriteHook([this](const common::KvWriteBatch&, bool sync) {
      return fio.MaybeCrash(sync ? "kv-batch-sync" : "kv-batch");
    });
    REQUIRE(ObjectStore::Mkfs(options, "fsid", 0).ok());
  }
  std::unique_ptr<ObjectStore> Open() {
    auto store = ObjectStore::Open(options);
    INFO(store.status().ToString());
    REQUIRE(store.ok());
    return std::move(store).value();
  }
  void PowerLoss(LossMode mode, uint64_t seed) {
    fio.PowerLoss(mode, seed);
    // With options.sync every batch is synced; keep a random prefix of any
    // unsynced ones anyway.
    kv.SimulateCrash(mode == LossMode::kRandom ? seed % (kv.unsynced_batches() + 1) : 0);
  }

  FaultInjectionFileIo fio;
  common::MemKvStore kv;
  StoreOptions options;
};

// Everything the store holds, through its public API, as one string. Reads
// verify every checksum, so a torn or stale block fails here.
std::string Snapshot(ObjectStore& store) {
  std::string out;
  auto colls = store.ListCollections();
  REQUIRE(colls.ok());
  for (const std::string& coll : *colls) {
    absl::StrAppend(&out, "coll ", coll, "\n");
    auto meta_keys = store.ListMeta(coll, "");
    REQUIRE(meta_keys.ok());
    for (const auto& [key, value] : *meta_keys) {
      absl::StrAppend(&out, "  meta ", key, "=", value, "\n");
    }
    bool more = false;
    auto objects = store.ListObjects(coll, "", 1000, &more);
    REQUIRE(objects.ok());
    for (const auto& [oid, meta] : *objects) {
      auto data = store.Read(coll, oid, 0, UINT64_MAX);
      INFO(coll << "/" << oid << ": " << data.status().ToString());
      REQUIRE(data.ok());
      absl::StrAppend(&out, "  object ", oid, " size=", meta.size, " v=", meta.version.ToString(),
                      " data=", data->size(), ":", common::Checksum64(*data), "\n");
      auto xattrs = store.GetXattrs(coll, oid);
      REQUIRE(xattrs.ok());
      for (const auto& [name, value] : *xattrs) {
        absl::StrAppend(&out, "    xattr ", name, "=", value, "\n");
      }
      auto omap = store.OmapList(coll, oid, "", "", 1000, &more);
      REQUIRE(omap.ok());
      for (const auto& [key, value] : *omap) {
        absl::StrAppend(&out, "    omap ", key, "=", value, "\n");
      }
    }
  }
  return out;
}

Transaction Write(const std::string& oid, uint64_t offset, std::string data) {
  Transaction txn;
  txn.Write(oid, offset, std::move(data));
  return txn;
}

void MustApply(ObjectStore& store, Transaction txn, const std::string& coll = "1.0") {
  absl::Status status = store.Apply(coll, std::move(txn));
  INFO(status.ToString());
  REQUIRE(status.ok());
}

struct Scenario {
  std::string name;
  std::function<void(ObjectStore&)> setup;
  std::function<absl::Status(ObjectStore&)> victim;
  // Steps the victim must take, in this order (substrings of op names): the
  // proof that the interesting crash points exist.
  std::vector<std::string> steps;
  // Checks the new state directly (beyond "old or new").
  std::function<void(ObjectStore&)> check_new;
  uint64_t inline_max_bytes = 0;
  // Steps the victim must not take (substrings of op names).
  std::vector<std::string> absent = {};
  uint64_t spare_keep_bytes = 0;
};

// Whether `steps` occur in `log` in order.
bool HasSteps(const std::vector<std::string>& log, const std::vector<std::string>& steps) {
  size_t next = 0;
  for (const std::string& op : log) {
    if (next < steps.size() && op.find(steps[next]) != std::string::npos) ++next;
  }
  return next == steps.size();
}

void RunScenario(const Scenario& sc) {
  INFO("scenario: " << sc.name);
  // 1. A clean run: the victim's steps and the old and new contents.
  std::string old_snap, new_snap;
  int64_t victim_ops = 0;
  {
    Machine m(sc.inline_max_bytes, sc.spare_keep_bytes);
    std::unique_ptr<ObjectStore> store = m.Open();
    sc.setup(*store);
    old_snap = Snapshot(*store);
    const int64_t before = m.fio.ops();
    REQUIRE(sc.victim(*store).ok());
    victim_ops = m.fio.ops() - before;
    const std::vector<std::string> all = m.fio.op_log();
    const std::vector<std::string> log(all.end() - victim_ops, all.end());
    INFO("victim steps:\n  " << absl::StrJoin(log, "\n  "));
    CHECK(HasSteps(log, sc.steps));
    for (const std::string& step : sc.absent) {
      for (const std::string& op : log) CHECK(op.find(step) == std::string::npos);
    }
    new_snap = Snapshot(*store);
    if (sc.check_new) sc.check_new(*store);
    store.reset();
    store = m.Open();
    CHECK(Snapshot(*store) == new_snap);
  }
  // 2. A crash at every step, with three kinds of power loss.
  for (int64_t k = 0; k <= victim_ops; ++k) {
    for (uint64_t variant = 0; variant < 3; ++variant) {
      const LossMode mode = variant == 0 ? LossMode::kDropUnsynced : LossMode::kRandom;
      const uint64_t seed = static_cast<uint64_t>(k) * 3 + variant;
      INFO("crash at victim step " << k << " of " << victim_ops << ", loss variant " << variant);
      Machine m(sc.inline_max_bytes, sc.spare_keep_bytes);
      std::unique_ptr<ObjectStore> store = m.Open();
      sc.setup(*store);
      m.fio.CrashAtOp(m.fio.ops() + k);
      const absl::Status status = sc.victim(*store);
      store.reset();  // its close-time flush fails too: the machine is down
      m.PowerLoss(mode, seed);
      store = m.Open();
      const std::string snap = Snapshot(*store);
      if (status.ok()) {
        REQUIRE(snap == new_snap);
      } else {
        INFO("victim failed with " << status.ToString());
        REQUIRE((snap == old_snap || snap == new_snap));
      }
      const absl::Status fsck = store->Fsck(/*deep=*/true);
      INFO(fsck.ToString());
      REQUIRE(fsck.ok());
      // The recovered store works, and recovery was complete.
      MustApply(*store, Write("after-crash", 0, "ok"));
      store.reset();
      store = m.Open();
      REQUIRE(store->Fsck(true).ok());
    }
  }
}

// --- Scenarios ---

const std::string kOld = Pattern(10000, 1);  // 2 full blocks and a short one

void SetupOne(ObjectStore& store) {
  Transaction txn;
  txn.WriteFull("o", kOld);
  txn.SetXattr("o", "x", "old");
  txn.OmapSet("o", {{"k", "old"}});
  MustApply(store, std::move(txn));
  MustApply(store, Write("bystander", 0, Pattern(5000, 2)), "1.1");
}

absl::Status ApplyTo(ObjectStore& store, Transaction txn) {
  return store.Apply("1.0", std::move(txn));
}

// A victim that writes `data` at `offset` of `oid` in collection 1.0.
std::function<absl::Status(ObjectStore&)> VictimWrite(const std::string& oid, uint64_t offset,
                                                      std::string data) {
  return [oid, offset, data](ObjectStore& store) {
    return ApplyTo(store, Write(oid, offset, data));
  };
}

void CheckData(ObjectStore& store, const std::string& oid, const std::string& expect) {
  auto data = store.Read("1.0", oid, 0, UINT64_MAX);
  REQUIRE(data.ok());
  CHECK(*data == expect);
}

// What the store asks the file system to reserve (RandomFile::Preallocate):
// the new bytes of a file written all through, never a hole. The POSIX
// file's side (space reserved, size and bytes unchanged) is checked in
// object_store_test.
TEST_CASE("The store reserves space for bytes it writes and for no hole", "[crash]") {
  constexpr uint64_t kMiB = 1 << 20;
  Machine m;
  auto store = m.Open();
  auto apply = [&](const std::string& oid, uint64_t offset, std::string data) {
    Transaction txn;
    txn.Write(oid, offset, std::move(data));
    REQUIRE(store->Apply("1.0", std::move(txn)).ok());
  };
  auto reserved = [&, before = uint64_t{0}]() mutable {
    const uint64_t now = m.fio.preallocated_bytes();
    const uint64_t delta = now - before;
    before = now;
    return delta;
  };
  apply("dense", 0, Pattern(4 * kMiB + 100, 1));
  CHECK(reserved() == 4 * kMiB + 100);
  std::string holed = Pattern(4 * kMiB, 2);
  std::fill_n(holed.begin() + kMiB, kMiB, '\0');
  apply("holed", 0, holed);
  CHECK(reserved() == 0);
  apply("small", 0, Pattern(100 << 10, 3));
  CHECK(reserved() == 0);  // below the threshold: one write anyway
  apply("dense", 4 * kMiB + 100, Pattern(kMiB, 4));  // an append
  CHECK(reserved() == kMiB);
  apply("dense", 100 * kMiB, "tail");  // far past the end: a hole
  CHECK(reserved() == 0);
}

TEST_CASE("Crash while creating an object", "[crash]") {
  RunScenario({"create", SetupOne,
               [](ObjectStore& store) {
                 Transaction txn;
                 txn.WriteFull("new", Pattern(10000, 3));
                 txn.SetXattr("new", "x", "1");
                 txn.OmapSet("new", {{"a", "1"}, {"b", "2"}});
                 txn.SetVersion("new", Version{5, 1}, 123);
                 txn.PutMeta("log.1", "create new");
                 return ApplyTo(store, std::move(txn));
               },
               {"create /osd/data/", "write /osd/data/", "sync /osd/data/", "syncdir /osd/data",
                "kv-batch-sync"},
               [](ObjectStore& store) { CheckData(store, "new", Pattern(10000, 3)); }});
}

// SetupOne, and a 30000-byte object removed: its file is the one spare.
void SetupSpare(ObjectStore& store) {
  SetupOne(store);
  MustApply(store, Write("gone", 0, Pattern(30000, 30)));
  Transaction rm;
  rm.Remove("gone");
  MustApply(store, std::move(rm));
  REQUIRE(store.spare_files() == 1);
}

TEST_CASE("Crash while creating an object in a spare file", "[crash]") {
  // The removed object's file is kept, empty, and the new object is written
  // into it: no create and no directory sync, yet every crash leaves the old
  // or the new state (a spare is referenced by nothing until the commit).
  RunScenario({"create in spare",
               SetupSpare,
               [](ObjectStore& store) {
                 Transaction txn;
                 txn.Write("new", 4096, Pattern(10000, 31));
                 txn.SetXattr("new", "x", "1");
                 return ApplyTo(store, std::move(txn));
               },
               {"write /osd/data/", "truncate /osd/data/", "sync /osd/data/", "kv-batch-sync"},
               [](ObjectStore& store) {
                 CHECK(store.spare_files() == 0);
                 CheckData(store, "new", std::string(4096, '\0') + Pattern(10000, 31));
               },
               /*inline_max_bytes=*/0,
               /*absent=*/{"create ", "syncdir"}});
}

TEST_CASE("Crash while creating an object in a spare file that kept an old object's blocks",
          "[crash]") {
  // The removed object's file keeps its 30000 bytes (spare_keep_bytes); the
  // new object, longer and with a hole at its start, is written over them
  // (its hole as zeros) before the commit, so no crash shows old bytes in
  // the new object.
  RunScenario({"create in a spare with blocks",
               [](ObjectStore& store) {
                 SetupSpare(store);
                 REQUIRE(store.spare_bytes() == 30000);
               },
               [](ObjectStore& store) {
                 Transaction txn;
                 txn.Write("new", 20480, Pattern(12000, 31));
                 return ApplyTo(store, std::move(txn));
               },
               {"write /osd/data/", "truncate /osd/data/", "sync /osd/data/", "kv-batch-sync"},
               [](ObjectStore& store) {
                 CHECK(store.spare_files() == 0);
                 CHECK(store.spare_bytes() == 0);
                 CheckData(store, "new", std::string(20480, '\0') + Pattern(12000, 31));
                 CHECK(store.Fsck(true).ok());
               },
               /*inline_max_bytes=*/0,
               /*absent=*/{"create ", "syncdir"},
               /*spare_keep_bytes=*/1 << 20});
}

TEST_CASE("Crash while replacing an object", "[crash]") {
  SECTION("WriteFull") {
    RunScenario({"replace", SetupOne,
                 [](ObjectStore& store) {
                   Transaction txn;
                   txn.WriteFull("o", Pattern(7000, 4));
                   txn.SetXattr("o", "x", "new");
                   return ApplyTo(store, std::move(txn));
                 },
                 {"create", "write", "sync /osd/data/", "syncdir", "kv-batch-sync",
                  "truncate /osd/data/"},
                 [](ObjectStore& store) { CheckData(store, "o", Pattern(7000, 4)); }});
  }
  SECTION("a write from 0 covering the object") {
    RunScenario({"covering write", SetupOne,
                 VictimWrite("o", 0, Pattern(12000, 5)),
                 {"create", "write", "sync", "syncdir", "kv-batch-sync", "truncate"},
                 [](ObjectStore& store) { CheckData(store, "o", Pattern(12000, 5)); }});
  }
  SECTION("an overwrite too big to defer") {
    RunScenario({"big overwrite", SetupOne,
                 VictimWrite("o", 500, Pattern(9000, 6)),
                 {"create", "write", "sync", "syncdir", "kv-batch-sync", "truncate"},
                 [](ObjectStore& store) {
                   std::string expect = kOld;
                   expect.replace(500, 9000, Pattern(9000, 6));
                   CheckData(store, "o", expect);
                 }});
  }
}

TEST_CASE("Crash while appending", "[crash]") {
  SECTION("append") {
    RunScenario({"append", SetupOne,
                 VictimWrite("o", 10000, Pattern(5000, 7)),
                 {"truncate /osd/data/", "write /osd/data/", "sync /osd/data/", "kv-batch-sync"},
                 [](ObjectStore& store) { CheckData(store, "o", kOld + Pattern(5000, 7)); }});
  }
  SECTION("write past the end with a hole") {
    RunScenario({"hole", SetupOne,
                 [](ObjectStore& store) { return ApplyTo(store, Write("o", 20000, "tail")); },
                 {"truncate", "write", "truncate", "sync", "kv-batch-sync"},
                 [](ObjectStore& store) {
                   CheckData(store, "o", kOld + std::string(10000, '\0') + "tail");
                 }});
  }
  SECTION("append after a deferred overwrite that is not flushed yet") {
    RunScenario({"append after deferred",
                 [](ObjectStore& store) {
                   SetupOne(store);
                   MustApply(store, Write("o", 100, std::string(50, 'D')));
                 },
                 [](ObjectStore& store) { return ApplyTo(store, Write("o", 10000, "more")); },
                 // The file is synced and its records dropped before the extension.
                 {"sync /osd/data/", "truncate", "write", "sync /osd/data/", "kv-batch-sync"},
                 [](ObjectStore& store) {
                   std::string expect = kOld + "more";
                   expect.replace(100, 50, std::string(50, 'D'));
                   CheckData(store, "o", expect);
                 }});
  }
  SECTION("regrow after a truncate, over a pending deferred record") {
    // The record for bytes 8000..8100 is still pending when the object is cut
    // to 3000 and regrown: replaying it would resurrect old bytes.
    RunScenario({"regrow",
                 [](ObjectStore& store) {
                   SetupOne(store);
                   MustApply(store, Write("o", 8000, std::string(100, 'R')));
                   Transaction cut;
                   cut.Truncate("o", 3000);
                   MustApply(store, std::move(cut));
                 },
                 [](ObjectStore& store) {
                   Transaction grow;
                   grow.Truncate("o", 9000);
                   return ApplyTo(store, std::move(grow));
                 },
                 {"sync /osd/data/", "truncate", "sync /osd/data/", "kv-batch-sync"},
                 [](ObjectStore& store) {
                   CheckData(store, "o", kOld.substr(0, 3000) + std::string(6000, '\0'));
                 }});
  }
}

TEST_CASE("Crash while objects move between inline data and files", "[crash]") {
  constexpr uint64_t kInline = 16384;  // kOld (10000 bytes) starts inline
  SECTION("an inline overwrite") {
    RunScenario({"inline overwrite", SetupOne, VictimWrite("o", 2000, Pattern(3000, 20)),
                 {"kv-batch-sync"},
                 [](ObjectStore& store) {
                   std::string expect = kOld;
                   expect.replace(2000, 3000, Pattern(3000, 20));
                   CheckData(store, "o", expect);
                 },
                 kInline});
  }
  SECTION("inline data outgrows the limit") {
    RunScenario({"inline to file", SetupOne, VictimWrite("o", 20000, Pattern(5000, 21)),
                 {"create /osd/data/", "write /osd/data/", "sync /osd/data/", "syncdir",
                  "kv-batch-sync"},
                 [](ObjectStore& store) {
                   CheckData(store, "o", kOld + std::string(10000, '\0') + Pattern(5000, 21));
                 },
                 kInline});
  }
  SECTION("a file shrinks under the limit") {
    RunScenario({"file to inline",
                 [](ObjectStore& store) {
                   SetupOne(store);
                   MustApply(store, Write("o", 10000, Pattern(20000, 22)));
                 },
                 [](ObjectStore& store) {
                   Transaction cut;
                   cut.Truncate("o", 4000);
                   cut.SetXattr("o", "x", "cut");
                   return ApplyTo(store, std::move(cut));
                 },
                 {"kv-batch-sync", "truncate /osd/data/"},
                 [](ObjectStore& store) { CheckData(store, "o", kOld.substr(0, 4000)); },
                 kInline});
  }
  SECTION("an inline object removed") {
    RunScenario({"inline remove", SetupOne,
                 [](ObjectStore& store) {
                   Transaction txn;
                   txn.Remove("o");
                   txn.PutMeta("log.2", "remove o");
                   return ApplyTo(store, std::move(txn));
                 },
                 {"kv-batch-sync"},
                 [](ObjectStore& store) {
                   CHECK(absl::IsNotFound(store.Read("1.0", "o", 0, 1).status()));
                 },
                 kInline});
  }
}

TEST_CASE("Crash during a small overwrite", "[crash]") {
  SECTION("inside one block") {
    RunScenario({"small overwrite", SetupOne,
                 [](ObjectStore& store) { return ApplyTo(store, Write("o", 5000, "hello world")); },
                 // Committed with the record, then applied to the file.
                 {"kv-batch-sync", "write /osd/data/"},
                 [](ObjectStore& store) {
                   std::string expect = kOld;
                   expect.replace(5000, 11, "hello world");
                   CheckData(store, "o", expect);
                 }});
  }
  SECTION("across blocks and the end") {
    RunScenario({"overwrite crossing the end", SetupOne,
                 VictimWrite("o", 4000, Pattern(7000, 8)),
                 {"truncate", "write", "sync /osd/data/", "kv-batch-sync", "write /osd/data/"},
                 [](ObjectStore& store) {
                   CheckData(store, "o", kOld.substr(0, 4000) + Pattern(7000, 8));
                 }});
  }
  SECTION("truncate down") {
    RunScenario({"shrink", SetupOne,
                 [](ObjectStore& store) {
                   Transaction txn;
                   txn.Truncate("o", 5000);
                   return ApplyTo(store, std::move(txn));
                 },
                 {"kv-batch-sync", "truncate /osd/data/"},
                 [](ObjectStore& store) { CheckData(store, "o", kOld.substr(0, 5000)); }});
  }
}

TEST_CASE("Crash during remove and multi-object transactions", "[crash]") {
  SECTION("remove") {
    RunScenario({"remove", SetupOne,
                 [](ObjectStore& store) {
                   Transaction txn;
                   txn.Remove("o");
                   return ApplyTo(store, std::move(txn));
                 },
                 {"kv-batch-sync", "truncate /osd/data/"}, nullptr});
  }
  SECTION("every path in one transaction") {
    auto setup = [](ObjectStore& store) {
      SetupOne(store);
      for (const char* oid : {"a", "b", "c"}) {
        MustApply(store, Write(oid, 0, Pattern(9000, oid[0])));
      }
    };
    RunScenario({"multi", setup,
                 [](ObjectStore& store) {
                   Transaction txn;
                   txn.WriteFull("o", Pattern(3000, 9));      // new file
                   txn.Write("a", 4090, "small");             // deferred, two blocks
                   txn.Write("b", 9000, Pattern(2000, 10));   // in-place append
                   txn.Remove("c");                           // removal
                   txn.Write("d", 0, "created");              // creation
                   txn.OmapSet("o", {{"k", "new"}});
                   txn.PutMeta("info", "v2");
                   return ApplyTo(store, std::move(txn));
                 },
                 {"create", "sync", "syncdir", "kv-batch-sync", "write /osd/data/", "truncate"},
                 nullptr});
  }
  SECTION("remove collection") {
    RunScenario({"remove collection", SetupOne,
                 [](ObjectStore& store) { return store.RemoveCollection("1.0"); },
                 {"kv-batch-sync", "truncate"}, nullptr});
  }
}

TEST_CASE("Crash while flushing deferred writes", "[crash]") {
  RunScenario({"flush",
               [](ObjectStore& store) {
                 SetupOne(store);
                 MustApply(store, Write("o", 10, "first"));
                 MustApply(store, Write("o", 8000, "second"));
                 MustApply(store, Write("o", 12, "third, overlapping the first"));
               },
               [](ObjectStore& store) { return store.Flush(); },
               {"sync /osd/data/", "kv-batch-sync"}, nullptr});
}

TEST_CASE("Crash while recovering", "[crash]") {
  // Leave deferred records to replay and an orphan: crash after a small
  // overwrite committed but before its file write was synced, and after a
  // replacement committed but before the old file was retired.
  auto prepare = [](Machine& m) {
    std::unique_ptr<ObjectStore> store = m.Open();
    SetupOne(*store);
    MustApply(*store, Write("o", 6000, "deferred"));
    // The replacement's create, write, truncate, sync, syncdir and commit go
    // through; its retirement of the old file does not.
    m.fio.CrashAtOp(m.fio.ops() + 6);
    // A failed retirement after commit only leaves an orphan: the Apply succeeds.
    CHECK(store->Apply("1.1", Write("bystander", 0, Pattern(6000, 11))).ok());
    CHECK(m.fio.crashed());
    store.reset();
    m.PowerLoss(LossMode::kDropUnsynced, 0);
  };
  int64_t open_ops = 0;
  std::string expect;
  {
    Machine m;
    prepare(m);
    const int64_t before = m.fio.ops();
    std::unique_ptr<ObjectStore> store = m.Open();
    open_ops = m.fio.ops() - before;
    expect = Snapshot(*store);
    CHECK(expect.find("data=10000") != std::string::npos);
    CHECK(expect.find("data=6000") != std::string::npos);  // the replacement committed
  }
  REQUIRE(open_ops >= 3);  // replay write, sync, record delete, orphan truncate
  for (int64_t k = 0; k < open_ops; ++k) {
    INFO("crash at recovery step " << k);
    Machine m;
    prepare(m);
    m.fio.CrashAtOp(m.fio.ops() + k);
    CHECK_FALSE(ObjectStore::Open(m.options).ok());
    m.PowerLoss(LossMode::kRandom, static_cast<uint64_t>(k));
    std::unique_ptr<ObjectStore> store = m.Open();
    REQUIRE(Snapshot(*store) == expect);
    REQUIRE(store->Fsck(true).ok());
  }
}

TEST_CASE("A failed fsync makes the store read-only", "[crash]") {
  Machine m;
  std::unique_ptr<ObjectStore> store = m.Open();
  SetupOne(*store);
  const std::string old_snap = Snapshot(*store);
  m.fio.FailSyncAt(0);
  absl::Status failed = store->Apply("1.0", Write("o", 0, Pattern(20000, 12)));
  REQUIRE(absl::IsDataLoss(failed));
  CHECK(failed.message().find("fdatasync") != absl::string_view::npos);
  // Sticky: later writes fail with the same error, even harmless ones.
  absl::Status later = store->Apply("1.0", Write("other", 0, "x"));
  CHECK(later.code() == failed.code());
  CHECK(later.message().find("read-only") != absl::string_view::npos);
  CHECK(later.message().find("fdatasync") != absl::string_view::npos);
  CHECK(store->sticky_error().code() == failed.code());
  CHECK(store->RemoveCollection("1.1").code() == failed.code());
  // Reads still serve the committed data.
  CHECK(Snapshot(*store) == old_snap);
  // Reopening recovers: the failed write never committed; its file is gone.
  store.reset();
  m.PowerLoss(LossMode::kDropUnsynced, 0);
  store = m.Open();
  CHECK(Snapshot(*store) == old_snap);
  CHECK(store->Fsck(true).ok());
  MustApply(*store, Write("other", 0, "x"));
}

TEST_CASE("A failed deferred apply fences the object until reopen", "[crash]") {
  Machine m;
  std::unique_ptr<ObjectStore> store = m.Open();
  SetupOne(*store);
  // Ops of a small overwrite: the KV batch, then the file write.
  m.fio.CrashAtOp(m.fio.ops() + 1);
  CHECK_FALSE(store->Apply("1.0", Write("o", 5000, "zzz")).ok());
  m.fio.PowerLoss(LossMode::kDropUnsynced, 0);  // the disk is back; the store stays failed
  // The committed write is not in the file: reading it would return stale data.
  CHECK_FALSE(store->Read("1.0", "o", 0, 10).ok());
  CHECK(store->Read("1.1", "bystander", 0, 10).ok());
  store.reset();
  store = m.Open();
  std::string expect = kOld;
  expect.replace(5000, 3, "zzz");
  CHECK(*store->Read("1.0", "o", 0, UINT64_MAX) == expect);
}

TEST_CASE("FaultInjectionFileIo drops what was not synced", "[crash]") {
  FaultInjectionFileIo fio;
  REQUIRE(fio.CreateDir("/d").ok());
  {
    auto file = fio.OpenFile("/d/f", OpenMode::kCreate);
    REQUIRE(file.ok());
    REQUIRE((*file)->Write(0, "synced").ok());
    REQUIRE((*file)->Sync().ok());
    REQUIRE((*file)->Write(0, "XX").ok());
    REQUIRE((*file)->Write(6, "-unsynced").ok());
  }
  CHECK(*fio.ReadAll("/d/f") == "XXnced-unsynced");
  fio.PowerLoss(LossMode::kDropUnsynced);
  CHECK(absl::IsNotFound(fio.ReadAll("/d/f").status()));  // the entry was never synced
  {
    auto file = fio.OpenFile("/d/g", OpenMode::kCreate);
    REQUIRE(file.ok());
    REQUIRE((*file)->Write(0, "data").ok());
    REQUIRE((*file)->Sync().ok());
    REQUIRE(fio.SyncDir("/d").ok());
    REQUIRE((*file)->Write(0, "DA").ok());
  }
  REQUIRE(fio.RemoveFile("/d/g").ok());
  fio.PowerLoss(LossMode::kDropUnsynced);
  CHECK(*fio.ReadAll("/d/g") == "data");  // unlink and overwrite both lost

  fio.CrashAtOp(fio.ops() + 1);
  auto file = fio.OpenFile("/d/g", OpenMode::kReadWrite);
  REQUIRE(file.ok());
  CHECK((*file)->Write(0, "1234").ok());
  CHECK(absl::IsUnavailable((*file)->Write(4, "5678")));  // dies, landing "56"
  CHECK(fio.crashed());
  CHECK(absl::IsUnavailable((*file)->Sync()));
  fio.PowerLoss(LossMode::kDropUnsynced);
  CHECK_FALSE(fio.crashed());
  CHECK(*fio.ReadAll("/d/g") == "data");
}

}  // namespace
}  // namespace weft::osd
