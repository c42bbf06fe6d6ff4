// The values of attr.h to and from the MDS's wire messages: the only place
// that copies them field by field. The MDS converts its replies once, in its
// adapter (mds/reply_wire.cc); the client converts each reply once, where it
// enters (FileSystemClient's calls).
#pragma once

#include "common/fs/attr.h"
#include "proto/mds_client.pb.h"

namespace weft::fs {

striping::Layout StripeOf(const pb::FileLayout& layout);
FileLayout FromWire(const pb::FileLayout& layout);
Attr FromWire(const pb::Attr& attr);
DirEntry FromWire(const pb::DirEntry& entry);
FsStats FromWire(const pb::StatfsReply& stats);

void ToWire(const FileLayout& layout, pb::FileLayout* out);
void ToWire(const Attr& attr, pb::Attr* out);
void ToWire(const DirEntry& entry, pb::DirEntry* out);
void ToWire(const FsStats& stats, pb::StatfsReply* out);

}  // namespace weft::fs
