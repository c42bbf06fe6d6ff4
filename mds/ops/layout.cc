// File layouts: the virtual xattrs weft.dir.layout[.<field>] and
// weft.file.layout[.<field>] (syntax and validation in mds/fs/layout.h), and
// the layout a new file inherits.
//
// Inheritance, as CephFS resolves it: a directory has a layout only when one
// was set on it; a new file takes the layout of the nearest directory up its
// parent chain that has one, else the filesystem default. mkdir copies
// nothing, so a layout set on a directory applies to every subdirectory
// without one of its own, also those that exist already. A file's layout is
// its own from creation, and fixed once the file has data.
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/log/log.h"
#include "common/fs/attr_wire.h"
#include "common/status/status.h"
#include "mds/fs/names.h"
#include "mds/ops/ops.h"

namespace weft::mds {
namespace {

bool HasDirLayout(const Inode& rec) { return rec.dir_layout.pool.value() != 0; }

FileLayout FsDefault(OpContext& ctx) {
  FileLayout layout = fs::FromWire(ctx.options().default_layout);
  if (layout.pool.value() == 0) layout.pool = ctx.options().data_pool;
  return layout;
}

// A layout says where and how an inode's data is stored, like its mode: the
// owner or root may change it (Linux's inode_owner_or_capable).
absl::Status CheckOwner(OpContext& ctx, const Inode& inode) {
  if (ctx.cred().uid == 0 || ctx.cred().uid == inode.uid) return absl::OkStatus();
  return Err(EPERM, "only the owner or root may change a layout");
}

// Until capabilities exist, the MDS cannot tell another client that the
// layout changed: that client would go on writing with the old one.
bool OpenForWritingElsewhere(OpContext& ctx, uint64_t ino) {
  return ctx.sessions().OtherHolder(ino, ctx.session(), /*write=*/true).value() != 0;
}

// A refused change is the client's mistake, but the issue asks for the
// reason in the MDS log too (the client gets it in the status message).
absl::Status Refused(OpContext& ctx, uint64_t ino, const std::string& name, absl::Status status) {
  LOG(INFO) << "event=layout_refused fs=" << ctx.options().fs_name << " ino=" << ino
            << " xattr=" << name << " errno=" << StatusToErrno(status) << " reason=\""
            << status.message() << "\"";
  return status;
}

}  // namespace

absl::StatusOr<FileLayout> EffectiveDirLayout(OpContext& ctx, InodeId dir) {
  InodeId cur = dir;
  for (int depth = 0; depth < 4096; ++depth) {
    ASSIGN_OR_RETURN(const Inode* rec, ctx.Inode(cur));
    if (HasDirLayout(*rec)) return rec->dir_layout;
    if (cur.value() == kRootIno || rec->parent.value() == 0 || rec->parent == cur) {
      return FsDefault(ctx);
    }
    cur = rec->parent;
  }
  return Err(ELOOP, "directory tree too deep");
}

absl::StatusOr<std::string> GetLayoutXattr(OpContext& ctx, const Inode& inode,
                                           const LayoutXattr& x) {
  if (!x.field.empty() && !IsLayoutField(x.field)) return Err(ENODATA, "no such layout field");
  FileLayout layout;
  if (x.target == LayoutTarget::kDir) {
    if (!IsDir(inode)) return Err(ENODATA, "weft.dir.layout: not a directory");
    if (HasDirLayout(inode)) {
      layout = inode.dir_layout;
    } else if (inode.ino.value() == kRootIno) {
      layout = FsDefault(ctx);  // the root always shows one, as in CephFS
    } else {
      return Err(ENODATA, "no layout of its own (new files inherit one from above)");
    }
  } else {
    if (!IsReg(inode)) return Err(ENODATA, "weft.file.layout: not a regular file");
    layout = inode.layout;
  }
  const DataPools pools = ctx.data_pools();
  return x.field.empty() ? FormatLayout(layout, pools)
                         : FormatLayoutField(layout, x.field, pools);
}

absl::Status SetLayoutXattr(OpContext& ctx, const Inode& inode, const std::string& name,
                            const LayoutXattr& x, const std::string& value,
                            Reply* reply) {
  const Inode before = inode;
  const bool dir = x.target == LayoutTarget::kDir;
  if (dir && !IsDir(before)) {
    return Refused(ctx, before.ino.value(), name, Err(EINVAL, "weft.dir.layout: not a directory"));
  }
  if (!dir && !IsReg(before)) {
    return Refused(ctx, before.ino.value(), name,
                   Err(EINVAL, "weft.file.layout: not a regular file"));
  }
  RETURN_IF_ERROR(CheckOwner(ctx, before));
  FileLayout base;
  if (dir) {
    ASSIGN_OR_RETURN(base, EffectiveDirLayout(ctx, before.ino));
  } else {
    // CephFS answers ENOTEMPTY here too. (Not Err(): its strerror suffix
    // would say "Directory not empty" about a file.)
    if (before.size > 0) {
      return Refused(ctx, before.ino.value(), name,
                     ErrnoError(absl::StatusCode::kFailedPrecondition, ENOTEMPTY,
                                "the file has data, so its layout is fixed; copy it to a new "
                                "file to change the layout"));
    }
    if (OpenForWritingElsewhere(ctx, before.ino.value())) {
      return Refused(ctx, before.ino.value(), name,
                     ErrnoError(absl::StatusCode::kFailedPrecondition, EBUSY,
                                "another client has the file open for writing"));
    }
    base = before.layout;
  }
  absl::StatusOr<FileLayout> layout =
      ApplyLayoutText(base, x.field, value, ctx.data_pools(), ctx.options().object_bytes_max);
  if (!layout.ok()) return Refused(ctx, before.ino.value(), name, layout.status());
  Inode* edit = ctx.Edit(before);
  (dir ? edit->dir_layout : edit->layout) = *layout;
  edit->ctime_ns = ctx.now_ns();
  FillAttr(*edit, &reply->attr);
  return absl::OkStatus();
}

absl::Status RemoveLayoutXattr(OpContext& ctx, const Inode& inode, const LayoutXattr& x,
                               Reply* reply) {
  if (x.target != LayoutTarget::kDir || !x.field.empty()) {
    return Err(EOPNOTSUPP, "only weft.dir.layout can be removed (its directory inherits again)");
  }
  if (!IsDir(inode) || !HasDirLayout(inode)) return Err(ENODATA, "no layout of its own");
  RETURN_IF_ERROR(CheckOwner(ctx, inode));
  const Inode before = inode;
  Inode* edit = ctx.Edit(before);
  edit->dir_layout = fs::FileLayout();
  edit->ctime_ns = ctx.now_ns();
  FillAttr(*edit, &reply->attr);
  return absl::OkStatus();
}

}  // namespace weft::mds
