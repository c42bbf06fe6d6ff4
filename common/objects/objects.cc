// ObjectOperation's builders and the conveniences every Objects has.
#include "common/objects/objects.h"

#include <algorithm>

#include "common/status/status.h"

namespace weft::objects {

// --- ObjectOperation --------------------------------------------------------------

pb::ObjectOp& ObjectOperation::Add(pb::OpType type) {
  ops_.emplace_back();
  ops_.back().set_type(type);
  return ops_.back();
}

ObjectOperation& ObjectOperation::Create(bool exclusive) {
  Add(pb::CREATE).set_exclusive(exclusive);
  return *this;
}
ObjectOperation& ObjectOperation::Write(uint64_t offset, std::string data) {
  auto& op = Add(pb::WRITE);
  op.set_offset(offset);
  op.set_data(std::move(data));
  return *this;
}
ObjectOperation& ObjectOperation::WriteFull(std::string data) {
  Add(pb::WRITE_FULL).set_data(std::move(data));
  return *this;
}
ObjectOperation& ObjectOperation::Append(std::string data) {
  Add(pb::APPEND).set_data(std::move(data));
  return *this;
}
ObjectOperation& ObjectOperation::Truncate(uint64_t size) {
  Add(pb::TRUNCATE).set_offset(size);
  return *this;
}
ObjectOperation& ObjectOperation::Remove() {
  Add(pb::REMOVE);
  return *this;
}
ObjectOperation& ObjectOperation::SetXattr(std::string name, std::string value) {
  auto& op = Add(pb::SETXATTR);
  op.set_name(std::move(name));
  op.set_data(std::move(value));
  return *this;
}
ObjectOperation& ObjectOperation::RmXattr(std::string name) {
  Add(pb::RMXATTR).set_name(std::move(name));
  return *this;
}
ObjectOperation& ObjectOperation::OmapSet(std::vector<std::pair<std::string, std::string>> kvs) {
  auto& op = Add(pb::OMAP_SET);
  for (auto& [k, v] : kvs) {
    auto* kv = op.add_kvs();
    kv->set_key(std::move(k));
    kv->set_value(std::move(v));
  }
  return *this;
}
ObjectOperation& ObjectOperation::OmapRm(std::vector<std::string> keys) {
  auto& op = Add(pb::OMAP_RM);
  for (auto& k : keys) op.add_keys(std::move(k));
  return *this;
}
ObjectOperation& ObjectOperation::OmapClear() {
  Add(pb::OMAP_CLEAR);
  return *this;
}
ObjectOperation& ObjectOperation::Read(uint64_t offset, uint64_t length) {
  auto& op = Add(pb::READ);
  op.set_offset(offset);
  op.set_length(length);
  return *this;
}
ObjectOperation& ObjectOperation::Stat() {
  Add(pb::STAT);
  return *this;
}
ObjectOperation& ObjectOperation::GetXattr(std::string name) {
  Add(pb::GETXATTR).set_name(std::move(name));
  return *this;
}
ObjectOperation& ObjectOperation::GetXattrs() {
  Add(pb::GETXATTRS);
  return *this;
}
ObjectOperation& ObjectOperation::OmapGet(std::vector<std::string> keys) {
  auto& op = Add(pb::OMAP_GET);
  for (auto& k : keys) op.add_keys(std::move(k));
  return *this;
}
ObjectOperation& ObjectOperation::OmapList(std::string start_after, std::string prefix,
                                           uint32_t max_entries) {
  auto& op = Add(pb::OMAP_LIST);
  op.set_start_after(std::move(start_after));
  op.set_prefix(std::move(prefix));
  op.set_max_entries(max_entries);
  return *this;
}

// --- Objects ----------------------------------------------------------------------

absl::StatusOr<OpResult> Objects::Execute(PoolId pool, const std::string& oid,
                                          const ObjectOperation& op) {
  ObjectOperation copy = op;
  return Execute(pool, oid, std::move(copy));
}

absl::Status Objects::Put(PoolId pool, const std::string& oid, const std::string& data) {
  uint64_t offset = 0;
  do {
    uint64_t len = std::min<uint64_t>(kMaxPieceBytes, data.size() - offset);
    ObjectOperation op;
    if (offset == 0) {
      op.WriteFull(data.substr(0, len));
    } else {
      op.Write(offset, data.substr(offset, len));
    }
    RETURN_IF_ERROR(Execute(pool, oid, std::move(op)).status());
    offset += len;
  } while (offset < data.size());
  return absl::OkStatus();
}

absl::StatusOr<std::string> Objects::GetFrom(PoolId pool, const std::string& oid,
                                             uint64_t offset) {
  std::string out;
  for (;;) {
    ObjectOperation op;
    op.Read(offset + out.size(), kMaxPieceBytes);
    ASSIGN_OR_RETURN(OpResult r, Execute(pool, oid, std::move(op)));
    const auto& item = r.items.at(0);
    item.data.AppendTo(&out);
    if (offset + out.size() >= item.size || item.data.empty()) return out;
  }
}

absl::StatusOr<ObjectStat> Objects::Stat(PoolId pool, const std::string& oid) {
  ObjectOperation op;
  op.Stat();
  ASSIGN_OR_RETURN(OpResult r, Execute(pool, oid, std::move(op)));
  ObjectStat st;
  st.size = r.items.at(0).size;
  st.mtime_ns = r.items.at(0).mtime_ns;
  st.version_epoch = r.items.at(0).version_epoch;
  st.version_seq = r.items.at(0).version_seq;
  return st;
}

absl::Status Objects::Remove(PoolId pool, const std::string& oid) {
  ObjectOperation op;
  op.Remove();
  return Execute(pool, oid, std::move(op)).status();
}

}  // namespace weft::objects
