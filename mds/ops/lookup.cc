#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/status/status.h"
#include "mds/ops/ops.h"

namespace weft::mds {

absl::StatusOr<const Inode*> ParentFor(OpContext& ctx, InodeId parent, bool modify) {
  ASSIGN_OR_RETURN(const Inode* dir, ctx.Dir(parent));
  if (dir->nlink == 0) return Err(ENOENT, "directory was removed");
  RETURN_IF_ERROR(
      CheckAccess(AccessOf(*dir), ctx.cred(), modify ? kMayWrite | kMayExec : kMayExec));
  return dir;
}

void TouchDir(OpContext& ctx, const Inode& dir) {
  Inode* edit = ctx.Edit(dir);
  edit->mtime_ns = ctx.now_ns();
  edit->ctime_ns = ctx.now_ns();
}

absl::Status DoLookup(OpContext& ctx, const req::Lookup& op, Reply* reply) {
  const std::string& name = op.name;
  // Search permission first, as the kernel's walk checks it before the name.
  ASSIGN_OR_RETURN(const Inode* dir, ParentFor(ctx, op.parent, false));
  if (name.size() > kNameMax) return Err(ENAMETOOLONG, "name over 255 bytes");
  if (name == ".") {
    FillAttr(*dir, &reply->attr);
    return absl::OkStatus();
  }
  if (name == "..") {
    const InodeId up(dir->ino.value() == kRootIno ? kRootIno : dir->parent.value());
    ASSIGN_OR_RETURN(const Inode* parent, ctx.Inode(up));
    FillAttr(*parent, &reply->attr);
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(ValidateName(name));
  ASSIGN_OR_RETURN(auto dentry, ctx.Dentry(op.parent, name));
  if (!dentry) return Err(ENOENT, absl::StrCat("lookup ", name));
  ASSIGN_OR_RETURN(const Inode* inode, ctx.Inode(dentry->ino));
  FillAttr(*inode, &reply->attr);
  return absl::OkStatus();
}

absl::Status DoGetattr(OpContext& ctx, const req::Getattr& op, Reply* reply) {
  ASSIGN_OR_RETURN(const Inode* inode, ctx.Inode(op.ino));
  FillAttr(*inode, &reply->attr);
  return absl::OkStatus();
}

absl::Status DoReadlink(OpContext& ctx, const req::Readlink& op, Reply* reply) {
  ASSIGN_OR_RETURN(const Inode* inode, ctx.Inode(op.ino));
  if (!IsSymlink(*inode)) return Err(EINVAL, "not a symbolic link");
  reply->value = inode->symlink;
  FillAttr(*inode, &reply->attr);
  return absl::OkStatus();
}

absl::Status DoStatfs(OpContext& ctx, const req::Statfs&, Reply* reply) {
  Capacity cap = ctx.capacity();
  ASSIGN_OR_RETURN(const Inode* root, ctx.Inode(InodeId(kRootIno)));
  fs::FsStats& s = reply->statfs.emplace();
  s.bytes_total = cap.bytes_total;
  s.bytes_avail = cap.bytes_avail;
  s.bytes_used = cap.bytes_used;
  s.files = root->rstat.rfiles + root->rstat.rsubdirs + 1;
  s.files_free = uint64_t{1} << 40;
  s.name_max = kNameMax;
  return absl::OkStatus();
}

}  // namespace weft::mds
