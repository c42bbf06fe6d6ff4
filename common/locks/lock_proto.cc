#include "common/locks/lock_proto.h"

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/status/status.h"

namespace weft::locks {

void ToProto(const Lock& l, pb::LockInfo* out) {
  out->set_ino(l.ino);
  out->set_kind(static_cast<pb::LockKind>(l.kind));
  out->set_type(static_cast<pb::LockType>(l.type));
  out->set_start(l.start);
  out->set_end(l.end);
  out->set_owner(l.owner.id);
  out->set_pid(l.pid);
  out->set_session(l.owner.session);
}

absl::StatusOr<Lock> FromProto(const pb::LockInfo& in) {
  if (in.ino() == 0) return ErrnoToStatus(EINVAL, "lock of inode 0");
  if (in.start() > in.end() || in.end() > kLockEnd) {
    return ErrnoToStatus(EINVAL, absl::StrCat("bad lock range [", in.start(), ", ", in.end(), "]"));
  }
  if (in.kind() != pb::LK_POSIX && in.kind() != pb::LK_FLOCK) {
    return ErrnoToStatus(EINVAL, "unknown lock kind");
  }
  if (in.type() != pb::LK_READ && in.type() != pb::LK_WRITE && in.type() != pb::LK_UNLOCK) {
    return ErrnoToStatus(EINVAL, "unknown lock type");
  }
  Lock l;
  l.ino = in.ino();
  l.kind = static_cast<Kind>(in.kind());
  l.type = static_cast<Type>(in.type());
  l.start = in.start();
  l.end = in.end();
  l.owner = Owner{in.session(), in.owner()};
  l.pid = in.pid();
  return l;
}

absl::StatusOr<Lock> FromProto(const pb::LockInfo& in, uint64_t session) {
  ASSIGN_OR_RETURN(Lock l, FromProto(in));
  l.owner.session = session;
  return l;
}

}  // namespace weft::locks
