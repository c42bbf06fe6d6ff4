// access(2) and faccessat(2): the permission an open or exec of the inode
// would be checked with, decided here because only the MDS evaluates ACLs.
// Search permission on the path was checked by the lookups that found it.
#include <cerrno>

#include "common/status/status.h"
#include "mds/ops/ops.h"

namespace weft::mds {

absl::Status DoAccess(OpContext& ctx, const req::Access& op, Reply* reply) {
  if ((op.mask & ~uint32_t{7}) != 0) return Err(EINVAL, "access: mask beyond R_OK|W_OK|X_OK");
  ASSIGN_OR_RETURN(const Inode* inode, ctx.Inode(op.ino));
  // R_OK, W_OK and X_OK have the values of kMayRead, kMayWrite, kMayExec.
  RETURN_IF_ERROR(CheckAccess(AccessOf(*inode), ctx.cred(), static_cast<int>(op.mask)));
  FillAttr(*inode, &reply->attr);
  return absl::OkStatus();
}

}  // namespace weft::mds
