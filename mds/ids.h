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

// A client session of one filesystem: (fs id << 40) | n, never 0.
class SessionId : public StrongId<SessionId, uint64_t> {
 public:
  using StrongId::StrongId;
  uint32_t fs() const { return static_cast<uint32_t>(value() >> 40); }
};

// A request of a session (MetaRequest.tid): unique per session, reused by a
// retry; 0 means "not to be remembered".
class RequestId : public StrongId<RequestId, uint64_t> {
 public:
  using StrongId::StrongId;
};

}  // namespace weft::mds
