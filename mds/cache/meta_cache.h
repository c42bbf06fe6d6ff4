// The rank's in-memory metadata: inodes, directory entries, strays, the purge
// queue and pending truncates, with what is dirty since the last flush.
// (Sessions are their own owner: mds/sessions/sessions.h.)
//
// Not thread-safe: the rank's mutex guards it (MdsRank::mu_). No I/O here:
// what is missing is loaded by the rank (without its lock) and merged in.
//
// Directories keep their entries as an overlay over the fragment objects:
// `entries` and `removed` say what is known; a fragment is "loaded" once its
// object has been read and merged, and only loaded fragments may be listed or
// trusted for a negative lookup. Journal replay needs no reads: it applies
// events to the overlay.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "mds/fs/names.h"
#include "mds/ids.h"
#include "mds/inode.h"
#include "mds/journal/event.h"
#include "mds/store/meta_store.h"
#include "mds/store/records.pb.h"

namespace weft::mds {

struct CDentry {
  InodeId ino;
  uint32_t type = 0;
};

struct CDir {
  absl::btree_map<std::string, CDentry> entries;
  absl::btree_map<uint64_t, std::string> by_hash;   // readdir order; change through Add/EraseHash
  // Entries per fragment, for the fragments counted so far (MetaCache::
  // FragCount): kept up to date by AddHash and EraseHash, so that a create
  // in a directory past the split size does not walk a whole fragment.
  absl::btree_map<Frag, size_t> counts;
  absl::flat_hash_set<std::string> removed;         // known absent, fragment not loaded
  std::set<Frag> loaded;
  absl::flat_hash_set<std::string> dirty;            // changed names since the last flush
  std::set<Frag> rewrite;                            // write whole (after a split)
  std::set<Frag> dead;                               // fragment objects to delete
  uint64_t last_used = 0;
  bool Dirty() const { return !dirty.empty() || !rewrite.empty() || !dead.empty(); }
  void AddHash(uint64_t hash, const std::string& name);
  void EraseHash(uint64_t hash);
};

struct CInode {
  Inode inode;
  bool dirty = false;
  // Its inline bytes changed since they were last stored: a flush of an
  // inode whose attributes alone changed (an atime, a chmod) does not write
  // its bytes again.
  bool inline_dirty = false;
  uint64_t last_used = 0;
};

class MetaCache {
 public:
  // Rank `rank` of filesystem `fs`: its tables, and inode numbers from its
  // range (RankFirstIno).
  MetaCache(uint32_t fs, uint32_t rank) : fs_(fs), rank_(rank), next_ino_(RankFirstIno(rank)) {}

  uint32_t fs() const { return fs_; }

  // Lookups; nullptr when not cached (the caller loads, or answers ESTALE).
  CInode* Inode(uint64_t ino);
  // The same without counting as a use (LRU): for the rank's own walks
  // (statistics, flushes), which must not keep an inode cached, and whose
  // order over hash tables would otherwise decide what Trim drops.
  CInode* Peek(uint64_t ino) {
    auto it = inodes_.find(ino);
    return it == inodes_.end() ? nullptr : it->second.get();
  }
  bool InodeRemoved(uint64_t ino) const {
    return removed_inodes_.contains(ino) || unstored_removed_.contains(ino) ||
           absent_.contains(ino);
  }
  // A load found no such inode: lookups of it answer ESTALE until it exists.
  void MarkAbsent(uint64_t ino) { absent_.insert(ino); }
  CDir* Dir(uint64_t ino);         // creates the overlay if needed
  // Directories with unflushed entries whose inode is not cached (the
  // flusher loads them: it needs their fragments).
  std::vector<uint64_t> DirtyDirsWithoutInode();

  // Entry lookup: the dentry, or nullptr with *known = whether absence is certain.
  const CDentry* Lookup(uint64_t dir, const std::string& name, bool* known);
  bool FragLoaded(uint64_t dir, Frag frag);
  size_t FragCount(uint64_t dir, Frag frag);

  // Merges what a load returned (never overrides newer cached state): the
  // stored record's values (InodeOf) enter the cache here.
  void MergeInode(const pb::InodeRec& rec);
  // Inline bytes loaded for `ino`: kept if its cached inode lacks them and
  // is at their version.
  void MergeInline(uint64_t ino, const pb::InlineRec& data);
  void MergeFrag(uint64_t dir, Frag frag, const std::vector<pb::DentryRec>& entries);

  // Applies a journal event (live or replayed): its records become the
  // cached inodes' values.
  void Apply(const Event& event);

  uint64_t next_ino() const { return next_ino_; }
  // Moves the allocator `n` numbers on (after a restart: past any number an
  // unsafe reply of the previous incarnation may have handed out).
  void SkipInos(uint64_t n) {
    next_ino_ += n;
    next_ino_dirty_ = true;
  }
  const std::map<uint64_t, uint64_t>& strays() const { return strays_; }
  const std::map<uint64_t, Purge>& purge_queue() const { return purge_; }
  // Truncates whose objects are not cut yet, by inode.
  const std::map<uint64_t, Cut>& trims() const { return trims_; }

  // Takes everything dirty into a batch (and marks it clean). What it took
  // stays cached until FlushApplied: evicted before the store has it, a
  // reload would read the older state still stored (an inode's old size, a
  // removed entry back in its directory).
  FlushBatch TakeDirty(uint64_t seq);
  // Every batch taken so far is in the store.
  void FlushApplied();
  // Restores tables from their objects at start (before replay).
  void LoadTables(const std::map<std::string, std::string>& strays,
                  const std::map<std::string, std::string>& purge,
                  const std::map<std::string, std::string>& trims,
                  const std::map<std::string, std::string>& inotable);

  // What the cache is estimated to take: a budget per inode and per dentry
  // (protobuf record, hash tables, names), checked against RSS in
  // bench/mds_bench.sh.
  static constexpr size_t kInodeBytes = 1024;
  static constexpr size_t kDentryBytes = 256;
  size_t EstimatedBytes() const {
    return inodes_.size() * kInodeBytes + dentries_ * kDentryBytes + inline_bytes_;
  }
  // Drops the least recently used clean inodes and directory overlays until
  // the estimate is under 90 % of `max_bytes`. Dirty entries, those of a
  // batch the store does not have yet, `pinned` inodes and the root stay.
  void Trim(size_t max_bytes, const absl::flat_hash_set<uint64_t>& pinned);

  // Everything cached, for checks (tests/sim): no LRU tick.
  const absl::flat_hash_map<uint64_t, std::unique_ptr<CInode>>& inodes() const { return inodes_; }
  const absl::flat_hash_map<uint64_t, std::unique_ptr<CDir>>& dirs() const { return dirs_; }

  size_t inode_count() const { return inodes_.size(); }
  size_t dentry_count() const { return dentries_; }
  size_t dirty_inode_count() const { return dirty_inodes_.size(); }
  uint64_t Tick() { return ++clock_; }

 private:
  void SetDentry(const Dentry& d);
  void RemoveDentry(uint64_t dir, const std::string& name);
  void AddInodeUpdates(FlushBatch* batch);
  void AddDirUpdates(FlushBatch* batch);
  void AddTableUpdates(FlushBatch* batch);

  static size_t InlineBytes(const mds::Inode& inode) {
    return inode.inline_data ? inode.inline_data->size() : 0;
  }

  const uint32_t fs_;
  const uint32_t rank_;
  uint64_t clock_ = 0;
  size_t inline_bytes_ = 0;  // cached inline data, all inodes
  absl::flat_hash_map<uint64_t, std::unique_ptr<CInode>> inodes_;
  absl::flat_hash_set<uint64_t> dirty_inodes_;
  absl::flat_hash_set<uint64_t> removed_inodes_;     // to delete from the table
  absl::flat_hash_set<uint64_t> absent_;             // loaded and not found
  // Taken by TakeDirty, not yet in the store (see FlushApplied).
  absl::flat_hash_set<uint64_t> unstored_inodes_, unstored_removed_, unstored_dirs_;
  absl::flat_hash_map<uint64_t, std::unique_ptr<CDir>> dirs_;
  absl::flat_hash_set<uint64_t> dirty_dirs_;
  size_t dentries_ = 0;
  uint64_t next_ino_;
  bool next_ino_dirty_ = false;
  std::map<uint64_t, uint64_t> strays_;              // ino -> a holder session
  std::map<uint64_t, Purge> purge_;
  std::map<uint64_t, Cut> trims_;
  // Since the last flush.
  absl::flat_hash_set<uint64_t> strays_changed_, purge_changed_, trims_changed_;
};

}  // namespace weft::mds
