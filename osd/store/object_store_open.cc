// Creating and opening a store, and crash recovery.
//
// Recovery on Open, in this order:
//  1. Scan the onodes: object count, bytes, and the set of live file ids.
//  2. Replay every deferred record whose file is live, in seq order, sync the
//     files, then delete all records in one synced batch. Replaying is
//     idempotent (see object_store.cc), so a crash during it is harmless.
//     Records of dead files cannot exist (the batch that drops a file deletes
//     them) but are discarded if found.
//  3. Unlink data files that no onode references: files of transactions that
//     crashed before their commit, and replaced files whose unlink was lost.
//  4. The next file id is above the hint, every live id and every file seen,
//     so an id is never reused while anything on disk still names it.
#include <algorithm>
#include <chrono>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/kv/leveldb_store.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "osd/store/object_store.h"
#include "osd/store/store_format.h"

namespace weft::osd {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// LevelDB for the store's metadata: a 16 MiB write buffer (at most two in
// memory) makes fewer level-0 tables for compaction to merge under a write
// stream, and no compression, as checksums do not compress and snappy cost a
// few percent of the OSD's CPU. Together ~10% less OSD+client CPU on a 1 GiB
// streaming write (docs/ARCHITECTURE.md).
common::LevelDbStore::Options KvOptions() {
  common::LevelDbStore::Options options;
  options.write_buffer_bytes = 16 << 20;
  options.compress = false;
  return options;
}

bool IsLive(const std::vector<uint64_t>& live_sorted, uint64_t fid) {
  return std::binary_search(live_sorted.begin(), live_sorted.end(), fid);
}

// Creates the directory if missing; fails if it exists but is not one.
absl::Status EnsureDir(FileIo* io, const std::string& path) {
  auto type = io->Stat(path);
  if (absl::IsNotFound(type.status())) return io->CreateDir(path);
  RETURN_IF_ERROR(type.status());
  if (*type != FileType::kDirectory) {
    return absl::FailedPreconditionError(absl::StrCat(path, " exists and is not a directory"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ObjectStore::Mkfs(const StoreOptions& options, const std::string& fsid,
                               int32_t osd_id) {
  RETURN_IF_ERROR(options.Validate());
  if (fsid.empty()) return absl::InvalidArgumentError("mkfs: fsid is empty");
  if (osd_id < 0) return absl::InvalidArgumentError(absl::StrCat("mkfs: bad osd id ", osd_id));
  FileIo* io = options.io != nullptr ? options.io : PosixFileIo();
  const std::string& dir = options.dir;
  RETURN_IF_ERROR(Annotate(EnsureDir(io, dir), "mkfs"));
  std::unique_ptr<common::KvStore> owned_kv;
  common::KvStore* kv = options.kv;
  if (kv == nullptr) {
    const std::string meta = dir + "/meta";
    if (io->Stat(meta).ok()) {
      return absl::AlreadyExistsError(absl::StrCat("mkfs: ", dir, " already holds a store"));
    }
    common::LevelDbStore::Options kv_options = KvOptions();
    kv_options.create_if_missing = true;
    kv_options.error_if_exists = true;
    ASSIGN_OR_RETURN(owned_kv, common::LevelDbStore::Open(meta, kv_options));
    kv = owned_kv.get();
  } else if (kv->Get(format::SuperblockKey()).ok()) {
    return absl::AlreadyExistsError(absl::StrCat("mkfs: ", dir, " already holds a store"));
  }
  const std::string data_dir = dir + "/data";
  RETURN_IF_ERROR(Annotate(EnsureDir(io, data_dir), "mkfs"));
  ASSIGN_OR_RETURN(std::vector<std::string> leftovers, io->ListDir(data_dir));
  if (!leftovers.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("mkfs: ", data_dir, " is not empty (", leftovers.size(), " entries)"));
  }
  if (options.sync) {
    RETURN_IF_ERROR(io->SyncDir(data_dir));
    RETURN_IF_ERROR(io->SyncDir(dir));
  }
  Superblock sb{fsid, osd_id, NowMs(), options.csum_block_bytes, options.csum_group_blocks};
  common::KvWriteBatch batch;
  batch.Put(format::NextFidKey(), format::EncodeFixed64(1));
  batch.Put(format::SuperblockKey(), format::EncodeSuperblock(sb));  // last: the commit point
  RETURN_IF_ERROR(Annotate(kv->Write(batch, /*sync=*/true), "mkfs: write superblock"));
  LOG(INFO) << "mkfs dir=" << dir << " fsid=" << fsid << " osd=" << osd_id
            << " csum_block_bytes=" << options.csum_block_bytes
            << " csum_group_blocks=" << options.csum_group_blocks;
  return absl::OkStatus();
}

absl::Status ObjectStore::CheckStoreDir(FileIo* io, const std::string& dir) {
  auto type = io->Stat(dir);
  if (absl::IsNotFound(type.status())) {
    return absl::NotFoundError(absl::StrCat("object store dir ", dir, " does not exist"));
  }
  RETURN_IF_ERROR(type.status());
  if (*type != FileType::kDirectory) {
    return absl::FailedPreconditionError(absl::StrCat(dir, " is not a directory"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ObjectStore>> ObjectStore::Open(const StoreOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  FileIo* io = options.io != nullptr ? options.io : PosixFileIo();
  const std::string& dir = options.dir;
  RETURN_IF_ERROR(CheckStoreDir(io, dir));
  std::unique_ptr<common::KvStore> owned_kv;
  common::KvStore* kv = options.kv;
  if (kv == nullptr) {
    const std::string meta = dir + "/meta";
    if (absl::IsNotFound(io->Stat(meta).status())) {
      return absl::FailedPreconditionError(
          absl::StrCat(dir, " is not a weft OSD store: it has no meta/ (run mkfs)"));
    }
    auto opened = common::LevelDbStore::Open(meta, KvOptions());
    if (!opened.ok()) return Annotate(opened.status(), absl::StrCat("open store ", dir));
    owned_kv = std::move(opened).value();
    kv = owned_kv.get();
  }
  auto sb_value = kv->Get(format::SuperblockKey());
  if (absl::IsNotFound(sb_value.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " is not a weft OSD store: it has no superblock (run mkfs)"));
  }
  RETURN_IF_ERROR(Annotate(sb_value.status(), absl::StrCat("open store ", dir)));
  auto sb = format::DecodeSuperblock(*sb_value);
  if (!sb.ok()) {
    return absl::DataLossError(
        absl::StrCat("object store ", dir, " has a corrupt superblock: ", sb.status().message()));
  }
  if (absl::IsNotFound(io->Stat(dir + "/data").status())) {
    return absl::DataLossError(absl::StrCat("object store ", dir, " has lost its data/ dir"));
  }
  StoreOptions effective = options;
  effective.csum_block_bytes = sb->csum_block_bytes;  // fixed at mkfs
  effective.csum_group_blocks = sb->csum_group_blocks;
  std::unique_ptr<ObjectStore> store(
      new ObjectStore(effective, io, std::move(owned_kv), kv, *std::move(sb)));
  RETURN_IF_ERROR(Annotate(store->Recover(), absl::StrCat("recover store ", dir)));
  if (effective.spare_reserve_files > 0) {
    store->FillReserve();  // a failure is logged; the thread tries again later
    store->reserve_thread_ = std::thread([s = store.get()] { s->ReserveLoop(); });
  }
  return store;
}

absl::Status ObjectStore::Recover() {
  // 1. Onodes.
  std::vector<uint64_t> live;
  uint64_t objects = 0, bytes = 0;
  std::unique_ptr<common::KvIterator> it = kv_->NewIterator();
  const std::string prefix = format::OnodeTagPrefix();
  for (it->Seek(prefix); it->Valid() && it->key().substr(0, prefix.size()) == prefix; it->Next()) {
    std::string coll, oid;
    if (!format::ParseOnodeKey(it->key(), &coll, &oid)) return absl::DataLossError("bad onode key");
    auto onode = format::DecodeOnode(it->value());
    if (!onode.ok()) {
      return Annotate(onode.status(), absl::StrCat(coll, "/", format::Printable(oid)));
    }
    ++objects;
    bytes += onode->size;
    if (onode->fid != 0) live.push_back(onode->fid);
  }
  RETURN_IF_ERROR(it->status());
  std::sort(live.begin(), live.end());
  // 2. Deferred writes, 3. orphans (spares).
  RETURN_IF_ERROR(ReplayDeferred(live));
  uint64_t max_file_fid = 0;
  RETURN_IF_ERROR(AdoptOrphans(live, &max_file_fid));
  // 4. The next file id.
  uint64_t next_fid = 1;
  auto hint = kv_->Get(format::NextFidKey());
  if (hint.ok()) {
    ASSIGN_OR_RETURN(next_fid, format::DecodeFixed64(*hint));
  } else if (!absl::IsNotFound(hint.status())) {
    return hint.status();
  }
  if (!live.empty()) next_fid = std::max(next_fid, live.back() + 1);
  next_fid = std::max(next_fid, max_file_fid + 1);
  absl::MutexLock lock(&mu_);
  next_fid_ = next_fid;
  objects_ = objects;
  bytes_used_ = bytes;
  LOG(INFO) << "store=" << options_.dir << " opened objects=" << objects << " bytes=" << bytes
            << " next_fid=" << next_fid;
  return absl::OkStatus();
}

absl::Status ObjectStore::ReplayDeferred(const std::vector<uint64_t>& live_sorted) {
  std::map<uint64_t, std::unique_ptr<RandomFile>> files;
  common::KvWriteBatch batch;
  uint64_t max_seq = 0, replayed = 0, discarded = 0;
  std::unique_ptr<common::KvIterator> it = kv_->NewIterator();
  const std::string prefix = format::DeferredTagPrefix();
  for (it->Seek(prefix); it->Valid() && it->key().substr(0, prefix.size()) == prefix; it->Next()) {
    uint64_t seq = 0;
    if (!format::ParseDeferredKey(it->key(), &seq)) return absl::DataLossError("bad deferred key");
    ASSIGN_OR_RETURN(format::DeferredRecord record, format::DecodeDeferred(it->value()));
    max_seq = std::max(max_seq, seq);
    batch.Delete(it->key());
    if (!IsLive(live_sorted, record.fid)) {
      ++discarded;
      continue;
    }
    std::unique_ptr<RandomFile>& file = files[record.fid];
    if (file == nullptr) {
      auto opened = io_->OpenFile(DataPath(record.fid), OpenMode::kReadWrite);
      if (absl::IsNotFound(opened.status())) {
        return absl::DataLossError(absl::StrCat("data file ", DataPath(record.fid),
                                                " of a deferred write is missing"));
      }
      RETURN_IF_ERROR(opened.status());
      file = std::move(opened).value();
    }
    RETURN_IF_ERROR(file->Write(record.offset, record.data));
    ++replayed;
  }
  RETURN_IF_ERROR(it->status());
  if (options_.sync) {
    for (auto& [fid, file] : files) RETURN_IF_ERROR(file->Sync());
  }
  if (!batch.empty()) RETURN_IF_ERROR(kv_->Write(batch, /*sync=*/true));
  {
    absl::MutexLock lock(&mu_);
    next_deferred_seq_ = max_seq + 1;
  }
  if (replayed + discarded > 0) {
    LOG(INFO) << "store=" << options_.dir << " deferred_replayed=" << replayed
              << " deferred_discarded=" << discarded;
  }
  return absl::OkStatus();
}

absl::Status ObjectStore::AdoptOrphans(const std::vector<uint64_t>& live_sorted,
                                       uint64_t* max_file_fid) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, io_->ListDir(data_dir_));
  std::vector<uint64_t> spares;
  uint64_t removed = 0;
  for (const std::string& name : names) {
    uint64_t fid = 0;
    if (!format::ParseDataFileName(name, &fid)) {
      LOG(WARNING) << "store=" << options_.dir << " stray_file=data/" << name;
      continue;
    }
    *max_file_fid = std::max(*max_file_fid, fid);
    if (IsLive(live_sorted, fid)) continue;
    if (spares.size() < kMaxSpareFiles) {
      ASSIGN_OR_RETURN(std::unique_ptr<RandomFile> file,
                       io_->OpenFile(DataPath(fid), OpenMode::kReadWrite));
      ASSIGN_OR_RETURN(const uint64_t size, file->Size());
      if (size > 0) RETURN_IF_ERROR(file->Truncate(0));
      spares.push_back(fid);
      continue;
    }
    RETURN_IF_ERROR(io_->RemoveFile(DataPath(fid)));
    ++removed;
  }
  // An orphan may be a file created just before a crash: make its entry
  // durable before a committed onode can come to reference it.
  if (!spares.empty() && options_.sync) RETURN_IF_ERROR(io_->SyncDir(data_dir_));
  if (removed > 0 || !spares.empty()) {
    LOG(INFO) << "store=" << options_.dir << " orphans_removed=" << removed
              << " spare_files=" << spares.size();
  }
  absl::MutexLock lock(&mu_);
  spares_.clear();
  spare_bytes_ = 0;
  for (uint64_t fid : spares) spares_.push_back({fid, 0});
  return absl::OkStatus();
}

}  // namespace weft::osd
