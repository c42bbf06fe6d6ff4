// Identifiers of the metadata core, as strong types (common/cluster_map/
// types.h's StrongId): an inode number can never be passed where a session
// id is expected, and back to an integer only through .value(). The wire
// and the stored records carry the bare numbers; adapters wrap them.
#pragma once

#include <cstdint>

#include "common/cluster_map/types.h"

namespace weft::mds {

// An inode. 1 is the root; numbers below kFirstFreeIno (names.h) are reserved.
class InodeId : public StrongId<InodeId, uint64_t> {
 public:
  using StrongId::StrongId;
};

// A client session with one rank of one filesystem: (fs id << 40) |
// (rank << 32) | n, never 0 (rank 0's ids are those from before ranks).
class SessionId : public StrongId<SessionId, uint64_t> {
 public:
  using StrongId::StrongId;
  static SessionId First(uint32_t fs, uint32_t rank) {
    return SessionId((uint64_t{fs} << 40) | (uint64_t{rank} << 32) | 1);
  }
  uint32_t fs() const { return static_cast<uint32_t>(value() >> 40); }
  uint32_t rank() const { return static_cast<uint32_t>(value() >> 32) & 0xff; }
};

// A request of a session (MetaRequest.tid): unique per session, reused by a
// retry; 0 means "not to be remembered".
class RequestId : public StrongId<RequestId, uint64_t> {
 public:
  using StrongId::StrongId;
};

}  // namespace weft::mds
