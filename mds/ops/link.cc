#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/fault/fault.h"
#include "common/status/status.h"
#include "mds/ops/ops.h"

namespace weft::mds {

absl::Status DoLink(OpContext& ctx, const req::Link& op, Reply* reply) {
  RETURN_IF_ERROR(ValidateName(op.new_name));
  ASSIGN_OR_RETURN(const Inode* target, ctx.Inode(op.ino));
  if (IsDir(*target)) return Err(EPERM, "hard link to a directory");
  if (target->nlink == 0) return Err(ENOENT, "the file was removed");
  if (target->nlink >= 65000) return Err(EMLINK, "too many links");
  RETURN_IF_ERROR(CheckHardlinkSource(AccessOf(*target), ctx.cred()));
  const Inode target_copy = *target;
  // An existing name before write permission, as Linux's filename_create.
  ASSIGN_OR_RETURN(const Inode* dir, ParentFor(ctx, op.new_parent, false));
  ASSIGN_OR_RETURN(auto existing, ctx.Dentry(op.new_parent, op.new_name));
  if (existing) return Err(EEXIST, absl::StrCat("link ", op.new_name));
  RETURN_IF_ERROR(CheckAccess(AccessOf(*dir), ctx.cred(), kMayWrite | kMayExec));
  TouchDir(ctx, *dir);
  Inode* edit = ctx.Edit(target_copy);
  if (!fault::Fire(fault::kMdsBugLinkSkipsNlink)) ++edit->nlink;
  edit->ctime_ns = ctx.now_ns();
  ctx.LinkDentry(op.new_parent, op.new_name, *edit);
  ctx.MaybeSplit(op.new_parent);
  FillAttr(*edit, &reply->attr);
  return absl::OkStatus();
}

}  // namespace weft::mds
