#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <optional>

#include "common/posix/acl.h"
#include "common/status/status.h"
#include "mds/ops/ops.h"

namespace weft::mds {
namespace {

// After chmod, an access ACL follows the new mode bits (posix_acl_chmod).
absl::Status SyncAclToMode(pb::InodeRec* inode) {
  ASSIGN_OR_RETURN(std::string acl, AccessAclForChmod(AccessOf(*inode), inode->mode()));
  if (!acl.empty()) (*inode->mutable_xattrs())["system.posix_acl_access"] = acl;
  return absl::OkStatus();
}

absl::Status ApplySize(OpContext& ctx, const pb::SetattrOp& op, const pb::InodeRec& current,
                       pb::InodeRec* edit) {
  if (IsDir(current)) return Err(EISDIR, "size of a directory");
  if (!IsReg(current)) return Err(EINVAL, "size of a special file");
  bool by_handle = op.by_handle() && ctx.HasOpen(current.ino(), true);
  if (!by_handle) RETURN_IF_ERROR(CheckTruncate(AccessOf(current), ctx.cred()));
  if (op.size() > (uint64_t{1} << 60)) return Err(EFBIG, "size over the maximum file size");
  if (op.size() != current.size()) {
    ctx.RStat(current.parent(), static_cast<int64_t>(op.size()) - static_cast<int64_t>(current.size()), 0, 0);
  }
  edit->set_size(op.size());
  edit->set_mtime_ns(ctx.now_ns());
  edit->set_mode(ModeAfterWrite(AccessOf(*edit), ctx.cred()));
  return absl::OkStatus();
}

// True when `new_mode` drops some of what a write by `cred` would drop
// from a regular file (S_ISUID, S_ISGID: ModeAfterWrite) and nothing else.
bool DropsOnlyWhatAWriteWould(const pb::InodeRec& current, const Credentials& cred,
                              uint32_t new_mode) {
  const uint32_t old_mode = current.mode() & 07777;
  const uint32_t after_write = ModeAfterWrite(AccessOf(current), cred) & 07777;
  new_mode &= 07777;
  return IsReg(current) && new_mode != old_mode && (new_mode & ~old_mode) == 0 &&
         (new_mode & after_write) == after_write;
}

}  // namespace

absl::Status DoSetattr(OpContext& ctx, const pb::SetattrOp& op, pb::MetaReply* reply) {
  ASSIGN_OR_RETURN(const pb::InodeRec* current, ctx.Inode(op.ino()));
  const uint32_t valid = op.valid();
  if (valid == 0) {
    FillAttr(*current, reply->mutable_attr());
    return absl::OkStatus();
  }
  const pb::InodeRec before = *current;
  pb::InodeRec* edit = ctx.Edit(before);
  if (valid & (pb::SA_UID | pb::SA_GID)) {
    std::optional<uint32_t> uid, gid;
    if (valid & pb::SA_UID) uid = op.uid();
    if (valid & pb::SA_GID) gid = op.gid();
    ASSIGN_OR_RETURN(uint32_t mode, ModeForChown(AccessOf(before), ctx.cred(), uid, gid));
    if (uid) edit->set_uid(*uid);
    if (gid) edit->set_gid(*gid);
    edit->set_mode(mode);
  }
  if (valid & pb::SA_MODE) {
    AccessAttrs now = AccessOf(*edit);
    if (!OwnerOrRoot(now, ctx.cred()) && DropsOnlyWhatAWriteWould(*edit, ctx.cred(), op.mode()) &&
        CheckAccess(now, ctx.cred(), kMayWrite).ok()) {
      // The kernel's own "kill privileges" before a write or truncate by a
      // non-owner (Linux applies it with ATTR_FORCE, no permission check).
      // FUSE sends it as a chmod from the writer unless the filesystem
      // handles it, which libfuse 3.14 never tells the kernel. A caller who
      // may write the file may drop these bits: its write would.
      edit->set_mode((edit->mode() & ~07777u) | (op.mode() & 07777));
    } else {
      ASSIGN_OR_RETURN(uint32_t mode, ModeForChmod(now, ctx.cred(), op.mode()));
      edit->set_mode(mode);
      RETURN_IF_ERROR(SyncAclToMode(edit));
    }
  }
  if (valid & pb::SA_SIZE) RETURN_IF_ERROR(ApplySize(ctx, op, before, edit));
  // Only "both times to now" (utimes(NULL)) is the weaker, write-access
  // case; anything else that sets a time is explicit (Linux vfs_utimes).
  const uint32_t time_bits = valid & (pb::SA_ATIME | pb::SA_MTIME | pb::SA_ATIME_NOW | pb::SA_MTIME_NOW);
  bool now_times = time_bits == (pb::SA_ATIME_NOW | pb::SA_MTIME_NOW);
  bool explicit_times = time_bits != 0 && !now_times;
  if (explicit_times || now_times) {
    RETURN_IF_ERROR(CheckSetTimes(AccessOf(before), ctx.cred(), explicit_times));
    if (valid & pb::SA_ATIME) edit->set_atime_ns(op.atime_ns());
    if (valid & pb::SA_MTIME) edit->set_mtime_ns(op.mtime_ns());
    if (valid & pb::SA_ATIME_NOW) edit->set_atime_ns(ctx.now_ns());
    if (valid & pb::SA_MTIME_NOW) edit->set_mtime_ns(ctx.now_ns());
  }
  if (valid & pb::SA_CTIME) {
    RETURN_IF_ERROR(CheckSetTimes(AccessOf(before), ctx.cred(), true));
    edit->set_ctime_ns(op.ctime_ns());
  } else {
    edit->set_ctime_ns(ctx.now_ns());
  }
  FillAttr(*edit, reply->mutable_attr());
  return absl::OkStatus();
}

}  // namespace weft::mds
