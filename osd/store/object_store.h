// The OSD's local object store: one per disk, one data directory.
//
// Objects live in collections (placement groups, named like "1.2a"). An object
// has data (bytes, up to max_object_bytes), xattrs, an omap (sorted key/value
// pairs) and an onode (size, version, mtime). A collection also holds
// metadata keys that the PG layer uses for its log and info.
//
// Storage (see store_format.cc for the exact format):
//   <dir>/meta/   LevelDB: superblock, onodes, per-block checksums, xattrs,
//                 omap, collection metadata, deferred-write records
//   <dir>/data/   one plain file per object with data, named by a 64-bit id
//                 (objects up to inline_max_bytes keep their data in the KV)
//
// Guarantees:
//  - Apply() is atomic: after it returns, or after a crash at any moment,
//    either all of the transaction is visible or none of it, and it is durable
//    when it returns OK (with options.sync).
//  - Read() verifies the xxHash3 checksum of every block it touches and never
//    returns bytes that fail it (DataLoss instead).
//  - After a failed fsync or a failed write past the commit point the store
//    turns read-only and every later Apply returns that first error (like
//    LevelDB's bg_error_); reopening recovers.
//
// Thread safety: every method may be called concurrently. Concurrent Apply
// calls share KV syncs (LevelDB's writer queue) and data-directory syncs, and
// fsync their data files in parallel. Operations on the same object are
// serialized by a per-object lock; see object_store.cc for the lock order.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/bytes/shared_bytes.h"
#include "common/kv/kv_store.h"
#include "common/metrics/metrics.h"
#include "osd/store/file_io.h"
#include "osd/store/lock_table.h"

namespace weft::osd {

// Limits; a transaction that breaks one fails whole and changes nothing.
// Collection names, object names, xattr names, omap keys and metadata keys
// must also be non-empty.
inline constexpr size_t kMaxCollectionNameBytes = 256;
inline constexpr size_t kMaxOidBytes = 4096;
inline constexpr size_t kMaxXattrNameBytes = 255;
inline constexpr size_t kMaxXattrValueBytes = 64 << 10;
inline constexpr size_t kMaxOmapKeyBytes = 4096;
inline constexpr size_t kMaxOmapValueBytes = 1 << 20;
inline constexpr size_t kMaxMetaKeyBytes = 4096;
inline constexpr size_t kMaxMetaValueBytes = 16 << 20;

struct StoreOptions {
  std::string dir;
  // Checksum granularity. Fixed at Mkfs (recorded in the superblock); Open
  // uses the recorded value. A power of two in [512, 1 MiB].
  uint32_t csum_block_bytes = 16 * 1024;
  // Checksums of this many consecutive blocks share one LevelDB key (1 MiB
  // of data with 16 KiB blocks). Fixed at Mkfs like the block size; stores
  // made before groups existed have groups of 1. In [1, 1024].
  uint32_t csum_group_blocks = 64;
  uint64_t max_object_bytes = 128ull << 20;  // osd_max_object_size
  // An Apply whose overwrites of an object's existing bytes total at most this
  // many bytes logs them in the KV batch and applies them to the file after
  // commit ("deferred"); a bigger overwrite rewrites the object into a new
  // file instead. 1 MiB keeps the double write cheap while covering EC chunk
  // and 4 KiB-random overwrites, and keeps LevelDB values modest.
  uint64_t deferred_max_bytes = 1 << 20;
  // An object of at most this many bytes keeps its data in the KV (without
  // its trailing zeros) instead of a file: writing it costs the one synced KV
  // batch every Apply makes anyway, where a file costs a create, a write, an
  // fdatasync and a share of a directory sync. 65536 covers the EC shards of
  // small files (one 64 KiB chunk each). Off (0) by default: on the virtual
  // disk we measure on, fsyncs are cheap and LevelDB's copies and compactions
  // cost the OSDs more CPU than the files did (docs/ARCHITECTURE.md).
  uint64_t inline_max_bytes = 0;
  // Spare files (the data files of removed and rewritten objects, see
  // RetireFile) keep their blocks up to this many bytes in all, while the
  // file system is under 80% full; beyond that they are emptied. Freeing
  // blocks is what costs: on ext4 mounted with `discard` (the machine we
  // measure on) every fsync after a mass removal waits for its discards
  // (fsync latency went from 0.07 to 16 ms while 2 GiB of files were
  // purged), and a new file written over kept blocks allocates nothing.
  uint64_t spare_keep_bytes = 1ull << 30;
  // ...and only while more than this percentage of the file system is
  // available (tests set 0, so that they do not depend on the disk they run on).
  uint32_t spare_keep_min_avail_pct = 20;
  // Empty data files made ahead of need, so that writes of new objects find
  // a spare instead of creating an inode: Open fills the spares up to this
  // many, and a background thread at nice 19 tops them up again whenever
  // writes have taken more than half. Creating an inode is
  // dear on ext4 without a journal, which checks every free inode it passes
  // for a recent deletion: after a mass removal that cost 14% of the OSDs'
  // CPU on a streaming write (docs/ARCHITECTURE.md, OSD data files). 0 = off,
  // at most kMaxSpareFiles.
  size_t spare_reserve_files = 0;
  // fsync data files and directories and sync KV batches. Off only in tests:
  // without it nothing survives a power loss.
  bool sync = true;
  // Tests only: every commit takes this much longer, as on a sick disk that
  // answers slowly without errors (fault point osd.slow_disk_ms in weft-osd).
  int64_t fault_commit_delay_ms = 0;
  FileIo* io = nullptr;            // nullptr = POSIX; not owned
  common::KvStore* kv = nullptr;   // nullptr = LevelDB in <dir>/meta; not owned

  absl::Status Validate() const;
};

// The order of writes to an object: (epoch, seq), compared lexicographically.
struct Version {
  uint64_t epoch = 0;
  uint64_t seq = 0;

  friend bool operator==(const Version& a, const Version& b) {
    return a.epoch == b.epoch && a.seq == b.seq;
  }
  friend bool operator!=(const Version& a, const Version& b) { return !(a == b); }
  friend bool operator<(const Version& a, const Version& b) {
    return a.epoch != b.epoch ? a.epoch < b.epoch : a.seq < b.seq;
  }
  friend bool operator<=(const Version& a, const Version& b) { return !(b < a); }
  friend bool operator>(const Version& a, const Version& b) { return b < a; }
  friend bool operator>=(const Version& a, const Version& b) { return !(a < b); }
  std::string ToString() const;  // "epoch'seq"
};

struct ObjectMeta {
  uint64_t size = 0;
  Version version;
  int64_t mtime_ns = 0;
};

struct Superblock {
  std::string fsid;
  int32_t osd_id = -1;
  int64_t created_ms = 0;
  uint32_t csum_block_bytes = 0;
  uint32_t csum_group_blocks = 1;
};

// Operations on objects of ONE collection, applied atomically and in order by
// ObjectStore::Apply. Building one does no I/O and checks nothing; Apply
// validates it whole before changing anything.
//
// Touch, Write, WriteFull, Truncate, SetXattr, OmapSet and SetVersion create
// the object if it is absent. Remove, RmXattr, OmapRm and OmapClear of an
// absent object (or attribute, or key) are no-ops, so that replaying a log is
// idempotent. Data ops leave the version and mtime alone: the PG layer stamps
// them with SetVersion. A new object starts at version 0'0, mtime 0.
class Transaction {
 public:
  enum class OpType {
    kTouch, kWrite, kWriteFull, kTruncate, kRemove, kSetXattr, kRmXattr,
    kOmapSet, kOmapRm, kOmapClear, kSetVersion, kPutMeta, kDeleteMeta,
  };
  struct Op {
    OpType type = OpType::kTouch;
    std::string oid;          // empty for kPutMeta / kDeleteMeta
    uint64_t offset = 0;      // kWrite; new size for kTruncate
    SharedBytes bytes;        // kWrite, kWriteFull
    std::string data;         // value for kSetXattr / kPutMeta
    std::string name;         // xattr name; key for kPutMeta / kDeleteMeta
    std::vector<std::pair<std::string, std::string>> kvs;  // kOmapSet
    std::vector<std::string> keys;                          // kOmapRm
    Version version;          // kSetVersion
    int64_t mtime_ns = 0;     // kSetVersion
  };

  void Touch(const std::string& oid);
  // Writes `data` at `offset`, zero-filling any hole before it. The store
  // keeps no reference to `data` once Apply returns.
  void Write(const std::string& oid, uint64_t offset, SharedBytes data);
  void Write(const std::string& oid, uint64_t offset, std::string data) {
    Write(oid, offset, SharedBytes(std::move(data)));
  }
  // Replaces the data; keeps xattrs and omap.
  void WriteFull(const std::string& oid, SharedBytes data);
  void WriteFull(const std::string& oid, std::string data) {
    WriteFull(oid, SharedBytes(std::move(data)));
  }
  // Sets the size; growth reads as zeros.
  void Truncate(const std::string& oid, uint64_t size);
  // Removes data, xattrs and omap.
  void Remove(const std::string& oid);
  void SetXattr(const std::string& oid, std::string name, std::string value);
  void RmXattr(const std::string& oid, std::string name);
  void OmapSet(const std::string& oid, std::vector<std::pair<std::string, std::string>> kvs);
  void OmapRm(const std::string& oid, std::vector<std::string> keys);
  void OmapClear(const std::string& oid);
  void SetVersion(const std::string& oid, Version version, int64_t mtime_ns);
  // Collection metadata (PG log entries, PG info).
  void PutMeta(std::string key, std::string value);
  void DeleteMeta(std::string key);

  bool empty() const { return ops_.empty(); }
  const std::vector<Op>& ops() const { return ops_; }

 private:
  friend class ObjectStore;  // moves the data out when applying
  std::vector<Op> ops_;
};

// Checks `txn` against the limits above and `options` (what Apply does first).
// InvalidArgument or OutOfRange naming the offending op.
absl::Status ValidateTransaction(const std::string& coll, const Transaction& txn,
                                 const StoreOptions& options);

struct TxnPlan;
struct ObjectWork;
namespace format {
struct Onode;
}  // namespace format

class ObjectStore {
 public:
  // Creates a store in options.dir (created if missing; its parent must
  // exist). Refuses (AlreadyExists) a dir that already holds a store.
  static absl::Status Mkfs(const StoreOptions& options, const std::string& fsid, int32_t osd_id);

  // Opens a store. Fails with one clear message if the dir is missing
  // (NotFound), is not a store (FailedPrecondition) or is corrupt (DataLoss).
  // Replays deferred writes and removes data files that no object references
  // (left by a crash or a lost unlink).
  static absl::StatusOr<std::unique_ptr<ObjectStore>> Open(const StoreOptions& options);

  // Flushes deferred writes (best effort). No other call may be in flight.
  ~ObjectStore();
  ObjectStore(const ObjectStore&) = delete;
  ObjectStore& operator=(const ObjectStore&) = delete;

  const Superblock& superblock() const { return superblock_; }

  // Applies `txn` to collection `coll` (which is created if new) atomically.
  // Durable when it returns OK (with options.sync). Errors:
  //  - InvalidArgument / OutOfRange: the txn breaks a limit; nothing changed.
  //  - the sticky error, once the store is read-only.
  //  - any I/O error: if it happened before the commit point nothing changed;
  //    past it the txn is durable but the store is read-only until reopened.
  absl::Status Apply(const std::string& coll, Transaction txn);

  // Up to `length` bytes at `offset`; short (possibly empty) at end of object.
  // Verifies every checksum block it touches: DataLoss naming coll, oid and
  // block on a mismatch. NotFound if the object does not exist.
  absl::StatusOr<std::string> Read(const std::string& coll, const std::string& oid,
                                   uint64_t offset, uint64_t length);
  absl::StatusOr<ObjectMeta> Stat(const std::string& coll, const std::string& oid);

  // NotFound if the object or the attribute does not exist.
  absl::StatusOr<std::string> GetXattr(const std::string& coll, const std::string& oid,
                                       const std::string& name);
  absl::StatusOr<std::map<std::string, std::string>> GetXattrs(const std::string& coll,
                                                               const std::string& oid);
  // The values of `keys` that exist (missing keys are omitted).
  absl::StatusOr<std::map<std::string, std::string>> OmapGet(const std::string& coll,
                                                             const std::string& oid,
                                                             const std::vector<std::string>& keys);
  // Keys > start_after that start with `prefix`, sorted, at most max_entries;
  // `*more` (may be null) says whether more remain.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> OmapList(
      const std::string& coll, const std::string& oid, const std::string& start_after,
      const std::string& prefix, uint32_t max_entries, bool* more);

  // Objects with name > start_after (bytewise order) that begin with
  // name_prefix, at most max_entries. An unknown collection lists nothing.
  absl::StatusOr<std::vector<std::pair<std::string, ObjectMeta>>> ListObjects(
      const std::string& coll, const std::string& start_after, uint32_t max_entries, bool* more,
      const std::string& name_prefix = "");
  absl::StatusOr<std::vector<std::string>> ListCollections();

  // Removes the collection: objects, their data, metadata keys. OK if absent.
  // Atomic for collections whose keys fit one batch (kRemoveBatchKeys); a
  // bigger one is removed in several batches with the collection's marker
  // last, so a crash leaves it listed and a repeated call finishes the job.
  absl::Status RemoveCollection(const std::string& coll);

  absl::StatusOr<std::string> GetMeta(const std::string& coll, const std::string& key);
  // Metadata keys of `coll` that start with `prefix`, sorted by key.
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ListMeta(
      const std::string& coll, const std::string& prefix);

  struct Stats {
    uint64_t bytes_used = 0;  // sum of object sizes
    uint64_t objects = 0;
    uint64_t fs_total_bytes = 0;
    uint64_t fs_avail_bytes = 0;
    uint64_t fs_device = 0;  // FsSpace::device
  };
  Stats GetStats();
  // How long each Apply took to make its changes durable (data files and
  // the KV batch, locks already held): the disk's latency as writers see it.
  const metrics::Histogram& commit_latency() const { return commit_latency_; }

  // Syncs the data files that deferred writes went to and drops their KV
  // records. Apply calls this itself when records pile up.
  absl::Status Flush();

  // Checks the store's invariants: every onode's data file exists, no data
  // file is unreferenced, checksum keys match object sizes, no xattr / omap /
  // checksum key lacks its onode; with `deep` it also reads every object.
  // DataLoss naming the first problem found. Meant for a quiescent store
  // (tests, offline checks): concurrent Applies may make it report false
  // problems.
  absl::Status Fsck(bool deep);

  // The first error that made the store read-only, or OK.
  absl::Status sticky_error() const;

  // Data files kept for reuse (see RetireFile) or made ahead
  // (spare_reserve_files), and the bytes they hold.
  size_t spare_files() const;
  uint64_t spare_bytes() const;

  static constexpr size_t kRemoveBatchKeys = 8192;
  // Flush() runs when more deferred records than this are pending ...
  static constexpr size_t kDeferredTrimRecords = 256;
  // ... or when they hold more bytes than this.
  static constexpr uint64_t kDeferredTrimBytes = 16ull << 20;
  // Data files of removed or rewritten objects are kept, empty, for the next
  // new file instead of being unlinked: creating an inode cost a sixth of the
  // OSD's CPU on a streaming write into ext4, much more after many unlinks
  // (docs/ARCHITECTURE.md). Spares are unreferenced files, so Open adopts
  // whatever orphans it finds, up to this many, and unlinks the rest.
  static constexpr size_t kMaxSpareFiles = 16384;
  // How many of the most recent spares a new file looks through for one no
  // longer than its object before it takes the most recent one.
  static constexpr size_t kSpareSearch = 256;

 private:
  // A deferred record that is in the KV; `applied` once written to its file.
  struct PendingDeferred {
    uint64_t fid = 0;
    uint64_t bytes = 0;
    bool applied = false;
  };

  ObjectStore(const StoreOptions& options, FileIo* io, std::unique_ptr<common::KvStore> owned_kv,
              common::KvStore* kv, Superblock superblock);

  // --- object_store_open.cc ---
  static absl::Status CheckStoreDir(FileIo* io, const std::string& dir);
  absl::Status Recover();
  absl::Status ReplayDeferred(const std::vector<uint64_t>& live_sorted);
  // Data files no object references: emptied and kept as spares up to
  // kMaxSpareFiles, the rest unlinked.
  absl::Status AdoptOrphans(const std::vector<uint64_t>& live_sorted, uint64_t* max_file_fid);

  // --- object_store.cc: the write path ---
  absl::Status ApplyLocked(const std::string& coll, Transaction& txn);
  absl::StatusOr<ObjectWork*> LoadWork(const std::string& coll, const std::string& oid,
                                       TxnPlan* plan);
  absl::Status PlanOp(const std::string& coll, Transaction::Op& op, TxnPlan* plan);
  absl::Status DeleteAttrs(const std::string& coll, ObjectWork* work, bool xattrs,
                           TxnPlan* plan);
  absl::Status PrepareData(const std::string& coll, TxnPlan* plan);
  absl::Status PrepareObject(const std::string& coll, ObjectWork* work, TxnPlan* plan);
  absl::Status WriteNewFile(const std::string& coll, ObjectWork* work, TxnPlan* plan);
  absl::Status WriteInline(const std::string& coll, ObjectWork* work, TxnPlan* plan);
  // The committed data file (if any) goes after commit, with its deferred records.
  void DropCommittedFile(ObjectWork* work, TxnPlan* plan);
  // The drafted bytes [pos, pos + length) of the object: committed bytes
  // (verified) where the draft keeps them, overlaid with the new ones.
  absl::StatusOr<std::string> DraftBytes(const std::string& coll, const ObjectWork& work,
                                         uint64_t pos, uint64_t length);
  absl::Status PrepareInPlace(const std::string& coll, ObjectWork* work, TxnPlan* plan);
  absl::Status WriteExtension(ObjectWork* work, RandomFile* file, TxnPlan* plan);
  absl::StatusOr<std::string> DraftBlock(const std::string& coll, const ObjectWork& work,
                                         uint64_t block);
  absl::Status Commit(TxnPlan* plan);
  absl::Status FinishAfterCommit(TxnPlan* plan);
  void DiscardNewFiles(const TxnPlan& plan);
  absl::Status SyncDataDir();
  uint64_t AllocateFid(TxnPlan* plan);
  // A data file for WriteNewFile's `size` bytes, open for writing: a spare
  // when there is one (no inode to allocate, no directory entry to sync),
  // preferably one no longer than `size` (no blocks to free), else a new
  // empty file. A spare's first *stale_bytes bytes are an old object's: the
  // caller overwrites or truncates every one of them. Either way the plan
  // records the file, so that a failed Apply gives it back (DiscardNewFiles).
  absl::StatusOr<std::unique_ptr<RandomFile>> OpenEmptyFile(TxnPlan* plan, uint64_t size,
                                                            uint64_t* fid, uint64_t* stale_bytes);
  // `fid` is no longer referenced by any committed object: it is kept as a
  // spare (up to kMaxSpareFiles), with its blocks within spare_keep_bytes
  // and emptied beyond, else unlinked.
  void RetireFile(uint64_t fid);
  // Creates empty data files until there are spare_reserve_files spares, in
  // batches that each end with one directory sync, and adds them as the
  // oldest spares (a kept spare's blocks save more). Stops early when the
  // store closes; false after an I/O error (the files made so far without a
  // durable entry stay orphans for Open to adopt).
  bool FillReserve();
  // reserve_thread_: waits for the spares to drop below half the reserve
  // and fills it, at nice 19.
  void ReserveLoop();
  // Wakes ReserveLoop when the spares are below half the reserve.
  void WakeReserveLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool RoomToKeepBlocks(uint64_t bytes);
  bool HasDeferred(uint64_t fid);
  // Adds deletes of `fid`'s deferred records to the plan's batch.
  void DropDeferredFor(uint64_t fid, TxnPlan* plan);
  absl::Status CheckWritable();
  absl::Status SetSticky(const absl::Status& status);
  void MaybeFlush();
  std::string DataPath(uint64_t fid) const;

  // --- object_store_read.cc ---
  LockTable::Guard LockObjectShared(const std::string& coll, const std::string& oid,
                                    LockTable::Guard* coll_guard);
  // The committed onode; `*exists` false (and a default onode) if absent.
  absl::StatusOr<format::Onode> LoadOnode(const std::string& coll, const std::string& oid,
                                          bool* exists);
  // Like LoadOnode, but NotFound if absent.
  absl::StatusOr<format::Onode> LoadExisting(const std::string& coll, const std::string& oid);
  // Bytes [offset, offset + length) of the object (clamped to `size`), every
  // block they touch verified against its checksum.
  absl::StatusOr<std::string> ReadVerified(const std::string& coll, const std::string& oid,
                                           uint64_t fid, uint64_t size, uint64_t offset,
                                           uint64_t length);
  // The checksums of blocks [first, first + count), from their groups.
  absl::StatusOr<std::vector<uint64_t>> LoadChecksums(const std::string& coll,
                                                      const std::string& oid, uint64_t first,
                                                      uint64_t count);
  // Puts every checksum group of the object that holds a block in
  // `work->new_sums` or that a shrink cuts into (the other blocks of the
  // group keep their committed checksums), and deletes the groups past the
  // new end.
  absl::Status PlanChecksums(const std::string& coll, ObjectWork* work, TxnPlan* plan);
  // `sums` of the blocks from `first` on, as found: DataLoss unless all `count`.
  static absl::StatusOr<std::vector<uint64_t>> ChecksumsFound(const std::string& coll,
                                                              const std::string& oid,
                                                              uint64_t first, uint64_t count,
                                                              std::vector<uint64_t> sums);
  // LoadChecksums reads up to this many groups by point lookups, more by a scan.
  static constexpr uint64_t kPointLookupGroups = 4;
  absl::Status CheckReadable(uint64_t fid);

  // --- object_store_admin.cc ---
  absl::Status FsckObject(const std::string& coll, const std::string& oid, uint64_t fid,
                          uint64_t size, bool deep);

  const StoreOptions options_;  // csum_block_bytes is the superblock's
  FileIo* const io_;
  const std::unique_ptr<common::KvStore> owned_kv_;
  common::KvStore* const kv_;
  const Superblock superblock_;
  const std::string data_dir_;

  // Lock order: a collection lock (shared for object operations, exclusive
  // for RemoveCollection), then object locks in ascending key order, then
  // mu_. mu_ is never held across I/O.
  LockTable coll_locks_;
  LockTable object_locks_;

  mutable absl::Mutex mu_;
  absl::Status sticky_error_ ABSL_GUARDED_BY(mu_);
  uint64_t next_fid_ ABSL_GUARDED_BY(mu_) = 1;
  // Empty, unreferenced data files whose directory entries are durable; the
  // most recently retired is reused first (its inode is likely cached), the
  // ones FillReserve made (at the front) last.
  struct Spare {
    uint64_t fid = 0;
    uint64_t bytes = 0;  // its size: an old object's bytes (spare_keep_bytes)
  };
  std::vector<Spare> spares_ ABSL_GUARDED_BY(mu_);
  uint64_t spare_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_deferred_seq_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, PendingDeferred> deferred_ ABSL_GUARDED_BY(mu_);  // by seq
  uint64_t deferred_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool flush_running_ ABSL_GUARDED_BY(mu_) = false;
  // Data-directory group sync: a SyncDir that starts after a file was created
  // makes that file's entry durable.
  uint64_t files_created_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t files_dir_synced_ ABSL_GUARDED_BY(mu_) = 0;
  bool dir_sync_running_ ABSL_GUARDED_BY(mu_) = false;
  absl::CondVar dir_sync_done_;
  uint64_t objects_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t bytes_used_ ABSL_GUARDED_BY(mu_) = 0;
  metrics::Histogram commit_latency_;
  // The reserve of empty files (spare_reserve_files).
  bool reserve_stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::CondVar reserve_wanted_;
  std::thread reserve_thread_;
};

}  // namespace weft::osd
