// Unit tests for common/posix/acl.* and common/posix/permission.*: every expectation is
// what Linux (ext4/xfs with acl, 6.2+) does, down to the errno.
#include "common/posix/acl.h"
#include "common/posix/permission.h"
#include "proto/mds_client.pb.h"
#include "common/posix/xattr.h"

#include <sys/stat.h>

#include <cerrno>
#include <initializer_list>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "common/status/status.h"

namespace weft::posix {
namespace {

// ---------------------------------------------------------------------------
// Helpers

int ErrnoOf(const absl::Status& status) { return StatusToErrno(status); }

template <typename T>
int ErrnoOf(const absl::StatusOr<T>& status_or) {
  return StatusToErrno(status_or.status());
}

// Entries for hand-built ACLs.
namespace e {
AclEntry UserObj(uint16_t perm) { return {kAclUserObj, perm, kAclUndefinedId}; }
AclEntry User(uint32_t uid, uint16_t perm) { return {kAclUser, perm, uid}; }
AclEntry GroupObj(uint16_t perm) { return {kAclGroupObj, perm, kAclUndefinedId}; }
AclEntry Group(uint32_t gid, uint16_t perm) { return {kAclGroup, perm, gid}; }
AclEntry Mask(uint16_t perm) { return {kAclMask, perm, kAclUndefinedId}; }
AclEntry Other(uint16_t perm) { return {kAclOther, perm, kAclUndefinedId}; }
}  // namespace e

// The wire format written byte by byte, independently of EncodeAcl, so that
// the encoder and the decoder are both checked against the format itself.
void PutLe(std::string* out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string RawAcl(std::initializer_list<AclEntry> entries, uint32_t version = 2) {
  std::string out;
  PutLe(&out, version, 4);
  for (const AclEntry& entry : entries) {
    PutLe(&out, entry.tag, 2);
    PutLe(&out, entry.perm, 2);
    PutLe(&out, entry.id, 4);
  }
  return out;
}

Acl MakeAcl(std::initializer_list<AclEntry> entries) { return Acl{std::vector<AclEntry>(entries)}; }

constexpr uint32_t kReg = S_IFREG;
constexpr uint32_t kDir = S_IFDIR;
constexpr uint32_t kLnk = S_IFLNK;

AccessAttrs Inode(uint32_t mode, uint32_t uid, uint32_t gid, std::string acl = "") {
  AccessAttrs a;
  a.mode = mode;
  a.uid = uid;
  a.gid = gid;
  a.acl_access = std::move(acl);
  return a;
}

Credentials Cred(uint32_t uid, uint32_t gid, std::vector<uint32_t> groups = {}) {
  Credentials c;
  c.uid = uid;
  c.gid = gid;
  c.groups = std::move(groups);
  return c;
}

const Credentials kRoot = Cred(0, 0);

// The usual cast: owner 1000 (group 100), a member of group 100 by primary gid,
// a member by supplementary group, and a stranger.
const Credentials kOwner = Cred(1000, 100);
const Credentials kMember = Cred(1001, 100);
const Credentials kSuppMember = Cred(1002, 200, {300, 100});
const Credentials kStranger = Cred(1003, 200);

// ---------------------------------------------------------------------------
// ACL wire format

TEST_CASE("mds_permission: ParseAcl decodes the wire format and EncodeAcl writes it byte for byte",
          "[acl]") {
  const std::string raw = RawAcl({e::UserObj(7), e::User(2000, 6), e::GroupObj(5),
                                  e::Group(300, 4), e::Mask(6), e::Other(1)});
  // Spot-check the layout itself: version 2 LE, then tag/perm/id LE.
  REQUIRE(raw.size() == 4 + 6 * 8);
  CHECK(raw.substr(0, 4) == std::string("\x02\x00\x00\x00", 4));
  CHECK(raw.substr(4, 8) == std::string("\x01\x00\x07\x00\xff\xff\xff\xff", 8));
  CHECK(raw.substr(12, 8) == std::string("\x02\x00\x06\x00\xd0\x07\x00\x00", 8));

  absl::StatusOr<Acl> acl = ParseAcl(raw);
  REQUIRE(acl.ok());
  REQUIRE(acl->entries.size() == 6);
  CHECK(acl->entries[0] == e::UserObj(7));
  CHECK(acl->entries[1] == e::User(2000, 6));
  CHECK(acl->entries[2] == e::GroupObj(5));
  CHECK(acl->entries[3] == e::Group(300, 4));
  CHECK(acl->entries[4] == e::Mask(6));
  CHECK(acl->entries[5] == e::Other(1));
  CHECK(EncodeAcl(*acl) == raw);
}

TEST_CASE("mds_permission: ParseAcl sorts named entries by id and the round trip is stable",
          "[acl]") {
  const std::string raw = RawAcl({e::UserObj(7), e::User(3000, 4), e::User(2000, 6),
                                  e::GroupObj(5), e::Group(500, 1), e::Group(40, 2), e::Mask(7),
                                  e::Other(0)});
  absl::StatusOr<Acl> acl = ParseAcl(raw);
  REQUIRE(acl.ok());
  const Acl expected = MakeAcl({e::UserObj(7), e::User(2000, 6), e::User(3000, 4),
                                e::GroupObj(5), e::Group(40, 2), e::Group(500, 1), e::Mask(7),
                                e::Other(0)});
  CHECK(*acl == expected);
  const std::string encoded = EncodeAcl(*acl);
  CHECK(encoded != raw);  // canonical order differs from the input order
  absl::StatusOr<Acl> again = ParseAcl(encoded);
  REQUIRE(again.ok());
  CHECK(*again == *acl);
  CHECK(EncodeAcl(*again) == encoded);
}

TEST_CASE("mds_permission: EncodeAcl sorts an unsorted Acl and writes undefined ids", "[acl]") {
  Acl acl = MakeAcl({e::Other(4), e::Mask(7), e::Group(9, 1), e::GroupObj(5), e::User(7, 2),
                     e::UserObj(6)});
  acl.entries[0].id = 1234;  // an OTHER entry with a stray id
  CHECK(EncodeAcl(acl) == RawAcl({e::UserObj(6), e::User(7, 2), e::GroupObj(5), e::Group(9, 1),
                                  e::Mask(7), e::Other(4)}));
}

TEST_CASE("mds_permission: ParseAcl ignores and normalizes ids of the non-named entries", "[acl]") {
  AclEntry user_obj = e::UserObj(6);
  user_obj.id = 42;
  AclEntry other = e::Other(4);
  other.id = 0;
  absl::StatusOr<Acl> acl = ParseAcl(RawAcl({user_obj, e::GroupObj(4), other}));
  REQUIRE(acl.ok());
  CHECK(acl->entries[0].id == kAclUndefinedId);
  CHECK(acl->entries[2].id == kAclUndefinedId);
}

TEST_CASE("mds_permission: ParseAcl accepts a mask without named entries and a uid equal to a gid",
          "[acl]") {
  CHECK(ParseAcl(RawAcl({e::UserObj(7), e::GroupObj(5), e::Mask(5), e::Other(0)})).ok());
  CHECK(ParseAcl(RawAcl({e::UserObj(7), e::User(1000, 7), e::GroupObj(5), e::Group(1000, 7),
                         e::Mask(7), e::Other(0)}))
            .ok());
}

void CheckRejected(const std::string& raw, int expected_errno) {
  absl::StatusOr<Acl> acl = ParseAcl(raw);
  REQUIRE_FALSE(acl.ok());
  CHECK(ErrnoOf(acl) == expected_errno);
  if (expected_errno == EINVAL) CHECK(acl.status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("mds_permission: ParseAcl rejects every malformed form with Linux's errno", "[acl]") {
  const AclEntry uo = e::UserObj(7), go = e::GroupObj(5), ot = e::Other(4), mk = e::Mask(7);
  SECTION("sizes") {
    CheckRejected("", EINVAL);
    CheckRejected(std::string("\x02\x00\x00", 3), EINVAL);
    CheckRejected(RawAcl({}), EINVAL);  // header only: no entries
    CheckRejected(RawAcl({uo, go, ot}) + std::string(3, '\0'), EINVAL);
    CheckRejected(RawAcl({uo, go, ot}).substr(0, 4 + 8 * 3 - 1), EINVAL);
  }
  SECTION("version is EOPNOTSUPP, as posix_acl_from_xattr returns") {
    absl::StatusOr<Acl> acl = ParseAcl(RawAcl({uo, go, ot}, /*version=*/1));
    REQUIRE_FALSE(acl.ok());
    CHECK(ErrnoOf(acl) == EOPNOTSUPP);
    CHECK(acl.status().code() == absl::StatusCode::kUnimplemented);
    CheckRejected(RawAcl({uo, go, ot}, 0x0200), EOPNOTSUPP);  // big-endian 2
  }
  SECTION("unknown tags") {
    CheckRejected(RawAcl({uo, {0x40, 4, kAclUndefinedId}, go, ot}), EINVAL);
    CheckRejected(RawAcl({uo, {0x00, 4, kAclUndefinedId}, go, ot}), EINVAL);
    CheckRejected(RawAcl({uo, {0x03, 4, 7}, go, ot}), EINVAL);
  }
  SECTION("perm bits beyond rwx") {
    CheckRejected(RawAcl({e::UserObj(8), go, ot}), EINVAL);
    CheckRejected(RawAcl({uo, go, e::Other(0x17)}), EINVAL);
    CheckRejected(RawAcl({uo, e::User(5, 0x100), go, mk, ot}), EINVAL);
  }
  SECTION("missing required entries") {
    CheckRejected(RawAcl({go, ot}), EINVAL);
    CheckRejected(RawAcl({uo, ot}), EINVAL);
    CheckRejected(RawAcl({uo, go}), EINVAL);
    CheckRejected(RawAcl({uo}), EINVAL);
  }
  SECTION("repeated base entries") {
    CheckRejected(RawAcl({uo, uo, go, ot}), EINVAL);
    CheckRejected(RawAcl({uo, go, go, ot}), EINVAL);
    CheckRejected(RawAcl({uo, go, ot, ot}), EINVAL);
    CheckRejected(RawAcl({uo, e::User(5, 7), go, mk, mk, ot}), EINVAL);
  }
  SECTION("named entries need a mask") {
    CheckRejected(RawAcl({uo, e::User(5, 7), go, ot}), EINVAL);
    CheckRejected(RawAcl({uo, go, e::Group(5, 7), ot}), EINVAL);
  }
  SECTION("duplicate named entries") {
    CheckRejected(RawAcl({uo, e::User(5, 7), e::User(5, 4), go, mk, ot}), EINVAL);
    CheckRejected(RawAcl({uo, e::User(5, 7), e::User(6, 4), e::User(5, 7), go, mk, ot}), EINVAL);
    CheckRejected(RawAcl({uo, go, e::Group(9, 1), e::Group(9, 2), mk, ot}), EINVAL);
  }
  SECTION("tags out of order (the kernel does not sort)") {
    CheckRejected(RawAcl({go, uo, ot}), EINVAL);
    CheckRejected(RawAcl({uo, go, e::User(5, 7), mk, ot}), EINVAL);
    CheckRejected(RawAcl({uo, e::User(5, 7), go, ot, mk}), EINVAL);
    CheckRejected(RawAcl({uo, e::User(5, 7), mk, go, ot}), EINVAL);
    CheckRejected(RawAcl({uo, go, ot, e::Group(5, 1)}), EINVAL);
  }
  SECTION("named entries may not name the invalid id") {
    CheckRejected(RawAcl({uo, e::User(kAclUndefinedId, 7), go, mk, ot}), EINVAL);
    CheckRejected(RawAcl({uo, go, e::Group(kAclUndefinedId, 7), mk, ot}), EINVAL);
  }
  SECTION("a value larger than XATTR_SIZE_MAX is E2BIG") {
    std::string raw = RawAcl({uo, go, ot});
    raw.resize(kAclXattrBytesMax + 4, '\0');
    CheckRejected(raw, E2BIG);
  }
}

TEST_CASE("mds_permission: DecodeAclXattr treats a bare header as no ACL and keeps wire order",
          "[acl]") {
  absl::StatusOr<Acl> empty = DecodeAclXattr(RawAcl({}));
  REQUIRE(empty.ok());
  CHECK(empty->entries.empty());
  // Out of order still decodes; only CanonicalizeAcl refuses it.
  absl::StatusOr<Acl> unordered = DecodeAclXattr(RawAcl({e::Other(1), e::UserObj(7)}));
  REQUIRE(unordered.ok());
  CHECK(unordered->entries.front() == e::Other(1));
  CHECK(ErrnoOf(CanonicalizeAcl(&*unordered)) == EINVAL);
}

// ---------------------------------------------------------------------------
// ACL <-> mode algebra

TEST_CASE("mds_permission: AclIsEquivalentToMode is true only for the three base entries",
          "[acl]") {
  CHECK(AclIsEquivalentToMode(MakeAcl({e::UserObj(7), e::GroupObj(5), e::Other(0)})));
  CHECK_FALSE(AclIsEquivalentToMode(
      MakeAcl({e::UserObj(7), e::GroupObj(5), e::Mask(5), e::Other(0)})));
  CHECK_FALSE(AclIsEquivalentToMode(
      MakeAcl({e::UserObj(7), e::User(5, 1), e::GroupObj(5), e::Mask(5), e::Other(0)})));
  CHECK_FALSE(AclIsEquivalentToMode(
      MakeAcl({e::UserObj(7), e::GroupObj(5), e::Group(5, 1), e::Mask(5), e::Other(0)})));
}

TEST_CASE("mds_permission: AclToModeBits uses the mask for the group class when there is one",
          "[acl]") {
  CHECK(AclToModeBits(MakeAcl({e::UserObj(7), e::GroupObj(5), e::Other(1)})) == 0751);
  CHECK(AclToModeBits(MakeAcl({e::UserObj(6), e::User(9, 7), e::GroupObj(7), e::Mask(4),
                               e::Other(0)})) == 0640);
}

TEST_CASE("mds_permission: AclFromMode builds the equivalent three-entry ACL", "[acl]") {
  CHECK(AclFromMode(S_IFREG | 04754) == MakeAcl({e::UserObj(7), e::GroupObj(5), e::Other(4)}));
  for (uint32_t mode = 0; mode <= 0777; ++mode) {
    const Acl acl = AclFromMode(mode);
    REQUIRE(AclToModeBits(acl) == mode);
    REQUIRE(AclIsEquivalentToMode(acl));
  }
}

TEST_CASE("mds_permission: AclApplyMode (chmod) sets user_obj - other and the mask - not group_obj",
          "[acl]") {
  Acl acl = MakeAcl({e::UserObj(7), e::User(9, 7), e::GroupObj(7), e::Group(8, 6), e::Mask(7),
                     e::Other(5)});
  AclApplyMode(&acl, S_IFREG | 0640);
  CHECK(acl == MakeAcl({e::UserObj(6), e::User(9, 7), e::GroupObj(7), e::Group(8, 6),
                        e::Mask(4), e::Other(0)}));
  CHECK(AclToModeBits(acl) == 0640);

  Acl minimal = MakeAcl({e::UserObj(7), e::GroupObj(7), e::Other(7)});
  AclApplyMode(&minimal, 0751);
  CHECK(minimal == MakeAcl({e::UserObj(7), e::GroupObj(5), e::Other(1)}));
}

TEST_CASE("mds_permission: AclMaskForCreate intersects the ACL and the requested mode", "[acl]") {
  SECTION("with a mask") {
    Acl acl = MakeAcl({e::UserObj(7), e::User(9, 7), e::GroupObj(5), e::Mask(7), e::Other(5)});
    uint32_t mode = S_IFREG | 04666;
    CHECK(AclMaskForCreate(&acl, &mode));
    CHECK(mode == (S_IFREG | 04664));  // type and setuid kept
    // group_obj and the named entry are untouched; the mask takes the limit.
    CHECK(acl == MakeAcl({e::UserObj(6), e::User(9, 7), e::GroupObj(5), e::Mask(6),
                          e::Other(4)}));
  }
  SECTION("without a mask the group_obj entry is masked, and it is equivalent") {
    Acl acl = MakeAcl({e::UserObj(7), e::GroupObj(5), e::Other(0)});
    uint32_t mode = S_IFDIR | 0777;
    CHECK_FALSE(AclMaskForCreate(&acl, &mode));
    CHECK(mode == (S_IFDIR | 0750));
    CHECK(acl == MakeAcl({e::UserObj(7), e::GroupObj(5), e::Other(0)}));
  }
  SECTION("the ACL also removes bits the mode asked for") {
    Acl acl = MakeAcl({e::UserObj(4), e::GroupObj(0), e::Other(0)});
    uint32_t mode = S_IFREG | 0666;
    AclMaskForCreate(&acl, &mode);
    CHECK(mode == (S_IFREG | 0400));
  }
}

// ---------------------------------------------------------------------------
// CheckAccess: mode bits

TEST_CASE("mds_permission: CheckAccess picks owner - then group - then other", "[permission]") {
  const AccessAttrs f = Inode(kReg | 0640, 1000, 100);
  CHECK(CheckAccess(f, kOwner, kMayRead).ok());
  CHECK(CheckAccess(f, kOwner, kMayWrite).ok());
  CHECK(CheckAccess(f, kOwner, kMayRead | kMayWrite).ok());
  CHECK(ErrnoOf(CheckAccess(f, kOwner, kMayExec)) == EACCES);
  CHECK(CheckAccess(f, kMember, kMayRead).ok());
  CHECK(ErrnoOf(CheckAccess(f, kMember, kMayWrite)) == EACCES);
  CHECK(ErrnoOf(CheckAccess(f, kMember, kMayRead | kMayWrite)) == EACCES);
  CHECK(ErrnoOf(CheckAccess(f, kStranger, kMayRead)) == EACCES);
  CHECK(CheckAccess(f, kStranger, 0).ok());  // F_OK-style empty mask
  const absl::Status denied = CheckAccess(f, kStranger, kMayRead);
  CHECK(denied.code() == absl::StatusCode::kPermissionDenied);
}

TEST_CASE("mds_permission: CheckAccess uses the first matching class only", "[permission]") {
  // The owner is refused although group and other may.
  const AccessAttrs f = Inode(kReg | 0077, 1000, 100);
  CHECK(ErrnoOf(CheckAccess(f, kOwner, kMayRead)) == EACCES);
  CHECK(CheckAccess(f, kMember, kMayRead).ok());
  // A group member is refused although other may.
  const AccessAttrs g = Inode(kReg | 0707, 1000, 100);
  CHECK(ErrnoOf(CheckAccess(g, kMember, kMayRead)) == EACCES);
  CHECK(ErrnoOf(CheckAccess(g, kSuppMember, kMayRead)) == EACCES);
  CHECK(CheckAccess(g, kStranger, kMayRead | kMayWrite | kMayExec).ok());
}

TEST_CASE("mds_permission: CheckAccess counts supplementary groups", "[permission]") {
  const AccessAttrs f = Inode(kReg | 0060, 1000, 300);
  CHECK(CheckAccess(f, kSuppMember, kMayRead | kMayWrite).ok());  // 300 is supplementary
  CHECK(ErrnoOf(CheckAccess(f, kMember, kMayRead)) == EACCES);
  CHECK(Cred(5, 6, {7, 8}).InGroup(6));
  CHECK(Cred(5, 6, {7, 8}).InGroup(8));
  CHECK_FALSE(Cred(5, 6, {7, 8}).InGroup(5));
}

TEST_CASE("mds_permission: Directories need x to search and w to modify", "[permission]") {
  const AccessAttrs d = Inode(kDir | 0751, 1000, 100);
  CHECK(CheckAccess(d, kOwner, kMayWrite | kMayExec).ok());
  CHECK(CheckAccess(d, kMember, kMayRead | kMayExec).ok());
  CHECK(ErrnoOf(CheckAccess(d, kMember, kMayWrite | kMayExec)) == EACCES);
  CHECK(CheckAccess(d, kStranger, kMayExec).ok());
  CHECK(ErrnoOf(CheckAccess(d, kStranger, kMayRead)) == EACCES);
}

TEST_CASE("mds_permission: Root overrides everything except exec of a file without x bits",
          "[permission]") {
  const AccessAttrs none = Inode(kReg | 0000, 1000, 100);
  CHECK(CheckAccess(none, kRoot, kMayRead).ok());
  CHECK(CheckAccess(none, kRoot, kMayWrite).ok());
  CHECK(CheckAccess(none, kRoot, kMayRead | kMayWrite).ok());
  CHECK(ErrnoOf(CheckAccess(none, kRoot, kMayExec)) == EACCES);
  CHECK(ErrnoOf(CheckAccess(none, kRoot, kMayRead | kMayExec)) == EACCES);
  // Any one x bit is enough, whichever class it belongs to.
  CHECK(CheckAccess(Inode(kReg | 0100, 1000, 100), kRoot, kMayExec).ok());
  CHECK(CheckAccess(Inode(kReg | 0010, 1000, 100), kRoot, kMayExec).ok());
  CHECK(CheckAccess(Inode(kReg | 0001, 1000, 100), kRoot, kMayRead | kMayWrite | kMayExec).ok());
  // Root owning the file is judged as owner first, then overridden.
  CHECK(CheckAccess(Inode(kReg | 0000, 0, 0), kRoot, kMayWrite).ok());
  CHECK(ErrnoOf(CheckAccess(Inode(kReg | 0000, 0, 0), kRoot, kMayExec)) == EACCES);
  // Directories: root may list, search and modify any.
  const AccessAttrs dir = Inode(kDir | 0000, 1000, 100);
  CHECK(CheckAccess(dir, kRoot, kMayRead).ok());
  CHECK(CheckAccess(dir, kRoot, kMayExec).ok());
  CHECK(CheckAccess(dir, kRoot, kMayWrite | kMayExec).ok());
}

// ---------------------------------------------------------------------------
// CheckAccess: ACLs

// A file with mode bits derived from `acl` the way Linux keeps them in sync.
AccessAttrs FileWithAcl(const Acl& acl, uint32_t uid = 1000, uint32_t gid = 100) {
  return Inode(kReg | AclToModeBits(acl), uid, gid, EncodeAcl(acl));
}

TEST_CASE("mds_permission: ACL: a named user gets its entry - limited by the mask",
          "[permission][acl]") {
  const Credentials bob = Cred(2000, 200);
  SECTION("entry within the mask") {
    const AccessAttrs f = FileWithAcl(
        MakeAcl({e::UserObj(6), e::User(2000, 6), e::GroupObj(4), e::Mask(6), e::Other(0)}));
    CHECK(CheckAccess(f, bob, kMayRead | kMayWrite).ok());
    CHECK(ErrnoOf(CheckAccess(f, bob, kMayExec)) == EACCES);
    CHECK(ErrnoOf(CheckAccess(f, kStranger, kMayRead)) == EACCES);
  }
  SECTION("the mask limits the named user") {
    const AccessAttrs f = FileWithAcl(
        MakeAcl({e::UserObj(6), e::User(2000, 7), e::GroupObj(4), e::Mask(4), e::Other(0)}));
    CHECK(CheckAccess(f, bob, kMayRead).ok());
    CHECK(ErrnoOf(CheckAccess(f, bob, kMayWrite)) == EACCES);
    CHECK(ErrnoOf(CheckAccess(f, bob, kMayExec)) == EACCES);
  }
  SECTION("a named user entry is final: no fallback to groups or other") {
    // bob is in the owning group (rw) and other is rwx, but his entry says r.
    const AccessAttrs f = FileWithAcl(
        MakeAcl({e::UserObj(6), e::User(2000, 4), e::GroupObj(6), e::Mask(7), e::Other(7)}), 1000,
        200);
    CHECK(CheckAccess(f, bob, kMayRead).ok());
    CHECK(ErrnoOf(CheckAccess(f, bob, kMayWrite)) == EACCES);
    const AccessAttrs g = FileWithAcl(
        MakeAcl({e::UserObj(6), e::User(2000, 0), e::GroupObj(6), e::Mask(7), e::Other(7)}));
    CHECK(ErrnoOf(CheckAccess(g, bob, kMayRead)) == EACCES);
  }
}

TEST_CASE("mds_permission: ACL: the owner is judged by the owner bits - never by the ACL",
          "[permission][acl]") {
  // A USER entry naming the owner does not help the owner.
  const AccessAttrs f = FileWithAcl(
      MakeAcl({e::UserObj(4), e::User(1000, 7), e::GroupObj(7), e::Mask(7), e::Other(7)}));
  CHECK(CheckAccess(f, kOwner, kMayRead).ok());
  CHECK(ErrnoOf(CheckAccess(f, kOwner, kMayWrite)) == EACCES);
}

TEST_CASE("mds_permission: ACL: named groups - any single matching entry grants",
          "[permission][acl]") {
  // kSuppMember is in group 100 (owning group) and 300.
  const Acl acl = MakeAcl({e::UserObj(6), e::GroupObj(4), e::Group(300, 6), e::Group(400, 1),
                           e::Mask(7), e::Other(7)});
  const AccessAttrs f = FileWithAcl(acl);
  SECTION("group 300 grants rw although group_obj has only r") {
    CHECK(CheckAccess(f, kSuppMember, kMayRead | kMayWrite).ok());
    CHECK(CheckAccess(f, kSuppMember, kMayRead).ok());
  }
  SECTION("no matching entry grants x: refused, other (rwx) is not consulted") {
    CHECK(ErrnoOf(CheckAccess(f, kSuppMember, kMayExec)) == EACCES);
  }
  SECTION("entries are not combined: r from one and x from another is not r+x") {
    const Credentials carol = Cred(2001, 300, {400});
    CHECK(CheckAccess(f, carol, kMayExec).ok());
    CHECK(CheckAccess(f, carol, kMayRead | kMayWrite).ok());
    CHECK(ErrnoOf(CheckAccess(f, carol, kMayRead | kMayExec)) == EACCES);
  }
  SECTION("group_obj alone") {
    CHECK(CheckAccess(f, kMember, kMayRead).ok());
    CHECK(ErrnoOf(CheckAccess(f, kMember, kMayWrite)) == EACCES);
  }
  SECTION("no group matches: other decides") {
    CHECK(CheckAccess(f, kStranger, kMayRead | kMayWrite | kMayExec).ok());
  }
}

TEST_CASE("mds_permission: ACL: the mask limits group_obj and named groups", "[permission][acl]") {
  const AccessAttrs f = FileWithAcl(MakeAcl(
      {e::UserObj(7), e::GroupObj(7), e::Group(300, 7), e::Mask(4), e::Other(0)}));
  CHECK((f.mode & 0777) == 0740);
  CHECK(CheckAccess(f, kMember, kMayRead).ok());
  CHECK(ErrnoOf(CheckAccess(f, kMember, kMayWrite)) == EACCES);
  const Credentials in300 = Cred(2002, 300);
  CHECK(CheckAccess(f, in300, kMayRead).ok());
  CHECK(ErrnoOf(CheckAccess(f, in300, kMayWrite)) == EACCES);
  // A group entry that grants the request on its own but not through the mask
  // is a refusal; the next matching group entry is not tried.
  const Credentials both = Cred(2003, 100, {300});
  CHECK(ErrnoOf(CheckAccess(f, both, kMayExec)) == EACCES);
}

TEST_CASE("mds_permission: ACL: other entry when neither user nor group matches",
          "[permission][acl]") {
  const AccessAttrs f = FileWithAcl(
      MakeAcl({e::UserObj(7), e::User(2000, 7), e::GroupObj(5), e::Mask(7), e::Other(4)}));
  CHECK(CheckAccess(f, kStranger, kMayRead).ok());
  CHECK(ErrnoOf(CheckAccess(f, kStranger, kMayWrite)) == EACCES);
}

TEST_CASE("mds_permission: ACL: skipped when the group mode bits (the mask) are 0",
          "[permission][acl]") {
  // Linux consults the ACL only when mode & S_IRWXG != 0. With a mask of ---
  // the named user then falls through to the mode bits: other rwx grants.
  const std::string raw = EncodeAcl(
      MakeAcl({e::UserObj(6), e::User(2000, 7), e::GroupObj(0), e::Mask(0), e::Other(7)}));
  const Credentials bob = Cred(2000, 200);
  CHECK(CheckAccess(Inode(kReg | 0607, 1000, 100, raw), bob, kMayRead).ok());
  // With the mask at --x the ACL is used, and the named user gets rwx & --x.
  const std::string raw_x = EncodeAcl(
      MakeAcl({e::UserObj(6), e::User(2000, 7), e::GroupObj(0), e::Mask(1), e::Other(7)}));
  CHECK(ErrnoOf(CheckAccess(Inode(kReg | 0617, 1000, 100, raw_x), bob, kMayRead)) == EACCES);
  CHECK(CheckAccess(Inode(kReg | 0617, 1000, 100, raw_x), bob, kMayExec).ok());
}

TEST_CASE("mds_permission: ACL: root's exec override looks at the mode bits (the mask)",
          "[permission][acl]") {
  // The named user's x survives the mask: the group x bit is set, root may exec.
  const AccessAttrs with_x = FileWithAcl(
      MakeAcl({e::UserObj(6), e::User(2000, 7), e::GroupObj(4), e::Mask(5), e::Other(0)}));
  CHECK((with_x.mode & 0777) == 0650);
  CHECK(CheckAccess(with_x, kRoot, kMayExec).ok());
  // The mask removes x: no x bit anywhere, root may not exec.
  const AccessAttrs without_x = FileWithAcl(
      MakeAcl({e::UserObj(6), e::User(2000, 7), e::GroupObj(4), e::Mask(6), e::Other(0)}));
  CHECK(ErrnoOf(CheckAccess(without_x, kRoot, kMayExec)) == EACCES);
  CHECK(CheckAccess(without_x, kRoot, kMayRead | kMayWrite).ok());
}

TEST_CASE("mds_permission: ACL: a corrupt stored ACL is EIO - a bare header is no ACL",
          "[permission][acl]") {
  const AccessAttrs corrupt = Inode(kReg | 0644, 1000, 100, "garbage!");
  const absl::Status st = CheckAccess(corrupt, kStranger, kMayRead);
  CHECK(ErrnoOf(st) == EIO);
  CHECK(st.code() == absl::StatusCode::kDataLoss);
  CHECK(ErrnoOf(CheckAccess(corrupt, kRoot, kMayRead)) == EIO);
  CHECK(CheckAccess(corrupt, kOwner, kMayRead).ok());  // the owner never reads the ACL
  const AccessAttrs bare = Inode(kReg | 0640, 1000, 100, RawAcl({}));
  CHECK(CheckAccess(bare, kMember, kMayRead).ok());
  CHECK(ErrnoOf(CheckAccess(bare, kStranger, kMayRead)) == EACCES);
}

TEST_CASE("mds_permission: CheckAclPermission evaluates user_obj for the owner",
          "[permission][acl]") {
  const Acl acl = MakeAcl({e::UserObj(4), e::GroupObj(7), e::Other(7)});
  const AccessAttrs f = Inode(kReg | 0477, 1000, 100);
  CHECK(CheckAclPermission(acl, f, kOwner, kMayRead).ok());
  CHECK(ErrnoOf(CheckAclPermission(acl, f, kOwner, kMayWrite)) == EACCES);
}

// ---------------------------------------------------------------------------
// Sticky directories

TEST_CASE("mds_permission: CheckStickyDelete: owner of entry - owner of dir - root - EPERM otherwise",
          "[permission]") {
  const AccessAttrs tmp = Inode(kDir | 01777, 10, 10);
  const AccessAttrs victim = Inode(kReg | 0666, 20, 20);
  CHECK(CheckStickyDelete(tmp, victim, Cred(20, 99)).ok());
  CHECK(CheckStickyDelete(tmp, victim, Cred(10, 99)).ok());
  CHECK(CheckStickyDelete(tmp, victim, kRoot).ok());
  const absl::Status st = CheckStickyDelete(tmp, victim, Cred(30, 20, {10}));
  CHECK(ErrnoOf(st) == EPERM);
  CHECK(st.code() == absl::StatusCode::kPermissionDenied);
  // Without the sticky bit, anyone with w+x on the directory may.
  CHECK(CheckStickyDelete(Inode(kDir | 0777, 10, 10), victim, Cred(30, 30)).ok());
}

// ---------------------------------------------------------------------------
// chmod

TEST_CASE("mds_permission: ModeForChmod: owner or root - EPERM otherwise", "[permission][setattr]") {
  const AccessAttrs f = Inode(kReg | 0644, 1000, 100);
  absl::StatusOr<uint32_t> mode = ModeForChmod(f, kOwner, 0755);
  REQUIRE(mode.ok());
  CHECK(*mode == (kReg | 0755));
  // Type bits in the request are ignored; the inode's stay.
  mode = ModeForChmod(f, kOwner, S_IFDIR | 01700);
  REQUIRE(mode.ok());
  CHECK(*mode == (kReg | 01700));
  mode = ModeForChmod(f, kRoot, 04711);
  REQUIRE(mode.ok());
  CHECK(*mode == (kReg | 04711));
  CHECK(ErrnoOf(ModeForChmod(f, kMember, 0777)) == EPERM);
  CHECK(ErrnoOf(ModeForChmod(f, kStranger, 0777)) == EPERM);
  CHECK(ErrnoOf(ModeForChmod(Inode(kLnk | 0777, 1000, 100), kOwner, 0700)) == EOPNOTSUPP);
}

TEST_CASE("mds_permission: ModeForChmod clears S_ISGID for an owner outside the group",
          "[permission][setattr]") {
  const Credentials outsider_owner = Cred(1000, 200);  // owns the file, not in group 100
  absl::StatusOr<uint32_t> mode = ModeForChmod(Inode(kReg | 0644, 1000, 100), outsider_owner,
                                               06755);
  REQUIRE(mode.ok());
  CHECK(*mode == (kReg | 04755));  // setuid stays, setgid silently dropped
  // Linux does this on directories too (setattr_prepare has no type test).
  mode = ModeForChmod(Inode(kDir | 0755, 1000, 100), outsider_owner, 02775);
  REQUIRE(mode.ok());
  CHECK(*mode == (kDir | 0775));
  // In the group (primary or supplementary) or root: kept.
  mode = ModeForChmod(Inode(kReg | 0644, 1000, 100), kOwner, 02755);
  REQUIRE(mode.ok());
  CHECK(*mode == (kReg | 02755));
  mode = ModeForChmod(Inode(kReg | 0644, 1000, 300), Cred(1000, 200, {300}), 02755);
  REQUIRE(mode.ok());
  CHECK(*mode == (kReg | 02755));
  mode = ModeForChmod(Inode(kReg | 0644, 1000, 100), kRoot, 02755);
  REQUIRE(mode.ok());
  CHECK(*mode == (kReg | 02755));
}

TEST_CASE("mds_permission: AccessAclForChmod updates the mask - user_obj and other",
          "[permission][acl]") {
  const Acl acl = MakeAcl({e::UserObj(6), e::User(2000, 7), e::GroupObj(4), e::Mask(6),
                           e::Other(4)});
  AccessAttrs f = FileWithAcl(acl);
  absl::StatusOr<uint32_t> mode = ModeForChmod(f, kOwner, 0750);
  REQUIRE(mode.ok());
  absl::StatusOr<std::string> stored = AccessAclForChmod(f, *mode);
  REQUIRE(stored.ok());
  absl::StatusOr<Acl> updated = ParseAcl(*stored);
  REQUIRE(updated.ok());
  CHECK(*updated == MakeAcl({e::UserObj(7), e::User(2000, 7), e::GroupObj(4), e::Mask(5),
                             e::Other(0)}));
  // The named user now gets rwx & r-x.
  f.mode = *mode;
  f.acl_access = *stored;
  const Credentials bob = Cred(2000, 200);
  CHECK(CheckAccess(f, bob, kMayRead | kMayExec).ok());
  CHECK(ErrnoOf(CheckAccess(f, bob, kMayWrite)) == EACCES);
  // No ACL: nothing to store.
  absl::StatusOr<std::string> none = AccessAclForChmod(Inode(kReg | 0644, 1000, 100), 0600);
  REQUIRE(none.ok());
  CHECK(none->empty());
  CHECK(ErrnoOf(AccessAclForChmod(Inode(kReg | 0644, 1000, 100, "xx"), 0600)) == EIO);
}

// ---------------------------------------------------------------------------
// chown / chgrp

TEST_CASE("mds_permission: ModeForChown: who may change the owner", "[permission][setattr]") {
  const AccessAttrs f = Inode(kReg | 0644, 1000, 100);
  CHECK(ModeForChown(f, kRoot, 2000u, std::nullopt).ok());
  CHECK(ErrnoOf(ModeForChown(f, kOwner, 2000u, std::nullopt)) == EPERM);  // give away
  CHECK(ErrnoOf(ModeForChown(f, kStranger, 1003u, std::nullopt)) == EPERM);  // take
  CHECK(ModeForChown(f, kOwner, 1000u, std::nullopt).ok());  // no-op by the owner
  // A "no-op" by someone else is still refused: chown_ok wants the owner.
  CHECK(ErrnoOf(ModeForChown(f, kStranger, 1000u, std::nullopt)) == EPERM);
  CHECK(ModeForChown(f, kStranger, std::nullopt, std::nullopt).ok());  // chown(-1, -1)
}

TEST_CASE("mds_permission: ModeForChown: who may change the group", "[permission][setattr]") {
  const AccessAttrs f = Inode(kReg | 0644, 1000, 100);
  const Credentials owner = Cred(1000, 100, {300});
  CHECK(ModeForChown(f, owner, std::nullopt, 300u).ok());       // supplementary group
  CHECK(ModeForChown(f, owner, std::nullopt, 100u).ok());       // primary group
  CHECK(ModeForChown(f, owner, 1000u, 300u).ok());              // with a no-op uid
  CHECK(ErrnoOf(ModeForChown(f, owner, std::nullopt, 400u)) == EPERM);  // not a member
  CHECK(ErrnoOf(ModeForChown(f, owner, 2000u, 300u)) == EPERM);
  CHECK(ErrnoOf(ModeForChown(f, kMember, std::nullopt, 100u)) == EPERM);  // not the owner
  CHECK(ModeForChown(f, kRoot, std::nullopt, 12345u).ok());
  // The owner may "change" to the current group even when not a member of it.
  const Credentials outsider_owner = Cred(1000, 200);
  CHECK(ModeForChown(f, outsider_owner, std::nullopt, 100u).ok());
  CHECK(ModeForChown(f, outsider_owner, std::nullopt, 200u).ok());
}

TEST_CASE("mds_permission: ModeForChown clears setuid always and setgid with group x",
          "[permission][setattr]") {
  SECTION("by root, on a real change") {
    absl::StatusOr<uint32_t> mode =
        ModeForChown(Inode(kReg | 06755, 1000, 100), kRoot, 2000u, 200u);
    REQUIRE(mode.ok());
    CHECK(*mode == (kReg | 0755));
  }
  SECTION("by the owner, on a no-op chown") {
    absl::StatusOr<uint32_t> mode =
        ModeForChown(Inode(kReg | 04755, 1000, 100), kOwner, 1000u, std::nullopt);
    REQUIRE(mode.ok());
    CHECK(*mode == (kReg | 0755));
  }
  SECTION("setgid without group x (locking marker) stays for root and group members") {
    absl::StatusOr<uint32_t> mode =
        ModeForChown(Inode(kReg | 02745, 1000, 100), kRoot, 2000u, std::nullopt);
    REQUIRE(mode.ok());
    CHECK(*mode == (kReg | 02745));
    mode = ModeForChown(Inode(kReg | 06745, 1000, 100), Cred(1000, 100, {300}), std::nullopt,
                        300u);
    REQUIRE(mode.ok());
    CHECK(*mode == (kReg | 02745));
  }
  SECTION("setgid without group x goes when the owner is not in the file's group") {
    absl::StatusOr<uint32_t> mode =
        ModeForChown(Inode(kReg | 02745, 1000, 100), Cred(1000, 300), std::nullopt, 300u);
    REQUIRE(mode.ok());
    CHECK(*mode == (kReg | 0745));
  }
  SECTION("directories keep their bits") {
    absl::StatusOr<uint32_t> mode =
        ModeForChown(Inode(kDir | 06775, 1000, 100), kRoot, 2000u, 200u);
    REQUIRE(mode.ok());
    CHECK(*mode == (kDir | 06775));
  }
  SECTION("nothing to clear: mode unchanged") {
    absl::StatusOr<uint32_t> mode =
        ModeForChown(Inode(kReg | 0755, 1000, 100), kRoot, 2000u, std::nullopt);
    REQUIRE(mode.ok());
    CHECK(*mode == (kReg | 0755));
  }
  SECTION("chown(-1, -1) of a setuid file by a non-owner is a chmod: EPERM") {
    CHECK(ErrnoOf(ModeForChown(Inode(kReg | 04755, 1000, 100), kStranger, std::nullopt,
                               std::nullopt)) == EPERM);
  }
}

// ---------------------------------------------------------------------------
// utimes, truncate, write

TEST_CASE("mds_permission: CheckSetTimes: explicit times need owner or root",
          "[permission][setattr]") {
  const AccessAttrs f = Inode(kReg | 0666, 1000, 100);
  CHECK(CheckSetTimes(f, kOwner, true).ok());
  CHECK(CheckSetTimes(f, kRoot, true).ok());
  CHECK(ErrnoOf(CheckSetTimes(f, kStranger, true)) == EPERM);  // even with write access
  CHECK(ErrnoOf(CheckSetTimes(f, kMember, true)) == EPERM);
}

TEST_CASE("mds_permission: CheckSetTimes: now needs owner - root or write access",
          "[permission][setattr]") {
  const AccessAttrs f = Inode(kReg | 0620, 1000, 100);
  CHECK(CheckSetTimes(f, kOwner, false).ok());
  CHECK(CheckSetTimes(f, kMember, false).ok());  // group has w
  CHECK(ErrnoOf(CheckSetTimes(f, kStranger, false)) == EACCES);
  CHECK(CheckSetTimes(Inode(kReg | 0000, 1000, 100), kOwner, false).ok());
  CHECK(CheckSetTimes(Inode(kReg | 0000, 1000, 100), kRoot, false).ok());
}

TEST_CASE("mds_permission: CheckTruncate needs write access on a regular file",
          "[permission][setattr]") {
  const AccessAttrs f = Inode(kReg | 0640, 1000, 100);
  CHECK(CheckTruncate(f, kOwner).ok());
  CHECK(ErrnoOf(CheckTruncate(f, kMember)) == EACCES);
  CHECK(ErrnoOf(CheckTruncate(f, kStranger)) == EACCES);
  CHECK(CheckTruncate(Inode(kReg | 0444, 1000, 100), kRoot).ok());
  CHECK(ErrnoOf(CheckTruncate(Inode(kDir | 0777, 1000, 100), kOwner)) == EISDIR);
  CHECK(ErrnoOf(CheckTruncate(Inode(S_IFIFO | 0666, 1000, 100), kOwner)) == EINVAL);
}

TEST_CASE("mds_permission: CheckHardlinkSource follows protected_hardlinks",
          "[permission][link]") {
  const AccessAttrs f = Inode(kReg | 0640, 1000, 100);
  CHECK(CheckHardlinkSource(f, kOwner).ok());
  CHECK(CheckHardlinkSource(Inode(kReg | 0000, 1000, 100), kRoot).ok());
  CHECK(ErrnoOf(CheckHardlinkSource(f, kMember)) == EPERM);  // may read, not write
  CHECK(CheckHardlinkSource(Inode(kReg | 0660, 1000, 100), kMember).ok());
  CHECK(ErrnoOf(CheckHardlinkSource(Inode(kReg | 04666, 1000, 100), kStranger)) == EPERM);
  CHECK(ErrnoOf(CheckHardlinkSource(Inode(kReg | 02676, 1000, 100), kStranger)) == EPERM);
  CHECK(CheckHardlinkSource(Inode(kReg | 02666, 1000, 100), kStranger).ok());  // no g+x
  CHECK(ErrnoOf(CheckHardlinkSource(Inode(S_IFIFO | 0666, 1000, 100), kStranger)) == EPERM);
  CHECK(CheckHardlinkSource(Inode(S_IFIFO | 0600, 1000, 100), kOwner).ok());
}

TEST_CASE("mds_permission: ModeAfterWrite drops setuid/setgid for writers without CAP_FSETID",
          "[permission][setattr]") {
  // Owner or not does not matter.
  CHECK(ModeAfterWrite(Inode(kReg | 06755, 1000, 100), kOwner) == (kReg | 0755));
  CHECK(ModeAfterWrite(Inode(kReg | 06777, 1000, 100), kStranger) == (kReg | 0777));
  CHECK(ModeAfterWrite(Inode(kReg | 04644, 1000, 100), kMember) == (kReg | 0644));
  // Root keeps both.
  CHECK(ModeAfterWrite(Inode(kReg | 06755, 1000, 100), kRoot) == (kReg | 06755));
  // setgid without group x: kept for a member of the file's group, dropped otherwise.
  CHECK(ModeAfterWrite(Inode(kReg | 02745, 1000, 100), kMember) == (kReg | 02745));
  CHECK(ModeAfterWrite(Inode(kReg | 02745, 1000, 100), kSuppMember) == (kReg | 02745));
  CHECK(ModeAfterWrite(Inode(kReg | 02747, 1000, 100), kStranger) == (kReg | 0747));
  // Plain files and non-regular files are untouched.
  CHECK(ModeAfterWrite(Inode(kReg | 0644, 1000, 100), kStranger) == (kReg | 0644));
  CHECK(ModeAfterWrite(Inode(kDir | 06755, 1000, 100), kStranger) == (kDir | 06755));
}

// ---------------------------------------------------------------------------
// Creation

NewInodeAttrs Create(const AccessAttrs& parent, const Credentials& cred, uint32_t mode,
                     uint32_t umask, const std::string& parent_default = "") {
  absl::StatusOr<NewInodeAttrs> out = InheritForCreate(parent, parent_default, cred, mode, umask);
  REQUIRE(out.ok());
  return *out;
}

TEST_CASE("mds_permission: InheritForCreate without setgid or default ACL applies the umask",
          "[create]") {
  const AccessAttrs parent = Inode(kDir | 0755, 1000, 100);
  const Credentials alice = Cred(1500, 150, {100});
  NewInodeAttrs f = Create(parent, alice, kReg | 0666, 022);
  CHECK(f.mode == (kReg | 0644));
  CHECK(f.uid == 1500);
  CHECK(f.gid == 150);  // the caller's gid, not the parent's
  CHECK(f.acl_access.empty());
  CHECK(f.acl_default.empty());
  NewInodeAttrs d = Create(parent, alice, kDir | 0777, 027);
  CHECK(d.mode == (kDir | 0750));
  // Only the low 9 bits of the umask count.
  CHECK(Create(parent, alice, kReg | 04666, 07022).mode == (kReg | 04644));
  // Type 0 is a regular file, as for mknod(2).
  CHECK(Create(parent, alice, 0644, 0).mode == (kReg | 0644));
}

TEST_CASE("mds_permission: InheritForCreate: mkdir keeps only rwx and sticky from the request",
          "[create]") {
  const AccessAttrs parent = Inode(kDir | 0755, 1000, 100);
  CHECK(Create(parent, kOwner, kDir | 07777, 0).mode == (kDir | 01777));
}

TEST_CASE("mds_permission: InheritForCreate in a setgid directory", "[create]") {
  const AccessAttrs parent = Inode(kDir | 02775, 1000, 500);
  const Credentials alice = Cred(1500, 150);
  SECTION("files take the directory's group, without S_ISGID") {
    NewInodeAttrs f = Create(parent, alice, kReg | 0664, 002);
    CHECK(f.gid == 500);
    CHECK(f.uid == 1500);
    CHECK(f.mode == (kReg | 0664));
  }
  SECTION("directories take the group and S_ISGID") {
    NewInodeAttrs d = Create(parent, alice, kDir | 0777, 022);
    CHECK(d.gid == 500);
    CHECK(d.mode == (kDir | 02755));
  }
  SECTION("symlinks take the group too") {
    CHECK(Create(parent, alice, kLnk | 0777, 022).gid == 500);
  }
}

TEST_CASE("mds_permission: InheritForCreate strips a requested S_ISGID outside the group",
          "[create]") {
  const AccessAttrs parent = Inode(kDir | 02777, 1000, 500);
  // Not in group 500: S_ISGID with group x is dropped.
  CHECK(Create(parent, Cred(1500, 150), kReg | 02755, 0).mode == (kReg | 0755));
  // In it (supplementary) or root: kept.
  CHECK(Create(parent, Cred(1500, 150, {500}), kReg | 02755, 0).mode == (kReg | 02755));
  CHECK(Create(parent, kRoot, kReg | 02755, 0).mode == (kReg | 02755));
  // Without group x in the request Linux keeps it (mode_strip_sgid).
  CHECK(Create(parent, Cred(1500, 150), kReg | 02745, 0).mode == (kReg | 02745));
  // The group x of the request counts, before the umask.
  CHECK(Create(parent, Cred(1500, 150), kReg | 02775, 070).mode == (kReg | 0705));
  // A parent without S_ISGID: the file's group is the caller's, nothing stripped.
  const AccessAttrs plain = Inode(kDir | 0777, 1000, 500);
  NewInodeAttrs f = Create(plain, Cred(1500, 150), kReg | 02755, 0);
  CHECK(f.mode == (kReg | 02755));
  CHECK(f.gid == 150);
}

const Acl kDefaultAcl = MakeAcl({e::UserObj(7), e::User(2000, 7), e::GroupObj(5), e::Mask(7),
                                 e::Other(5)});

TEST_CASE("mds_permission: InheritForCreate with a default ACL ignores the umask",
          "[create][acl]") {
  const AccessAttrs parent = Inode(kDir | 0755, 1000, 100);
  const std::string def = EncodeAcl(kDefaultAcl);
  SECTION("a file gets the masked ACL and no default") {
    NewInodeAttrs f = Create(parent, kOwner, kReg | 0666, 077, def);
    CHECK(f.mode == (kReg | 0664));  // umask 077 not applied
    CHECK(f.acl_default.empty());
    absl::StatusOr<Acl> access = ParseAcl(f.acl_access);
    REQUIRE(access.ok());
    CHECK(*access == MakeAcl({e::UserObj(6), e::User(2000, 7), e::GroupObj(5), e::Mask(6),
                              e::Other(4)}));
    // The named user can now read and write, not execute (mask rw-).
    AccessAttrs inode = Inode(f.mode, f.uid, f.gid, f.acl_access);
    CHECK(CheckAccess(inode, Cred(2000, 2000), kMayRead | kMayWrite).ok());
    CHECK(ErrnoOf(CheckAccess(inode, Cred(2000, 2000), kMayExec)) == EACCES);
  }
  SECTION("a directory also inherits the default ACL unchanged") {
    NewInodeAttrs d = Create(parent, kOwner, kDir | 0777, 077, def);
    CHECK(d.mode == (kDir | 0775));
    CHECK(d.acl_default == def);
    absl::StatusOr<Acl> access = ParseAcl(d.acl_access);
    REQUIRE(access.ok());
    CHECK(*access == kDefaultAcl);
  }
  SECTION("the requested mode limits the ACL") {
    NewInodeAttrs f = Create(parent, kOwner, kReg | 0600, 0, def);
    CHECK(f.mode == (kReg | 0600));
    absl::StatusOr<Acl> access = ParseAcl(f.acl_access);
    REQUIRE(access.ok());
    CHECK(*access == MakeAcl({e::UserObj(6), e::User(2000, 7), e::GroupObj(5), e::Mask(0),
                              e::Other(0)}));
  }
  SECTION("symlinks ignore the default ACL and the umask") {
    NewInodeAttrs l = Create(parent, kOwner, kLnk | 0777, 077, def);
    CHECK(l.mode == (kLnk | 0777));
    CHECK(l.acl_access.empty());
    CHECK(l.acl_default.empty());
  }
  SECTION("a setgid parent still gives the group and the directory bit") {
    NewInodeAttrs d = Create(Inode(kDir | 02755, 1000, 500), kOwner, kDir | 0777, 0, def);
    CHECK(d.mode == (kDir | 02775));
    CHECK(d.gid == 500);
  }
}

TEST_CASE("mds_permission: InheritForCreate with a minimal default ACL stores no access ACL",
          "[create][acl]") {
  const AccessAttrs parent = Inode(kDir | 0755, 1000, 100);
  const std::string def = EncodeAcl(MakeAcl({e::UserObj(7), e::GroupObj(5), e::Other(0)}));
  NewInodeAttrs f = Create(parent, kOwner, kReg | 0666, 022, def);
  CHECK(f.mode == (kReg | 0640));  // from the ACL, not 0644 from the umask
  CHECK(f.acl_access.empty());
  NewInodeAttrs d = Create(parent, kOwner, kDir | 0777, 022, def);
  CHECK(d.mode == (kDir | 0750));
  CHECK(d.acl_access.empty());
  CHECK(d.acl_default == def);  // still inherited: it keeps overriding the umask
  // A bare header counts as no default ACL: the umask applies.
  CHECK(Create(parent, kOwner, kReg | 0666, 022, RawAcl({})).mode == (kReg | 0644));
}

TEST_CASE("mds_permission: InheritForCreate errors", "[create]") {
  const AccessAttrs parent = Inode(kDir | 0777, 1000, 100);
  CHECK(ErrnoOf(InheritForCreate(parent, "bad", kOwner, kReg | 0644, 022)) == EIO);
  CHECK(ErrnoOf(InheritForCreate(Inode(kReg | 0777, 1000, 100), "", kOwner, kReg | 0644, 0)) ==
        ENOTDIR);
  CHECK(ErrnoOf(InheritForCreate(parent, "", kOwner, 0170000 | 0644, 0)) == EINVAL);
  CHECK(ErrnoOf(InheritForCreate(parent, "", kOwner, S_IFCHR | 0644, 0)) == EPERM);
  CHECK(ErrnoOf(InheritForCreate(parent, "", kOwner, S_IFBLK | 0644, 0)) == EPERM);
  CHECK(InheritForCreate(parent, "", kRoot, S_IFCHR | 0644, 0).ok());
  CHECK(InheritForCreate(parent, "", kOwner, S_IFIFO | 0644, 0).ok());
  CHECK(InheritForCreate(parent, "", kOwner, S_IFSOCK | 0644, 0).ok());
}

// ---------------------------------------------------------------------------
// setxattr of the ACLs

TEST_CASE("mds_permission: SetAccessAcl stores a canonical ACL and derives the mode",
          "[acl][setxattr]") {
  const AccessAttrs f = Inode(kReg | 01644, 1000, 100);
  const std::string raw = RawAcl({e::UserObj(7), e::User(3000, 4), e::User(2000, 6),
                                  e::GroupObj(4), e::Mask(6), e::Other(0)});
  absl::StatusOr<AclSetResult> r = SetAccessAcl(f, kOwner, raw);
  REQUIRE(r.ok());
  CHECK(r->mode == (kReg | 01760));  // type and sticky kept; group bits = mask
  absl::StatusOr<Acl> stored = ParseAcl(r->stored_value);
  REQUIRE(stored.ok());
  CHECK(stored->entries[1] == e::User(2000, 6));
  CHECK(r->stored_value == EncodeAcl(*stored));
  CHECK(SetAccessAcl(f, kRoot, raw).ok());
  // End to end: the named users get what the ACL says.
  const AccessAttrs after = Inode(r->mode, 1000, 100, r->stored_value);
  CHECK(CheckAccess(after, Cred(2000, 9), kMayWrite).ok());
  CHECK(ErrnoOf(CheckAccess(after, Cred(3000, 9), kMayWrite)) == EACCES);
}

TEST_CASE("mds_permission: SetAccessAcl of an ACL equivalent to a mode stores nothing",
          "[acl][setxattr]") {
  absl::StatusOr<AclSetResult> r = SetAccessAcl(
      Inode(kReg | 0644, 1000, 100), kOwner, RawAcl({e::UserObj(7), e::GroupObj(5), e::Other(1)}));
  REQUIRE(r.ok());
  CHECK(r->mode == (kReg | 0751));
  CHECK(r->stored_value.empty());
}

TEST_CASE("mds_permission: SetAccessAcl removal keeps the mode", "[acl][setxattr]") {
  const AccessAttrs f = Inode(kReg | 0770, 1000, 100, EncodeAcl(kDefaultAcl));
  for (const std::string& value : {std::string(), RawAcl({})}) {
    absl::StatusOr<AclSetResult> r = SetAccessAcl(f, kOwner, value);
    REQUIRE(r.ok());
    CHECK(r->mode == (kReg | 0770));
    CHECK(r->stored_value.empty());
  }
  CHECK(ErrnoOf(SetAccessAcl(f, kStranger, "")) == EPERM);
}

TEST_CASE("mds_permission: SetAccessAcl permission and validation order", "[acl][setxattr]") {
  const AccessAttrs f = Inode(kReg | 0644, 1000, 100);
  const std::string valid = RawAcl({e::UserObj(6), e::GroupObj(4), e::Other(4)});
  const std::string no_mask = RawAcl({e::UserObj(6), e::User(5, 7), e::GroupObj(4), e::Other(4)});
  CHECK(ErrnoOf(SetAccessAcl(f, kStranger, valid)) == EPERM);
  CHECK(ErrnoOf(SetAccessAcl(f, kMember, valid)) == EPERM);
  CHECK(ErrnoOf(SetAccessAcl(f, kOwner, no_mask)) == EINVAL);
  // posix_acl_valid runs after the owner check, the wire decoding before it.
  CHECK(ErrnoOf(SetAccessAcl(f, kStranger, no_mask)) == EPERM);
  CHECK(ErrnoOf(SetAccessAcl(f, kStranger, RawAcl({e::UserObj(6)}, 3))) == EOPNOTSUPP);
  CHECK(ErrnoOf(SetAccessAcl(f, kStranger, RawAcl({}) + "x")) == EINVAL);
  CHECK(ErrnoOf(SetAccessAcl(f, kStranger, "abcde")) == EOPNOTSUPP);  // version "abcd"
  CHECK(ErrnoOf(SetAccessAcl(Inode(kLnk | 0777, 1000, 100), kOwner, valid)) == EOPNOTSUPP);
}

TEST_CASE("mds_permission: SetAccessAcl clears S_ISGID for a caller outside the group",
          "[acl][setxattr]") {
  const std::string raw = RawAcl({e::UserObj(7), e::GroupObj(5), e::Mask(5), e::Other(5)});
  const AccessAttrs f = Inode(kReg | 02755, 1000, 100);
  absl::StatusOr<AclSetResult> r = SetAccessAcl(f, Cred(1000, 200), raw);
  REQUIRE(r.ok());
  CHECK(r->mode == (kReg | 0755));
  r = SetAccessAcl(f, kOwner, raw);
  REQUIRE(r.ok());
  CHECK(r->mode == (kReg | 02755));
  r = SetAccessAcl(f, kRoot, raw);
  REQUIRE(r.ok());
  CHECK(r->mode == (kReg | 02755));
}

TEST_CASE("mds_permission: SetDefaultAcl on directories", "[acl][setxattr]") {
  const AccessAttrs d = Inode(kDir | 0755, 1000, 100);
  const std::string raw = RawAcl({e::UserObj(7), e::GroupObj(5), e::Group(40, 7),
                                  e::Group(30, 5), e::Mask(7), e::Other(5)});
  absl::StatusOr<std::string> stored = SetDefaultAcl(d, kOwner, raw);
  REQUIRE(stored.ok());
  absl::StatusOr<Acl> acl = ParseAcl(*stored);
  REQUIRE(acl.ok());
  CHECK(acl->entries[2] == e::Group(30, 5));  // canonical order
  CHECK(*stored == EncodeAcl(*acl));
  CHECK(SetDefaultAcl(d, kRoot, raw).ok());
  // A minimal default ACL is stored, not dropped.
  const std::string minimal = RawAcl({e::UserObj(7), e::GroupObj(5), e::Other(0)});
  stored = SetDefaultAcl(d, kOwner, minimal);
  REQUIRE(stored.ok());
  CHECK(*stored == minimal);
  // Removal.
  stored = SetDefaultAcl(d, kOwner, "");
  REQUIRE(stored.ok());
  CHECK(stored->empty());
  // Permission and validity.
  CHECK(ErrnoOf(SetDefaultAcl(d, kStranger, raw)) == EPERM);
  CHECK(ErrnoOf(SetDefaultAcl(d, kStranger, "")) == EPERM);
  CHECK(ErrnoOf(SetDefaultAcl(d, kOwner, RawAcl({e::UserObj(7), e::Other(0)}))) == EINVAL);
  CHECK(ErrnoOf(SetDefaultAcl(d, kOwner, RawAcl({e::UserObj(7)}, 1))) == EOPNOTSUPP);
}

TEST_CASE("mds_permission: SetDefaultAcl on a non-directory: EACCES - removal succeeds",
          "[acl][setxattr]") {
  const AccessAttrs f = Inode(kReg | 0644, 1000, 100);
  const std::string raw = RawAcl({e::UserObj(7), e::GroupObj(5), e::Other(0)});
  const absl::Status st = SetDefaultAcl(f, kOwner, raw).status();
  CHECK(ErrnoOf(st) == EACCES);
  CHECK(st.code() == absl::StatusCode::kPermissionDenied);
  CHECK(ErrnoOf(SetDefaultAcl(f, kStranger, raw)) == EACCES);  // before the owner check
  absl::StatusOr<std::string> removed = SetDefaultAcl(f, kStranger, "");
  REQUIRE(removed.ok());
  CHECK(removed->empty());
  CHECK(ErrnoOf(SetDefaultAcl(Inode(kLnk | 0777, 1000, 100), kOwner, raw)) == EOPNOTSUPP);
}

TEST_CASE("mds_permission: DecideSetattr - chown then chmod on its result then times", "[setattr]") {
  SetattrAsk chmod;
  chmod.mode = 0600;
  CHECK(ErrnoOf(DecideSetattr(Inode(kReg | 0644, 1000, 100), kStranger, chmod)) == EPERM);
  SetattrAsk explicit_times;
  explicit_times.times = true;
  CHECK(ErrnoOf(DecideSetattr(Inode(kReg | 0666, 1000, 100), kStranger, explicit_times)) == EPERM);
  SetattrAsk now_times;
  now_times.times = true;
  now_times.times_now = true;
  CHECK(ErrnoOf(DecideSetattr(Inode(kReg | 0644, 1000, 100), kStranger, now_times)) == EACCES);
  CHECK(DecideSetattr(Inode(kReg | 0666, 1000, 100), kStranger, now_times).ok());

  // The chmod is judged on the group the chown gives: S_ISGID stays for a
  // member of the new group, goes for one outside it.
  SetattrAsk both;
  both.gid = 300;
  both.mode = 02750;
  auto kept = DecideSetattr(Inode(kReg | 0644, 1002, 200), kSuppMember, both);
  REQUIRE(kept.ok());
  CHECK(kept->gid == 300u);
  CHECK(kept->mode == (kReg | 02750));
  both.gid = 200;
  auto owner_group = DecideSetattr(Inode(kReg | 0644, 1000, 100), kOwner, both);
  CHECK(ErrnoOf(owner_group) == EPERM);  // 200 is not the owner's group
  both.gid.reset();
  auto cleared = DecideSetattr(Inode(kReg | 0644, 1000, 200), kOwner, both);
  REQUIRE(cleared.ok());
  CHECK(cleared->mode == (kReg | 0750));

  // A writer who is not the owner may drop what its write would (the
  // kernel's "kill privileges" sent as a chmod), nothing more.
  SetattrAsk drop;
  drop.mode = 0777;
  auto dropped = DecideSetattr(Inode(kReg | 04777, 1000, 100), kStranger, drop);
  REQUIRE(dropped.ok());
  CHECK(dropped->mode == (kReg | 0777));
  drop.mode = 0775;
  CHECK(ErrnoOf(DecideSetattr(Inode(kReg | 04777, 1000, 100), kStranger, drop)) == EPERM);

  // chown by root of a setuid file clears it; owner and group change.
  SetattrAsk chown;
  chown.uid = 1003;
  chown.gid = 200;
  auto owned = DecideSetattr(Inode(kReg | 04755, 1000, 100), kRoot, chown);
  REQUIRE(owned.ok());
  CHECK(owned->uid == 1003u);
  CHECK(owned->gid == 200u);
  CHECK(owned->mode == (kReg | 0755));
}

TEST_CASE("mds_permission: a setattr request's mask as the ask DecideSetattr judges",
          "[setattr]") {
  const SetattrAsk none = SetattrAskOf(0, 1, 2, 0644);
  CHECK(!none.uid);
  CHECK(!none.gid);
  CHECK(!none.mode);
  CHECK(!none.times);
  const SetattrAsk owner = SetattrAskOf(pb::SA_UID | pb::SA_MODE, 1, 2, 0644);
  CHECK(owner.uid == 1u);
  CHECK(!owner.gid);
  CHECK(owner.mode == 0644u);
  // Only both times to now is the weaker check; one of them, or an
  // explicit time beside it, is explicit (Linux vfs_utimes).
  const SetattrAsk both_now = SetattrAskOf(pb::SA_ATIME_NOW | pb::SA_MTIME_NOW, 0, 0, 0);
  CHECK(both_now.times);
  CHECK(both_now.times_now);
  const SetattrAsk one_now = SetattrAskOf(pb::SA_MTIME_NOW, 0, 0, 0);
  CHECK(one_now.times);
  CHECK(!one_now.times_now);
  const SetattrAsk mixed = SetattrAskOf(pb::SA_ATIME | pb::SA_MTIME_NOW, 0, 0, 0);
  CHECK(mixed.times);
  CHECK(!mixed.times_now);
  // Size and ctime are not the ask's business.
  CHECK(!SetattrAskOf(pb::SA_SIZE | pb::SA_CTIME, 0, 0, 0).times);
}

TEST_CASE("mds_permission: xattr namespaces - which absent names read as ENODATA for anyone",
          "[xattr]") {
  CHECK(XattrNamespace("user.a") == XattrNs::kUser);
  CHECK(XattrNamespace("trusted.a") == XattrNs::kTrusted);
  CHECK(XattrNamespace("security.capability") == XattrNs::kSecurity);
  CHECK(XattrNamespace("system.posix_acl_access") == XattrNs::kAcl);
  CHECK(XattrNamespace("system.posix_acl_default") == XattrNs::kAcl);
  CHECK(XattrNamespace("system.other") == XattrNs::kUnsupported);
  CHECK(XattrNamespace("weft.dir.rbytes") == XattrNs::kWeft);
  CHECK(XattrNamespace("user") == XattrNs::kUnsupported);
  CHECK(AbsentReadsAsNoData(XattrNs::kSecurity));
  CHECK(AbsentReadsAsNoData(XattrNs::kTrusted));
  CHECK(AbsentReadsAsNoData(XattrNs::kAcl));
  CHECK_FALSE(AbsentReadsAsNoData(XattrNs::kUser));  // EACCES without read permission
  CHECK_FALSE(AbsentReadsAsNoData(XattrNs::kWeft));
  CHECK_FALSE(AbsentReadsAsNoData(XattrNs::kUnsupported));  // EOPNOTSUPP
  CHECK(XattrNameValid("user.a"));
  CHECK(XattrNameValid("user." + std::string(250, 'n')));
  CHECK_FALSE(XattrNameValid("user." + std::string(251, 'n')));
  CHECK_FALSE(XattrNameValid(""));
  CHECK_FALSE(XattrNameValid(std::string("user.\0a", 7)));
}

// Every caller a check can tell apart: the owner, each named user, members
// of the owning group and of each named group (alone, and in several), and
// a stranger.
std::vector<Credentials> EveryKindOfCaller(const Acl& acl, uint32_t owner, uint32_t group) {
  std::vector<Credentials> out = {Cred(owner, group), Cred(5000, group), Cred(5001, 5002)};
  std::vector<uint32_t> gids = {group};
  for (const AclEntry& entry : acl.entries) {
    if (entry.tag == kAclUser) out.push_back(Cred(entry.id, 5002));
    if (entry.tag == kAclGroup) {
      out.push_back(Cred(5003, entry.id));
      gids.push_back(entry.id);
    }
  }
  out.push_back(Cred(5004, 5002, gids));
  return out;
}

TEST_CASE("mds_permission: AclGrantsEveryone - SearchableByEveryone agree with the check of "
          "every caller",
          "[acl]") {
  const uint32_t owner = 1000, group = 100;
  uint64_t seed = 7;
  auto next = [&seed] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint16_t>(seed >> 61);  // 0..7
  };
  int grants = 0, refusals = 0;
  for (int round = 0; round < 2000; ++round) {
    Acl acl = MakeAcl({e::UserObj(next()), e::GroupObj(next()), e::Other(next())});
    const int named = round % 4;
    for (int i = 0; i < named; ++i) {
      acl.entries.push_back(i % 2 == 0 ? e::User(2000 + i, next()) : e::Group(3000 + i, next()));
    }
    if (named > 0 || round % 3 == 0) acl.entries.push_back(e::Mask(next()));
    const std::string wire = EncodeAcl(acl);
    auto parsed = ParseAcl(wire);
    REQUIRE(parsed.ok());
    const AccessAttrs inode = Inode(kDir | 0755, owner, group, wire);
    for (int mask : {kMayExec, kMayRead, kMayRead | kMayExec}) {
      bool everyone = true;
      for (const Credentials& c : EveryKindOfCaller(*parsed, owner, group)) {
        everyone = everyone && CheckAclPermission(*parsed, inode, c, mask).ok();
      }
      INFO("round " << round << " mask " << mask);
      CHECK(AclGrantsEveryone(*parsed, mask) == everyone);
      if (mask == kMayExec) {
        CHECK(SearchableByEveryone(kDir | 0755, wire) == everyone);
        everyone ? ++grants : ++refusals;
      }
    }
  }
  CHECK(grants > 50);
  CHECK(refusals > 50);
  // Without an ACL the three x bits decide; only directories count.
  CHECK(SearchableByEveryone(kDir | 0711, ""));
  CHECK(!SearchableByEveryone(kDir | 0710, ""));
  CHECK(!SearchableByEveryone(kReg | 0777, ""));
  CHECK(!SearchableByEveryone(kDir | 0777, "not an acl"));
}

}  // namespace
}  // namespace weft::posix
