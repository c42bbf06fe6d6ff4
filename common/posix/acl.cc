#include "common/posix/acl.h"

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/status/status.h"

namespace weft::posix {
namespace {

constexpr uint16_t kAclPermBits = kAclRead | kAclWrite | kAclExecute;
constexpr uint32_t kOwnerShift = 6;
constexpr uint32_t kGroupShift = 3;

absl::Status Einval(absl::string_view message) {
  return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL, message);
}

uint16_t LoadLe16(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>(u[0] | (u[1] << 8));
}

uint32_t LoadLe32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint32_t>(u[0]) | (static_cast<uint32_t>(u[1]) << 8) |
         (static_cast<uint32_t>(u[2]) << 16) | (static_cast<uint32_t>(u[3]) << 24);
}

void AppendLe16(std::string* out, uint16_t v) {
  out->push_back(static_cast<char>(v & 0xff));
  out->push_back(static_cast<char>(v >> 8));
}

void AppendLe32(std::string* out, uint32_t v) {
  for (int shift = 0; shift < 32; shift += 8) {
    out->push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

bool IsNamedTag(uint16_t tag) { return tag == kAclUser || tag == kAclGroup; }

bool CanonicalLess(const AclEntry& a, const AclEntry& b) {
  if (a.tag != b.tag) return a.tag < b.tag;
  return a.id < b.id;
}

// The state machine of posix_acl_valid: entries must come in tag order, with
// exactly one USER_OBJ, GROUP_OBJ and OTHER, at most one MASK, and a MASK
// whenever a named entry exists.
absl::Status CheckTagOrder(const Acl& acl) {
  enum class State { kUserObj, kUser, kGroup, kOther, kDone };
  State state = State::kUserObj;
  bool needs_mask = false;
  for (const AclEntry& e : acl.entries) {
    if (e.perm & ~kAclPermBits) {
      return Einval(absl::StrCat("ACL entry tag ", e.tag, " has perm bits ", e.perm));
    }
    bool ok = false;
    switch (e.tag) {
      case kAclUserObj:
        ok = state == State::kUserObj;
        state = State::kUser;
        break;
      case kAclUser:
        ok = state == State::kUser;
        needs_mask = true;
        break;
      case kAclGroupObj:
        ok = state == State::kUser;
        state = State::kGroup;
        break;
      case kAclGroup:
        ok = state == State::kGroup;
        needs_mask = true;
        break;
      case kAclMask:
        ok = state == State::kGroup;
        state = State::kOther;
        break;
      case kAclOther:
        ok = state == State::kOther || (state == State::kGroup && !needs_mask);
        state = State::kDone;
        break;
      default:
        break;
    }
    if (!ok) return Einval(absl::StrCat("ACL entry with tag ", e.tag, " out of place"));
  }
  if (state != State::kDone) return Einval("ACL lacks a required entry");
  return absl::OkStatus();
}

AclEntry* FindTag(Acl* acl, uint16_t tag) {
  for (AclEntry& e : acl->entries) {
    if (e.tag == tag) return &e;
  }
  return nullptr;
}

const AclEntry* FindTag(const Acl& acl, uint16_t tag) {
  for (const AclEntry& e : acl.entries) {
    if (e.tag == tag) return &e;
  }
  return nullptr;
}

// The entry that stands for the group class of the mode: the MASK if there is
// one, else GROUP_OBJ.
AclEntry* GroupClassEntry(Acl* acl) {
  AclEntry* mask = FindTag(acl, kAclMask);
  return mask != nullptr ? mask : FindTag(acl, kAclGroupObj);
}

// Intersects one class: the entry keeps only bits the mode grants, and the
// mode keeps only bits the entry grants.
void MaskClass(AclEntry* entry, uint32_t shift, uint32_t* mode) {
  if (entry == nullptr) return;
  const uint32_t bits = (*mode >> shift) & kAclPermBits;
  entry->perm &= bits;
  *mode &= ~(static_cast<uint32_t>(kAclPermBits) << shift) |
           (static_cast<uint32_t>(entry->perm) << shift);
}

}  // namespace

absl::StatusOr<Acl> DecodeAclXattr(absl::string_view value) {
  if (value.size() > kAclXattrBytesMax) {
    return ErrnoError(absl::StatusCode::kOutOfRange, E2BIG,
                      absl::StrCat("ACL xattr of ", value.size(), " bytes"));
  }
  if (value.size() < kAclXattrHeaderBytes) return Einval("ACL xattr shorter than its header");
  const uint32_t version = LoadLe32(value.data());
  if (version != kAclXattrVersion) {
    return ErrnoError(absl::StatusCode::kUnimplemented, EOPNOTSUPP,
                      absl::StrCat("ACL xattr version ", version));
  }
  const size_t body = value.size() - kAclXattrHeaderBytes;
  if (body % kAclXattrEntryBytes != 0) {
    return Einval(absl::StrCat("ACL xattr of ", value.size(), " bytes"));
  }
  Acl acl;
  acl.entries.reserve(body / kAclXattrEntryBytes);
  for (size_t off = kAclXattrHeaderBytes; off < value.size(); off += kAclXattrEntryBytes) {
    AclEntry e;
    e.tag = LoadLe16(value.data() + off);
    e.perm = LoadLe16(value.data() + off + 2);
    e.id = LoadLe32(value.data() + off + 4);
    switch (e.tag) {
      case kAclUserObj:
      case kAclGroupObj:
      case kAclMask:
      case kAclOther:
        e.id = kAclUndefinedId;
        break;
      case kAclUser:
      case kAclGroup:
        if (e.id == kAclUndefinedId) return Einval("ACL names the invalid id 0xffffffff");
        break;
      default:
        return Einval(absl::StrCat("ACL entry with unknown tag ", e.tag));
    }
    acl.entries.push_back(e);
  }
  return acl;
}

absl::Status CanonicalizeAcl(Acl* acl) {
  RETURN_IF_ERROR(CheckTagOrder(*acl));
  // Tags are in order already; this only orders named entries by id.
  std::stable_sort(acl->entries.begin(), acl->entries.end(), CanonicalLess);
  for (size_t i = 1; i < acl->entries.size(); ++i) {
    const AclEntry& prev = acl->entries[i - 1];
    const AclEntry& cur = acl->entries[i];
    if (IsNamedTag(cur.tag) && cur.tag == prev.tag && cur.id == prev.id) {
      return Einval(absl::StrCat("ACL names id ", cur.id, " twice"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Acl> ParseAcl(absl::string_view xattr_value) {
  ASSIGN_OR_RETURN(Acl acl, DecodeAclXattr(xattr_value));
  if (acl.entries.empty()) return Einval("ACL xattr has no entries");
  RETURN_IF_ERROR(CanonicalizeAcl(&acl));
  return acl;
}

std::string EncodeAcl(const Acl& acl) {
  std::vector<AclEntry> entries = acl.entries;
  std::stable_sort(entries.begin(), entries.end(), CanonicalLess);
  std::string out;
  out.reserve(kAclXattrHeaderBytes + entries.size() * kAclXattrEntryBytes);
  AppendLe32(&out, kAclXattrVersion);
  for (const AclEntry& e : entries) {
    AppendLe16(&out, e.tag);
    AppendLe16(&out, e.perm);
    AppendLe32(&out, IsNamedTag(e.tag) ? e.id : kAclUndefinedId);
  }
  return out;
}

bool AclIsEquivalentToMode(const Acl& acl) {
  for (const AclEntry& e : acl.entries) {
    if (IsNamedTag(e.tag) || e.tag == kAclMask) return false;
  }
  return true;
}

uint32_t AclToModeBits(const Acl& acl) {
  const AclEntry* mask = FindTag(acl, kAclMask);
  const AclEntry* group = mask != nullptr ? mask : FindTag(acl, kAclGroupObj);
  auto bits = [](const AclEntry* e) -> uint32_t {
    return e != nullptr ? (e->perm & kAclPermBits) : 0;
  };
  return (bits(FindTag(acl, kAclUserObj)) << kOwnerShift) | (bits(group) << kGroupShift) |
         bits(FindTag(acl, kAclOther));
}

void AclApplyMode(Acl* acl, uint32_t mode) {
  if (AclEntry* e = FindTag(acl, kAclUserObj)) e->perm = (mode >> kOwnerShift) & kAclPermBits;
  if (AclEntry* e = GroupClassEntry(acl)) e->perm = (mode >> kGroupShift) & kAclPermBits;
  if (AclEntry* e = FindTag(acl, kAclOther)) e->perm = mode & kAclPermBits;
}

Acl AclFromMode(uint32_t mode) {
  Acl acl;
  acl.entries = {
      {kAclUserObj, static_cast<uint16_t>((mode >> kOwnerShift) & kAclPermBits), kAclUndefinedId},
      {kAclGroupObj, static_cast<uint16_t>((mode >> kGroupShift) & kAclPermBits), kAclUndefinedId},
      {kAclOther, static_cast<uint16_t>(mode & kAclPermBits), kAclUndefinedId},
  };
  return acl;
}

bool AclMaskForCreate(Acl* acl, uint32_t* mode) {
  MaskClass(FindTag(acl, kAclUserObj), kOwnerShift, mode);
  MaskClass(FindTag(acl, kAclOther), 0, mode);
  MaskClass(GroupClassEntry(acl), kGroupShift, mode);
  return !AclIsEquivalentToMode(*acl);
}

}  // namespace weft::posix
