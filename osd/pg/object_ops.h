// The object operations of one request: validation against the limits,
// resolution of a mutation into ops every replica applies identically, and
// execution of reads against the local store.
//
// A request is either all reads or all mutations: mutations apply atomically
// as one store transaction; mixing would make the read's view ambiguous.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/objects/object_operation.h"
#include "osd/store/object_store.h"
#include "proto/osd.pb.h"

namespace weft::osd {

struct ObjectLimits {
  uint64_t max_object_bytes = 128ull << 20;
};

inline constexpr size_t kMaxObjectNameBytes = 4096;
inline constexpr size_t kMaxOpsPerRequest = 256;

// Whether an op changes the object, or reads it (common/objects).
using objects::IsMutation;
using objects::IsRead;

// Checks names, op types and sizes; sets *mutating. Changes nothing.
absl::Status ValidateOps(const std::string& oid,
                         const google::protobuf::RepeatedPtrField<pb::ObjectOp>& ops,
                         const ObjectLimits& limits, bool* mutating);

struct ResolvedWrite {
  google::protobuf::RepeatedPtrField<pb::ObjectOp> ops;  // no APPEND; CREATE only as a touch
  bool deletes = false;           // the object does not exist afterwards
  uint64_t size_before = 0;       // logical sizes, 0 when absent
  uint64_t size_after = 0;
};

// Turns client mutations into absolute ones given the object's current state
// (nullopt = absent): APPEND gets its offset, CREATE's exclusivity and
// operations on absent objects are checked here, on the primary.
// The ops are moved into the result (their data is not copied): `ops` is left
// with moved-from ops, also when this fails.
absl::StatusOr<ResolvedWrite> ResolveWrite(const std::optional<ObjectMeta>& existing,
                                           google::protobuf::RepeatedPtrField<pb::ObjectOp>* ops,
                                           const ObjectLimits& limits);

// Adds resolved ops on `oid` to `txn` (primary and replicas call this alike),
// moving their data, names and keys out of `ops`.
void AddToTransaction(const std::string& oid,
                      google::protobuf::RepeatedPtrField<pb::ObjectOp>* ops, Transaction* txn);
// The same for ops that must stay intact (a primary's request to its
// replicas, which gRPC may still be sending): the written data is borrowed,
// kept alive by `owner` (which holds `ops`), not copied; names, keys and
// values are copied.
void AddToTransaction(const std::string& oid, std::shared_ptr<const void> owner,
                      const google::protobuf::RepeatedPtrField<pb::ObjectOp>& ops,
                      Transaction* txn);

// Executes read ops against the local copy, filling one result per op.
absl::Status ExecuteReads(ObjectStore* store, const std::string& coll, const std::string& oid,
                          const google::protobuf::RepeatedPtrField<pb::ObjectOp>& ops,
                          pb::OpReply* reply, uint64_t* bytes_read);

}  // namespace weft::osd
