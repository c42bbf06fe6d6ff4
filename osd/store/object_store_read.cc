// The read side of the object store: object data (checksum-verified),
// attributes, listings, collection metadata, stats and fsck.
//
// Per-object reads take the collection lock and the object's lock shared, so
// they never see a transaction half-applied (its data file replaced but not
// yet its checksums, or a deferred write committed but not yet in the file).
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/checksum/checksum.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "osd/store/object_store.h"
#include "osd/store/store_format.h"

namespace weft::osd {

using format::Printable;

namespace {

bool HasPrefix(absl::string_view s, absl::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

absl::Status CheckReadName(absl::string_view what, const std::string& name, size_t max_bytes) {
  if (!name.empty() && name.size() <= max_bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, " must be 1 to ", max_bytes, " bytes, not ", name.size()));
}

absl::Status CheckObjectName(const std::string& coll, const std::string& oid) {
  RETURN_IF_ERROR(CheckReadName("collection name", coll, kMaxCollectionNameBytes));
  return CheckReadName("object name", oid, kMaxOidBytes);
}

ObjectMeta ToMeta(const format::Onode& onode) {
  return ObjectMeta{onode.size, onode.version, onode.mtime_ns};
}

}  // namespace

LockTable::Guard ObjectStore::LockObjectShared(const std::string& coll, const std::string& oid,
                                               LockTable::Guard* coll_guard) {
  *coll_guard = coll_locks_.Lock({coll}, LockTable::Mode::kShared);
  return object_locks_.Lock({format::OnodeKey(coll, oid)}, LockTable::Mode::kShared);
}

absl::StatusOr<format::Onode> ObjectStore::LoadOnode(const std::string& coll,
                                                     const std::string& oid, bool* exists) {
  *exists = false;
  auto value = kv_->Get(format::OnodeKey(coll, oid));
  if (absl::IsNotFound(value.status())) return format::Onode();
  RETURN_IF_ERROR(value.status());
  auto onode = format::DecodeOnode(*value);
  if (!onode.ok()) {
    return Annotate(onode.status(), absl::StrCat("object ", coll, "/", Printable(oid)));
  }
  *exists = true;
  return onode;
}

absl::StatusOr<format::Onode> ObjectStore::LoadExisting(const std::string& coll,
                                                        const std::string& oid) {
  bool exists = false;
  ASSIGN_OR_RETURN(format::Onode onode, LoadOnode(coll, oid, &exists));
  if (!exists) {
    return absl::NotFoundError(absl::StrCat("object ", coll, "/", Printable(oid), " not found"));
  }
  return onode;
}

absl::Status ObjectStore::CheckReadable(uint64_t fid) {
  absl::MutexLock lock(&mu_);
  if (sticky_error_.ok()) return absl::OkStatus();
  for (const auto& [seq, pending] : deferred_) {
    if (pending.fid == fid && !pending.applied) {
      return Annotate(sticky_error_, "object has a committed write the failed store could not "
                                     "apply; reopen the store to replay it");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint64_t>> ObjectStore::LoadChecksums(const std::string& coll,
                                                                 const std::string& oid,
                                                                 uint64_t first, uint64_t count) {
  std::vector<uint64_t> sums;
  if (count == 0) return sums;
  sums.reserve(count);
  const uint64_t group_blocks = options_.csum_group_blocks;
  const uint64_t first_group = first / group_blocks;
  const uint64_t end_group = (first + count - 1) / group_blocks + 1;
  // Appends the sums of group `group` that [first, first + count) needs;
  // false if the group holds fewer blocks than that.
  auto take = [&](uint64_t group, absl::string_view value) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(std::vector<uint64_t> held, format::DecodeChecksumGroup(value));
    const uint64_t start = group * group_blocks;
    const uint64_t from = std::max(first, start);
    const uint64_t to = std::min(first + count, start + group_blocks);
    for (uint64_t b = from; b < to; ++b) {
      if (b - start >= held.size()) return false;
      sums.push_back(held[b - start]);
    }
    return true;
  };
  // A few groups (an append's partial last block, a small read): point
  // lookups, which LevelDB answers from the memtable for groups written
  // lately. A scan builds an iterator over every table and positions each:
  // it took a fifth of the OSDs' CPU while the MDS appended to its journal
  // (perf, 8,000 creates through the mount, with one key per block).
  if (end_group - first_group <= kPointLookupGroups) {
    for (uint64_t group = first_group; group < end_group; ++group) {
      absl::StatusOr<std::string> value = kv_->Get(format::ChecksumKey(coll, oid, group));
      if (absl::IsNotFound(value.status())) break;
      RETURN_IF_ERROR(value.status());
      ASSIGN_OR_RETURN(bool whole, take(group, *value));
      if (!whole) break;
    }
    return ChecksumsFound(coll, oid, first, count, std::move(sums));
  }
  const std::string prefix = format::ChecksumPrefix(coll, oid);
  ASSIGN_OR_RETURN(std::vector<common::KvPair> entries,
                   kv_->Scan(format::ChecksumKey(coll, oid, first_group),
                             format::ChecksumKey(coll, oid, end_group),
                             end_group - first_group));
  uint64_t expect = first_group;
  for (const auto& [key, value] : entries) {
    uint64_t group = 0;
    if (!format::ParseChecksumGroup(key, prefix, &group) || group != expect) break;
    ASSIGN_OR_RETURN(bool whole, take(group, value));
    if (!whole) break;
    ++expect;
  }
  return ChecksumsFound(coll, oid, first, count, std::move(sums));
}

absl::StatusOr<std::vector<uint64_t>> ObjectStore::ChecksumsFound(const std::string& coll,
                                                                  const std::string& oid,
                                                                  uint64_t first, uint64_t count,
                                                                  std::vector<uint64_t> sums) {
  if (sums.size() != count) {
    return absl::DataLossError(absl::StrCat("object ", coll, "/", Printable(oid),
                                            ": checksum of block ", first + sums.size(),
                                            " is missing"));
  }
  return sums;
}

absl::StatusOr<std::string> ObjectStore::ReadVerified(const std::string& coll,
                                                      const std::string& oid, uint64_t fid,
                                                      uint64_t size, uint64_t offset,
                                                      uint64_t length) {
  if (offset >= size || length == 0) return std::string();
  const uint64_t end = offset + std::min(length, size - offset);
  const uint32_t block_bytes = options_.csum_block_bytes;
  const common::BlockSpan span = common::BlocksCovering(offset, end - offset, block_bytes);
  const uint64_t aligned_start = span.first * block_bytes;
  const uint64_t aligned_end = std::min(size, (span.first + span.count) * block_bytes);
  ASSIGN_OR_RETURN(std::vector<uint64_t> sums, LoadChecksums(coll, oid, span.first, span.count));
  std::string data;
  if (fid == 0) {  // inline: the KV value holds the bytes up to the trailing zeros
    auto value = kv_->Get(format::InlineKey(coll, oid));
    if (absl::IsNotFound(value.status())) {
      return absl::DataLossError(
          absl::StrCat("object ", coll, "/", Printable(oid), ": inline data is missing"));
    }
    RETURN_IF_ERROR(value.status());
    if (aligned_start < value->size()) {
      data = value->substr(aligned_start, aligned_end - aligned_start);
    }
  } else {
    auto file = io_->OpenFile(DataPath(fid), OpenMode::kRead);
    if (absl::IsNotFound(file.status())) {
      return absl::DataLossError(absl::StrCat("object ", coll, "/", Printable(oid),
                                              ": data file ", DataPath(fid), " is missing"));
    }
    RETURN_IF_ERROR(file.status());
    RETURN_IF_ERROR((*file)->Read(aligned_start, aligned_end - aligned_start, &data));
  }
  // A file (or an inline value) shorter than the object reads as zeros
  // there; the checksums decide.
  data.resize(aligned_end - aligned_start, '\0');
  for (uint64_t i = 0; i < span.count; ++i) {
    const uint64_t pos = i * block_bytes;
    const absl::string_view block =
        absl::string_view(data).substr(pos, std::min<uint64_t>(block_bytes, data.size() - pos));
    if (common::Checksum64(block) != sums[i]) {
      const uint64_t b = span.first + i;
      LOG(ERROR) << "store=" << options_.dir << " checksum_mismatch coll=" << coll
                 << " oid=" << Printable(oid) << " block=" << b;
      return absl::DataLossError(absl::StrCat(
          "checksum mismatch in object ", coll, "/", Printable(oid), " block ", b, " (bytes ",
          b * block_bytes, "..", b * block_bytes + block.size(), ")"));
    }
  }
  // In place: a read from a block boundary (whole objects, EC chunks) is
  // the common case and costs no second copy of its bytes.
  data.erase(0, offset - aligned_start);
  data.resize(end - offset);
  return data;
}

absl::StatusOr<std::string> ObjectStore::Read(const std::string& coll, const std::string& oid,
                                              uint64_t offset, uint64_t length) {
  RETURN_IF_ERROR(CheckObjectName(coll, oid));
  LockTable::Guard coll_guard;
  LockTable::Guard guard = LockObjectShared(coll, oid, &coll_guard);
  ASSIGN_OR_RETURN(format::Onode onode, LoadExisting(coll, oid));
  RETURN_IF_ERROR(CheckReadable(onode.fid));
  return ReadVerified(coll, oid, onode.fid, onode.size, offset, length);
}

absl::StatusOr<ObjectMeta> ObjectStore::Stat(const std::string& coll, const std::string& oid) {
  RETURN_IF_ERROR(CheckObjectName(coll, oid));
  ASSIGN_OR_RETURN(format::Onode onode, LoadExisting(coll, oid));
  return ToMeta(onode);
}

absl::StatusOr<std::string> ObjectStore::GetXattr(const std::string& coll, const std::string& oid,
                                                  const std::string& name) {
  RETURN_IF_ERROR(CheckObjectName(coll, oid));
  LockTable::Guard coll_guard;
  LockTable::Guard guard = LockObjectShared(coll, oid, &coll_guard);
  RETURN_IF_ERROR(LoadExisting(coll, oid).status());
  auto value = kv_->Get(format::XattrKey(coll, oid, name));
  if (absl::IsNotFound(value.status())) {
    return absl::NotFoundError(absl::StrCat("object ", coll, "/", Printable(oid), " has no xattr ",
                                            Printable(name)));
  }
  return value;
}

absl::StatusOr<std::map<std::string, std::string>> ObjectStore::GetXattrs(const std::string& coll,
                                                                          const std::string& oid) {
  RETURN_IF_ERROR(CheckObjectName(coll, oid));
  LockTable::Guard coll_guard;
  LockTable::Guard guard = LockObjectShared(coll, oid, &coll_guard);
  RETURN_IF_ERROR(LoadExisting(coll, oid).status());
  const std::string prefix = format::XattrPrefix(coll, oid);
  ASSIGN_OR_RETURN(std::vector<common::KvPair> entries, kv_->ScanPrefix(prefix, SIZE_MAX));
  std::map<std::string, std::string> xattrs;
  for (auto& [key, value] : entries) xattrs[key.substr(prefix.size())] = std::move(value);
  return xattrs;
}

absl::StatusOr<std::map<std::string, std::string>> ObjectStore::OmapGet(
    const std::string& coll, const std::string& oid, const std::vector<std::string>& keys) {
  RETURN_IF_ERROR(CheckObjectName(coll, oid));
  LockTable::Guard coll_guard;
  LockTable::Guard guard = LockObjectShared(coll, oid, &coll_guard);
  RETURN_IF_ERROR(LoadExisting(coll, oid).status());
  std::map<std::string, std::string> values;
  for (const std::string& key : keys) {
    auto value = kv_->Get(format::OmapKey(coll, oid, key));
    if (absl::IsNotFound(value.status())) continue;
    RETURN_IF_ERROR(value.status());
    values[key] = std::move(value).value();
  }
  return values;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ObjectStore::OmapList(
    const std::string& coll, const std::string& oid, const std::string& start_after,
    const std::string& prefix, uint32_t max_entries, bool* more) {
  if (more != nullptr) *more = false;
  RETURN_IF_ERROR(CheckObjectName(coll, oid));
  LockTable::Guard coll_guard;
  LockTable::Guard guard = LockObjectShared(coll, oid, &coll_guard);
  RETURN_IF_ERROR(LoadExisting(coll, oid).status());
  const std::string base = format::OmapPrefix(coll, oid);
  const std::string scan_prefix = base + prefix;
  const std::string after_key = base + start_after;
  std::vector<std::pair<std::string, std::string>> out;
  std::unique_ptr<common::KvIterator> it = kv_->NewIterator();
  for (it->Seek(std::max(scan_prefix, after_key)); it->Valid() && HasPrefix(it->key(), scan_prefix);
       it->Next()) {
    if (!start_after.empty() && it->key() == after_key) continue;
    if (out.size() >= max_entries) {
      if (more != nullptr) *more = true;
      break;
    }
    out.emplace_back(std::string(it->key().substr(base.size())), std::string(it->value()));
  }
  RETURN_IF_ERROR(it->status());
  return out;
}

absl::StatusOr<std::vector<std::pair<std::string, ObjectMeta>>> ObjectStore::ListObjects(
    const std::string& coll, const std::string& start_after, uint32_t max_entries, bool* more,
    const std::string& name_prefix) {
  if (more != nullptr) *more = false;
  RETURN_IF_ERROR(CheckReadName("collection name", coll, kMaxCollectionNameBytes));
  LockTable::Guard coll_guard = coll_locks_.Lock({coll}, LockTable::Mode::kShared);
  // Escaped names sort like the names, and a name's escaped bytes begin with
  // its prefix's: the objects named name_prefix... are one run of keys.
  const std::string prefix = format::OnodeNamePrefix(coll, name_prefix);
  const std::string after_key = start_after.empty() ? prefix : format::OnodeKey(coll, start_after);
  std::vector<std::pair<std::string, ObjectMeta>> out;
  std::unique_ptr<common::KvIterator> it = kv_->NewIterator();
  for (it->Seek(std::max(after_key, prefix)); it->Valid() && HasPrefix(it->key(), prefix);
       it->Next()) {
    if (!start_after.empty() && it->key() == after_key) continue;
    if (out.size() >= max_entries) {
      if (more != nullptr) *more = true;
      break;
    }
    std::string key_coll, oid;
    if (!format::ParseOnodeKey(it->key(), &key_coll, &oid)) {
      return absl::DataLossError(absl::StrCat("bad onode key in collection ", coll));
    }
    auto onode = format::DecodeOnode(it->value());
    if (!onode.ok()) return Annotate(onode.status(), absl::StrCat(coll, "/", Printable(oid)));
    out.emplace_back(std::move(oid), ToMeta(*onode));
  }
  RETURN_IF_ERROR(it->status());
  return out;
}

absl::StatusOr<std::vector<std::string>> ObjectStore::ListCollections() {
  ASSIGN_OR_RETURN(std::vector<common::KvPair> entries,
                   kv_->ScanPrefix(format::CollectionKeyPrefix(), SIZE_MAX));
  std::vector<std::string> colls;
  for (const auto& [key, value] : entries) {
    std::string coll;
    if (!format::ParseCollectionKey(key, &coll)) return absl::DataLossError("bad collection key");
    colls.push_back(std::move(coll));
  }
  return colls;
}

absl::StatusOr<std::string> ObjectStore::GetMeta(const std::string& coll, const std::string& key) {
  RETURN_IF_ERROR(CheckReadName("collection name", coll, kMaxCollectionNameBytes));
  auto value = kv_->Get(format::MetaKey(coll, key));
  if (absl::IsNotFound(value.status())) {
    return absl::NotFoundError(
        absl::StrCat("collection ", coll, " has no metadata key ", Printable(key)));
  }
  return value;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ObjectStore::ListMeta(
    const std::string& coll, const std::string& prefix) {
  RETURN_IF_ERROR(CheckReadName("collection name", coll, kMaxCollectionNameBytes));
  LockTable::Guard coll_guard = coll_locks_.Lock({coll}, LockTable::Mode::kShared);
  const std::string base = format::MetaKey(coll, "");
  ASSIGN_OR_RETURN(std::vector<common::KvPair> entries,
                   kv_->ScanPrefix(base + prefix, SIZE_MAX));
  for (auto& entry : entries) entry.first.erase(0, base.size());
  return entries;
}

ObjectStore::Stats ObjectStore::GetStats() {
  Stats stats;
  {
    absl::MutexLock lock(&mu_);
    stats.bytes_used = bytes_used_;
    stats.objects = objects_;
  }
  auto space = io_->StatFs(options_.dir);
  if (space.ok()) {
    stats.fs_total_bytes = space->total_bytes;
    stats.fs_avail_bytes = space->avail_bytes;
    stats.fs_device = space->device;
  } else {
    LOG(WARNING) << "store=" << options_.dir << " statfs_failed=" << space.status();
  }
  return stats;
}

}  // namespace weft::osd
