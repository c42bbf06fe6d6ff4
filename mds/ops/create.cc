// create (with O_EXCL and open), mknod, mkdir and symlink: a new inode and
// its first link.
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/posix/acl.h"
#include "common/status/status.h"
#include "mds/ops/ops.h"

namespace weft::mds {
namespace {

// Checks the name and the parent, then makes the inode with inherited owner,
// mode and ACLs (and, for a regular file, layout: see mds/ops/layout.cc), and
// links it. In Linux's order (filename_create, then may_create): search
// permission, then an existing name (EEXIST), then write permission.
absl::StatusOr<Inode*> MakeInode(OpContext& ctx, InodeId parent, const std::string& name,
                                        uint32_t mode) {
  ASSIGN_OR_RETURN(const Inode* dir, ParentFor(ctx, parent, false));
  ASSIGN_OR_RETURN(auto existing, ctx.Dentry(parent, name));
  if (existing) return Err(EEXIST, absl::StrCat("create ", name));
  RETURN_IF_ERROR(CheckAccess(AccessOf(*dir), ctx.cred(), kMayWrite | kMayExec));
  FileLayout layout;
  if ((mode & S_IFMT) == S_IFREG) {
    ASSIGN_OR_RETURN(layout, EffectiveDirLayout(ctx, parent));
  }
  ASSIGN_OR_RETURN(NewInodeAttrs attrs, InheritForCreate(AccessOf(*dir), DefaultAcl(*dir),
                                                         ctx.cred(), mode, ctx.umask()));
  const Inode dir_copy = *dir;
  Inode* inode = ctx.NewInode(attrs.mode, attrs.uid, attrs.gid);
  inode->parent = parent;
  if (!attrs.acl_access.empty()) SetXattr(inode, kXattrPosixAclAccess, attrs.acl_access);
  if (!attrs.acl_default.empty()) SetXattr(inode, kXattrPosixAclDefault, attrs.acl_default);
  if (IsReg(*inode)) {
    inode->layout = layout;
    inode->allocated = 0;
    StartInline(ctx, inode);
  }
  Inode* parent_edit = ctx.Edit(dir_copy);
  parent_edit->mtime_ns = ctx.now_ns();
  parent_edit->ctime_ns = ctx.now_ns();
  if (IsDir(*inode)) ++parent_edit->nlink;
  ctx.LinkDentry(parent, name, *inode);
  ctx.MaybeSplit(parent);
  ctx.RStat(parent, 0, IsDir(*inode) ? 0 : 1, IsDir(*inode) ? 1 : 0);
  return inode;
}

int OpenMask(uint32_t flags) {
  int mask = 0;
  switch (flags & O_ACCMODE) {
    case O_RDONLY: mask = kMayRead; break;
    case O_WRONLY: mask = kMayWrite; break;
    default: mask = kMayRead | kMayWrite; break;
  }
  if (flags & O_TRUNC) mask |= kMayWrite;
  return mask;
}

}  // namespace

absl::Status DoCreate(OpContext& ctx, const req::Create& op, Reply* reply) {
  RETURN_IF_ERROR(ValidateName(op.name));
  uint32_t type = op.mode & S_IFMT;
  if (type == 0) type = S_IFREG;
  if (type != S_IFREG && type != S_IFIFO && type != S_IFSOCK && type != S_IFCHR &&
      type != S_IFBLK) {
    return Err(EINVAL, "create: not a file, fifo, socket or device");
  }
  if (op.open) {
    // open(O_CREAT) of an existing name opens it unless O_EXCL.
    ASSIGN_OR_RETURN(const Inode* dir, ParentFor(ctx, op.parent, false));
    (void)dir;
    ASSIGN_OR_RETURN(auto existing, ctx.Dentry(op.parent, op.name));
    if (existing) {
      if (op.exclusive) return Err(EEXIST, absl::StrCat("create ", op.name));
      return DoOpen(ctx, req::Open{existing->ino, op.open_flags & ~uint32_t{O_CREAT}}, reply);
    }
  }
  ASSIGN_OR_RETURN(Inode * inode,
                   MakeInode(ctx, op.parent, op.name, type | (op.mode & 07777)));
  if (type == S_IFCHR || type == S_IFBLK) inode->rdev = op.rdev;
  if (op.open) ctx.OpenRef(inode->ino, (OpenMask(op.open_flags) & kMayWrite) != 0);
  reply->created = true;
  if (inode->data_inline) reply->inline_data = "";
  FillAttr(*inode, &reply->attr);
  return absl::OkStatus();
}

absl::Status DoMkdir(OpContext& ctx, const req::Mkdir& op, Reply* reply) {
  RETURN_IF_ERROR(ValidateName(op.name));
  ASSIGN_OR_RETURN(Inode* inode,
                   MakeInode(ctx, op.parent, op.name, S_IFDIR | (op.mode & 07777)));
  FillAttr(*inode, &reply->attr);
  return absl::OkStatus();
}

absl::Status DoSymlink(OpContext& ctx, const req::Symlink& op, Reply* reply) {
  RETURN_IF_ERROR(ValidateName(op.name));
  if (op.target.empty()) return Err(ENOENT, "empty symlink target");
  if (op.target.size() > kSymlinkMax) return Err(ENAMETOOLONG, "symlink target over 4095 bytes");
  if (op.target.find('\0') != std::string::npos) return Err(EINVAL, "NUL in symlink target");
  ASSIGN_OR_RETURN(Inode* inode, MakeInode(ctx, op.parent, op.name, S_IFLNK | 0777));
  inode->mode = S_IFLNK | 0777;
  inode->xattrs.clear();
  inode->symlink = op.target;
  inode->size = op.target.size();
  FillAttr(*inode, &reply->attr);
  return absl::OkStatus();
}

absl::Status DoOpen(OpContext& ctx, const req::Open& op, Reply* reply) {
  ASSIGN_OR_RETURN(const Inode* inode, ctx.Inode(op.ino));
  int mask = OpenMask(op.flags);
  if (IsDir(*inode) && (mask & kMayWrite)) return Err(EISDIR, "open a directory for writing");
  if (IsSymlink(*inode)) return Err(ELOOP, "open a symbolic link");
  RETURN_IF_ERROR(CheckAccess(AccessOf(*inode), ctx.cred(), mask));
  if (IsReg(*inode) && inode->data_inline && (mask & kMayRead)) {
    // The opener reads them from here: a small file costs no OSD read.
    ASSIGN_OR_RETURN(const std::string* data, ctx.InlineData(*inode));
    reply->inline_data = *data;
  }
  ctx.OpenRef(inode->ino, (mask & kMayWrite) != 0);
  FillAttr(*inode, &reply->attr);
  return absl::OkStatus();
}

namespace {

// What a session changed on its own under MetaReply.attr_authority: it
// decided permissions itself (common/posix, as DoSetattr would); only the
// cases that grant allows are taken.
absl::Status ApplyOwnAttrs(const req::Setattr& a, Inode* edit) {
  constexpr uint32_t kOwn =
      kSetMode | kSetUid | kSetGid | kSetAtime | kSetMtime | kSetCtime;
  constexpr uint32_t kPrivileged = S_ISUID | S_ISGID;
  if ((a.valid & ~kOwn) != 0) {
    return Err(EINVAL, "written: attributes other than mode, owner, times");
  }
  if (!IsReg(*edit) || !edit->xattrs.empty() || (edit->mode & kPrivileged) != 0) {
    return Err(EPERM, "written: attributes of this file must go through setattr");
  }
  if (a.valid & kSetMode) {
    if (a.mode & kPrivileged) return Err(EPERM, "written: setuid/setgid must go through setattr");
    edit->mode = (edit->mode & S_IFMT) | (a.mode & 07777);
  }
  if (a.valid & kSetUid) edit->uid = a.uid;
  if (a.valid & kSetGid) edit->gid = a.gid;
  if (a.valid & kSetAtime) edit->atime_ns = a.atime_ns;
  if (a.valid & kSetMtime) edit->mtime_ns = a.mtime_ns;
  if (a.valid & kSetCtime) edit->ctime_ns = std::max(edit->ctime_ns, a.ctime_ns);
  return absl::OkStatus();
}

}  // namespace

namespace {

// A shared appender's reservation (WrittenOp.append): the bytes go at the
// end of the file as the MDS knows it (every writer of a shared file reports
// each write before it returns), and the size moves past them now, so the
// next appender's bytes go after them.
absl::Status ReserveAppend(OpContext& ctx, const req::Written& op, const Inode& inode,
                           Reply* reply) {
  if (op.append > (uint64_t{1} << 60) - std::min(inode.size, uint64_t{1} << 60)) {
    return Err(EFBIG, "append past the maximum file size");
  }
  if (inode.data_inline) {
    // Small files: the bytes themselves (one inline extent of `append`
    // bytes) go at the end in this one request, while they fit inline.
    req::Written placed = op;
    const bool bytes = op.inline_report && op.inline_writes.size() == 1 &&
                       op.inline_writes[0].data.size() == op.append;
    if (bytes) placed.inline_writes[0].offset = inode.size;
    if (!bytes || !InlineWritesFit(ctx, placed, inode)) {
      // The client moves the data to objects first (InlineOp uninline).
      reply->inline_refused = true;
      FillAttr(inode, &reply->attr);
      return absl::OkStatus();
    }
    if (ctx.cluster_full()) {
      return Err(ENOSPC, "cluster full: an OSD is past the full ratio (weft status)");
    }
    RETURN_IF_ERROR(ctx.InlineData(inode).status());
    const Inode before = inode;
    Inode* edit = ctx.Edit(before);
    ApplyInlineWrites(ctx, placed, edit);
    reply->append_offset = before.size;
    edit->size = before.size + op.append;
    if (before.nlink > 0) ctx.RStat(before.parent, static_cast<int64_t>(op.append), 0, 0);
    const int64_t mtime = op.mtime_ns != 0 ? op.mtime_ns : ctx.now_ns();
    edit->mtime_ns = mtime;
    edit->ctime_ns = std::max(before.ctime_ns, mtime);
    edit->mode = ModeAfterWrite(AccessOf(*edit), ctx.cred());
    FillAttr(*edit, &reply->attr);
    return absl::OkStatus();
  }
  const Inode before = inode;
  Inode* edit = ctx.Edit(before);
  reply->append_offset = before.size;
  edit->size = before.size + op.append;
  if (before.nlink > 0) ctx.RStat(before.parent, static_cast<int64_t>(op.append), 0, 0);
  edit->mode = ModeAfterWrite(AccessOf(*edit), ctx.cred());
  FillAttr(*edit, &reply->attr);
  return absl::OkStatus();
}

}  // namespace

absl::Status DoWritten(OpContext& ctx, const req::Written& op, Reply* reply) {
  ASSIGN_OR_RETURN(const Inode* inode, ctx.Inode(op.ino));
  if (!ctx.HasOpen(op.ino, true)) return Err(EBADF, "file not open for writing by this session");
  if (op.end > (uint64_t{1} << 60)) return Err(EFBIG, "write past the maximum file size");
  if (op.append != 0) return ReserveAppend(ctx, op, *inode, reply);
  if (!op.inline_report && inode->data_inline && inode->allocated.value_or(0) > 0) {
    return Err(EINVAL, absl::StrCat("inode ", op.ino.value(),
                                    " keeps its data in the MDS: objects written before a move"));
  }
  if (op.inline_report) {
    if (!InlineWritesFit(ctx, op, *inode)) {
      // Nothing changes: the client moves the data and writes objects.
      reply->inline_refused = true;
      FillAttr(*inode, &reply->attr);
      return absl::OkStatus();
    }
    if (!op.inline_writes.empty() && ctx.cluster_full()) {
      return Err(ENOSPC, "cluster full: an OSD is past the full ratio (weft status)");
    }
    RETURN_IF_ERROR(ctx.InlineData(*inode).status());
  }
  const Inode before = *inode;
  Inode* edit = ctx.Edit(before);
  if (op.inline_report) {
    ApplyInlineWrites(ctx, op, edit);
  } else if (edit->data_inline) {
    // Objects written to a file without inline bytes: its data lives there.
    edit->data_inline = false;
    edit->inline_data.reset();
    edit->inline_version = before.inline_version + 1;
  }
  if (op.end > before.size) {
    edit->size = op.end;
    // An unlinked file (open still) counts in no directory any more.
    if (before.nlink > 0) {
      ctx.RStat(before.parent, static_cast<int64_t>(op.end - before.size), 0, 0);
    }
  }
  if (!op.keep_times) {
    const int64_t mtime = op.mtime_ns != 0 ? op.mtime_ns : ctx.now_ns();
    edit->mtime_ns = mtime;
    // Never back: a chmod after the write (its report came later) keeps its
    // change time.
    edit->ctime_ns = std::max(before.ctime_ns, mtime);
  }
  if (edit->allocated.has_value() && !edit->data_inline) {
    // A report may cross a truncate (the objects it grew were cut after):
    // keep the count within [0, size].
    const int64_t grown = static_cast<int64_t>(*edit->allocated) + op.allocated_delta;
    edit->allocated = std::min<uint64_t>(static_cast<uint64_t>(std::max<int64_t>(grown, 0)),
                                           edit->size);
  }
  edit->mode = ModeAfterWrite(AccessOf(*edit), ctx.cred());
  if (op.attrs.has_value()) RETURN_IF_ERROR(ApplyOwnAttrs(*op.attrs, edit));
  FillAttr(*edit, &reply->attr);
  return absl::OkStatus();
}

}  // namespace weft::mds
