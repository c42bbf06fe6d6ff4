// rename(2) and renameat2's RENAME_NOREPLACE and RENAME_EXCHANGE.
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/status/status.h"
#include "mds/ops/ops.h"

namespace weft::mds {
namespace {

constexpr uint32_t kNoReplace = 1;
constexpr uint32_t kExchange = 2;

// EINVAL when `dir` is `ancestor` or below it (a directory moved into its
// own subtree). Walks the parent pointers up to the root.
absl::Status CheckNotUnder(OpContext& ctx, InodeId dir, InodeId ancestor) {
  InodeId cur = dir;
  for (int depth = 0; depth < 4096; ++depth) {
    if (cur == ancestor) return Err(EINVAL, "a directory cannot move into its own subtree");
    if (cur.value() == kRootIno) return absl::OkStatus();
    ASSIGN_OR_RETURN(const Inode* rec, ctx.Inode(cur));
    cur = rec->parent;
  }
  return Err(ELOOP, "directory tree too deep");
}

// Moves `inode` (already edited) from `from` to `to`: parent pointer, link
// counts of the directories, recursive statistics.
void Reparent(OpContext& ctx, Inode* inode, InodeId from, InodeId to) {
  inode->ctime_ns = ctx.now_ns();
  if (from == to) return;
  inode->parent = to;
  int64_t bytes = IsReg(*inode) ? static_cast<int64_t>(inode->size) : 0;
  int64_t files = IsDir(*inode) ? 0 : 1;
  int64_t subdirs = IsDir(*inode) ? 1 : 0;
  if (IsDir(*inode)) {
    bytes = static_cast<int64_t>(inode->rstat.rbytes);
    files = static_cast<int64_t>(inode->rstat.rfiles);
    subdirs += static_cast<int64_t>(inode->rstat.rsubdirs);
    auto src = ctx.Inode(from);
    auto dst = ctx.Inode(to);
    if (src.ok() && dst.ok()) {
      ctx.Edit(**src)->nlink = (*src)->nlink - 1;
      ctx.Edit(**dst)->nlink = (*dst)->nlink + 1;
    }
  }
  ctx.RStat(from, -bytes, -files, -subdirs);
  ctx.RStat(to, bytes, files, subdirs);
}

absl::Status Exchange(OpContext& ctx, const req::Rename& op, const Inode& src,
                      const Inode& dst, Reply* reply) {
  Inode* a = ctx.Edit(src);
  Inode* b = ctx.Edit(dst);
  ctx.UnlinkDentry(op.parent, op.name);
  ctx.UnlinkDentry(op.new_parent, op.new_name);
  ctx.LinkDentry(op.new_parent, op.new_name, *a);
  ctx.LinkDentry(op.parent, op.name, *b);
  Reparent(ctx, a, op.parent, op.new_parent);
  Reparent(ctx, b, op.new_parent, op.parent);
  FillAttr(*a, &reply->attr);
  FillAttr(*b, &reply->replaced);
  return absl::OkStatus();
}

absl::Status CheckReplace(OpContext& ctx, const Inode& src, const Inode& dst) {
  if (IsDir(src) && !IsDir(dst)) return Err(ENOTDIR, "rename a directory over a non-directory");
  if (!IsDir(src) && IsDir(dst)) return Err(EISDIR, "rename a non-directory over a directory");
  if (IsDir(dst)) RETURN_IF_ERROR(ctx.CheckEmpty(dst.ino));
  return absl::OkStatus();
}

}  // namespace

// The reply carries the moved inode's new attributes (its ctime changed), and
// as `replaced` those of the inode the new name pointed to (its nlink went
// down; a removed directory's last ones; the other inode of an exchange), so
// that a client can refresh what it caches of them.
absl::Status DoRename(OpContext& ctx, const req::Rename& op, Reply* reply) {
  if ((op.flags & ~(kNoReplace | kExchange)) != 0 ||
      (op.flags & (kNoReplace | kExchange)) == (kNoReplace | kExchange)) {
    return Err(EINVAL, "rename: bad flags");
  }
  RETURN_IF_ERROR(ValidateName(op.name));
  RETURN_IF_ERROR(ValidateName(op.new_name));
  ASSIGN_OR_RETURN(const Inode* from_dir, ParentFor(ctx, op.parent, false));
  ASSIGN_OR_RETURN(const Inode* to_dir, ParentFor(ctx, op.new_parent, false));
  const Inode from_copy = *from_dir, to_copy = *to_dir;
  ASSIGN_OR_RETURN(auto src_d, ctx.Dentry(op.parent, op.name));
  if (!src_d) return Err(ENOENT, absl::StrCat("rename ", op.name));
  ASSIGN_OR_RETURN(auto dst_d, ctx.Dentry(op.new_parent, op.new_name));
  ASSIGN_OR_RETURN(const Inode* src_p, ctx.Inode(src_d->ino));
  const Inode src = *src_p;
  Inode dst;
  if (dst_d) {
    ASSIGN_OR_RETURN(const Inode* dst_p, ctx.Inode(dst_d->ino));
    dst = *dst_p;
  }
  // NOREPLACE first: a name renamed onto itself exists, as Linux answers
  // renameat2(x, x, RENAME_NOREPLACE) (the kernel passes it on when its
  // dentry for the target was invalidated during the call).
  if ((op.flags & kNoReplace) && dst_d) return Err(EEXIST, "rename: target exists");
  if (op.parent == op.new_parent && op.name == op.new_name) return absl::OkStatus();
  if ((op.flags & kExchange) && !dst_d) return Err(ENOENT, "exchange with a missing name");
  if (dst_d && dst.ino == src.ino) return absl::OkStatus();  // two links of one file
  // In vfs_rename's order: the source's directory (write, then its sticky
  // bit), then the target's, then the ".." of a directory that moves.
  constexpr int kModify = kMayWrite | kMayExec;
  RETURN_IF_ERROR(CheckAccess(AccessOf(from_copy), ctx.cred(), kModify));
  RETURN_IF_ERROR(CheckStickyDelete(AccessOf(from_copy), AccessOf(src), ctx.cred()));
  RETURN_IF_ERROR(CheckAccess(AccessOf(to_copy), ctx.cred(), kModify));
  if (dst_d) RETURN_IF_ERROR(CheckStickyDelete(AccessOf(to_copy), AccessOf(dst), ctx.cred()));
  if (IsDir(src) && op.parent != op.new_parent) {
    RETURN_IF_ERROR(CheckNotUnder(ctx, op.new_parent, src.ino));
    RETURN_IF_ERROR(CheckAccess(AccessOf(src), ctx.cred(), kMayWrite));  // its ".." changes
  }
  if ((op.flags & kExchange) && IsDir(dst) && op.parent != op.new_parent) {
    RETURN_IF_ERROR(CheckNotUnder(ctx, op.parent, dst.ino));
    RETURN_IF_ERROR(CheckAccess(AccessOf(dst), ctx.cred(), kMayWrite));
  }
  TouchDir(ctx, from_copy);
  TouchDir(ctx, to_copy);
  if (op.flags & kExchange) return Exchange(ctx, op, src, dst, reply);
  if (dst_d) {
    RETURN_IF_ERROR(CheckReplace(ctx, src, dst));
    if (IsDir(dst)) {
      RemoveDir(ctx, to_copy, dst, &reply->replaced);
    } else {
      Inode* victim = ctx.Edit(dst);
      if (ctx.DropLink(victim)) FillAttr(*victim, &reply->replaced);
      ctx.RStat(op.new_parent, -static_cast<int64_t>(IsReg(dst) ? dst.size : 0), -1, 0);
    }
  }
  Inode* moved = ctx.Edit(src);
  ctx.UnlinkDentry(op.parent, op.name);
  ctx.LinkDentry(op.new_parent, op.new_name, *moved);
  Reparent(ctx, moved, op.parent, op.new_parent);
  ctx.MaybeSplit(op.new_parent);
  FillAttr(*moved, &reply->attr);
  return absl::OkStatus();
}

}  // namespace weft::mds
