#include "fuse-client/lib/attr_wire.h"

#include "common/objects/striped_io.h"

namespace weft::client {

FileLayout FromWire(const pb::FileLayout& layout) {
  return FileLayout{objects::StripeOf(layout), PoolId(layout.pool())};
}

Attr FromWire(const pb::Attr& attr) {
  Attr out;
  out.ino = attr.ino();
  out.mode = attr.mode();
  out.uid = attr.uid();
  out.gid = attr.gid();
  out.size = attr.size();
  out.nlink = attr.nlink();
  out.rdev = attr.rdev();
  out.atime_ns = attr.atime_ns();
  out.mtime_ns = attr.mtime_ns();
  out.ctime_ns = attr.ctime_ns();
  out.btime_ns = attr.btime_ns();
  out.version = attr.version();
  out.generation = attr.generation();
  out.layout = FromWire(attr.layout());
  out.no_xattrs = attr.no_xattrs();
  out.no_acl = attr.no_acl();
  out.allocated = attr.allocated();
  out.searchable_by_all = attr.searchable_by_all();
  out.data_inline = attr.data_inline();
  return out;
}

DirEntry FromWire(const pb::DirEntry& entry) {
  DirEntry out;
  out.name = entry.name();
  out.ino = entry.ino();
  out.type = entry.type();
  out.cookie = entry.cookie();
  out.attr = FromWire(entry.attr());
  return out;
}

FsStats FromWire(const pb::StatfsReply& stats) {
  FsStats out;
  out.bytes_total = stats.bytes_total();
  out.bytes_avail = stats.bytes_avail();
  out.bytes_used = stats.bytes_used();
  out.files = stats.files();
  out.files_free = stats.files_free();
  out.name_max = stats.name_max();
  return out;
}

}  // namespace weft::client
