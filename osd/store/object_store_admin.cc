// Whole-collection and whole-store operations: RemoveCollection and Fsck.
#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/checksum/checksum.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "osd/store/object_store.h"
#include "osd/store/store_format.h"
#include "osd/store/txn_plan.h"

namespace weft::osd {

using format::Printable;

namespace {

bool HasPrefix(absl::string_view s, absl::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Parses "tag esc(coll) esc(oid) ..." (checksum, xattr and omap keys).
bool ParseObjectOf(absl::string_view key, std::string* coll, std::string* oid) {
  if (key.empty()) return false;
  key.remove_prefix(1);
  return format::ConsumeEscaped(&key, coll) && format::ConsumeEscaped(&key, oid);
}

}  // namespace

absl::Status ObjectStore::RemoveCollection(const std::string& coll) {
  if (coll.empty() || coll.size() > kMaxCollectionNameBytes) {
    return absl::InvalidArgumentError("bad collection name");
  }
  LockTable::Guard coll_guard = coll_locks_.Lock({coll}, LockTable::Mode::kExclusive);
  RETURN_IF_ERROR(CheckWritable());
  // 1. The data files and sizes of the collection's objects.
  std::vector<uint64_t> fids;
  uint64_t objects = 0, bytes = 0;
  {
    const std::string prefix = format::OnodePrefix(coll);
    std::unique_ptr<common::KvIterator> it = kv_->NewIterator();
    for (it->Seek(prefix); it->Valid() && HasPrefix(it->key(), prefix); it->Next()) {
      ASSIGN_OR_RETURN(format::Onode onode, format::DecodeOnode(it->value()));
      ++objects;
      bytes += onode.size;
      if (onode.fid != 0) fids.push_back(onode.fid);
    }
    RETURN_IF_ERROR(it->status());
  }
  // 2. Delete every key, in batches, with the collection marker last. Each
  // batch is synced so that a crash leaves a prefix of them.
  TxnPlan plan;
  common::KvWriteBatch& batch = plan.batch;
  for (char tag : format::kTags) {
    const std::string prefix = format::CollectionTagPrefix(tag, coll);
    std::unique_ptr<common::KvIterator> it = kv_->NewIterator();
    for (it->Seek(prefix); it->Valid() && HasPrefix(it->key(), prefix); it->Next()) {
      batch.Delete(it->key());
      if (batch.count() < kRemoveBatchKeys) continue;
      absl::Status status = kv_->Write(batch, options_.sync);
      if (!status.ok()) return SetSticky(Annotate(status, "remove collection"));
      batch.Clear();
    }
    RETURN_IF_ERROR(it->status());
  }
  for (uint64_t fid : fids) DropDeferredFor(fid, &plan);
  batch.Delete(format::CollectionKey(coll));
  plan.objects_delta = -static_cast<int64_t>(objects);
  plan.bytes_delta = -static_cast<int64_t>(bytes);
  RETURN_IF_ERROR(Commit(&plan));
  // 3. Retire the files (a lost unlink leaves an orphan for Open).
  for (uint64_t fid : fids) RetireFile(fid);
  LOG(INFO) << "store=" << options_.dir << " removed_collection=" << coll << " objects=" << objects;
  return absl::OkStatus();
}

absl::Status ObjectStore::FsckObject(const std::string& coll, const std::string& oid,
                                     uint64_t fid, uint64_t size, bool deep) {
  const std::string where = absl::StrCat("fsck: object ", coll, "/", Printable(oid));
  const uint64_t blocks = common::BlockCount(size, options_.csum_block_bytes);
  const uint64_t group_blocks = options_.csum_group_blocks;
  const uint64_t groups = common::BlockCount(blocks, group_blocks);
  // Exactly `groups` checksum keys, numbered 0..groups-1, each with one
  // checksum per block it covers.
  const std::string prefix = format::ChecksumPrefix(coll, oid);
  ASSIGN_OR_RETURN(std::vector<common::KvPair> keys, kv_->ScanPrefix(prefix, groups + 1));
  if (keys.size() != groups) {
    return absl::DataLossError(absl::StrCat(where, " has ", keys.size(), " checksum groups for ",
                                            blocks, " blocks"));
  }
  for (uint64_t i = 0; i < groups; ++i) {
    uint64_t group = 0;
    const uint64_t want = std::min(group_blocks, blocks - i * group_blocks) * 8;
    if (!format::ParseChecksumGroup(keys[i].first, prefix, &group) || group != i ||
        keys[i].second.size() != want) {
      return absl::DataLossError(absl::StrCat(where, ": checksum group ", i, " is malformed"));
    }
  }
  if (fid != 0 && !io_->Stat(DataPath(fid)).ok()) {
    return absl::DataLossError(absl::StrCat(where, ": data file ", DataPath(fid), " is missing"));
  }
  // Inline data exactly when the onode has no file and a size.
  auto inline_data = kv_->Get(format::InlineKey(coll, oid));
  if (!inline_data.ok() && !absl::IsNotFound(inline_data.status())) return inline_data.status();
  const bool want_inline = fid == 0 && size > 0;
  if (inline_data.ok() != want_inline) {
    return absl::DataLossError(absl::StrCat(where, want_inline ? ": inline data is missing"
                                                               : ": has stray inline data"));
  }
  if (want_inline && inline_data->size() > size) {
    return absl::DataLossError(absl::StrCat(where, ": inline data of ", inline_data->size(),
                                            " bytes for size ", size));
  }
  if (!deep) return absl::OkStatus();
  LockTable::Guard coll_guard;
  LockTable::Guard guard = LockObjectShared(coll, oid, &coll_guard);
  constexpr uint64_t kChunk = 8 << 20;
  for (uint64_t pos = 0; pos < size; pos += kChunk) {
    RETURN_IF_ERROR(Annotate(ReadVerified(coll, oid, fid, size, pos, kChunk).status(), where));
  }
  return absl::OkStatus();
}

absl::Status ObjectStore::Fsck(bool deep) {
  // Onodes and their checksums and files.
  std::set<std::pair<std::string, std::string>> objects;
  std::set<std::string> colls;
  std::set<uint64_t> live;
  {
    ASSIGN_OR_RETURN(auto entries, kv_->ScanPrefix(format::OnodeTagPrefix(), SIZE_MAX));
    for (const auto& [key, value] : entries) {
      std::string coll, oid;
      if (!format::ParseOnodeKey(key, &coll, &oid)) {
        return absl::DataLossError("fsck: bad onode key");
      }
      ASSIGN_OR_RETURN(format::Onode onode, format::DecodeOnode(value));
      if (onode.fid != 0 && !live.insert(onode.fid).second) {
        return absl::DataLossError(absl::StrCat("fsck: data file ", onode.fid, " is shared"));
      }
      RETURN_IF_ERROR(FsckObject(coll, oid, onode.fid, onode.size, deep));
      objects.emplace(coll, std::move(oid));
      colls.insert(std::move(coll));
    }
  }
  ASSIGN_OR_RETURN(std::vector<std::string> listed, ListCollections());
  for (const std::string& coll : colls) {
    if (!std::binary_search(listed.begin(), listed.end(), coll)) {
      return absl::DataLossError(absl::StrCat("fsck: collection ", coll, " has no marker"));
    }
  }
  // Checksum, xattr, omap and inline data keys without an onode.
  for (char tag : {'K', 'X', 'O', 'I'}) {
    std::unique_ptr<common::KvIterator> it = kv_->NewIterator();
    const std::string prefix(1, tag);
    for (it->Seek(prefix); it->Valid() && HasPrefix(it->key(), prefix); it->Next()) {
      std::string coll, oid;
      if (!ParseObjectOf(it->key(), &coll, &oid) || objects.count({coll, oid}) == 0) {
        return absl::DataLossError(absl::StrCat("fsck: stray '", prefix, "' key of ", coll, "/",
                                                Printable(oid)));
      }
    }
    RETURN_IF_ERROR(it->status());
  }
  // Deferred records name live files.
  ASSIGN_OR_RETURN(auto records, kv_->ScanPrefix(format::DeferredTagPrefix(), SIZE_MAX));
  for (const auto& [key, value] : records) {
    ASSIGN_OR_RETURN(format::DeferredRecord record, format::DecodeDeferred(value));
    if (live.count(record.fid) == 0) {
      return absl::DataLossError(absl::StrCat("fsck: deferred record for dead file ", record.fid));
    }
  }
  // Data files are all referenced, or spares of the size they were kept
  // with; spares are not.
  std::map<uint64_t, uint64_t> spares;  // fid -> bytes
  {
    absl::MutexLock lock(&mu_);
    for (const Spare& spare : spares_) spares[spare.fid] = spare.bytes;
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, io_->ListDir(data_dir_));
  for (const std::string& name : names) {
    uint64_t fid = 0;
    const bool parsed = format::ParseDataFileName(name, &fid);
    if (parsed && spares.count(fid) > 0) {
      if (live.count(fid) > 0) {
        return absl::DataLossError(absl::StrCat("fsck: spare data file data/", name, " is in use"));
      }
      auto file = io_->OpenFile(DataPath(fid), OpenMode::kRead);
      RETURN_IF_ERROR(file.status());
      ASSIGN_OR_RETURN(uint64_t size, (*file)->Size());
      if (size != spares[fid]) {
        return absl::DataLossError(absl::StrCat("fsck: spare data file data/", name, " holds ",
                                                size, " bytes, not ", spares[fid]));
      }
      spares.erase(fid);
      continue;
    }
    if (!parsed || live.count(fid) == 0) {
      return absl::DataLossError(absl::StrCat("fsck: unreferenced data file data/", name));
    }
  }
  if (!spares.empty()) {
    return absl::DataLossError(
        absl::StrCat("fsck: spare data file ", spares.begin()->first, " is missing"));
  }
  return absl::OkStatus();
}

}  // namespace weft::osd
