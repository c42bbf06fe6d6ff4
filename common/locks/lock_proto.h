// LockTable's locks on the wire (proto/mds_client.proto LockInfo), for the MDS and
// the client alike.
#pragma once

#include "absl/status/statusor.h"
#include "common/locks/lock_table.h"
#include "proto/mds_client.pb.h"

namespace weft::locks {

// Every field, the owner's session included.
void ToProto(const Lock& lock, pb::LockInfo* out);
// EINVAL for inode 0, an unknown kind or type, or a range that is empty or
// ends past kLockEnd. The owner's session is the message's (requests leave
// it 0: the MDS puts the caller's).
absl::StatusOr<Lock> FromProto(const pb::LockInfo& in);
// The same, owned by `session` whatever the message says: a lock the MDS
// takes for the session that asked.
absl::StatusOr<Lock> FromProto(const pb::LockInfo& in, uint64_t session);

}  // namespace weft::locks
