#include "mds/inode.h"

#include "common/fs/attr_wire.h"

namespace weft::mds {

Inode InodeOf(const pb::InodeRec& rec) {
  Inode n;
  n.ino = InodeId(rec.ino());
  n.mode = rec.mode();
  n.uid = rec.uid();
  n.gid = rec.gid();
  n.size = rec.size();
  n.nlink = rec.nlink();
  n.rdev = rec.rdev();
  n.atime_ns = rec.atime_ns();
  n.mtime_ns = rec.mtime_ns();
  n.ctime_ns = rec.ctime_ns();
  n.btime_ns = rec.btime_ns();
  n.version = rec.version();
  n.parent = InodeId(rec.parent());
  n.symlink = rec.symlink();
  n.xattrs.reserve(rec.xattrs_size());
  for (const pb::Xattr& x : rec.xattrs()) n.xattrs.push_back(Xattr{x.name(), x.value()});
  if (rec.has_layout()) n.layout = fs::FromWire(rec.layout());
  if (rec.has_dir_layout()) n.dir_layout = fs::FromWire(rec.dir_layout());
  n.frags.assign(rec.frags().begin(), rec.frags().end());
  if (rec.has_rstat()) {
    n.rstat = RStat{rec.rstat().rbytes(), rec.rstat().rfiles(), rec.rstat().rsubdirs(),
                    rec.rstat().rctime_ns()};
  }
  n.generation = rec.generation();
  if (rec.has_allocated()) n.allocated = rec.allocated();
  n.data_inline = rec.data_inline();
  if (rec.has_inline_data()) n.inline_data = rec.inline_data();
  n.inline_version = rec.inline_version();
  return n;
}

pb::InodeRec RecordOf(const Inode& n) {
  pb::InodeRec rec;
  rec.set_ino(n.ino.value());
  rec.set_mode(n.mode);
  rec.set_uid(n.uid);
  rec.set_gid(n.gid);
  rec.set_size(n.size);
  rec.set_nlink(n.nlink);
  rec.set_rdev(n.rdev);
  rec.set_atime_ns(n.atime_ns);
  rec.set_mtime_ns(n.mtime_ns);
  rec.set_ctime_ns(n.ctime_ns);
  rec.set_btime_ns(n.btime_ns);
  rec.set_version(n.version);
  rec.set_parent(n.parent.value());
  rec.set_symlink(n.symlink);
  for (const Xattr& x : n.xattrs) {
    pb::Xattr* out = rec.add_xattrs();
    out->set_name(x.name);
    out->set_value(x.value);
  }
  if (n.layout.has_value()) fs::ToWire(n.layout, rec.mutable_layout());
  if (n.dir_layout.has_value()) fs::ToWire(n.dir_layout, rec.mutable_dir_layout());
  for (uint32_t f : n.frags) rec.add_frags(f);
  if (n.rstat != RStat()) {
    pb::RStat* r = rec.mutable_rstat();
    r->set_rbytes(n.rstat.rbytes);
    r->set_rfiles(n.rstat.rfiles);
    r->set_rsubdirs(n.rstat.rsubdirs);
    r->set_rctime_ns(n.rstat.rctime_ns);
  }
  rec.set_generation(n.generation);
  if (n.allocated) rec.set_allocated(*n.allocated);
  rec.set_data_inline(n.data_inline);
  if (n.inline_data) rec.set_inline_data(*n.inline_data);
  rec.set_inline_version(n.inline_version);
  return rec;
}

}  // namespace weft::mds
