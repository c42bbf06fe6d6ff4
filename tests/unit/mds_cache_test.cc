// Unit tests of the MDS's pure parts: names and fragments, journal framing,
// and the cache's overlay, replay and flush bookkeeping.
#include <catch2/catch.hpp>

#include <cerrno>
#include <random>
#include <set>

#include "common/status/status.h"
#include "mds/cache/meta_cache.h"
#include "mds/fs/names.h"
#include "mds/store/meta_store.h"
#include "mds/journal/journal_format.h"

namespace weft::mds {
namespace {

// Applies a stored event as replay does: decoded (EventOf), then applied.
void ApplyRecord(MetaCache& cache, const pb::JournalEvent& record) {
  absl::StatusOr<Event> event = EventOf(record);
  REQUIRE(event.ok());
  cache.Apply(*event);
}

TEST_CASE("mds names: validation errors are the ones Linux gives") {
  CHECK(ValidateName("ok").ok());
  CHECK(ValidateName(std::string(255, 'x')).ok());
  CHECK(StatusToErrno(ValidateName(std::string(256, 'x'))) == ENAMETOOLONG);
  for (std::string bad : {"", ".", "..", "a/b", "/"}) {
    INFO(bad);
    CHECK(StatusToErrno(ValidateName(bad)) == EINVAL);
  }
  CHECK(StatusToErrno(ValidateName(std::string("a\0b", 3))) == EINVAL);
}

TEST_CASE("mds fragments: every hash has exactly one leaf - splits partition their parent") {
  std::vector<Frag> frags = {kRootFrag};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40; ++i) {
    Frag victim = frags[rng() % frags.size()];
    std::erase(frags, victim);
    auto [a, b] = SplitFrag(victim);
    CHECK(FragStart(a) == FragStart(victim));
    CHECK(FragEnd(a) == FragStart(b));
    CHECK(FragEnd(b) == FragEnd(victim));
    frags.push_back(a);
    frags.push_back(b);
  }
  std::vector<Frag> sorted = SortedFrags(frags);
  CHECK(FragStart(sorted.front()) == 0);
  CHECK(FragEnd(sorted.back()) == (uint64_t{1} << 63));
  for (size_t i = 1; i < sorted.size(); ++i) CHECK(FragEnd(sorted[i - 1]) == FragStart(sorted[i]));
  for (int i = 0; i < 10000; ++i) {
    uint64_t h = NameHash("name" + std::to_string(i));
    CHECK(h >= 3);
    CHECK(h < (uint64_t{1} << 63));
    int holders = 0;
    for (Frag f : frags) holders += FragContains(f, h);
    CHECK(holders == 1);
    CHECK(FragContains(FragFor(frags, h), h));
  }
}

TEST_CASE("mds journal frames: a torn or corrupt tail ends the segment") {
  std::string seg;
  AppendFrame("first", &seg);
  AppendFrame("second", &seg);
  const size_t two = seg.size();
  AppendFrame("third", &seg);
  size_t valid = 0;
  CHECK(ParseFrames(seg, &valid) == std::vector<std::string>{"first", "second", "third"});
  CHECK(valid == seg.size());
  std::string torn = seg.substr(0, seg.size() - 2);
  CHECK(ParseFrames(torn, &valid).size() == 2);
  CHECK(valid == two);
  std::string corrupt = seg;
  corrupt[two + 9] ^= 1;
  CHECK(ParseFrames(corrupt, &valid).size() == 2);
  CHECK(valid == two);
  std::string hole = seg.substr(0, two) + std::string(64, '\0') + seg.substr(two);
  CHECK(ParseFrames(hole, &valid).size() == 2);
  CHECK(valid == two);
}

pb::InodeRec Dir(uint64_t ino) {
  pb::InodeRec rec;
  rec.set_ino(ino);
  rec.set_mode(0040755);
  rec.set_nlink(2);
  return rec;
}

pb::DentryRec Dentry(uint64_t dir, const std::string& name, uint64_t ino) {
  pb::DentryRec d;
  d.set_dir(dir);
  d.set_name(name);
  d.set_ino(ino);
  d.set_type(8);
  return d;
}

TEST_CASE("mds cache: replayed changes overlay fragments loaded later") {
  MetaCache cache(1, 0);
  pb::JournalEvent ev;
  ev.set_seq(1);
  *ev.add_dentries() = Dentry(kRootIno, "new", 5000);
  *ev.add_removed_dentries() = Dentry(kRootIno, "gone", 0);
  ApplyRecord(cache, ev);
  bool known = false;
  // The directory inode is not cached: absence is not certain yet.
  CHECK(cache.Lookup(kRootIno, "other", &known) == nullptr);
  CHECK_FALSE(known);
  CHECK(cache.Lookup(kRootIno, "gone", &known) == nullptr);
  CHECK(known);
  cache.MergeInode(Dir(kRootIno));
  // The fragment object still has "gone" and an old "new"; the overlay wins.
  cache.MergeFrag(kRootIno, kRootFrag,
                  {Dentry(kRootIno, "gone", 4001), Dentry(kRootIno, "new", 4002),
                   Dentry(kRootIno, "kept", 4003)});
  const CDentry* d = cache.Lookup(kRootIno, "new", &known);
  REQUIRE(d != nullptr);
  CHECK(d->ino == InodeId(5000));
  CHECK(cache.Lookup(kRootIno, "gone", &known) == nullptr);
  CHECK(known);
  REQUIRE(cache.Lookup(kRootIno, "kept", &known) != nullptr);
  CHECK(cache.Lookup(kRootIno, "never", &known) == nullptr);
  CHECK(known);  // the fragment is loaded now

  FlushBatch batch = cache.TakeDirty(1);
  const ObjectUpdate& u = batch.updates.at(DirFragObject(1, kRootIno, kRootFrag));
  CHECK(u.set.size() == 1);
  CHECK(u.set[0].first == "new");
  CHECK(u.rm == std::vector<std::string>{"gone"});
  CHECK(cache.TakeDirty(1).updates.empty());  // clean afterwards
}

TEST_CASE("mds cache: a split rewrites both halves and deletes the parent fragment") {
  MetaCache cache(2, 0);
  pb::InodeRec dir = Dir(100);
  cache.MergeInode(dir);
  std::vector<pb::DentryRec> entries;
  for (int i = 0; i < 50; ++i) entries.push_back(Dentry(100, "n" + std::to_string(i), 4096 + i));
  cache.MergeFrag(100, kRootFrag, entries);
  pb::JournalEvent ev;
  ev.set_seq(1);
  auto [a, b] = SplitFrag(kRootFrag);
  dir.add_frags(a);
  dir.add_frags(b);
  *ev.add_inodes() = dir;
  ev.add_splits()->set_dir(100);
  ev.mutable_splits(0)->set_frag(kRootFrag);
  for (const auto& e : entries) *ev.add_dentries() = e;
  ApplyRecord(cache, ev);
  FlushBatch batch = cache.TakeDirty(1);
  CHECK(batch.updates.at(DirFragObject(2, 100, kRootFrag)).remove);
  const ObjectUpdate& ua = batch.updates.at(DirFragObject(2, 100, a));
  const ObjectUpdate& ub = batch.updates.at(DirFragObject(2, 100, b));
  CHECK(ua.clear);
  CHECK(ub.clear);
  CHECK(ua.set.size() + ub.set.size() == 50);
  CHECK(!ua.set.empty());  // 50 hashed names: both halves get some
  CHECK(!ub.set.empty());
  for (const auto& [name, value] : ua.set) CHECK(FragContains(a, NameHash(name)));
  for (const auto& [name, value] : ub.set) CHECK(FragContains(b, NameHash(name)));
  CHECK(cache.FragLoaded(100, a));
  CHECK(cache.FragCount(100, a) + cache.FragCount(100, b) == 50);
}

pb::InodeRec File(uint64_t ino, uint64_t size) {
  pb::InodeRec rec;
  rec.set_ino(ino);
  rec.set_mode(0100644);
  rec.set_nlink(1);
  rec.set_size(size);
  return rec;
}

// The flusher takes a batch, waits for the journal and then writes the
// objects, with the rank's lock released; the janitor trims meanwhile. What
// the batch holds must stay cached until the store has it.
TEST_CASE("mds cache: a flush in flight keeps what it took cached until the store has it") {
  MetaCache cache(4, 0);
  cache.MergeInode(Dir(kRootIno));
  cache.MergeFrag(kRootIno, kRootFrag, {Dentry(kRootIno, "old", 4000)});
  cache.MergeInode(File(4000, 10));
  cache.MergeInode(File(4001, 10));  // clean and unrelated: the trim may drop it
  pb::JournalEvent ev;
  ev.set_seq(1);
  *ev.add_inodes() = File(5000, 123);
  *ev.add_dentries() = Dentry(kRootIno, "new", 5000);
  ev.add_removed_inodes(4000);
  *ev.add_removed_dentries() = Dentry(kRootIno, "old", 4000);
  ApplyRecord(cache, ev);

  FlushBatch batch = cache.TakeDirty(1);
  REQUIRE(batch.updates.size() >= 2);
  cache.Trim(0, {});
  CHECK(cache.Inode(4001) == nullptr);
  REQUIRE(cache.Inode(5000) != nullptr);
  CHECK(cache.Inode(5000)->inode.size == 123);
  bool known = false;
  const CDentry* d = cache.Lookup(kRootIno, "new", &known);
  REQUIRE(d != nullptr);
  CHECK(d->ino == InodeId(5000));
  CHECK(cache.Lookup(kRootIno, "old", &known) == nullptr);
  CHECK(known);
  // A load that read the table before the batch reached it finds the
  // removed inode still there: it must not come back.
  CHECK(cache.InodeRemoved(4000));
  cache.MergeInode(File(4000, 10));
  CHECK(cache.Inode(4000) == nullptr);
  CHECK(cache.DirtyDirsWithoutInode().empty());

  cache.FlushApplied();
  CHECK(cache.TakeDirty(1).updates.empty());
  cache.Trim(0, {});
  CHECK(cache.Inode(5000) == nullptr);
  CHECK(cache.Lookup(kRootIno, "new", &known) == nullptr);
  CHECK_FALSE(known);  // dropped: the next lookup loads the stored fragment
  cache.MergeInode(File(5000, 123));  // as the store now has it
  CHECK(cache.Inode(5000)->inode.size == 123);
}

// Which keys of the inode table a flush writes for `ino`.
std::vector<std::string> KeysSet(const FlushBatch& batch, uint32_t fs, uint64_t ino) {
  std::vector<std::string> keys;
  auto it = batch.updates.find(InodeTableObject(fs, ino));
  if (it == batch.updates.end()) return keys;
  for (const auto& [key, value] : it->second.set) keys.push_back(key);
  return keys;
}

TEST_CASE("mds cache: a flush writes inline bytes only when they changed") {
  MetaCache cache(4, 0);
  pb::InodeRec rec = File(6000, 5);
  rec.set_data_inline(true);
  rec.set_inline_version(1);
  rec.set_inline_data("hello");
  pb::JournalEvent ev;
  ev.set_seq(1);
  *ev.add_inodes() = rec;
  ApplyRecord(cache, ev);
  FlushBatch first = cache.TakeDirty(1);
  CHECK(KeysSet(first, 4, 6000) == std::vector<std::string>{InodeKey(6000), InlineKey(6000)});
  cache.FlushApplied();

  // An atime (any attribute) alone: the event has no bytes, the cache keeps
  // them, and the flush writes the inode without them.
  pb::InodeRec touched = rec;
  touched.clear_inline_data();
  touched.set_atime_ns(123);
  pb::JournalEvent ev2;
  ev2.set_seq(2);
  *ev2.add_inodes() = touched;
  ApplyRecord(cache, ev2);
  CHECK(cache.Inode(6000)->inode.inline_data == "hello");
  FlushBatch second = cache.TakeDirty(2);
  CHECK(KeysSet(second, 4, 6000) == std::vector<std::string>{InodeKey(6000)});
  cache.FlushApplied();

  // New bytes, then an attribute change before the flush: the bytes go.
  pb::InodeRec written = rec;
  written.set_inline_version(2);
  written.set_inline_data("world!");
  pb::JournalEvent ev3;
  ev3.set_seq(3);
  *ev3.add_inodes() = written;
  ApplyRecord(cache, ev3);
  pb::InodeRec chmod = written;
  chmod.clear_inline_data();
  chmod.set_mode(0100600);
  pb::JournalEvent ev4;
  ev4.set_seq(4);
  *ev4.add_inodes() = chmod;
  ApplyRecord(cache, ev4);
  FlushBatch third = cache.TakeDirty(4);
  CHECK(KeysSet(third, 4, 6000) == std::vector<std::string>{InodeKey(6000), InlineKey(6000)});
}

TEST_CASE("mds cache: fragment counts follow creates - removes and splits") {
  MetaCache cache(4, 0);
  const auto [low, high] = SplitFrag(kRootFrag);
  // What FragCount must say: the entries whose hash the fragment holds.
  auto walked = [&cache](Frag f) {
    size_t n = 0;
    for (const auto& [hash, name] : cache.Dir(100)->by_hash) n += FragContains(f, hash) ? 1 : 0;
    return n;
  };
  std::mt19937_64 rng(11);
  std::set<std::string> names;
  uint64_t seq = 0;
  for (int round = 0; round < 6; ++round) {
    pb::JournalEvent ev;
    ev.set_seq(++seq);
    std::set<std::string> touched;  // an event names a dentry once
    for (int i = 0; i < 300; ++i) {
      const std::string name = "n" + std::to_string(rng() % 2000);
      if (!touched.insert(name).second) continue;
      if (names.insert(name).second) {
        *ev.add_dentries() = Dentry(100, name, 5000 + rng() % 100000);
      } else {
        names.erase(name);
        pb::DentryRec* gone = ev.add_removed_dentries();
        gone->set_dir(100);
        gone->set_name(name);
      }
    }
    ApplyRecord(cache, ev);
    // Counted (and kept) from the second round on, the halves from the fourth.
    for (Frag f : {kRootFrag, low, high}) {
      if (round < 1 || (f != kRootFrag && round < 3)) continue;
      INFO("round " << round << " frag bits " << FragBits(f));
      CHECK(cache.FragCount(100, f) == walked(f));
    }
  }
  CHECK(cache.FragCount(100, kRootFrag) == names.size());
  // A split forgets the parent's count; the halves' stay right.
  pb::JournalEvent split;
  split.set_seq(++seq);
  split.add_splits()->set_dir(100);
  split.mutable_splits(0)->set_frag(kRootFrag);
  ApplyRecord(cache, split);
  CHECK(cache.Dir(100)->counts.count(kRootFrag) == 0);
  CHECK(cache.FragCount(100, low) + cache.FragCount(100, high) == names.size());
}

TEST_CASE("mds cache: pending trims merge - persist in their table - and reload") {
  MetaCache cache(4, 0);
  auto trim = [](uint64_t ino, uint64_t keep, uint64_t size) {
    pb::TrimRec t;
    t.set_ino(ino);
    t.set_keep(keep);
    t.set_size(size);
    t.mutable_layout()->set_object_size(65536);
    return t;
  };
  pb::JournalEvent ev;
  ev.set_seq(1);
  *ev.add_trim_add() = trim(7000, 100, 5000);
  *ev.add_trim_add() = trim(7001, 0, 10);
  ApplyRecord(cache, ev);
  // A second truncate of the same file before the first's cut is recorded
  // done: one cut covering both ranges.
  pb::JournalEvent again;
  again.set_seq(2);
  *again.add_trim_add() = trim(7000, 50, 3000);
  ApplyRecord(cache, again);
  REQUIRE(cache.trims().size() == 2);
  CHECK(cache.trims().at(7000).keep == 50);
  CHECK(cache.trims().at(7000).size == 5000);

  FlushBatch first = cache.TakeDirty(2);
  const ObjectUpdate& rows = first.updates.at(TableObject(4, 0, "trims"));
  CHECK(rows.set.size() == 2);
  CHECK(rows.rm.empty());
  std::map<std::string, std::string> table;
  for (const auto& [key, value] : rows.set) table[key] = value;
  cache.FlushApplied();

  pb::JournalEvent done;
  done.set_seq(3);
  done.add_trim_done(7001);
  ApplyRecord(cache, done);
  CHECK(!cache.trims().contains(7001));
  FlushBatch second = cache.TakeDirty(3);
  CHECK(second.updates.at(TableObject(4, 0, "trims")).rm == std::vector<std::string>{InodeKey(7001)});

  // A restart finds the pending trims in the table.
  MetaCache restarted(4, 0);
  restarted.LoadTables({}, {}, table, {});
  REQUIRE(restarted.trims().size() == 2);
  CHECK(restarted.trims().at(7000).keep == 50);
  CHECK(restarted.trims().at(7001).size == 10);
}

}  // namespace
}  // namespace weft::mds
