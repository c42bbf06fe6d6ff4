#include "common/status/status.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace weft {
namespace {

constexpr absl::string_view kErrnoPayload = "weft/errno";

absl::StatusCode CodeForErrno(int err) {
  switch (err) {
    case 0: return absl::StatusCode::kOk;
    case ENOENT: case ESRCH: case ESTALE: case ENODATA: return absl::StatusCode::kNotFound;
    case EEXIST: return absl::StatusCode::kAlreadyExists;
    case EACCES: case EPERM: case EROFS: return absl::StatusCode::kPermissionDenied;
    case ENOSPC: case EDQUOT: case ENOMEM: case EMFILE: case ENFILE:
      return absl::StatusCode::kResourceExhausted;
    case EINVAL: case ENAMETOOLONG: case EISDIR: case ENOTDIR: case EBADF: case ELOOP:
      return absl::StatusCode::kInvalidArgument;
    case EFBIG: case ERANGE: case EOVERFLOW: case E2BIG: return absl::StatusCode::kOutOfRange;
    case EMLINK: return absl::StatusCode::kResourceExhausted;
    case ENOTCONN: return absl::StatusCode::kFailedPrecondition;
    case ENOTEMPTY: case EXDEV: case EBUSY: return absl::StatusCode::kFailedPrecondition;
    case EAGAIN: case ECONNREFUSED: case ECONNRESET: case EHOSTUNREACH:
      return absl::StatusCode::kUnavailable;
    case ETIMEDOUT: return absl::StatusCode::kDeadlineExceeded;
    case EIO: case EBADMSG: return absl::StatusCode::kDataLoss;
    case ENOSYS: case EOPNOTSUPP: return absl::StatusCode::kUnimplemented;
    case ECANCELED: return absl::StatusCode::kCancelled;
    default: return absl::StatusCode::kInternal;
  }
}

int ErrnoForCode(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk: return 0;
    case absl::StatusCode::kNotFound: return ENOENT;
    case absl::StatusCode::kAlreadyExists: return EEXIST;
    case absl::StatusCode::kPermissionDenied: return EACCES;
    case absl::StatusCode::kUnauthenticated: return EPERM;
    case absl::StatusCode::kResourceExhausted: return ENOSPC;
    case absl::StatusCode::kInvalidArgument: return EINVAL;
    case absl::StatusCode::kOutOfRange: return EFBIG;
    case absl::StatusCode::kFailedPrecondition: return EPERM;
    case absl::StatusCode::kUnavailable: return EAGAIN;
    case absl::StatusCode::kDeadlineExceeded: return ETIMEDOUT;
    case absl::StatusCode::kDataLoss: return EIO;
    case absl::StatusCode::kUnimplemented: return ENOSYS;
    case absl::StatusCode::kCancelled: return ECANCELED;
    case absl::StatusCode::kAborted: return EAGAIN;
    default: return EIO;
  }
}

}  // namespace

absl::Status ErrnoError(absl::StatusCode code, int err, absl::string_view message) {
  absl::Status status(code, message);
  status.SetPayload(kErrnoPayload, absl::Cord(absl::StrCat(err)));
  return status;
}

absl::Status ErrnoToStatus(int err, absl::string_view what) {
  return ErrnoError(CodeForErrno(err), err, absl::StrCat(what, ": ", std::strerror(err)));
}

int StatusToErrno(const absl::Status& status) {
  if (status.ok()) return 0;
  if (auto payload = status.GetPayload(kErrnoPayload)) {
    int err = 0;
    if (absl::SimpleAtoi(std::string(*payload), &err) && err > 0) return err;
  }
  return ErrnoForCode(status.code());
}

bool IsNoEntry(const absl::Status& status) { return StatusToErrno(status) == ENOENT; }
bool IsExists(const absl::Status& status) { return StatusToErrno(status) == EEXIST; }
bool IsNotEmpty(const absl::Status& status) { return StatusToErrno(status) == ENOTEMPTY; }
bool IsStale(const absl::Status& status) { return StatusToErrno(status) == ESTALE; }
bool IsNoData(const absl::Status& status) { return StatusToErrno(status) == ENODATA; }
bool IsNoSession(const absl::Status& status) { return StatusToErrno(status) == ENOTCONN; }
bool IsAccessDenied(const absl::Status& status) { return StatusToErrno(status) == EACCES; }
bool IsEvicted(const absl::Status& status) { return StatusToErrno(status) == ESHUTDOWN; }
absl::Status EvictedError(absl::string_view message) {
  return ErrnoError(absl::StatusCode::kPermissionDenied, ESHUTDOWN, message);
}

absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  absl::Status out(status.code(), absl::StrCat(context, ": ", status.message()));
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    out.SetPayload(url, payload);
  });
  return out;
}

}  // namespace weft
