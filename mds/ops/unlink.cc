// unlink and rmdir.
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/status/status.h"
#include "mds/ops/ops.h"

namespace weft::mds {
namespace {

struct Victim {
  const pb::InodeRec* dir;
  const pb::InodeRec* inode;
};

// In Linux's order (the lookup, then may_delete): search permission, a
// missing name (ENOENT), then write permission and the sticky bit.
absl::StatusOr<Victim> FindVictim(OpContext& ctx, InodeId parent, const std::string& name) {
  ASSIGN_OR_RETURN(const pb::InodeRec* dir, ParentFor(ctx, parent, false));
  ASSIGN_OR_RETURN(auto dentry, ctx.Dentry(parent, name));
  if (!dentry) return Err(ENOENT, absl::StrCat("remove ", name));
  RETURN_IF_ERROR(CheckAccess(AccessOf(*dir), ctx.cred(), kMayWrite | kMayExec));
  ASSIGN_OR_RETURN(const pb::InodeRec* inode, ctx.Inode(dentry->ino));
  RETURN_IF_ERROR(CheckStickyDelete(AccessOf(*dir), AccessOf(*inode), ctx.cred()));
  return Victim{dir, inode};
}

}  // namespace

void RemoveDir(OpContext& ctx, const pb::InodeRec& parent, const pb::InodeRec& dir,
               fs::Attr* last) {
  pb::InodeRec* p = ctx.Edit(parent);
  p->set_nlink(p->nlink() - 1);
  ctx.RemoveInode(IdOf(dir));
  ctx.RStat(IdOf(parent), 0, 0, -1);
  ctx.DirRemoved(IdOf(dir), IdOf(parent));
  // fstat of it gives nlink 0 on Linux, and nothing can ask the MDS any more.
  pb::InodeRec end = dir;
  end.set_nlink(0);
  end.set_ctime_ns(ctx.now_ns());
  end.set_version(dir.version() + 1);
  FillAttr(end, last);
}

absl::Status DoUnlink(OpContext& ctx, const req::Unlink& op, Reply* reply) {
  RETURN_IF_ERROR(ValidateName(op.name));
  ASSIGN_OR_RETURN(Victim v, FindVictim(ctx, op.parent, op.name));
  if (IsDir(*v.inode)) return Err(EISDIR, absl::StrCat("unlink ", op.name));
  const pb::InodeRec inode = *v.inode;
  TouchDir(ctx, *v.dir);
  ctx.UnlinkDentry(op.parent, op.name);
  pb::InodeRec* edit = ctx.Edit(inode);
  // The target's new attributes (nlink, ctime), when it lives on (other
  // links, or open): clients replace their cached copy without a lookup.
  if (ctx.DropLink(edit)) FillAttr(*edit, &reply->attr);
  ctx.RStat(op.parent, -static_cast<int64_t>(IsReg(inode) ? inode.size() : 0), -1, 0);
  return absl::OkStatus();
}

absl::Status DoRmdir(OpContext& ctx, const req::Rmdir& op, Reply* reply) {
  if (op.name == ".") return Err(EINVAL, "rmdir .");
  if (op.name == "..") return Err(ENOTEMPTY, "rmdir ..");
  RETURN_IF_ERROR(ValidateName(op.name));
  ASSIGN_OR_RETURN(Victim v, FindVictim(ctx, op.parent, op.name));
  if (!IsDir(*v.inode)) return Err(ENOTDIR, absl::StrCat("rmdir ", op.name));
  if (v.inode->ino() == kRootIno) return Err(EBUSY, "rmdir of the root");
  const pb::InodeRec inode = *v.inode;
  const pb::InodeRec dir = *v.dir;
  RETURN_IF_ERROR(ctx.CheckEmpty(IdOf(inode)));
  TouchDir(ctx, dir);
  ctx.UnlinkDentry(op.parent, op.name);
  RemoveDir(ctx, dir, inode, &reply->attr);
  return absl::OkStatus();
}

}  // namespace weft::mds
