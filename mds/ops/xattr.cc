// Extended attributes: user., trusted., security., POSIX ACLs, and the
// virtual weft.* attributes (never listed): recursive statistics (read only)
// and layouts (mds/ops/layout.cc).
#include <sys/stat.h>

#include <cerrno>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/posix/acl.h"
#include "common/posix/xattr.h"
#include "common/status/status.h"
#include "mds/ops/ops.h"

namespace weft::mds {
namespace {

constexpr uint32_t kXattrCreate = 1;
constexpr uint32_t kXattrReplace = 2;

absl::Status CheckName(const std::string& name) {
  if (name.empty() || name.size() > kXattrNameMax) return Err(ERANGE, "xattr name length");
  if (name.find('\0') != std::string::npos) return Err(EINVAL, "NUL in xattr name");
  return absl::OkStatus();
}

// Linux's xattr_permission(): who may read (kMayRead) or write an attribute.
// posix::AbsentReadsAsNoData (which the client relies on) follows it.
absl::Status XattrPermission(OpContext& ctx, const Inode& inode, XattrNs ns, int mask) {
  const bool write = (mask & kMayWrite) != 0;
  switch (ns) {
    case XattrNs::kUnsupported: return Err(EOPNOTSUPP, "unsupported xattr namespace");
    case XattrNs::kAcl: case XattrNs::kWeft: return absl::OkStatus();
    case XattrNs::kSecurity:
      if (write && ctx.cred().uid != 0) return Err(EPERM, "security.* needs root");
      return absl::OkStatus();
    case XattrNs::kTrusted:
      if (ctx.cred().uid != 0) return Err(write ? EPERM : ENODATA, "trusted.* needs root");
      return absl::OkStatus();
    case XattrNs::kUser:
      if (!IsReg(inode) && !IsDir(inode)) {
        return Err(write ? EPERM : ENODATA, "user.* on a special file");
      }
      if (write && IsDir(inode) && (inode.mode & S_ISVTX) && ctx.cred().uid != 0 &&
          ctx.cred().uid != inode.uid) {
        return Err(EPERM, "user.* on a sticky directory owned by another user");
      }
      return CheckAccess(AccessOf(inode), ctx.cred(), mask);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> VirtualXattr(OpContext& ctx, const Inode& inode,
                                         const std::string& name) {
  const RStat& r = inode.rstat;
  if (IsDir(inode)) {
    if (name == "weft.dir.rbytes") return absl::StrCat(r.rbytes);
    if (name == "weft.dir.rfiles") return absl::StrCat(r.rfiles);
    if (name == "weft.dir.rsubdirs") return absl::StrCat(r.rsubdirs);
    if (name == "weft.dir.rentries") return absl::StrCat(r.rfiles + r.rsubdirs);
    if (name == "weft.dir.rctime") {
      int64_t t = std::max(r.rctime_ns, inode.ctime_ns);
      return absl::StrFormat("%d.%09d", t / 1000000000, t % 1000000000);
    }
  }
  LayoutXattr layout = ParseLayoutXattrName(name);
  if (layout.target != LayoutTarget::kNone) return GetLayoutXattr(ctx, inode, layout);
  return Err(ENODATA, absl::StrCat("no attribute ", name));
}

}  // namespace

absl::Status DoGetxattr(OpContext& ctx, const req::Getxattr& op, Reply* reply) {
  RETURN_IF_ERROR(CheckName(op.name));
  ASSIGN_OR_RETURN(const Inode* inode, ctx.Inode(op.ino));
  XattrNs ns = XattrNamespace(op.name);
  RETURN_IF_ERROR(XattrPermission(ctx, *inode, ns, kMayRead));
  if (ns == XattrNs::kWeft) {
    ASSIGN_OR_RETURN(std::string value, VirtualXattr(ctx, *inode, op.name));
    reply->value = value;
    return absl::OkStatus();
  }
  const std::string* value = FindXattr(*inode, op.name);
  if (value == nullptr) return Err(ENODATA, absl::StrCat("no attribute ", op.name));
  reply->value = *value;
  FillAttr(*inode, &reply->attr);  // the version the client may keep the value at
  return absl::OkStatus();
}

absl::Status DoSetxattr(OpContext& ctx, const req::Setxattr& op, Reply* reply) {
  RETURN_IF_ERROR(CheckName(op.name));
  if ((op.flags & ~(kXattrCreate | kXattrReplace)) != 0 ||
      op.flags == (kXattrCreate | kXattrReplace)) {
    return Err(EINVAL, "setxattr: bad flags");
  }
  if (op.value.size() > kXattrValueMax) return Err(E2BIG, "xattr value over 64 KiB");
  ASSIGN_OR_RETURN(const Inode* inode, ctx.Inode(op.ino));
  XattrNs ns = XattrNamespace(op.name);
  if (ns == XattrNs::kWeft) {
    LayoutXattr layout = ParseLayoutXattrName(op.name);
    if (layout.target == LayoutTarget::kNone) {
      return Err(EOPNOTSUPP, absl::StrCat(op.name, " cannot be set"));
    }
    return SetLayoutXattr(ctx, *inode, op.name, layout, op.value, reply);
  }
  RETURN_IF_ERROR(XattrPermission(ctx, *inode, ns, kMayWrite));
  const Inode before = *inode;
  bool exists = FindXattr(before, op.name) != nullptr;
  if (ns == XattrNs::kAcl) {  // Linux ignores the flags for ACLs
    // An ACL the mode bits say all of is not stored; Linux then changes
    // nothing, ctime included, unless the mode changes or one is removed.
    uint32_t mode = before.mode;
    std::string stored;
    if (op.name == kXattrPosixAclAccess) {
      ASSIGN_OR_RETURN(AclSetResult r, SetAccessAcl(AccessOf(before), ctx.cred(), op.value));
      mode = r.mode;
      stored = std::move(r.stored_value);
    } else {
      ASSIGN_OR_RETURN(stored, SetDefaultAcl(AccessOf(before), ctx.cred(), op.value));
    }
    if (stored.empty() && !exists && mode == before.mode) {
      FillAttr(before, &reply->attr);
      return absl::OkStatus();
    }
    Inode* edit = ctx.Edit(before);
    edit->mode = mode;
    if (stored.empty()) {
      RemoveXattr(edit, op.name);
    } else {
      SetXattr(edit, op.name, std::move(stored));
    }
    edit->ctime_ns = ctx.now_ns();
    FillAttr(*edit, &reply->attr);
    return absl::OkStatus();
  }
  if ((op.flags & kXattrCreate) && exists) return Err(EEXIST, "xattr exists");
  if ((op.flags & kXattrReplace) && !exists) return Err(ENODATA, "no such xattr");
  size_t total = 0;
  for (const Xattr& x : before.xattrs) total += x.name.size() + x.value.size();
  if (total + op.name.size() + op.value.size() > 1024 * 1024) {
    return Err(ENOSPC, "over 1 MiB of xattrs on one inode");
  }
  Inode* edit = ctx.Edit(before);
  SetXattr(edit, op.name, op.value);
  edit->ctime_ns = ctx.now_ns();
  FillAttr(*edit, &reply->attr);
  return absl::OkStatus();
}

absl::Status DoListxattr(OpContext& ctx, const req::Listxattr& op, Reply* reply) {
  ASSIGN_OR_RETURN(const Inode* inode, ctx.Inode(op.ino));
  std::vector<std::string> names;
  for (const Xattr& x : inode->xattrs) {
    if (XattrNamespace(x.name) == XattrNs::kTrusted && ctx.cred().uid != 0) continue;
    names.push_back(x.name);
  }
  std::sort(names.begin(), names.end());
  for (auto& n : names) reply->names.push_back(n);
  FillAttr(*inode, &reply->attr);
  return absl::OkStatus();
}

absl::Status DoRemovexattr(OpContext& ctx, const req::Removexattr& op, Reply* reply) {
  RETURN_IF_ERROR(CheckName(op.name));
  ASSIGN_OR_RETURN(const Inode* inode, ctx.Inode(op.ino));
  XattrNs ns = XattrNamespace(op.name);
  if (ns == XattrNs::kWeft) {
    LayoutXattr layout = ParseLayoutXattrName(op.name);
    if (layout.target == LayoutTarget::kNone) {
      return Err(EOPNOTSUPP, absl::StrCat(op.name, " cannot be removed"));
    }
    return RemoveLayoutXattr(ctx, *inode, layout, reply);
  }
  RETURN_IF_ERROR(XattrPermission(ctx, *inode, ns, kMayWrite));
  if (ns == XattrNs::kAcl) {
    // Removing an ACL is setting an empty one: the owner's right, and no
    // error when there is none (Linux), nor a new ctime.
    return DoSetxattr(ctx, req::Setxattr{op.ino, op.name, "", 0}, reply);
  }
  if (FindXattr(*inode, op.name) == nullptr) return Err(ENODATA, "no such xattr");
  Inode* edit = ctx.Edit(*inode);
  RemoveXattr(edit, op.name);
  edit->ctime_ns = ctx.now_ns();
  FillAttr(*edit, &reply->attr);
  return absl::OkStatus();
}

}  // namespace weft::mds
