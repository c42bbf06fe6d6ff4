// The client's values of attr.h from the MDS's wire messages. Only where MDS
// replies enter the client (FileSystemClient's calls) converts: every reply
// once, and the rest of the client and its frontends see no wire type.
#pragma once

#include "fuse-client/lib/attr.h"
#include "proto/mds_client.pb.h"

namespace weft::client {

FileLayout FromWire(const pb::FileLayout& layout);
Attr FromWire(const pb::Attr& attr);
DirEntry FromWire(const pb::DirEntry& entry);
FsStats FromWire(const pb::StatfsReply& stats);

}  // namespace weft::client
