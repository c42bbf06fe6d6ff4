#include "common/fs/attr_wire.h"

namespace weft::fs {

striping::Layout StripeOf(const pb::FileLayout& layout) {
  striping::Layout stripe;
  stripe.stripe_unit = layout.stripe_unit();
  stripe.stripe_count = layout.stripe_count();
  stripe.object_size = layout.object_size();
  return stripe;
}

FileLayout FromWire(const pb::FileLayout& layout) {
  return FileLayout{StripeOf(layout), PoolId(layout.pool())};
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

void ToWire(const FileLayout& layout, pb::FileLayout* out) {
  out->set_stripe_unit(static_cast<uint32_t>(layout.stripe.stripe_unit));
  out->set_stripe_count(static_cast<uint32_t>(layout.stripe.stripe_count));
  out->set_object_size(layout.stripe.object_size);
  out->set_pool(layout.pool.value());
}

// A layout of all zeros (no data objects) stays off the wire, as the MDS
// sent it before it had domain types.
void ToWire(const Attr& attr, pb::Attr* out) {
  out->set_ino(attr.ino);
  out->set_mode(attr.mode);
  out->set_uid(attr.uid);
  out->set_gid(attr.gid);
  out->set_size(attr.size);
  out->set_nlink(attr.nlink);
  out->set_rdev(attr.rdev);
  out->set_atime_ns(attr.atime_ns);
  out->set_mtime_ns(attr.mtime_ns);
  out->set_ctime_ns(attr.ctime_ns);
  out->set_btime_ns(attr.btime_ns);
  out->set_version(attr.version);
  out->set_generation(attr.generation);
  if (attr.layout.has_value()) ToWire(attr.layout, out->mutable_layout());
  out->set_no_xattrs(attr.no_xattrs);
  out->set_no_acl(attr.no_acl);
  out->set_allocated(attr.allocated);
  out->set_searchable_by_all(attr.searchable_by_all);
  out->set_data_inline(attr.data_inline);
}

void ToWire(const DirEntry& entry, pb::DirEntry* out) {
  out->set_name(entry.name);
  out->set_ino(entry.ino);
  out->set_type(entry.type);
  out->set_cookie(entry.cookie);
  if (entry.has_attr()) ToWire(entry.attr, out->mutable_attr());
}

void ToWire(const FsStats& stats, pb::StatfsReply* out) {
  out->set_bytes_total(stats.bytes_total);
  out->set_bytes_avail(stats.bytes_avail);
  out->set_bytes_used(stats.bytes_used);
  out->set_files(stats.files);
  out->set_files_free(stats.files_free);
  out->set_name_max(stats.name_max);
}

}  // namespace weft::fs
