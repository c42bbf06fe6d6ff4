// Errors inside Weft are absl::Status / absl::StatusOr. Foreign errors (errno,
// LevelDB, gRPC) are converted where they enter. A status may carry the errno
// that POSIX needs at the FUSE edge as a payload: ENOTEMPTY and EXDEV are both
// "failed precondition", so the code alone is not enough.
#pragma once

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace weft {

// The macros use Abseil's future names so that a later Abseil can replace them.
#define WEFT_STATUS_CONCAT_INNER_(a, b) a##b
#define WEFT_STATUS_CONCAT_(a, b) WEFT_STATUS_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                       \
  do {                                              \
    ::absl::Status weft_status_ = (expr);           \
    if (!weft_status_.ok()) return weft_status_;    \
  } while (0)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(WEFT_STATUS_CONCAT_(weft_statusor_, __LINE__), lhs, expr)

#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()

// A status with `code`, `message` and an errno payload.
absl::Status ErrnoError(absl::StatusCode code, int err, absl::string_view message);

// Converts a failed system call's errno to a status, choosing the canonical code
// (ENOENT -> NotFound, ENOSPC -> ResourceExhausted, EIO -> DataLoss, ...), and
// keeps the errno as payload. `what` says what was being done ("open /x").
absl::Status ErrnoToStatus(int err, absl::string_view what);

// The errno a status carries, or the best errno for its code. Only the FUSE
// adapter and the wire encoder call this; code that decides what to do next
// asks the typed questions below instead.
int StatusToErrno(const absl::Status& status);

// What a failed status says, for the POSIX conditions callers act on. Each is
// true exactly when StatusToErrno would give that errno.
bool IsNoEntry(const absl::Status& status);      // ENOENT: no such name
bool IsExists(const absl::Status& status);       // EEXIST: the name is taken
bool IsNotEmpty(const absl::Status& status);     // ENOTEMPTY
bool IsStale(const absl::Status& status);        // ESTALE: no such inode (any more)
bool IsNoData(const absl::Status& status);       // ENODATA: no such attribute
bool IsNoSession(const absl::Status& status);    // ENOTCONN: the MDS knows no such session
bool IsAccessDenied(const absl::Status& status); // EACCES (EPERM is "not permitted")
// ESHUTDOWN: this client was evicted (its session closed by `weft client
// evict`, its OSD identity blocklisted). Nothing it retries can succeed; the
// FUSE adapter reports it as EIO.
bool IsEvicted(const absl::Status& status);
absl::Status EvictedError(absl::string_view message = "this client was evicted (weft client evict)");

// Prefixes the message of a failed status with context; OK stays OK.
absl::Status Annotate(const absl::Status& status, absl::string_view context);

}  // namespace weft
