#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/posix/acl.h"
#include "common/posix/atime.h"
#include "common/status/status.h"
#include "mds/ops/ops.h"

namespace weft::mds {
namespace {

// truncate(2) checks the file before anything else changes (vfs_truncate,
// then do_truncate): a truncate that also drops setuid (the kernel sends
// that as a mode) fails with the truncate's EACCES, not the chmod's EPERM.
absl::Status CheckSize(OpContext& ctx, const req::Setattr& op, const Inode& current) {
  if (IsDir(current)) return Err(EISDIR, "size of a directory");
  if (!IsReg(current)) return Err(EINVAL, "size of a special file");
  bool by_handle = op.by_handle && ctx.HasOpen(current.ino, true);
  if (!by_handle) RETURN_IF_ERROR(CheckTruncate(AccessOf(current), ctx.cred()));
  if (op.size > (uint64_t{1} << 60)) return Err(EFBIG, "size over the maximum file size");
  return absl::OkStatus();
}

void ApplySize(OpContext& ctx, const req::Setattr& op, const Inode& current,
               Inode* edit) {
  // An unlinked file (open still) counts in no directory any more.
  if (op.size != current.size && current.nlink > 0) {
    ctx.RStat(current.parent,
              static_cast<int64_t>(op.size) - static_cast<int64_t>(current.size), 0, 0);
  }
  edit->size = op.size;
  CutInline(ctx, op.size, edit);
  ctx.TrimObjects(current, op.size);
  // A cut frees at most what lay past the new size; growing allocates nothing.
  if (edit->allocated) edit->allocated = std::min(*edit->allocated, op.size);
  edit->mtime_ns = ctx.now_ns();
  edit->mode = ModeAfterWrite(AccessOf(*edit), ctx.cred());
}

}  // namespace

absl::Status DoSetattr(OpContext& ctx, const req::Setattr& op, Reply* reply) {
  ASSIGN_OR_RETURN(const Inode* current, ctx.Inode(op.ino));
  const uint32_t valid = op.valid;
  if (valid == 0) {
    FillAttr(*current, &reply->attr);
    return absl::OkStatus();
  }
  const Inode before = *current;
  if (valid & kSetSize) {
    RETURN_IF_ERROR(CheckSize(ctx, op, before));
    // A cut of inline data needs its bytes (their length is `allocated`).
    if (before.data_inline && op.size < before.allocated.value_or(0)) {
      RETURN_IF_ERROR(ctx.InlineData(before).status());
    }
  }
  const SetattrAsk ask = SetattrAskOf(valid, op.uid, op.gid, op.mode);
  ASSIGN_OR_RETURN(SetattrResult decided, DecideSetattr(AccessOf(before), ctx.cred(), ask));
  Inode* edit = ctx.Edit(before);
  edit->uid = decided.uid;
  edit->gid = decided.gid;
  edit->mode = decided.mode;
  if (!decided.acl_access.empty()) {
    SetXattr(edit, kXattrPosixAclAccess, decided.acl_access);
  }
  if (valid & kSetSize) {
    ApplySize(ctx, op, before, edit);
    reply->prior_size = before.size;
  }
  if (valid & kSetAtime) edit->atime_ns = op.atime_ns;
  if (valid & kSetMtime) edit->mtime_ns = op.mtime_ns;
  if (valid & kSetAtimeNow) edit->atime_ns = ctx.now_ns();
  if (valid & kSetMtimeNow) edit->mtime_ns = ctx.now_ns();
  if (valid & kSetCtime) {
    RETURN_IF_ERROR(CheckSetTimes(AccessOf(before), ctx.cred(), true));
    edit->ctime_ns = op.ctime_ns;
  } else {
    edit->ctime_ns = ctx.now_ns();
  }
  FillAttr(*edit, &reply->attr);
  return absl::OkStatus();
}

absl::Status DoAtime(OpContext& ctx, const req::Atime& op, Reply* reply) {
  if (op.reads.size() > posix::kMaxAtimeReads) {
    return Err(EINVAL, absl::StrCat(op.reads.size(), " reads in one request, over ",
                                    posix::kMaxAtimeReads));
  }
  // Every inode is loaded, and every error found, before anything changes.
  bool need_load = false;
  for (const req::Atime::Read& read : op.reads) {
    absl::StatusOr<const Inode*> rec = ctx.Inode(read.ino);
    if (IsNeedLoad(rec.status())) {
      need_load = true;
    } else if (!IsStale(rec.status())) {  // removed since the read
      RETURN_IF_ERROR(rec.status());
    }
  }
  if (need_load) return NeedLoad();
  std::vector<InodeId> moved;  // in request order, once each
  absl::flat_hash_set<InodeId> seen;
  for (const req::Atime::Read& read : op.reads) {
    absl::StatusOr<const Inode*> rec = ctx.Inode(read.ino);
    if (!rec.ok()) continue;  // removed
    // An inode read twice in the batch: the later read moves it again only
    // if it is still due after the first.
    const Inode& cur = **rec;
    if (!posix::AtimeDue(cur.atime_ns, cur.mtime_ns, cur.ctime_ns, read.atime_ns,
                         op.strict)) {
      continue;
    }
    ctx.Edit(cur)->atime_ns = read.atime_ns;
    if (seen.insert(read.ino).second) moved.push_back(read.ino);
  }
  for (InodeId ino : moved) {
    ASSIGN_OR_RETURN(const Inode* rec, ctx.Inode(ino));
    FillAttr(*rec, &reply->changed.emplace_back());
  }
  return absl::OkStatus();
}

}  // namespace weft::mds
