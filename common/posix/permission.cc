#include "common/posix/permission.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status/status.h"
#include "proto/mds_client.pb.h"

namespace weft::posix {
namespace {

constexpr uint32_t kPermBits = 07777;  // rwx for all three classes + suid, sgid, sticky
constexpr uint32_t kRwxBits = 0777;
constexpr uint32_t kMayRwx = kMayRead | kMayWrite | kMayExec;

absl::Status Eacces(absl::string_view message) {
  return ErrnoError(absl::StatusCode::kPermissionDenied, EACCES, message);
}

absl::Status Eperm(absl::string_view message) {
  return ErrnoError(absl::StatusCode::kPermissionDenied, EPERM, message);
}

absl::Status Eopnotsupp(absl::string_view message) {
  return ErrnoError(absl::StatusCode::kUnimplemented, EOPNOTSUPP, message);
}

// A stored ACL that does not parse was corrupted after it was validated.
absl::Status CorruptAcl(const absl::Status& status, absl::string_view which) {
  return ErrnoError(absl::StatusCode::kDataLoss, EIO,
                    absl::StrCat("stored ", which, " ACL: ", status.message()));
}

bool IsDir(uint32_t mode) { return S_ISDIR(mode); }
bool IsReg(uint32_t mode) { return S_ISREG(mode); }
bool IsLnk(uint32_t mode) { return S_ISLNK(mode); }

// in_group_or_capable: may the caller keep S_ISGID on a file of group `gid`?
bool InGroupOrRoot(const Credentials& cred, uint32_t gid) {
  return cred.InGroup(gid) || cred.IsRoot();
}

// The stored access ACL, or nullopt when there is none. A header with no
// entries counts as none (posix_acl_from_xattr returns NULL for it).
absl::StatusOr<std::optional<Acl>> LoadStoredAcl(absl::string_view raw, absl::string_view which) {
  if (raw.empty()) return std::optional<Acl>();
  absl::StatusOr<Acl> decoded = DecodeAclXattr(raw);
  if (!decoded.ok()) return CorruptAcl(decoded.status(), which);
  if (decoded->entries.empty()) return std::optional<Acl>();
  absl::Status valid = CanonicalizeAcl(&*decoded);
  if (!valid.ok()) return CorruptAcl(valid, which);
  return std::optional<Acl>(std::move(*decoded));
}

// acl_permission_check: the mode bits and the access ACL, no privilege.
absl::Status DacCheck(const AccessAttrs& inode, const Credentials& cred, int mask) {
  const uint32_t want = static_cast<uint32_t>(mask) & kMayRwx;
  uint32_t mode = inode.mode;
  if (cred.uid == inode.uid) {
    // The owner class is final: the ACL is never consulted for the owner.
    if (want & ~(mode >> 6)) return Eacces("owner class lacks the permission");
    return absl::OkStatus();
  }
  // The kernel consults the ACL only if the group bits (the mask) are not 0.
  if ((mode & S_IRWXG) != 0 && !inode.acl_access.empty()) {
    ASSIGN_OR_RETURN(std::optional<Acl> acl, LoadStoredAcl(inode.acl_access, "access"));
    if (acl.has_value()) return CheckAclPermission(*acl, inode, cred, mask);
  }
  if (cred.InGroup(inode.gid)) mode >>= 3;
  if (want & ~mode) return Eacces("group or other class lacks the permission");
  return absl::OkStatus();
}

// The MASK entry's perm, or all bits when there is none.
uint16_t MaskPerm(const Acl& acl) {
  for (const AclEntry& e : acl.entries) {
    if (e.tag == kAclMask) return e.perm;
  }
  return kAclRead | kAclWrite | kAclExecute;
}

absl::Status Grant(bool ok, absl::string_view what) {
  if (ok) return absl::OkStatus();
  return Eacces(absl::StrCat("ACL ", what, " lacks the permission"));
}

// The valid file types for a new inode; 0 means a regular file (mknod(2)).
absl::StatusOr<uint32_t> NewInodeType(uint32_t mode) {
  const uint32_t type = mode & S_IFMT;
  switch (type) {
    case 0:
      return static_cast<uint32_t>(S_IFREG);
    case S_IFREG:
    case S_IFDIR:
    case S_IFLNK:
    case S_IFCHR:
    case S_IFBLK:
    case S_IFIFO:
    case S_IFSOCK:
      return type;
    default:
      return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL,
                        absl::StrCat("file type ", type, " is not creatable"));
  }
}

// The decoded ACL a setxattr carries, or nullopt for a removal ("" or a
// header with no entries, as do_set_acl/posix_acl_from_xattr treat them).
absl::StatusOr<std::optional<Acl>> DecodeSetValue(absl::string_view value) {
  if (value.empty()) return std::optional<Acl>();
  ASSIGN_OR_RETURN(Acl acl, DecodeAclXattr(value));
  if (acl.entries.empty()) return std::optional<Acl>();
  return std::optional<Acl>(std::move(acl));
}

// Step 5 of InheritForCreate: the default ACL or the umask.
absl::Status ApplyDefaultAclOrUmask(const std::string& parent_acl_default, uint32_t umask,
                                    NewInodeAttrs* out) {
  ASSIGN_OR_RETURN(std::optional<Acl> inherited, LoadStoredAcl(parent_acl_default, "default"));
  if (!inherited.has_value()) {
    out->mode &= ~(umask & kRwxBits);
    return absl::OkStatus();
  }
  Acl access = *inherited;
  if (AclMaskForCreate(&access, &out->mode)) out->acl_access = EncodeAcl(access);
  if (IsDir(out->mode)) out->acl_default = EncodeAcl(*inherited);
  return absl::OkStatus();
}

}  // namespace

bool Credentials::InGroup(uint32_t g) const {
  return g == gid || std::find(groups.begin(), groups.end(), g) != groups.end();
}

bool OwnerOrRoot(const AccessAttrs& inode, const Credentials& cred) {
  return cred.uid == inode.uid || cred.IsRoot();
}

absl::Status CheckHardlinkSource(const AccessAttrs& inode, const Credentials& cred) {
  if (OwnerOrRoot(inode, cred)) return absl::OkStatus();
  const bool safe = S_ISREG(inode.mode) && (inode.mode & S_ISUID) == 0 &&
                    (inode.mode & (S_ISGID | S_IXGRP)) != (S_ISGID | S_IXGRP) &&
                    CheckAccess(inode, cred, kMayRead | kMayWrite).ok();
  if (safe) return absl::OkStatus();
  return Eperm("link: not the owner, and not a file the caller may read and write "
               "(protected_hardlinks)");
}

bool AclGrantsEveryone(const Acl& acl, int mask) {
  const uint16_t want = static_cast<uint16_t>(static_cast<uint32_t>(mask) & kMayRwx);
  const uint16_t mask_perm = MaskPerm(acl);
  for (const AclEntry& e : acl.entries) {
    switch (e.tag) {
      case kAclUserObj:
      case kAclOther:
        if ((e.perm & want) != want) return false;
        break;
      case kAclUser:
      case kAclGroupObj:
      case kAclGroup:
        if ((e.perm & mask_perm & want) != want) return false;
        break;
      default:
        break;  // the mask itself grants nothing
    }
  }
  return true;
}

bool SearchableByEveryone(uint32_t mode, const std::string& acl_access) {
  if (!S_ISDIR(mode)) return false;
  if (acl_access.empty()) return (mode & 0111) == 0111;
  absl::StatusOr<Acl> acl = ParseAcl(acl_access);
  return acl.ok() && AclGrantsEveryone(*acl, kMayExec);
}

absl::Status CheckAclPermission(const Acl& acl, const AccessAttrs& inode,
                                const Credentials& cred, int mask) {
  const uint16_t want = static_cast<uint16_t>(static_cast<uint32_t>(mask) & kMayRwx);
  const uint16_t mask_perm = MaskPerm(acl);
  bool group_matched = false;
  for (const AclEntry& e : acl.entries) {
    switch (e.tag) {
      case kAclUserObj:
        if (cred.uid == inode.uid) return Grant((e.perm & want) == want, "owner entry");
        break;
      case kAclUser:
        if (cred.uid == e.id) return Grant((e.perm & mask_perm & want) == want, "user entry");
        break;
      case kAclGroupObj:
      case kAclGroup: {
        const uint32_t g = e.tag == kAclGroupObj ? inode.gid : e.id;
        if (!cred.InGroup(g)) break;
        group_matched = true;
        // The first matching group entry that grants the whole request on its
        // own decides, limited by the mask; entries are not combined.
        if ((e.perm & want) == want) {
          return Grant((e.perm & mask_perm & want) == want, "group entry (after mask)");
        }
        break;
      }
      case kAclOther:
        if (group_matched) return Eacces("no matching ACL group entry grants the permission");
        return Grant((e.perm & want) == want, "other entry");
      default:
        break;  // MASK
    }
  }
  // A valid ACL always ends with OTHER.
  return ErrnoError(absl::StatusCode::kDataLoss, EIO, "ACL without an OTHER entry");
}

absl::Status CheckAccess(const AccessAttrs& inode, const Credentials& cred, int mask) {
  absl::Status dac = DacCheck(inode, cred, mask);
  if (dac.ok() || !IsAccessDenied(dac) || !cred.IsRoot()) return dac;
  // generic_permission's capability overrides.
  const uint32_t want = static_cast<uint32_t>(mask) & kMayRwx;
  if (IsDir(inode.mode)) return absl::OkStatus();  // DAC_READ_SEARCH / DAC_OVERRIDE
  if (!(want & kMayExec) || (inode.mode & (S_IXUSR | S_IXGRP | S_IXOTH)) != 0) {
    return absl::OkStatus();
  }
  return Eacces("root may execute only a file with an execute bit");
}

absl::Status CheckStickyDelete(const AccessAttrs& dir, const AccessAttrs& victim,
                               const Credentials& cred) {
  if ((dir.mode & S_ISVTX) == 0) return absl::OkStatus();
  if (cred.uid == victim.uid || cred.uid == dir.uid || cred.IsRoot()) return absl::OkStatus();
  return Eperm("sticky directory: only the owner of the entry or the directory may remove it");
}

absl::StatusOr<uint32_t> ModeForChmod(const AccessAttrs& inode, const Credentials& cred,
                                      uint32_t new_mode) {
  if (IsLnk(inode.mode)) return Eopnotsupp("chmod of a symlink");
  if (!OwnerOrRoot(inode, cred)) return Eperm("chmod by neither owner nor root");
  uint32_t mode = (inode.mode & S_IFMT) | (new_mode & kPermBits);
  if (!InGroupOrRoot(cred, inode.gid)) mode &= ~static_cast<uint32_t>(S_ISGID);
  return mode;
}

absl::StatusOr<std::string> AccessAclForChmod(const AccessAttrs& inode, uint32_t resulting_mode) {
  ASSIGN_OR_RETURN(std::optional<Acl> acl, LoadStoredAcl(inode.acl_access, "access"));
  if (!acl.has_value()) return std::string();
  AclApplyMode(&*acl, resulting_mode);
  return EncodeAcl(*acl);
}

absl::StatusOr<uint32_t> ModeForChown(const AccessAttrs& inode, const Credentials& cred,
                                      std::optional<uint32_t> uid, std::optional<uint32_t> gid) {
  const bool owner = cred.uid == inode.uid;
  // chown_ok / chgrp_ok.
  if (uid.has_value() && !cred.IsRoot() && !(owner && *uid == inode.uid)) {
    return Eperm("only root may change the owner");
  }
  if (gid.has_value() && !cred.IsRoot() &&
      !(owner && (*gid == inode.gid || cred.InGroup(*gid)))) {
    return Eperm("only root, or the owner to one of its groups, may change the group");
  }
  if (IsDir(inode.mode)) return inode.mode;
  // chown_common raises ATTR_KILL_SUID always and ATTR_KILL_SGID per
  // setattr_should_drop_sgid (judged on the current group).
  uint32_t mode = inode.mode;
  mode &= ~static_cast<uint32_t>(S_ISUID);
  if ((mode & S_ISGID) && ((mode & S_IXGRP) || !InGroupOrRoot(cred, inode.gid))) {
    mode &= ~static_cast<uint32_t>(S_ISGID);
  }
  if (mode == inode.mode) return mode;
  // notify_change turned the kills into ATTR_MODE: setattr_prepare's chmod
  // rules now apply, with the group the file is getting.
  if (!OwnerOrRoot(inode, cred)) return Eperm("clearing setuid/setgid needs owner or root");
  if (!InGroupOrRoot(cred, gid.value_or(inode.gid))) mode &= ~static_cast<uint32_t>(S_ISGID);
  return mode;
}

absl::Status CheckSetTimes(const AccessAttrs& inode, const Credentials& cred,
                           bool explicit_times) {
  if (OwnerOrRoot(inode, cred)) return absl::OkStatus();
  if (explicit_times) return Eperm("only the owner or root may set explicit times");
  return CheckAccess(inode, cred, kMayWrite);
}

absl::Status CheckTruncate(const AccessAttrs& inode, const Credentials& cred) {
  if (IsDir(inode.mode)) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, EISDIR, "truncate of a directory");
  }
  if (!IsReg(inode.mode)) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL, "truncate of a special file");
  }
  return CheckAccess(inode, cred, kMayWrite);
}

uint32_t ModeAfterWrite(const AccessAttrs& inode, const Credentials& cred) {
  uint32_t mode = inode.mode;
  if (!IsReg(mode) || cred.IsRoot()) return mode;
  mode &= ~static_cast<uint32_t>(S_ISUID);
  if ((mode & S_ISGID) && ((mode & S_IXGRP) || !cred.InGroup(inode.gid))) {
    mode &= ~static_cast<uint32_t>(S_ISGID);
  }
  return mode;
}

absl::StatusOr<NewInodeAttrs> InheritForCreate(const AccessAttrs& parent,
                                               const std::string& parent_acl_default,
                                               const Credentials& cred, uint32_t mode,
                                               uint32_t umask) {
  if (!IsDir(parent.mode)) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, ENOTDIR, "parent is not a directory");
  }
  ASSIGN_OR_RETURN(const uint32_t type, NewInodeType(mode));
  if ((type == S_IFCHR || type == S_IFBLK) && !cred.IsRoot()) {
    return Eperm("creating a device node needs root (CAP_MKNOD)");
  }
  const bool parent_sgid = (parent.mode & S_ISGID) != 0;
  // 1. vfs_prepare_mode: mode_strip_sgid, then the type's permission mask.
  uint32_t perms = mode & kPermBits;
  if (type != S_IFDIR && parent_sgid && (perms & S_ISGID) && (perms & S_IXGRP) &&
      !InGroupOrRoot(cred, parent.gid)) {
    perms &= ~static_cast<uint32_t>(S_ISGID);
  }
  if (type == S_IFDIR) perms &= kRwxBits | S_ISVTX;
  if (type == S_IFLNK) perms = kRwxBits;
  // 2. inode_init_owner.
  NewInodeAttrs out;
  out.uid = cred.uid;
  out.gid = parent_sgid ? parent.gid : cred.gid;
  if (parent_sgid && type == S_IFDIR) perms |= S_ISGID;
  out.mode = type | perms;
  // 3. posix_acl_create (nothing for symlinks).
  if (type == S_IFLNK) return out;
  RETURN_IF_ERROR(ApplyDefaultAclOrUmask(parent_acl_default, umask, &out));
  return out;
}

absl::StatusOr<AclSetResult> SetAccessAcl(const AccessAttrs& inode, const Credentials& cred,
                                          absl::string_view value) {
  ASSIGN_OR_RETURN(std::optional<Acl> acl, DecodeSetValue(value));
  if (IsLnk(inode.mode)) return Eopnotsupp("ACLs on a symlink");
  if (!OwnerOrRoot(inode, cred)) return Eperm("setting an ACL needs owner or root");
  AclSetResult result;
  result.mode = inode.mode;
  if (!acl.has_value()) return result;  // removal keeps the mode (ext4, xfs)
  RETURN_IF_ERROR(CanonicalizeAcl(&*acl));
  // posix_acl_update_mode.
  result.mode = (inode.mode & ~kRwxBits) | AclToModeBits(*acl);
  if (!InGroupOrRoot(cred, inode.gid)) result.mode &= ~static_cast<uint32_t>(S_ISGID);
  if (!AclIsEquivalentToMode(*acl)) result.stored_value = EncodeAcl(*acl);
  return result;
}

absl::StatusOr<std::string> SetDefaultAcl(const AccessAttrs& inode, const Credentials& cred,
                                          absl::string_view value) {
  ASSIGN_OR_RETURN(std::optional<Acl> acl, DecodeSetValue(value));
  if (IsLnk(inode.mode)) return Eopnotsupp("ACLs on a symlink");
  if (!IsDir(inode.mode)) {
    if (!acl.has_value()) return std::string();
    return Eacces("a default ACL needs a directory");
  }
  if (!OwnerOrRoot(inode, cred)) return Eperm("setting an ACL needs owner or root");
  if (!acl.has_value()) return std::string();
  RETURN_IF_ERROR(CanonicalizeAcl(&*acl));
  return EncodeAcl(*acl);
}

namespace {

// True when `new_mode` drops some of what a write by `cred` would drop from
// a regular file (S_ISUID, S_ISGID: ModeAfterWrite) and nothing else.
bool DropsOnlyWhatAWriteWould(const AccessAttrs& inode, const Credentials& cred,
                              uint32_t new_mode) {
  const uint32_t old_mode = inode.mode & 07777;
  const uint32_t after_write = ModeAfterWrite(inode, cred) & 07777;
  new_mode &= 07777;
  return (inode.mode & S_IFMT) == S_IFREG && new_mode != old_mode &&
         (new_mode & ~old_mode) == 0 && (new_mode & after_write) == after_write;
}

}  // namespace

static_assert(kSetMode == pb::SA_MODE && kSetUid == pb::SA_UID && kSetGid == pb::SA_GID &&
              kSetSize == pb::SA_SIZE && kSetAtime == pb::SA_ATIME && kSetMtime == pb::SA_MTIME &&
              kSetAtimeNow == pb::SA_ATIME_NOW && kSetMtimeNow == pb::SA_MTIME_NOW &&
              kSetCtime == pb::SA_CTIME && kSetCtimeNow == pb::SA_CTIME_NOW,
              "SetMask crosses the wire as pb::SetattrMask");

SetattrAsk SetattrAskOf(uint32_t valid, uint32_t uid, uint32_t gid, uint32_t mode) {
  SetattrAsk ask;
  if (valid & kSetUid) ask.uid = uid;
  if (valid & kSetGid) ask.gid = gid;
  if (valid & kSetMode) ask.mode = mode;
  const uint32_t time_bits = valid & (kSetAtime | kSetMtime | kSetAtimeNow | kSetMtimeNow);
  ask.times = time_bits != 0;
  ask.times_now = time_bits == (kSetAtimeNow | kSetMtimeNow);
  return ask;
}

absl::StatusOr<SetattrResult> DecideSetattr(const AccessAttrs& inode, const Credentials& cred,
                                            const SetattrAsk& ask) {
  AccessAttrs now = inode;
  if (ask.uid || ask.gid) {
    ASSIGN_OR_RETURN(now.mode, ModeForChown(inode, cred, ask.uid, ask.gid));
    if (ask.uid) now.uid = *ask.uid;
    if (ask.gid) now.gid = *ask.gid;
  }
  SetattrResult out;
  if (ask.mode) {
    if (!OwnerOrRoot(now, cred) && DropsOnlyWhatAWriteWould(now, cred, *ask.mode) &&
        CheckAccess(now, cred, kMayWrite).ok()) {
      now.mode = (now.mode & ~07777u) | (*ask.mode & 07777);
    } else {
      ASSIGN_OR_RETURN(now.mode, ModeForChmod(now, cred, *ask.mode));
      ASSIGN_OR_RETURN(out.acl_access, AccessAclForChmod(now, now.mode));
    }
  }
  if (ask.times) RETURN_IF_ERROR(CheckSetTimes(inode, cred, !ask.times_now));
  out.mode = now.mode;
  out.uid = now.uid;
  out.gid = now.gid;
  return out;
}

}  // namespace weft::posix
