#include "osd/pg/object_ops.h"

#include "absl/strings/str_cat.h"
#include "common/status/status.h"
#include "osd/pg/pg_codec.h"

namespace weft::osd {
namespace {

absl::Status CheckRange(uint64_t offset, uint64_t length, const ObjectLimits& limits) {
  if (offset > limits.max_object_bytes || length > limits.max_object_bytes - offset) {
    return absl::OutOfRangeError(absl::StrCat("offset ", offset, " + length ", length,
                                              " exceeds osd_max_object_size ",
                                              limits.max_object_bytes));
  }
  return absl::OkStatus();
}

absl::Status CheckOp(const pb::ObjectOp& op, const ObjectLimits& limits) {
  switch (op.type()) {
    case pb::WRITE:
      return CheckRange(op.offset(), op.data().size(), limits);
    case pb::WRITE_FULL:
    case pb::APPEND:
      return CheckRange(0, op.data().size(), limits);
    case pb::TRUNCATE:
      return CheckRange(op.offset(), 0, limits);
    case pb::READ:
      return CheckRange(op.offset(), op.length(), limits);
    case pb::SETXATTR:
      if (op.data().size() > kMaxXattrValueBytes) {
        return absl::InvalidArgumentError(absl::StrCat("xattr value of ", op.data().size(),
                                                       " bytes exceeds ", kMaxXattrValueBytes));
      }
      [[fallthrough]];
    case pb::GETXATTR:
    case pb::RMXATTR:
      if (op.name().empty() || op.name().size() > kMaxXattrNameBytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("xattr name must be 1..", kMaxXattrNameBytes, " bytes"));
      }
      return absl::OkStatus();
    case pb::OMAP_SET:
      for (const auto& kv : op.kvs()) {
        if (kv.key().size() > kMaxOmapKeyBytes || kv.value().size() > kMaxOmapValueBytes) {
          return absl::InvalidArgumentError(absl::StrCat("omap key (max ", kMaxOmapKeyBytes,
                                                         " bytes) or value (max ",
                                                         kMaxOmapValueBytes, ") too large"));
        }
      }
      return absl::OkStatus();
    case pb::OMAP_RM:
    case pb::OMAP_GET:
      for (const auto& key : op.keys()) {
        if (key.size() > kMaxOmapKeyBytes) {
          return absl::InvalidArgumentError(
              absl::StrCat("omap key exceeds ", kMaxOmapKeyBytes, " bytes"));
        }
      }
      return absl::OkStatus();
    default:
      return absl::OkStatus();
  }
}

}  // namespace

absl::Status ValidateOps(const std::string& oid,
                         const google::protobuf::RepeatedPtrField<pb::ObjectOp>& ops,
                         const ObjectLimits& limits, bool* mutating) {
  if (oid.empty()) return absl::InvalidArgumentError("object name is empty");
  if (oid.size() > kMaxObjectNameBytes) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, ENAMETOOLONG,
                      absl::StrCat("object name of ", oid.size(), " bytes exceeds ",
                                   kMaxObjectNameBytes));
  }
  if (ops.empty()) return absl::InvalidArgumentError("request has no operations");
  if (ops.size() > static_cast<int>(kMaxOpsPerRequest)) {
    return absl::InvalidArgumentError(
        absl::StrCat("request has ", ops.size(), " operations, max ", kMaxOpsPerRequest));
  }
  int reads = 0, writes = 0;
  for (const auto& op : ops) {
    if (IsMutation(op.type())) {
      ++writes;
    } else if (IsRead(op.type())) {
      ++reads;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown operation type ", op.type()));
    }
    RETURN_IF_ERROR(CheckOp(op, limits));
  }
  if (reads > 0 && writes > 0) {
    return absl::InvalidArgumentError("a request may not mix reads and mutations");
  }
  *mutating = writes > 0;
  return absl::OkStatus();
}

absl::StatusOr<ResolvedWrite> ResolveWrite(const std::optional<ObjectMeta>& existing,
                                           google::protobuf::RepeatedPtrField<pb::ObjectOp>* ops,
                                           const ObjectLimits& limits) {
  ResolvedWrite out;
  bool exists = existing.has_value();
  uint64_t size = exists ? existing->size : 0;
  for (pb::ObjectOp& given : *ops) {
    pb::ObjectOp resolved = std::move(given);
    const pb::ObjectOp& op = resolved;  // read before each change below
    switch (op.type()) {
      case pb::CREATE:
        if (exists && op.exclusive()) return absl::AlreadyExistsError("object exists");
        resolved.set_exclusive(false);
        exists = true;
        break;
      case pb::WRITE:
        size = std::max<uint64_t>(size, op.offset() + op.data().size());
        exists = true;
        break;
      case pb::WRITE_FULL:
        size = op.data().size();
        exists = true;
        break;
      case pb::APPEND:
        RETURN_IF_ERROR(CheckRange(size, op.data().size(), limits));
        resolved.set_type(pb::WRITE);
        resolved.set_offset(size);
        size += op.data().size();
        exists = true;
        break;
      case pb::TRUNCATE:
        size = op.offset();
        exists = true;
        break;
      case pb::REMOVE:
        if (!exists) return absl::NotFoundError("no such object");
        exists = false;
        size = 0;
        break;
      case pb::RMXATTR:
      case pb::OMAP_RM:
      case pb::OMAP_CLEAR:
        if (!exists) return absl::NotFoundError("no such object");
        break;
      case pb::SETXATTR:
      case pb::OMAP_SET:
        exists = true;
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat("not a mutation: ", op.type()));
    }
    *out.ops.Add() = std::move(resolved);
  }
  out.deletes = !exists;
  out.size_before = existing.has_value() ? existing->size : 0;
  out.size_after = exists ? size : 0;
  return out;
}

void AddToTransaction(const std::string& oid,
                      google::protobuf::RepeatedPtrField<pb::ObjectOp>* ops, Transaction* txn) {
  for (pb::ObjectOp& op : *ops) {
    switch (op.type()) {
      case pb::CREATE: txn->Touch(oid); break;
      case pb::WRITE: txn->Write(oid, op.offset(), std::move(*op.mutable_data())); break;
      case pb::WRITE_FULL: txn->WriteFull(oid, std::move(*op.mutable_data())); break;
      case pb::TRUNCATE: txn->Truncate(oid, op.offset()); break;
      case pb::REMOVE: txn->Remove(oid); break;
      case pb::SETXATTR:
        txn->SetXattr(oid, std::move(*op.mutable_name()), std::move(*op.mutable_data()));
        break;
      case pb::RMXATTR: txn->RmXattr(oid, std::move(*op.mutable_name())); break;
      case pb::OMAP_SET: {
        std::vector<std::pair<std::string, std::string>> kvs;
        kvs.reserve(op.kvs_size());
        for (auto& kv : *op.mutable_kvs()) {
          kvs.emplace_back(std::move(*kv.mutable_key()), std::move(*kv.mutable_value()));
        }
        txn->OmapSet(oid, std::move(kvs));
        break;
      }
      case pb::OMAP_RM:
        txn->OmapRm(oid, std::vector<std::string>(std::make_move_iterator(op.mutable_keys()->begin()),
                                                  std::make_move_iterator(op.mutable_keys()->end())));
        break;
      case pb::OMAP_CLEAR: txn->OmapClear(oid); break;
      default: break;  // ResolveWrite admits nothing else
    }
  }
}

void AddToTransaction(const std::string& oid, std::shared_ptr<const void> owner,
                      const google::protobuf::RepeatedPtrField<pb::ObjectOp>& ops,
                      Transaction* txn) {
  for (const pb::ObjectOp& op : ops) {
    switch (op.type()) {
      case pb::WRITE: txn->Write(oid, op.offset(), SharedBytes(owner, op.data())); break;
      case pb::WRITE_FULL: txn->WriteFull(oid, SharedBytes(owner, op.data())); break;
      default: {
        google::protobuf::RepeatedPtrField<pb::ObjectOp> copy;
        *copy.Add() = op;
        AddToTransaction(oid, &copy, txn);
      }
    }
  }
}

namespace {

absl::Status ExecuteRead(ObjectStore* store, const std::string& coll, const std::string& oid,
                         const pb::ObjectOp& op, pb::ObjectOpResult* result,
                         uint64_t* bytes_read) {
  switch (op.type()) {
    case pb::READ: {
      ASSIGN_OR_RETURN(ObjectMeta meta, store->Stat(coll, oid));
      uint64_t length = op.length() == 0 ? meta.size : op.length();
      if (op.offset() >= meta.size) return absl::OkStatus();  // empty at or past the end
      length = std::min<uint64_t>(length, meta.size - op.offset());
      ASSIGN_OR_RETURN(std::string data, store->Read(coll, oid, op.offset(), length));
      *bytes_read += data.size();
      result->set_data(std::move(data));
      result->set_size(meta.size);
      return absl::OkStatus();
    }
    case pb::STAT: {
      ASSIGN_OR_RETURN(ObjectMeta meta, store->Stat(coll, oid));
      result->set_size(meta.size);
      result->set_mtime_ns(meta.mtime_ns);
      ToProto(meta.version, result->mutable_version());
      return absl::OkStatus();
    }
    case pb::GETXATTR: {
      ASSIGN_OR_RETURN(std::string value, store->GetXattr(coll, oid, op.name()));
      result->set_data(std::move(value));
      return absl::OkStatus();
    }
    case pb::GETXATTRS: {
      ASSIGN_OR_RETURN(auto xattrs, store->GetXattrs(coll, oid));
      for (auto& [k, v] : xattrs) {
        auto* kv = result->add_kvs();
        kv->set_key(k);
        kv->set_value(v);
      }
      return absl::OkStatus();
    }
    case pb::OMAP_GET: {
      RETURN_IF_ERROR(store->Stat(coll, oid).status());
      ASSIGN_OR_RETURN(auto values, store->OmapGet(coll, oid, std::vector<std::string>(
                                                                  op.keys().begin(),
                                                                  op.keys().end())));
      for (auto& [k, v] : values) {
        auto* kv = result->add_kvs();
        kv->set_key(k);
        kv->set_value(v);
      }
      return absl::OkStatus();
    }
    case pb::OMAP_LIST: {
      RETURN_IF_ERROR(store->Stat(coll, oid).status());
      uint32_t max = op.max_entries() == 0 ? 1000 : std::min<uint32_t>(op.max_entries(), 100000);
      bool more = false;
      ASSIGN_OR_RETURN(auto values,
                       store->OmapList(coll, oid, op.start_after(), op.prefix(), max, &more));
      for (auto& [k, v] : values) {
        auto* kv = result->add_kvs();
        kv->set_key(k);
        kv->set_value(v);
      }
      result->set_more(more);
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat("not a read: ", op.type()));
  }
}

}  // namespace

absl::Status ExecuteReads(ObjectStore* store, const std::string& coll, const std::string& oid,
                          const google::protobuf::RepeatedPtrField<pb::ObjectOp>& ops,
                          pb::OpReply* reply, uint64_t* bytes_read) {
  for (const pb::ObjectOp& op : ops) {
    RETURN_IF_ERROR(ExecuteRead(store, coll, oid, op, reply->add_results(), bytes_read));
  }
  return absl::OkStatus();
}

}  // namespace weft::osd
