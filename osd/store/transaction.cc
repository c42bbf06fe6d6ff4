// Transaction building, validation, and small value types of object_store.h.
#include <utility>

#include "absl/strings/str_cat.h"
#include "osd/store/object_store.h"
#include "common/status/status.h"
#include "osd/store/store_format.h"

namespace weft::osd {
namespace {

using format::Printable;

absl::Status CheckName(absl::string_view what, const std::string& name, size_t max_bytes) {
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (name.size() > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, " ", Printable(name), " is ", name.size(),
                                                   " bytes; the limit is ", max_bytes));
  }
  return absl::OkStatus();
}

absl::Status CheckValue(absl::string_view what, const std::string& key, size_t bytes,
                        size_t max_bytes) {
  if (bytes <= max_bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(what, " value for ", Printable(key), " is ", bytes,
                                                 " bytes; the limit is ", max_bytes));
}

// offset + length must fit in the object size limit (without overflowing).
absl::Status CheckExtent(const std::string& coll, const std::string& oid, uint64_t offset,
                         uint64_t length, uint64_t max_object_bytes) {
  if (offset <= max_object_bytes && length <= max_object_bytes - offset) {
    return absl::OkStatus();
  }
  return absl::OutOfRangeError(absl::StrCat(
      "object ", coll, "/", Printable(oid), ": ", length, " bytes at offset ", offset,
      " exceed the maximum object size of ", max_object_bytes, " bytes"));
}

absl::Status ValidateOp(const std::string& coll, const Transaction::Op& op,
                        const StoreOptions& options) {
  using Type = Transaction::OpType;
  if (op.type == Type::kPutMeta || op.type == Type::kDeleteMeta) {
    RETURN_IF_ERROR(CheckName("metadata key", op.name, kMaxMetaKeyBytes));
    return CheckValue("metadata", op.name, op.data.size(), kMaxMetaValueBytes);
  }
  RETURN_IF_ERROR(CheckName("object name", op.oid, kMaxOidBytes));
  switch (op.type) {
    case Type::kWrite:
      return CheckExtent(coll, op.oid, op.offset, op.bytes.size(), options.max_object_bytes);
    case Type::kWriteFull:
      return CheckExtent(coll, op.oid, 0, op.bytes.size(), options.max_object_bytes);
    case Type::kTruncate: return CheckExtent(coll, op.oid, 0, op.offset, options.max_object_bytes);
    case Type::kSetXattr:
      RETURN_IF_ERROR(CheckName("xattr name", op.name, kMaxXattrNameBytes));
      return CheckValue("xattr", op.name, op.data.size(), kMaxXattrValueBytes);
    case Type::kRmXattr: return CheckName("xattr name", op.name, kMaxXattrNameBytes);
    case Type::kOmapSet:
      for (const auto& [key, value] : op.kvs) {
        RETURN_IF_ERROR(CheckName("omap key", key, kMaxOmapKeyBytes));
        RETURN_IF_ERROR(CheckValue("omap", key, value.size(), kMaxOmapValueBytes));
      }
      return absl::OkStatus();
    case Type::kOmapRm:
      for (const std::string& key : op.keys) {
        RETURN_IF_ERROR(CheckName("omap key", key, kMaxOmapKeyBytes));
      }
      return absl::OkStatus();
    default: return absl::OkStatus();
  }
}

Transaction::Op MakeOp(Transaction::OpType type, const std::string& oid = std::string()) {
  Transaction::Op op;
  op.type = type;
  op.oid = oid;
  return op;
}

}  // namespace

std::string Version::ToString() const { return absl::StrCat(epoch, "'", seq); }

absl::Status StoreOptions::Validate() const {
  if (dir.empty()) return absl::InvalidArgumentError("store dir is empty");
  if (csum_block_bytes < 512 || csum_block_bytes > (1u << 20) ||
      (csum_block_bytes & (csum_block_bytes - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "csum_block_bytes must be a power of two in [512, 1 MiB], not ", csum_block_bytes));
  }
  if (csum_group_blocks < 1 || csum_group_blocks > 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("csum_group_blocks must be in [1, 1024], not ", csum_group_blocks));
  }
  if (max_object_bytes == 0 || max_object_bytes > (1ull << 40)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_object_bytes must be in (0, 1 TiB], not ", max_object_bytes));
  }
  if (inline_max_bytes > (1ull << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("inline_max_bytes must be at most 1 MiB, not ", inline_max_bytes));
  }
  if (spare_reserve_files > ObjectStore::kMaxSpareFiles) {
    return absl::InvalidArgumentError(absl::StrCat("spare_reserve_files must be at most ",
                                                   ObjectStore::kMaxSpareFiles, ", not ",
                                                   spare_reserve_files));
  }
  if (deferred_max_bytes > (64ull << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("deferred_max_bytes must be at most 64 MiB, not ", deferred_max_bytes));
  }
  return absl::OkStatus();
}

absl::Status ValidateTransaction(const std::string& coll, const Transaction& txn,
                                 const StoreOptions& options) {
  RETURN_IF_ERROR(CheckName("collection name", coll, kMaxCollectionNameBytes));
  for (const Transaction::Op& op : txn.ops()) RETURN_IF_ERROR(ValidateOp(coll, op, options));
  return absl::OkStatus();
}

void Transaction::Touch(const std::string& oid) {
  ops_.push_back(MakeOp(OpType::kTouch, oid));
}

void Transaction::Write(const std::string& oid, uint64_t offset, SharedBytes data) {
  Op op = MakeOp(OpType::kWrite, oid);
  op.offset = offset;
  op.bytes = std::move(data);
  ops_.push_back(std::move(op));
}

void Transaction::WriteFull(const std::string& oid, SharedBytes data) {
  Op op = MakeOp(OpType::kWriteFull, oid);
  op.bytes = std::move(data);
  ops_.push_back(std::move(op));
}

void Transaction::Truncate(const std::string& oid, uint64_t size) {
  Op op = MakeOp(OpType::kTruncate, oid);
  op.offset = size;
  ops_.push_back(std::move(op));
}

void Transaction::Remove(const std::string& oid) { ops_.push_back(MakeOp(OpType::kRemove, oid)); }

void Transaction::SetXattr(const std::string& oid, std::string name, std::string value) {
  Op op = MakeOp(OpType::kSetXattr, oid);
  op.name = std::move(name);
  op.data = std::move(value);
  ops_.push_back(std::move(op));
}

void Transaction::RmXattr(const std::string& oid, std::string name) {
  Op op = MakeOp(OpType::kRmXattr, oid);
  op.name = std::move(name);
  ops_.push_back(std::move(op));
}

void Transaction::OmapSet(const std::string& oid,
                          std::vector<std::pair<std::string, std::string>> kvs) {
  Op op = MakeOp(OpType::kOmapSet, oid);
  op.kvs = std::move(kvs);
  ops_.push_back(std::move(op));
}

void Transaction::OmapRm(const std::string& oid, std::vector<std::string> keys) {
  Op op = MakeOp(OpType::kOmapRm, oid);
  op.keys = std::move(keys);
  ops_.push_back(std::move(op));
}

void Transaction::OmapClear(const std::string& oid) {
  ops_.push_back(MakeOp(OpType::kOmapClear, oid));
}

void Transaction::SetVersion(const std::string& oid, Version version, int64_t mtime_ns) {
  Op op = MakeOp(OpType::kSetVersion, oid);
  op.version = version;
  op.mtime_ns = mtime_ns;
  ops_.push_back(std::move(op));
}

void Transaction::PutMeta(std::string key, std::string value) {
  Op op = MakeOp(OpType::kPutMeta);
  op.name = std::move(key);
  op.data = std::move(value);
  ops_.push_back(std::move(op));
}

void Transaction::DeleteMeta(std::string key) {
  Op op = MakeOp(OpType::kDeleteMeta);
  op.name = std::move(key);
  ops_.push_back(std::move(op));
}

}  // namespace weft::osd
