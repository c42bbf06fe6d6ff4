// The permission rules the MDS enforces, written to match Linux (ext4/xfs
// mounted with acl, kernel 6.2 and later) decision for decision, including the
// errno it returns. Each function names the kernel code it follows. They are
// pure: they take what they need from the inode(s) and the caller and say what
// Linux would do; the MDS op applies the result. The client applies the same
// rules to the attribute changes it makes on its own (a file it created and
// nobody else has seen: fuse-client/lib/file_system_client.cc), so both
// decide alike.
//
// The caller. Linux decides with capabilities; Weft has none, so uid 0 stands
// for a process holding all of CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
// CAP_FOWNER, CAP_FSETID, CAP_CHOWN and CAP_MKNOD ("root" below), and every
// other uid for one holding none of them. Root squashing, if any, is the
// session's job: map the caller to an unprivileged uid before calling here.
//
// Errors carry errno (StatusToErrno): EACCES and EPERM are kPermissionDenied,
// EINVAL/EISDIR/ENOTDIR kInvalidArgument, EOPNOTSUPP kUnimplemented, EIO
// (a stored ACL that does not parse) kDataLoss.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/posix/acl.h"

namespace weft::posix {

struct Credentials {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;  // supplementary

  // The kernel's in_group_p: the primary gid or a supplementary group.
  bool InGroup(uint32_t g) const;
  bool IsRoot() const { return uid == 0; }
};

// What a check needs from an inode.
struct AccessAttrs {
  uint32_t mode = 0;       // including the S_IFMT type bits
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string acl_access;  // raw system.posix_acl_access value, "" if none
};

// Access mask bits (MAY_EXEC, MAY_WRITE, MAY_READ). Other bits are ignored.
inline constexpr int kMayExec = 1;
inline constexpr int kMayWrite = 2;
inline constexpr int kMayRead = 4;

// inode_owner_or_capable: the caller owns the inode or is root.
bool OwnerOrRoot(const AccessAttrs& inode, const Credentials& cred);

// may_linkat with fs.protected_hardlinks = 1 (Debian's default): the owner
// and root may link anything; anyone else only a regular file without
// setuid, without setgid+group-exec, that they may read and write. EPERM
// otherwise. (The kernel cannot check this on a FUSE mount without
// default_permissions: it asks the filesystem nothing before the link.)
absl::Status CheckHardlinkSource(const AccessAttrs& inode, const Credentials& cred);

// generic_permission + acl_permission_check (fs/namei.c) + posix_acl_permission
// (fs/posix_acl.c). `mask` is any combination of kMay*; 0 always succeeds.
//  1. The owner is judged by the owner mode bits alone, never by the ACL: an
//     owner without r is refused even when group or other has r.
//  2. Otherwise, if the inode has an access ACL and its group mode bits are
//     not all zero, the ACL decides (the kernel skips the ACL when the group
//     bits -- i.e. the mask -- are 0, and then the mode bits decide):
//     a USER entry naming the caller grants its perm & MASK; else if the
//     caller is in the owning group or any GROUP entry's group, access is
//     granted if ONE of those matching entries alone grants the whole request
//     (then limited by the MASK), and refused otherwise -- OTHER is not
//     consulted; else OTHER decides.
//  3. Otherwise the group bits if the caller is in the owning group (primary
//     or supplementary), else the other bits.
//  4. If that refused, root may still read and write anything and search any
//     directory; root may execute a non-directory only if at least one of the
//     three x bits of the mode is set (with an ACL the group x bit is the
//     mask's x, so an ACL x that the mask lets through counts).
// EACCES when refused; EIO if acl_access is set but does not parse (the kernel
// returns the ACL read error, also to root).
absl::Status CheckAccess(const AccessAttrs& inode, const Credentials& cred, int mask);

// posix_acl_permission alone: whether `acl` (canonical, valid) grants `mask`
// to `cred` on an inode owned by inode.uid/inode.gid. Exposed for tests and
// for callers that hold a parsed ACL; CheckAccess is the real check.
absl::Status CheckAclPermission(const Acl& acl, const AccessAttrs& inode,
                                const Credentials& cred, int mask);

// Whether every caller, whoever it is, gets `mask` on an inode with `acl`
// (canonical, valid): each entry grants it, the named and group entries
// through the mask.
bool AclGrantsEveryone(const Acl& acl, int mask);

// Whether every caller may search directory `inode` (its mode, and its
// access ACL if it has one); false for anything but a directory and for an
// ACL that does not parse.
bool SearchableByEveryone(uint32_t mode, const std::string& acl_access);

// Removing, or renaming away, `victim` from directory `dir` (check_sticky /
// __check_sticky, used by may_delete). The caller has already checked w+x on
// `dir`. When `dir` has S_ISVTX, only the owner of `victim`, the owner of `dir`
// or root may: EPERM otherwise. Rename applies this to the source, and to the
// target when it exists (both go through may_delete).
absl::Status CheckStickyDelete(const AccessAttrs& dir, const AccessAttrs& victim,
                               const Credentials& cred);

// chmod (setattr_prepare, ATTR_MODE; chmod_common). Returns the new mode: the
// type bits of the inode and the low 12 bits (rwx, sticky, setgid, setuid) of
// `new_mode`. EPERM unless owner or root. EOPNOTSUPP on a symlink (6.6+
// notify_change; earlier kernels changed a symlink's mode to no effect).
// If the caller is neither root nor in the inode's group, S_ISGID is silently
// cleared -- on directories too, as setattr_prepare does (not only on files).
// For a setattr that also changes the group, call ModeForChown first and pass
// the inode with the new gid: the kernel checks the group the file will have.
// If the inode has an access ACL, its MASK must follow: see AccessAclForChmod.
absl::StatusOr<uint32_t> ModeForChmod(const AccessAttrs& inode, const Credentials& cred,
                                      uint32_t new_mode);

// posix_acl_chmod: the access ACL value to store after a chmod that left the
// inode with `resulting_mode`. "" when the inode has no access ACL (nothing to
// store); otherwise its ACL with USER_OBJ/OTHER from the owner/other bits and
// the MASK (GROUP_OBJ if no MASK) from the group bits. EIO if the stored ACL
// does not parse.
absl::StatusOr<std::string> AccessAclForChmod(const AccessAttrs& inode, uint32_t resulting_mode);

// chown/chgrp (chown_common, notify_change, setattr_prepare chown_ok/chgrp_ok,
// setattr_should_drop_sgid), `uid`/`gid` absent meaning -1 (leave as is).
// Permission (EPERM otherwise):
//  - uid: root, or the owner "changing" it to the value it already has;
//  - gid: root, or the owner changing it to its current value or to a group
//    the owner is in.
// Returns the resulting mode. On a non-directory Linux kills privileges on
// every chown, even a no-op and even by root:
//  - S_ISUID is cleared;
//  - S_ISGID is cleared if S_IXGRP is set, or (a setgid file without group x,
//    the old mandatory-locking marker) if the caller is neither root nor in
//    the file's current group.
// (Kernels before 6.2 cleared S_ISGID only with S_IXGRP.) Those clears are a
// mode change, and setattr_prepare then wants owner or root: EPERM for anyone
// else (only reachable with both ids absent). Directories keep their mode.
// ACLs are not touched.
absl::StatusOr<uint32_t> ModeForChown(const AccessAttrs& inode, const Credentials& cred,
                                      std::optional<uint32_t> uid, std::optional<uint32_t> gid);

// utimes/utimensat (vfs_utimes, notify_change ATTR_TOUCH, setattr_prepare).
// `explicit_times` is false when the request sets both times to "now" (times
// NULL, or both UTIME_NOW) and true otherwise -- including one UTIME_NOW with
// the other explicit or UTIME_OMIT. (Both UTIME_OMIT is a no-op the caller
// should answer with success before calling.) Explicit: owner or root, EPERM
// otherwise. Now: owner, root, or write access (CheckAccess) -- EACCES.
absl::Status CheckSetTimes(const AccessAttrs& inode, const Credentials& cred,
                           bool explicit_times);

// truncate(2) by path (vfs_truncate): EISDIR on a directory, EINVAL on any
// other non-regular file, then write access (EACCES). Not for ftruncate: a
// handle opened for writing may truncate without a new check. After it, the
// mode changes as after a write (ModeAfterWrite).
absl::Status CheckTruncate(const AccessAttrs& inode, const Credentials& cred);

// The mode after a write or truncate by `cred` (file_remove_privs,
// setattr_should_drop_suidgid). Only regular files, and only for a caller
// without CAP_FSETID (not root): S_ISUID is cleared; S_ISGID is cleared if
// S_IXGRP is set, or if the caller is not in the file's group. Owner or not
// does not matter. Returns inode.mode when nothing changes.
// (The interface asked for ModeAfterWrite(uint32_t mode, cred); the group rule
// needs the file's gid, hence the inode.)
uint32_t ModeAfterWrite(const AccessAttrs& inode, const Credentials& cred);

// setattr of owner, mode and times (notify_change, setattr_prepare), size
// aside: what a chown/chmod/utimes asks, decided as Linux does and in its
// order -- chown (ModeForChown), then chmod on the result (ModeForChmod; or,
// for a caller who may write a regular file, only dropping what a write
// would: the kernel's "kill privileges" sent as a chmod, which Linux applies
// without a permission check), then times (CheckSetTimes on the inode as it
// was). The MDS and the client (for files it decides alone) both call this.
struct SetattrAsk {
  std::optional<uint32_t> uid, gid, mode;  // absent: unchanged
  bool times = false;      // atime and/or mtime are set
  bool times_now = false;  // both to "now" (utimes(NULL)): the weaker check
};
struct SetattrResult {
  uint32_t mode = 0;  // with the type bits
  uint32_t uid = 0;
  uint32_t gid = 0;
  // The access ACL to store after a chmod ("" when the inode has none).
  std::string acl_access;
};
absl::StatusOr<SetattrResult> DecideSetattr(const AccessAttrs& inode, const Credentials& cred,
                                            const SetattrAsk& ask);
// Which fields of a setattr apply (the client's SetattrArgs, the MDS's
// req::Setattr). The values are the wire's SetattrMask bits (checked in
// permission.cc), so a mask crosses the wire as it is.
enum SetMask : uint32_t {
  kSetMode = 1,
  kSetUid = 2,
  kSetGid = 4,
  kSetSize = 8,
  kSetAtime = 16,
  kSetMtime = 32,
  kSetAtimeNow = 64,
  kSetMtimeNow = 128,
  kSetCtime = 256,
  // Nothing but the change time, to now: chown(path, -1, -1) and other
  // setattrs that change nothing still mark the inode changed (Linux), and
  // need no permission.
  kSetCtimeNow = 512,
};
// The setattr fields that decide who may do what to an inode (for a
// directory: who may search it), as its access ACL does too: what other
// holders of its caps must hear of.
inline constexpr uint32_t kSetPermissions = kSetMode | kSetUid | kSetGid;

// The ask of a setattr request: `valid` holds SetMask bits; only "both
// times to now" (utimes(NULL)) is the weaker, write-access check, anything
// else that sets a time is explicit (Linux vfs_utimes).
SetattrAsk SetattrAskOf(uint32_t valid, uint32_t uid, uint32_t gid, uint32_t mode);

// A new inode in directory `parent`.
struct NewInodeAttrs {
  uint32_t mode = 0;        // final mode including type bits
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::string acl_access;   // xattr to store, "" if none
  std::string acl_default;  // for new directories: inherited default ACL, "" if none
};

// Creating an inode (open O_CREAT, mkdir, mknod, symlink) in `parent`
// (vfs_prepare_mode, mode_strip_sgid, inode_init_owner, posix_acl_create).
// `mode` is the requested mode with its type bits (type 0 means a regular
// file, as for mknod(2)); `umask` the caller's umask (only its low 9 bits
// count); `parent_acl_default` the parent's raw system.posix_acl_default.
//  1. Requested bits: a directory keeps rwx and sticky only (mkdir ignores
//     setuid/setgid); a symlink is always 0777; others keep all 12 bits.
//  2. Owner: uid = cred.uid; gid = the parent's gid if the parent has S_ISGID,
//     else cred.gid. A directory in a setgid directory gets S_ISGID.
//  3. A non-directory asking for S_ISGID together with S_IXGRP in a setgid
//     parent loses S_ISGID unless the caller is root or in the parent's group.
//     (Without S_IXGRP the bit is kept: that is Linux.)
//  4. Symlinks stop here: no umask, no ACL.
//  5. With a default ACL on the parent: the umask is NOT applied; the ACL is
//     masked by the requested mode and the mode by the ACL (AclMaskForCreate);
//     the result is stored as access ACL unless it is equivalent to the mode;
//     a directory also inherits the default ACL unchanged. Otherwise the umask
//     is applied.
// The caller checks write and search access on `parent` first (may_create:
// CheckAccess(parent, cred, kMayWrite | kMayExec)); this function does not.
// Errors: ENOTDIR if `parent` is not a directory; EINVAL for an unknown type;
// EPERM for a character or block device by non-root (CAP_MKNOD); EIO if the
// parent's default ACL does not parse.
absl::StatusOr<NewInodeAttrs> InheritForCreate(const AccessAttrs& parent,
                                               const std::string& parent_acl_default,
                                               const Credentials& cred, uint32_t mode,
                                               uint32_t umask);

// setxattr(system.posix_acl_access) (do_set_acl, set_posix_acl,
// posix_acl_update_mode; ext4/xfs set_acl); removexattr is the same call with
// an empty value. In Linux's order:
//  1. `value` is decoded: E2BIG, EINVAL, EOPNOTSUPP as DecodeAclXattr. An
//     empty value or a header with no entries means "remove the ACL".
//  2. EOPNOTSUPP on a symlink (ext4 and xfs symlinks have no set_acl).
//  3. EPERM unless owner or root.
//  4. The ACL is validated (CanonicalizeAcl, EINVAL).
// Returns the new mode and the value to store. Removal: mode unchanged,
// stored_value "". Otherwise the permission bits come from the ACL
// (AclToModeBits), S_ISGID is cleared if the caller is neither root nor in
// the inode's group, and stored_value is the canonical encoding -- or "" when
// the ACL is equivalent to the mode (Linux then removes the xattr).
struct AclSetResult {
  uint32_t mode = 0;
  std::string stored_value;
};
absl::StatusOr<AclSetResult> SetAccessAcl(const AccessAttrs& inode, const Credentials& cred,
                                          absl::string_view value);

// setxattr(system.posix_acl_default). In Linux's order: decode as above (""
// or no entries = remove); EOPNOTSUPP on a symlink; on any other
// non-directory EACCES for an ACL but success ("" returned) for a removal,
// before the owner check; EPERM unless owner or root; validation (EINVAL).
// Returns the value to store: the canonical encoding -- a three-entry default
// ACL is stored too, it still overrides the umask -- or "" to remove.
absl::StatusOr<std::string> SetDefaultAcl(const AccessAttrs& inode, const Credentials& cred,
                                          absl::string_view value);

}  // namespace weft::posix
