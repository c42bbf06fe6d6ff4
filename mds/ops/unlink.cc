// unlink and rmdir.
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/status/status.h"
#include "mds/ops/ops.h"

namespace weft::mds {
namespace {

struct Victim {
  const Inode* dir;
  const Inode* inode;
};

// In Linux's order (the lookup, then may_delete): search permission, a
// missing name (ENOENT), then write permission and the sticky bit.
absl::StatusOr<Victim> FindVictim(OpContext& ctx, InodeId parent, const std::string& name) {
  ASSIGN_OR_RETURN(const Inode* dir, ParentFor(ctx, parent, false));
  ASSIGN_OR_RETURN(auto dentry, ctx.Dentry(parent, name));
  if (!dentry) return Err(ENOENT, absl::StrCat("remove ", name));
  RETURN_IF_ERROR(CheckAccess(AccessOf(*dir), ctx.cred(), kMayWrite | kMayExec));
  ASSIGN_OR_RETURN(const Inode* inode, ctx.Inode(dentry->ino));
  RETURN_IF_ERROR(CheckStickyDelete(AccessOf(*dir), AccessOf(*inode), ctx.cred()));
  return Victim{dir, inode};
}

}  // namespace

void RemoveDir(OpContext& ctx, const Inode& parent, const Inode& dir,
               fs::Attr* last) {
  Inode* p = ctx.Edit(parent);
  --p->nlink;
  ctx.RemoveInode(dir.ino);
  ctx.RStat(parent.ino, 0, 0, -1);
  ctx.DirRemoved(dir.ino, parent.ino);
  // fstat of it gives nlink 0 on Linux, and nothing can ask the MDS any more.
  Inode end = dir;
  end.nlink = 0;
  end.ctime_ns = ctx.now_ns();
  end.version = dir.version + 1;
  FillAttr(end, last);
}

absl::Status DoUnlink(OpContext& ctx, const req::Unlink& op, Reply* reply) {
  RETURN_IF_ERROR(ValidateName(op.name));
  ASSIGN_OR_RETURN(Victim v, FindVictim(ctx, op.parent, op.name));
  if (IsDir(*v.inode)) return Err(EISDIR, absl::StrCat("unlink ", op.name));
  const Inode inode = *v.inode;
  TouchDir(ctx, *v.dir);
  ctx.UnlinkDentry(op.parent, op.name);
  Inode* edit = ctx.Edit(inode);
  // The target's new attributes (nlink, ctime), when it lives on (other
  // links, or open): clients replace their cached copy without a lookup.
  if (ctx.DropLink(edit)) FillAttr(*edit, &reply->attr);
  ctx.RStat(op.parent, -static_cast<int64_t>(IsReg(inode) ? inode.size : 0), -1, 0);
  return absl::OkStatus();
}

absl::Status DoRmdir(OpContext& ctx, const req::Rmdir& op, Reply* reply) {
  if (op.name == ".") return Err(EINVAL, "rmdir .");
  if (op.name == "..") return Err(ENOTEMPTY, "rmdir ..");
  RETURN_IF_ERROR(ValidateName(op.name));
  ASSIGN_OR_RETURN(Victim v, FindVictim(ctx, op.parent, op.name));
  if (!IsDir(*v.inode)) return Err(ENOTDIR, absl::StrCat("rmdir ", op.name));
  if (v.inode->ino.value() == kRootIno) return Err(EBUSY, "rmdir of the root");
  const Inode inode = *v.inode;
  const Inode dir = *v.dir;
  RETURN_IF_ERROR(ctx.CheckEmpty(inode.ino));
  TouchDir(ctx, dir);
  ctx.UnlinkDentry(op.parent, op.name);
  RemoveDir(ctx, dir, inode, &reply->attr);
  return absl::OkStatus();
}

}  // namespace weft::mds
