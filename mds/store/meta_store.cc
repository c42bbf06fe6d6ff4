#include "mds/store/meta_store.h"

#include "absl/strings/str_cat.h"
#include "common/status/status.h"

namespace weft::mds {
namespace {

constexpr uint32_t kOmapPage = 4096;

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> MetaStore::ListOmap(const std::string& oid) {
  std::map<std::string, std::string> out;
  std::string after;
  for (;;) {
    objects::ObjectOperation op;
    op.OmapList(after, "", kOmapPage);
    auto result = objects_->Execute(pool_, oid, std::move(op));
    if (absl::IsNotFound(result.status())) return out;
    if (!result.ok()) return Annotate(result.status(), absl::StrCat("list ", oid));
    const auto& item = result->items.at(0);
    for (const auto& [k, v] : item.kvs) out[k] = v;
    if (!item.more || item.kvs.empty()) return out;
    after = item.kvs.back().first;
  }
}

absl::StatusOr<std::vector<pb::InodeRec>> MetaStore::LoadInodes(
    const std::vector<uint64_t>& inos) {
  std::map<std::string, std::vector<std::string>> by_object;
  for (uint64_t ino : inos) by_object[InodeTableObject(fs_, ino)].push_back(InodeKey(ino));
  std::vector<pb::InodeRec> out;
  for (auto& [oid, keys] : by_object) {
    objects::ObjectOperation op;
    op.OmapGet(keys);
    auto result = objects_->Execute(pool_, oid, std::move(op));
    if (absl::IsNotFound(result.status())) continue;
    if (!result.ok()) return Annotate(result.status(), absl::StrCat("load inodes from ", oid));
    for (const auto& [k, v] : result->items.at(0).kvs) {
      pb::InodeRec rec;
      if (!rec.ParseFromString(v)) {
        return absl::DataLossError(absl::StrCat("inode ", k, " in ", oid, " does not parse"));
      }
      out.push_back(std::move(rec));
    }
  }
  return out;
}

absl::StatusOr<pb::InlineRec> MetaStore::LoadInline(uint64_t ino) {
  const std::string oid = InodeTableObject(fs_, ino);
  objects::ObjectOperation op;
  op.OmapGet({InlineKey(ino)});
  auto result = objects_->Execute(pool_, oid, std::move(op));
  pb::InlineRec rec;
  if (absl::IsNotFound(result.status())) return rec;
  if (!result.ok()) return Annotate(result.status(), absl::StrCat("load inline data of ", ino));
  for (const auto& [k, v] : result->items.at(0).kvs) {
    if (k != InlineKey(ino)) continue;
    if (!rec.ParseFromString(v)) {
      return absl::DataLossError(absl::StrCat("inline data of ", ino, " does not parse"));
    }
  }
  return rec;
}

absl::StatusOr<std::vector<pb::DentryRec>> MetaStore::LoadFrag(uint64_t dir, Frag frag) {
  const std::string oid = DirFragObject(fs_, dir, frag);
  ASSIGN_OR_RETURN(auto kvs, ListOmap(oid));
  std::vector<pb::DentryRec> out;
  out.reserve(kvs.size());
  for (auto& [name, value] : kvs) {
    pb::DentryRec rec;
    if (!rec.ParseFromString(value)) {
      return absl::DataLossError(absl::StrCat("dentry ", name, " in ", oid, " does not parse"));
    }
    rec.set_dir(dir);
    rec.set_name(name);
    out.push_back(std::move(rec));
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> MetaStore::LoadTable(absl::string_view table) {
  return ListOmap(TableObject(fs_, rank_, table));
}

absl::Status MetaStore::Apply(const std::string& oid, const ObjectUpdate& update) {
  objects::ObjectOperation op;
  if (update.remove) {
    op.Remove();
    auto st = objects_->Execute(pool_, oid, std::move(op)).status();
    return absl::IsNotFound(st) ? absl::OkStatus() : st;
  }
  op.Create(false);
  if (update.clear) op.OmapClear();
  if (!update.rm.empty()) op.OmapRm(update.rm);
  if (!update.set.empty()) op.OmapSet(update.set);
  return Annotate(objects_->Execute(pool_, oid, std::move(op)).status(), absl::StrCat("update ", oid));
}

absl::StatusOr<std::optional<pb::JournalHead>> MetaStore::ReadHead() {
  auto data = objects_->Get(pool_, JournalHeadObject(fs_, rank_));
  if (absl::IsNotFound(data.status())) return std::optional<pb::JournalHead>();
  if (!data.ok()) return Annotate(data.status(), "read journal head");
  pb::JournalHead head;
  if (!head.ParseFromString(*data)) return absl::DataLossError("journal head does not parse");
  return std::optional<pb::JournalHead>(head);
}

absl::Status MetaStore::WriteHead(const pb::JournalHead& head) {
  objects::ObjectOperation op;
  op.WriteFull(head.SerializeAsString());
  return Annotate(objects_->Execute(pool_, JournalHeadObject(fs_, rank_), std::move(op)).status(),
                  "write journal head");
}

absl::Status MetaStore::WriteSegment(uint64_t segment, uint64_t offset, const std::string& bytes) {
  objects::ObjectOperation op;
  op.Write(offset, bytes);
  return Annotate(objects_->Execute(pool_, JournalSegmentObject(fs_, rank_, segment), std::move(op)).status(),
                  "write journal");
}

absl::StatusOr<std::string> MetaStore::ReadSegment(uint64_t segment) {
  return objects_->Get(pool_, JournalSegmentObject(fs_, rank_, segment));
}

absl::StatusOr<std::string> MetaStore::ReadSegmentFrom(uint64_t segment, uint64_t offset) {
  return objects_->GetFrom(pool_, JournalSegmentObject(fs_, rank_, segment), offset);
}

absl::StatusOr<bool> MetaStore::SegmentExists(uint64_t segment) {
  auto st = objects_->Stat(pool_, JournalSegmentObject(fs_, rank_, segment));
  if (absl::IsNotFound(st.status())) return false;
  RETURN_IF_ERROR(st.status());
  return true;
}

absl::Status MetaStore::RemoveSegment(uint64_t segment) {
  auto st = objects_->Remove(pool_, JournalSegmentObject(fs_, rank_, segment));
  return absl::IsNotFound(st) ? absl::OkStatus() : st;
}

}  // namespace weft::mds
