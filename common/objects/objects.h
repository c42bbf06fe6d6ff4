// The object layer as the MDS and the client library use it: named objects in
// pools, each changed atomically by one ObjectOperation. Two implementations:
// ObjectClient (object_client.h), which sends each request to the OSDs, and
// MemObjects (mem_objects.h), which keeps every object in memory for tests
// and the simulation of the metadata core (tests/sim).
//
// The contract both keep, as the OSDs do:
//   - a request's operations are applied in order, all or none;
//   - a read of an absent object is NotFound (kNotFound), as are REMOVE,
//     RMXATTR, OMAP_RM, OMAP_CLEAR, OMAP_GET and OMAP_LIST of one; every
//     other mutation creates it;
//   - a READ at or past the end returns no bytes (and size 0);
//   - once Execute returned OK the change is durable; after an error it may
//     or may not have been applied (a timeout), never half.
//
// Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/cluster_map/types.h"
#include "common/objects/object_operation.h"

namespace weft::objects {

class Objects {
 public:
  virtual ~Objects() = default;

  // Runs `op` on object `oid` of `pool`, moving its data into the request.
  virtual absl::StatusOr<OpResult> Execute(PoolId pool, const std::string& oid,
                                           ObjectOperation&& op) = 0;
  // Every object name in the pool that begins with `prefix`, in no promised
  // order (ObjectClient: sorted per placement group).
  virtual absl::StatusOr<std::vector<std::string>> List(PoolId pool, const std::string& prefix) = 0;

  // The same as Execute, copying `op`.
  absl::StatusOr<OpResult> Execute(PoolId pool, const std::string& oid, const ObjectOperation& op);

  // Whole-object conveniences on Execute. Put is atomic up to kMaxPieceBytes;
  // larger objects are written in pieces (the first replaces the object).
  absl::Status Put(PoolId pool, const std::string& oid, const std::string& data);
  absl::StatusOr<std::string> Get(PoolId pool, const std::string& oid) {
    return GetFrom(pool, oid, 0);
  }
  // Its bytes from `offset` to its end (empty past the end).
  absl::StatusOr<std::string> GetFrom(PoolId pool, const std::string& oid, uint64_t offset);
  absl::StatusOr<ObjectStat> Stat(PoolId pool, const std::string& oid);
  absl::Status Remove(PoolId pool, const std::string& oid);

  static constexpr uint64_t kMaxPieceBytes = 16ull << 20;
};

}  // namespace weft::objects
