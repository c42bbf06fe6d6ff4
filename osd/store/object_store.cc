// The write path of the object store: Apply, its commit protocol, and Flush.
// Open/Mkfs/recovery are in object_store_open.cc, reads in
// object_store_read.cc, the on-disk format in store_format.cc.
//
// Commit protocol of one Apply (every step before 4 changes nothing that a
// reader or a crash can see):
//  1. Validate the whole transaction; take the collection lock (shared) and
//     the locks of its objects (exclusive, ascending key order).
//  2. Plan: replay the ops on an in-memory ObjectDraft per object and queue
//     xattr / omap / metadata updates in one KV batch.
//  3. Prepare the data of each object, choosing one of four paths:
//     - inline: the object's new size is at most inline_max_bytes. Its whole
//       content (without trailing zeros) goes into the batch; a file it had
//       is unlinked after commit. Nothing is written before the commit point.
//     - new file: the object is created, replaced (WriteFull, or a write from
//       offset 0 covering the old size), or its overwrites exceed
//       deferred_max_bytes. The whole new content goes to a file no committed
//       object references, which is fsynced: a spare (the file of an earlier
//       object, see RetireFile; its old bytes are overwritten or cut off
//       before the commit) or else a new file with a fresh id;
//       the data directory is fsynced once for all files created meanwhile
//       (group sync). A spare's directory entry is durable already.
//     - in place: the bytes past the committed size are written in place and
//       the file is fsynced (old bytes are untouched: the committed size hides
//       the new ones until commit). Overwrites of committed bytes become
//       deferred records in the batch.
//     - removal.
//     Checksums of every block whose content changes are computed from the
//     draft (a partial block re-reads and verifies the old block) and queued
//     in the same batch, with the onode.
//  4. Commit: one KV batch write (synced). This is the commit point.
//  5. After commit: write deferred records into their files (no fsync: the
//     records stay in the KV until Flush syncs the file, and Open replays
//     them, which is idempotent), shrink truncated files, retire replaced
//     files: kept as spares (emptied beyond spare_keep_bytes), or unlinked
//     (a lost unlink leaves an orphan that Open adopts or removes). A spare
//     is never referenced by a committed onode, so its content after a crash
//     does not matter.
// A failed fsync, a failed batch write or a failed step 5 makes the store
// read-only with a sticky error.
//
// Deferred records and in-place writes: a record must never be replayed over
// bytes written later by another path. Every later write to the same file is
// either another deferred record (replayed after it, in seq order), a new file
// (the record is deleted in that batch), or an in-place extension, which first
// fsyncs the file and deletes the file's records in its own batch
// (WriteExtension). A record past the size set by a later truncate only
// writes bytes past the end of the object, which nothing reads.
#include "osd/store/object_store.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/bytes/zeros.h"
#include "common/checksum/checksum.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "osd/store/object_draft.h"
#include "osd/store/store_format.h"
#include "osd/store/txn_plan.h"

namespace weft::osd {

using format::Printable;

namespace {

constexpr uint64_t kCopyChunkBytes = 1 << 20;  // a multiple of every block size
// Files about to be written at least this far past their end ask the file
// system for the space in one piece first (RandomFile::Preallocate); for
// fewer bytes the extra system call would cost more than their layout does.
constexpr uint64_t kPreallocateFrom = 256 << 10;

std::vector<common::BlockSpan> MergeSpans(std::vector<common::BlockSpan> spans) {
  std::sort(spans.begin(), spans.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<common::BlockSpan> merged;
  for (const common::BlockSpan& span : spans) {
    if (span.count == 0) continue;
    if (!merged.empty() && span.first <= merged.back().first + merged.back().count) {
      const uint64_t end = std::max(merged.back().first + merged.back().count,
                                    span.first + span.count);
      merged.back().count = end - merged.back().first;
    } else {
      merged.push_back(span);
    }
  }
  return merged;
}

// Whether WriteNewFile will write every chunk of the draft at or past
// `from`: it leaves chunks of zeros as holes, and space reserved for a hole
// would be space lost. A chunk that needs the old object's bytes might be
// zeros too: not known without reading it, so no.
bool WritesEveryChunkFrom(const ObjectDraft& draft, uint64_t from) {
  for (uint64_t pos = from / kCopyChunkBytes * kCopyChunkBytes; pos < draft.size();
       pos += kCopyChunkBytes) {
    const auto covered = draft.Covered(pos, std::min(kCopyChunkBytes, draft.size() - pos));
    if (!covered || IsZero(*covered)) return false;
  }
  return true;
}

}  // namespace

ObjectStore::ObjectStore(const StoreOptions& options, FileIo* io,
                         std::unique_ptr<common::KvStore> owned_kv, common::KvStore* kv,
                         Superblock superblock)
    : options_(options),
      io_(io),
      owned_kv_(std::move(owned_kv)),
      kv_(kv),
      superblock_(std::move(superblock)),
      data_dir_(options.dir + "/data") {}

ObjectStore::~ObjectStore() {
  {
    absl::MutexLock lock(&mu_);
    reserve_stop_ = true;
    reserve_wanted_.Signal();
  }
  if (reserve_thread_.joinable()) reserve_thread_.join();
  if (!sticky_error().ok()) return;
  absl::Status status = Flush();
  if (!status.ok()) LOG(WARNING) << "store=" << options_.dir << " close_flush_failed=" << status;
}

std::string ObjectStore::DataPath(uint64_t fid) const {
  return absl::StrCat(data_dir_, "/", format::DataFileName(fid));
}

absl::Status ObjectStore::sticky_error() const {
  absl::MutexLock lock(&mu_);
  return sticky_error_;
}

absl::Status ObjectStore::CheckWritable() {
  absl::MutexLock lock(&mu_);
  if (sticky_error_.ok()) return absl::OkStatus();
  return Annotate(sticky_error_, "object store is read-only after an earlier error");
}

absl::Status ObjectStore::SetSticky(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  if (sticky_error_.ok()) {
    sticky_error_ = status;
    LOG(ERROR) << "store=" << options_.dir << " read_only=true error=" << status;
  }
  return status;
}

absl::Status ObjectStore::Apply(const std::string& coll, Transaction txn) {
  RETURN_IF_ERROR(ValidateTransaction(coll, txn, options_));
  RETURN_IF_ERROR(CheckWritable());
  absl::Status status = ApplyLocked(coll, txn);
  MaybeFlush();
  return status;
}

absl::Status ObjectStore::ApplyLocked(const std::string& coll, Transaction& txn) {
  std::vector<std::string> object_keys;
  for (const Transaction::Op& op : txn.ops()) {
    if (!op.oid.empty()) object_keys.push_back(format::OnodeKey(coll, op.oid));
  }
  LockTable::Guard coll_guard = coll_locks_.Lock({coll}, LockTable::Mode::kShared);
  LockTable::Guard object_guard =
      object_locks_.Lock(std::move(object_keys), LockTable::Mode::kExclusive);
  TxnPlan plan;
  plan.batch.Put(format::CollectionKey(coll), "");
  for (Transaction::Op& op : txn.ops_) RETURN_IF_ERROR(PlanOp(coll, op, &plan));
  const absl::Time start = absl::Now();
  absl::Status status = PrepareData(coll, &plan);
  if (!status.ok()) {
    DiscardNewFiles(plan);
    return status;
  }
  if (options_.fault_commit_delay_ms > 0) {
    absl::SleepFor(absl::Milliseconds(options_.fault_commit_delay_ms));
  }
  RETURN_IF_ERROR(Commit(&plan));
  commit_latency_.Observe(absl::Now() - start);
  return FinishAfterCommit(&plan);
}

absl::StatusOr<ObjectWork*> ObjectStore::LoadWork(const std::string& coll, const std::string& oid,
                                                  TxnPlan* plan) {
  auto it = plan->objects.find(oid);
  if (it != plan->objects.end()) return &it->second;
  bool exists = false;
  ASSIGN_OR_RETURN(format::Onode onode, LoadOnode(coll, oid, &exists));
  return &plan->objects.try_emplace(oid, oid, exists, onode).first->second;
}

absl::Status ObjectStore::PlanOp(const std::string& coll, Transaction::Op& op, TxnPlan* plan) {
  using Type = Transaction::OpType;
  common::KvWriteBatch& batch = plan->batch;
  if (op.type == Type::kPutMeta) {
    batch.Put(format::MetaKey(coll, op.name), op.data);
    return absl::OkStatus();
  }
  if (op.type == Type::kDeleteMeta) {
    batch.Delete(format::MetaKey(coll, op.name));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(ObjectWork * work, LoadWork(coll, op.oid, plan));
  ObjectDraft& draft = work->draft;
  switch (op.type) {
    case Type::kTouch: draft.Touch(); break;
    case Type::kWrite: draft.Write(op.offset, std::move(op.bytes)); break;
    case Type::kWriteFull: draft.WriteFull(std::move(op.bytes)); break;
    case Type::kTruncate: draft.Truncate(op.offset); break;
    case Type::kSetVersion: draft.SetVersion(op.version, op.mtime_ns); break;
    case Type::kRemove:
      if (!draft.exists()) break;
      RETURN_IF_ERROR(DeleteAttrs(coll, work, /*xattrs=*/true, plan));
      RETURN_IF_ERROR(DeleteAttrs(coll, work, /*xattrs=*/false, plan));
      draft.Remove();
      break;
    case Type::kSetXattr:
      draft.Touch();
      batch.Put(format::XattrKey(coll, op.oid, op.name), op.data);
      work->xattrs_put.insert(op.name);
      break;
    case Type::kRmXattr:
      if (draft.exists()) batch.Delete(format::XattrKey(coll, op.oid, op.name));
      break;
    case Type::kOmapSet:
      draft.Touch();
      for (const auto& [key, value] : op.kvs) {
        batch.Put(format::OmapKey(coll, op.oid, key), value);
        work->omap_put.insert(key);
      }
      break;
    case Type::kOmapRm:
      if (!draft.exists()) break;
      for (const std::string& key : op.keys) batch.Delete(format::OmapKey(coll, op.oid, key));
      break;
    case Type::kOmapClear:
      if (draft.exists()) RETURN_IF_ERROR(DeleteAttrs(coll, work, /*xattrs=*/false, plan));
      break;
    case Type::kPutMeta:
    case Type::kDeleteMeta: break;  // handled above
  }
  return absl::OkStatus();
}

// Queues deletes of every xattr (or omap key) of the object: the committed
// ones and the ones this transaction put so far.
absl::Status ObjectStore::DeleteAttrs(const std::string& coll, ObjectWork* work, bool xattrs,
                                      TxnPlan* plan) {
  const std::string prefix =
      xattrs ? format::XattrPrefix(coll, work->oid) : format::OmapPrefix(coll, work->oid);
  if (work->committed_exists) {
    std::unique_ptr<common::KvIterator> it = kv_->NewIterator();
    for (it->Seek(prefix); it->Valid() && it->key().substr(0, prefix.size()) == prefix;
         it->Next()) {
      plan->batch.Delete(it->key());
    }
    RETURN_IF_ERROR(it->status());
  }
  std::set<std::string>& put = xattrs ? work->xattrs_put : work->omap_put;
  for (const std::string& name : put) plan->batch.Delete(absl::StrCat(prefix, name));
  put.clear();
  return absl::OkStatus();
}

absl::Status ObjectStore::PrepareData(const std::string& coll, TxnPlan* plan) {
  for (auto& [oid, work] : plan->objects) RETURN_IF_ERROR(PrepareObject(coll, &work, plan));
  if (!plan->new_fids.empty() && options_.sync) {
    absl::Status status = SyncDataDir();
    if (!status.ok()) return SetSticky(status);
  }
  return absl::OkStatus();
}

absl::Status ObjectStore::PrepareObject(const std::string& coll, ObjectWork* work,
                                        TxnPlan* plan) {
  const format::Onode& old = work->committed;
  const uint64_t old_size = work->committed_exists ? old.size : 0;
  const ObjectDraft& draft = work->draft;
  if (!draft.exists() && !work->committed_exists) return absl::OkStatus();
  if (!draft.exists()) {
    plan->batch.Delete(format::OnodeKey(coll, work->oid));
    DropCommittedFile(work, plan);
  } else {
    // All zeros (the empty data shards of a small EC object): no file, an
    // empty inline value, whatever inline_max_bytes says.
    const bool inline_data =
        draft.size() > 0 && (draft.size() <= options_.inline_max_bytes || draft.KnownZero());
    const bool new_file = !work->committed_exists || old.fid == 0 || draft.reset() ||
                          draft.ChangedBytes(old.size) > options_.deferred_max_bytes;
    if (inline_data) {
      RETURN_IF_ERROR(WriteInline(coll, work, plan));
    } else {
      RETURN_IF_ERROR(new_file ? WriteNewFile(coll, work, plan)
                               : PrepareInPlace(coll, work, plan));
    }
    format::Onode onode;
    onode.size = draft.size();
    onode.fid = work->fid;
    onode.version = draft.version();
    onode.mtime_ns = draft.mtime_ns();
    plan->batch.Put(format::OnodeKey(coll, work->oid), format::EncodeOnode(onode));
  }
  // Inline data the new state does not keep.
  const bool was_inline = work->committed_exists && old.fid == 0 && old.size > 0;
  const bool is_inline = draft.exists() && work->fid == 0 && draft.size() > 0;
  if (was_inline && !is_inline) plan->batch.Delete(format::InlineKey(coll, work->oid));
  RETURN_IF_ERROR(PlanChecksums(coll, work, plan));
  plan->objects_delta += (draft.exists() ? 1 : 0) - (work->committed_exists ? 1 : 0);
  plan->bytes_delta += static_cast<int64_t>(draft.size()) - static_cast<int64_t>(old_size);
  return absl::OkStatus();
}

absl::Status ObjectStore::PlanChecksums(const std::string& coll, ObjectWork* work,
                                        TxnPlan* plan) {
  const uint64_t block_bytes = options_.csum_block_bytes;
  const uint64_t group_blocks = options_.csum_group_blocks;
  const uint64_t old_blocks =
      work->committed_exists ? common::BlockCount(work->committed.size, block_bytes) : 0;
  const uint64_t new_blocks =
      work->draft.exists() ? common::BlockCount(work->draft.size(), block_bytes) : 0;
  const uint64_t old_groups = common::BlockCount(old_blocks, group_blocks);
  const uint64_t new_groups = common::BlockCount(new_blocks, group_blocks);
  const std::vector<std::pair<uint64_t, uint64_t>>& sums = work->new_sums;
  auto not_ascending = [](const auto& a, const auto& b) { return a.first >= b.first; };
  if (std::adjacent_find(sums.begin(), sums.end(), not_ascending) != sums.end()) {
    return absl::InternalError(absl::StrCat("object ", coll, "/", Printable(work->oid),
                                            ": new block checksums out of order"));
  }
  // The groups to rewrite, in order (the blocks are).
  std::vector<uint64_t> groups;
  auto add_group = [&](uint64_t group) {
    if (groups.empty() || groups.back() != group) groups.push_back(group);
  };
  for (const auto& [block, sum] : sums) {
    if (block < new_blocks) add_group(block / group_blocks);
  }
  if (new_blocks < old_blocks && new_blocks % group_blocks != 0) {
    add_group(new_blocks / group_blocks);  // the last group, cut short
  }
  for (uint64_t group : groups) {
    const uint64_t first = group * group_blocks;
    const uint64_t end = std::min(new_blocks, first + group_blocks);
    std::string value;
    value.reserve((end - first) * 8);
    std::optional<std::vector<uint64_t>> committed;
    auto it = std::lower_bound(sums.begin(), sums.end(), std::make_pair(first, uint64_t{0}));
    for (uint64_t b = first; b < end; ++b) {  // `it` walks along with b
      if (it != sums.end() && it->first == b) {
        format::AppendChecksum(it->second, &value);
        ++it;
        continue;
      }
      // An unchanged block: its committed checksum (every block past the
      // committed end has a new one).
      if (!committed.has_value()) {
        const uint64_t have =
            first < old_blocks ? std::min(old_blocks, first + group_blocks) - first : 0;
        ASSIGN_OR_RETURN(committed, LoadChecksums(coll, work->oid, first, have));
      }
      if (b - first >= committed->size()) {
        return absl::InternalError(absl::StrCat("object ", coll, "/", Printable(work->oid),
                                                ": no checksum for unchanged block ", b));
      }
      format::AppendChecksum((*committed)[b - first], &value);
    }
    plan->batch.Put(format::ChecksumKey(coll, work->oid, group), std::move(value));
  }
  for (uint64_t group = new_groups; group < old_groups; ++group) {
    plan->batch.Delete(format::ChecksumKey(coll, work->oid, group));
  }
  return absl::OkStatus();
}

void ObjectStore::DropCommittedFile(ObjectWork* work, TxnPlan* plan) {
  const uint64_t fid = work->committed_exists ? work->committed.fid : 0;
  if (fid == 0) return;
  work->unlink_fid = fid;
  DropDeferredFor(fid, plan);
}

uint64_t ObjectStore::AllocateFid(TxnPlan* plan) {
  absl::MutexLock lock(&mu_);
  const uint64_t fid = next_fid_++;
  // A hint only: batches may commit out of allocation order, so Open also
  // takes the largest id it finds.
  plan->batch.Put(format::NextFidKey(), format::EncodeFixed64(next_fid_));
  return fid;
}

absl::StatusOr<std::unique_ptr<RandomFile>> ObjectStore::OpenEmptyFile(TxnPlan* plan,
                                                                        uint64_t size,
                                                                        uint64_t* fid,
                                                                        uint64_t* stale_bytes) {
  *stale_bytes = 0;
  for (;;) {
    {
      // The most recent spare no longer than the object: a longer one has to
      // be cut, freeing blocks (the discards that keeping them avoids). The
      // search is bounded; past it, an empty one from the reserve (the
      // front) if there is one, else the most recent spare, cut: still no
      // inode to create, which costs more.
      absl::MutexLock lock(&mu_);
      if (spares_.empty()) {
        WakeReserveLocked();
        break;
      }
      size_t i = spares_.size();
      const size_t stop = spares_.size() > kSpareSearch ? spares_.size() - kSpareSearch : 0;
      while (i > stop && spares_[i - 1].bytes > size) --i;
      if (i == stop) i = spares_.front().bytes == 0 ? 1 : spares_.size();
      const Spare spare = spares_[i - 1];
      spares_.erase(spares_.begin() + static_cast<std::ptrdiff_t>(i - 1));
      *fid = spare.fid;
      *stale_bytes = spare.bytes;
      spare_bytes_ -= spare.bytes;
      WakeReserveLocked();
    }
    plan->reused_fids.push_back(*fid);
    // A spare is as long as RetireFile measured it (Fsck checks it).
    auto file = io_->OpenFile(DataPath(*fid), OpenMode::kRewrite);
    if (!absl::IsNotFound(file.status())) return file;
    LOG(WARNING) << "store=" << options_.dir << " spare_missing=" << file.status();
    plan->reused_fids.pop_back();
    *stale_bytes = 0;
  }
  *fid = AllocateFid(plan);
  ASSIGN_OR_RETURN(std::unique_ptr<RandomFile> file,
                   io_->OpenFile(DataPath(*fid), OpenMode::kCreate));
  plan->new_fids.push_back(*fid);
  absl::MutexLock lock(&mu_);
  ++files_created_;
  return file;
}

bool ObjectStore::RoomToKeepBlocks(uint64_t bytes) {
  {
    absl::MutexLock lock(&mu_);
    if (spare_bytes_ + bytes > options_.spare_keep_bytes) return false;
  }
  auto space = io_->StatFs(data_dir_);
  return space.ok() &&
         space->avail_bytes * 100 > space->total_bytes * options_.spare_keep_min_avail_pct;
}

void ObjectStore::RetireFile(uint64_t fid) {
  bool keep;
  {
    absl::MutexLock lock(&mu_);
    keep = spares_.size() < kMaxSpareFiles;  // concurrent retires may pass it by a few
  }
  if (keep) {
    auto file = io_->OpenFile(DataPath(fid), OpenMode::kReadWrite);
    absl::StatusOr<uint64_t> size = file.ok() ? (*file)->Size() : file.status();
    absl::Status status = size.status();
    if (status.ok() && *size > 0 && !RoomToKeepBlocks(*size)) {
      status = (*file)->Truncate(0);
      *size = 0;
    }
    if (status.ok()) {
      absl::MutexLock lock(&mu_);
      spares_.push_back({fid, *size});
      spare_bytes_ += *size;
      return;
    }
    if (absl::IsNotFound(status)) return;
    LOG(WARNING) << "store=" << options_.dir << " spare_failed=" << status;
  }
  absl::Status status = io_->RemoveFile(DataPath(fid));
  if (!status.ok()) LOG(WARNING) << "store=" << options_.dir << " unlink_failed=" << status;
}

bool ObjectStore::FillReserve() {
  constexpr size_t kBatch = 64;
  size_t made = 0;
  bool ok = true;
  for (;;) {
    std::vector<uint64_t> fids;
    {
      absl::MutexLock lock(&mu_);
      if (reserve_stop_ || !sticky_error_.ok() ||
          spares_.size() >= options_.spare_reserve_files) {
        break;
      }
      const size_t want = std::min(kBatch, options_.spare_reserve_files - spares_.size());
      for (size_t i = 0; i < want; ++i) fids.push_back(next_fid_++);
    }
    absl::Status status;
    for (uint64_t fid : fids) {
      status = io_->OpenFile(DataPath(fid), OpenMode::kCreate).status();
      if (!status.ok()) break;
    }
    if (status.ok() && options_.sync) status = io_->SyncDir(data_dir_);
    if (!status.ok()) {
      LOG(WARNING) << "store=" << options_.dir << " spare_reserve_failed=" << status;
      ok = false;
      break;
    }
    absl::MutexLock lock(&mu_);
    std::vector<Spare> empty;
    for (uint64_t fid : fids) empty.push_back({fid, 0});
    spares_.insert(spares_.begin(), empty.begin(), empty.end());
    made += fids.size();
  }
  if (made > 0) {
    LOG(INFO) << "store=" << options_.dir << " spare_files_made=" << made
              << " spare_files=" << spare_files();
  }
  return ok;
}

void ObjectStore::ReserveLoop() {
  // Background work: at nice 19 it yields the CPUs to the serving threads.
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19);
  absl::Duration pause = absl::ZeroDuration();
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      // After a failure (a full disk, say) the next try waits a while.
      const absl::Time not_before = absl::Now() + pause;
      while (!reserve_stop_ && absl::Now() < not_before) {
        reserve_wanted_.WaitWithDeadline(&mu_, not_before);
      }
      while (!reserve_stop_ && spares_.size() * 2 >= options_.spare_reserve_files) {
        reserve_wanted_.Wait(&mu_);
      }
      if (reserve_stop_) return;
    }
    pause = FillReserve() ? absl::ZeroDuration() : absl::Seconds(30);
  }
}

void ObjectStore::WakeReserveLocked() {
  if (spares_.size() * 2 < options_.spare_reserve_files) reserve_wanted_.Signal();
}

size_t ObjectStore::spare_files() const {
  absl::MutexLock lock(&mu_);
  return spares_.size();
}

uint64_t ObjectStore::spare_bytes() const {
  absl::MutexLock lock(&mu_);
  return spare_bytes_;
}

absl::Status ObjectStore::WriteNewFile(const std::string& coll, ObjectWork* work, TxnPlan* plan) {
  const ObjectDraft& draft = work->draft;
  DropCommittedFile(work, plan);
  if (draft.size() == 0) return absl::OkStatus();  // no file
  uint64_t stale = 0;  // an old object's bytes at the start of a spare
  ASSIGN_OR_RETURN(std::unique_ptr<RandomFile> file,
                   OpenEmptyFile(plan, draft.size(), &work->fid, &stale));
  const uint32_t block_bytes = options_.csum_block_bytes;
  work->new_sums.reserve(common::BlockCount(draft.size(), block_bytes));
  if (draft.size() >= stale + kPreallocateFrom && WritesEveryChunkFrom(draft, stale)) {
    file->Preallocate(stale, draft.size() - stale);
  }
  for (uint64_t pos = 0; pos < draft.size(); pos += kCopyChunkBytes) {
    const uint64_t length = std::min(kCopyChunkBytes, draft.size() - pos);
    std::string owned;
    absl::string_view buf;
    if (auto covered = draft.Covered(pos, length)) {
      buf = *covered;
    } else {
      ASSIGN_OR_RETURN(owned, DraftBytes(coll, *work, pos, length));
      buf = owned;
    }
    // Zero chunks stay holes, unless a spare has old bytes there; the final
    // truncate sets the size and cuts off a longer spare's old bytes.
    if (pos < stale || !IsZero(buf)) RETURN_IF_ERROR(file->Write(pos, buf));
    const std::vector<uint64_t> sums = common::BlockChecksums(buf, block_bytes);
    for (size_t i = 0; i < sums.size(); ++i) {
      work->new_sums.emplace_back(pos / block_bytes + i, sums[i]);
    }
  }
  RETURN_IF_ERROR(file->Truncate(draft.size()));
  if (options_.sync) {
    absl::Status status = file->Sync();
    if (!status.ok()) return SetSticky(status);
  }
  return absl::OkStatus();
}

absl::Status ObjectStore::WriteInline(const std::string& coll, ObjectWork* work, TxnPlan* plan) {
  const ObjectDraft& draft = work->draft;
  DropCommittedFile(work, plan);
  work->fid = 0;
  ASSIGN_OR_RETURN(std::string buf, DraftBytes(coll, *work, 0, draft.size()));
  const uint32_t block_bytes = options_.csum_block_bytes;
  const std::vector<uint64_t> sums = common::BlockChecksums(buf, block_bytes);
  for (size_t i = 0; i < sums.size(); ++i) work->new_sums.emplace_back(i, sums[i]);
  buf.resize(WithoutTrailingZeros(buf));
  plan->batch.Put(format::InlineKey(coll, work->oid), std::move(buf));
  return absl::OkStatus();
}

absl::Status ObjectStore::PrepareInPlace(const std::string& coll, ObjectWork* work,
                                         TxnPlan* plan) {
  const format::Onode& old = work->committed;
  const ObjectDraft& draft = work->draft;
  const uint32_t block_bytes = options_.csum_block_bytes;
  work->fid = old.fid;
  auto file = io_->OpenFile(DataPath(old.fid), OpenMode::kReadWrite);
  if (absl::IsNotFound(file.status())) {
    return absl::DataLossError(absl::StrCat("object ", coll, "/", Printable(work->oid),
                                            ": data file is missing: ", file.status().message()));
  }
  RETURN_IF_ERROR(file.status());
  work->file = std::move(file).value();

  // 1. Checksums of every block whose content changes (reads only).
  std::vector<common::BlockSpan> spans;
  const auto changed = draft.ChangedRanges(old.size);
  for (const auto& [offset, data] : changed) {
    spans.push_back(common::BlocksCovering(offset, data.size(), block_bytes));
  }
  if (draft.size() > old.size) {
    spans.push_back(common::BlocksCovering(old.size, draft.size() - old.size, block_bytes));
  } else if (draft.size() < old.size && draft.size() % block_bytes != 0) {
    spans.push_back(common::BlockSpan{draft.size() / block_bytes, 1});  // the new short tail
  }
  for (const common::BlockSpan& span : MergeSpans(std::move(spans))) {
    for (uint64_t b = span.first; b < span.first + span.count; ++b) {
      ASSIGN_OR_RETURN(std::string block, DraftBlock(coll, *work, b));
      work->new_sums.emplace_back(b, common::Checksum64(block));
    }
  }
  // 2. Overwrites of committed bytes: deferred records in the batch.
  for (const auto& [offset, data] : changed) {
    format::DeferredRecord record{old.fid, offset, data};
    uint64_t seq;
    {
      absl::MutexLock lock(&mu_);
      seq = next_deferred_seq_++;
    }
    plan->batch.Put(format::DeferredKey(seq), format::EncodeDeferred(record));
    work->deferred.emplace_back(seq, std::move(record));
  }
  // 3. Bytes past the committed end: in place, synced before commit.
  if (draft.size() > old.size) RETURN_IF_ERROR(WriteExtension(work, work->file.get(), plan));
  work->shrink = draft.size() < old.size;
  return absl::OkStatus();
}

absl::Status ObjectStore::WriteExtension(ObjectWork* work, RandomFile* file, TxnPlan* plan) {
  const uint64_t old_size = work->committed.size;
  const ObjectDraft& draft = work->draft;
  // The file's deferred records must not be replayed over the bytes written
  // here: they are all applied (this object is locked and records are applied
  // before its lock is released), so sync them into the file and delete them
  // in this batch.
  if (HasDeferred(work->fid)) {
    if (options_.sync) {
      absl::Status status = file->Sync();
      if (!status.ok()) return SetSticky(status);
    }
    DropDeferredFor(work->fid, plan);
  }
  // Bytes past the committed end are garbage (a truncate, an interrupted
  // write): cut them so that holes read as zeros.
  RETURN_IF_ERROR(file->Truncate(old_size));
  const auto extents = draft.ExtentsFrom(old_size);
  // Only an extension written all through: a hole (a write far past the
  // end) must not get space.
  uint64_t written = 0;
  for (const auto& extent : extents) written += extent.second.size();
  if (written >= kPreallocateFrom && written == draft.size() - old_size) {
    file->Preallocate(old_size, written);
  }
  for (const auto& [offset, data] : extents) {
    RETURN_IF_ERROR(file->Write(offset, data));
  }
  RETURN_IF_ERROR(file->Truncate(draft.size()));
  if (options_.sync) {
    absl::Status status = file->Sync();
    if (!status.ok()) return SetSticky(status);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ObjectStore::DraftBytes(const std::string& coll,
                                                    const ObjectWork& work, uint64_t pos,
                                                    uint64_t length) {
  const ObjectDraft& draft = work.draft;
  std::string buf;
  if (draft.NeedsBase(pos, length)) {
    const uint64_t base_end = std::min(pos + length, draft.base_limit());
    ASSIGN_OR_RETURN(buf, ReadVerified(coll, work.oid, work.committed.fid, work.committed.size,
                                       pos, base_end - pos));
  }
  buf.resize(length, '\0');
  draft.Overlay(pos, &buf);
  return buf;
}

// The drafted content of block `block`.
absl::StatusOr<std::string> ObjectStore::DraftBlock(const std::string& coll,
                                                    const ObjectWork& work, uint64_t block) {
  const uint64_t start = block * options_.csum_block_bytes;
  const uint64_t length =
      std::min<uint64_t>(options_.csum_block_bytes, work.draft.size() - start);
  return DraftBytes(coll, work, start, length);
}

bool ObjectStore::HasDeferred(uint64_t fid) {
  absl::MutexLock lock(&mu_);
  for (const auto& [seq, pending] : deferred_) {
    if (pending.fid == fid) return true;
  }
  return false;
}

void ObjectStore::DropDeferredFor(uint64_t fid, TxnPlan* plan) {
  absl::MutexLock lock(&mu_);
  for (const auto& [seq, pending] : deferred_) {
    if (pending.fid != fid) continue;
    plan->batch.Delete(format::DeferredKey(seq));
    plan->dropped_deferred.push_back(seq);
  }
}

// Group sync of the data directory: a SyncDir that starts after a file was
// created makes its entry durable, so callers whose files an in-flight sync
// may have missed wait for it and then start one sync for all of them.
absl::Status ObjectStore::SyncDataDir() {
  uint64_t target;
  {
    absl::MutexLock lock(&mu_);
    const uint64_t mine = files_created_;
    while (files_dir_synced_ < mine && dir_sync_running_) dir_sync_done_.Wait(&mu_);
    if (files_dir_synced_ >= mine) return absl::OkStatus();
    dir_sync_running_ = true;
    target = files_created_;
  }
  absl::Status status = io_->SyncDir(data_dir_);
  absl::MutexLock lock(&mu_);
  dir_sync_running_ = false;
  if (status.ok()) files_dir_synced_ = std::max(files_dir_synced_, target);
  dir_sync_done_.SignalAll();
  return status;
}

absl::Status ObjectStore::Commit(TxnPlan* plan) {
  RETURN_IF_ERROR(CheckWritable());
  absl::Status status = kv_->Write(plan->batch, options_.sync);
  if (!status.ok()) return SetSticky(Annotate(status, "commit transaction"));
  absl::MutexLock lock(&mu_);
  for (uint64_t seq : plan->dropped_deferred) {
    auto it = deferred_.find(seq);
    if (it == deferred_.end()) continue;
    deferred_bytes_ -= it->second.bytes;
    deferred_.erase(it);
  }
  for (const auto& [oid, work] : plan->objects) {
    for (const auto& [seq, record] : work.deferred) {
      deferred_[seq] = PendingDeferred{record.fid, record.data.size(), false};
      deferred_bytes_ += record.data.size();
    }
  }
  objects_ += plan->objects_delta;
  bytes_used_ += plan->bytes_delta;
  return absl::OkStatus();
}

absl::Status ObjectStore::FinishAfterCommit(TxnPlan* plan) {
  for (auto& [oid, work] : plan->objects) {
    for (const auto& [seq, record] : work.deferred) {
      absl::Status status = work.file->Write(record.offset, record.data);
      if (!status.ok()) return SetSticky(Annotate(status, "apply deferred write"));
      absl::MutexLock lock(&mu_);
      deferred_[seq].applied = true;
    }
    if (work.shrink) {
      absl::Status status = work.file->Truncate(work.draft.size());
      if (!status.ok()) LOG(WARNING) << "store=" << options_.dir << " shrink_failed=" << status;
    }
    if (work.unlink_fid != 0) RetireFile(work.unlink_fid);
  }
  return absl::OkStatus();
}

void ObjectStore::DiscardNewFiles(const TxnPlan& plan) {
  for (uint64_t fid : plan.new_fids) {
    absl::Status status = io_->RemoveFile(DataPath(fid));
    if (!status.ok()) VLOG(1) << "store=" << options_.dir << " discard_failed=" << status;
  }
  // Their entries are durable (they were spares), so they may be spares again.
  for (uint64_t fid : plan.reused_fids) RetireFile(fid);
}

void ObjectStore::MaybeFlush() {
  {
    absl::MutexLock lock(&mu_);
    if (flush_running_ || !sticky_error_.ok()) return;
    if (deferred_.size() <= kDeferredTrimRecords && deferred_bytes_ <= kDeferredTrimBytes) return;
  }
  absl::Status status = Flush();
  if (!status.ok()) LOG(WARNING) << "store=" << options_.dir << " flush_failed=" << status;
}

// Syncs the files of applied deferred records, then deletes the records.
// Without object locks: records only ever become applied, a file that vanished
// was replaced or removed by a batch that already deleted its records, and
// deleting a record twice is harmless.
absl::Status ObjectStore::Flush() {
  std::map<uint64_t, std::vector<uint64_t>> seqs_by_fid;
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](bool* running) { return !*running; }, &flush_running_));
    if (!sticky_error_.ok()) return sticky_error_;
    for (const auto& [seq, pending] : deferred_) {
      if (pending.applied) seqs_by_fid[pending.fid].push_back(seq);
    }
    if (seqs_by_fid.empty()) return absl::OkStatus();
    flush_running_ = true;
  }
  absl::Status status;
  common::KvWriteBatch batch;
  for (const auto& [fid, seqs] : seqs_by_fid) {
    auto file = io_->OpenFile(DataPath(fid), OpenMode::kReadWrite);
    if (file.ok() && options_.sync) status = (*file)->Sync();
    if (!file.ok() && !absl::IsNotFound(file.status())) status = file.status();
    if (!status.ok()) break;
    for (uint64_t seq : seqs) batch.Delete(format::DeferredKey(seq));
  }
  // Synced: a later synced batch need not carry this one (LevelDB does not
  // sync a log it switches away from).
  if (status.ok()) status = kv_->Write(batch, options_.sync);
  if (!status.ok()) status = SetSticky(Annotate(status, "flush deferred writes"));
  absl::MutexLock lock(&mu_);
  flush_running_ = false;
  if (!status.ok()) return status;
  for (const auto& [fid, seqs] : seqs_by_fid) {
    for (uint64_t seq : seqs) {
      auto it = deferred_.find(seq);
      if (it == deferred_.end()) continue;
      deferred_bytes_ -= it->second.bytes;
      deferred_.erase(it);
    }
  }
  return absl::OkStatus();
}

}  // namespace weft::osd
