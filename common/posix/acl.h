// POSIX ACLs (draft 1003.1e, as Linux implements them) in the Linux xattr wire
// format, plus the mode <-> ACL algebra the kernel applies on create, chmod and
// setxattr. Nothing here knows about credentials: permission.h evaluates an ACL
// against a caller.
//
// Wire format of system.posix_acl_access / system.posix_acl_default (the value
// getxattr(2) returns and setfacl(1) writes; include/uapi/linux/posix_acl_xattr.h):
//
//   u32 a_version              little-endian, always 2
//   { u16 e_tag; u16 e_perm; u32 e_id; } * count     little-endian, 8 bytes each
//
// e_perm holds r=4 w=2 x=1. e_id is a uid (ACL_USER) or gid (ACL_GROUP); the
// kernel writes 0xffffffff for the other tags and ignores it on input.
//
// A valid ACL (fs/posix_acl.c posix_acl_valid) has exactly one USER_OBJ,
// GROUP_OBJ and OTHER entry, any number of USER and GROUP entries, and a MASK
// entry that is required as soon as there is a USER or GROUP entry. Entries
// appear in tag order USER_OBJ, USER..., GROUP_OBJ, GROUP..., MASK, OTHER; the
// tag values below increase in that order, so "sorted by (tag, id)" is the
// canonical order. Weft keeps every in-memory Acl in canonical order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::posix {

inline constexpr absl::string_view kXattrPosixAclAccess = "system.posix_acl_access";
inline constexpr absl::string_view kXattrPosixAclDefault = "system.posix_acl_default";

inline constexpr uint32_t kAclXattrVersion = 2;
inline constexpr size_t kAclXattrHeaderBytes = 4;
inline constexpr size_t kAclXattrEntryBytes = 8;
// XATTR_SIZE_MAX: setxattr(2) refuses larger values with E2BIG before any ACL
// code runs. It bounds an ACL to 8191 entries.
inline constexpr size_t kAclXattrBytesMax = 65536;

// Entry tags (ACL_USER_OBJ ... ACL_OTHER in <linux/posix_acl.h>).
inline constexpr uint16_t kAclUserObj = 0x01;
inline constexpr uint16_t kAclUser = 0x02;
inline constexpr uint16_t kAclGroupObj = 0x04;
inline constexpr uint16_t kAclGroup = 0x08;
inline constexpr uint16_t kAclMask = 0x10;
inline constexpr uint16_t kAclOther = 0x20;

// Permission bits of an entry.
inline constexpr uint16_t kAclRead = 0x04;
inline constexpr uint16_t kAclWrite = 0x02;
inline constexpr uint16_t kAclExecute = 0x01;

// The e_id of USER_OBJ, GROUP_OBJ, MASK and OTHER entries. Also the kernel's
// INVALID_UID, so a USER or GROUP entry may not name it.
inline constexpr uint32_t kAclUndefinedId = 0xffffffff;

struct AclEntry {
  uint16_t tag = 0;
  uint16_t perm = 0;
  uint32_t id = kAclUndefinedId;

  bool operator==(const AclEntry&) const = default;
};

struct Acl {
  // Canonical order (sorted by tag, then id) whenever the Acl came from
  // ParseAcl, AclFromMode or CanonicalizeAcl.
  std::vector<AclEntry> entries;

  bool operator==(const Acl&) const = default;
};

// Decodes the wire format only, as the kernel's posix_acl_from_xattr does
// before any permission check: the entries come back in wire order and are not
// yet validated (see CanonicalizeAcl). A header with no entries decodes to an
// empty Acl, which the kernel treats as "no ACL" (removal on setxattr).
// Errors (errno payload):
//   E2BIG       value longer than kAclXattrBytesMax           (kOutOfRange)
//   EINVAL      shorter than the header, or not header + n * 8 bytes,
//               a tag that is none of the six, a USER/GROUP entry naming
//               kAclUndefinedId                               (kInvalidArgument)
//   EOPNOTSUPP  a version other than 2 (Linux's choice, not EINVAL)
//                                                             (kUnimplemented)
// USER_OBJ/GROUP_OBJ/MASK/OTHER ids are ignored and become kAclUndefinedId.
absl::StatusOr<Acl> DecodeAclXattr(absl::string_view xattr_value);

// Checks what the kernel's posix_acl_valid checks, plus duplicates, then sorts
// the named entries by id. EINVAL (kInvalidArgument) when: a perm has bits
// other than rwx; tags are out of the canonical tag order (the kernel does not
// sort what it is given); USER_OBJ, GROUP_OBJ or OTHER is missing or repeated;
// MASK is repeated; there is a USER or GROUP entry and no MASK; the same uid
// (or gid) appears in two USER (GROUP) entries. The duplicate check is Weft's
// (libacl's acl_valid refuses duplicates; the kernel would keep the first):
// with duplicates the evaluation would depend on entry order.
absl::Status CanonicalizeAcl(Acl* acl);

// DecodeAclXattr + CanonicalizeAcl, and additionally EINVAL for a value with
// no entries. The result is in canonical order.
absl::StatusOr<Acl> ParseAcl(absl::string_view xattr_value);

// The wire form of `acl`, entries sorted canonically (the input need not be
// sorted), ids of the non-named tags written as kAclUndefinedId. Encoding a
// ParseAcl result and parsing it again gives the same Acl.
std::string EncodeAcl(const Acl& acl);

// True when the ACL has only USER_OBJ, GROUP_OBJ and OTHER (posix_acl_equiv_mode
// returns 0): then the mode says everything and Linux stores no access xattr.
// An ACL with a MASK entry is not equivalent, even with no named entries.
bool AclIsEquivalentToMode(const Acl& acl);

// The permission bits (low 9 bits) the ACL implies: USER_OBJ as owner bits,
// MASK (or GROUP_OBJ when there is no MASK) as group bits, OTHER as other bits.
uint32_t AclToModeBits(const Acl& acl);

// chmod on an inode with an access ACL (__posix_acl_chmod_masq): USER_OBJ and
// OTHER take the new owner/other bits, MASK takes the group bits -- or
// GROUP_OBJ when there is no MASK. Named entries keep their perms (the MASK
// limits them). Only the low 9 bits of `mode` matter.
void AclApplyMode(Acl* acl, uint32_t mode);

// The three-entry ACL equivalent to `mode` (posix_acl_from_mode).
Acl AclFromMode(uint32_t mode);

// The create-time masking of an inherited default ACL (posix_acl_create_masq):
// `*acl` (a copy of the parent's default ACL) and the requested `*mode` are
// intersected class by class -- USER_OBJ with the owner bits, OTHER with the
// other bits, MASK (or GROUP_OBJ without a MASK) with the group bits -- and
// both are updated. Bits above the low 9 of `*mode` (type, setuid, setgid,
// sticky) are kept. Returns true when the result is not equivalent to the mode
// (it has a MASK or named entries), i.e. when it must be stored.
bool AclMaskForCreate(Acl* acl, uint32_t* mode);

}  // namespace weft::posix
