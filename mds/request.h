// A client's namespace request as the metadata core takes it: the session,
// the request id and the caller with strong ids, and the operation's
// arguments as plain values (one struct per operation, in namespace req).
// The gRPC adapter builds it from the wire (FromWire, mds/request_wire.cc),
// which is also where malformed lock requests are refused; the ops
// (mds/ops/), the request run, the leases and the locks read only this.
// The answer is a Reply (mds/reply.h), put on the wire by the adapter too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "common/locks/lock_table.h"
#include "common/posix/permission.h"
#include "mds/ids.h"
#include "proto/mds_client.pb.h"

namespace weft::mds {

namespace req {

struct Lookup {
  InodeId parent;
  std::string name;
};
struct Getattr {
  InodeId ino;
};
struct Setattr {
  InodeId ino;
  uint32_t valid = 0;  // posix::SetMask bits
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  int64_t atime_ns = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  bool by_handle = false;  // ftruncate on a handle this session opened for writing
};
// create and mknod: regular files, fifos, sockets, devices (mode has the type).
struct Create {
  InodeId parent;
  std::string name;
  uint32_t mode = 0;
  uint64_t rdev = 0;
  bool exclusive = false;  // O_EXCL: EEXIST if the name exists
  bool open = false;       // also open it
  uint32_t open_flags = 0;
};
struct Mkdir {
  InodeId parent;
  std::string name;
  uint32_t mode = 0;
};
struct Symlink {
  InodeId parent;
  std::string name;
  std::string target;
};
struct Link {
  InodeId ino;
  InodeId new_parent;
  std::string new_name;
};
struct Unlink {
  InodeId parent;
  std::string name;
};
struct Rmdir {
  InodeId parent;
  std::string name;
};
struct Rename {
  InodeId parent;
  std::string name;
  InodeId new_parent;
  std::string new_name;
  uint32_t flags = 0;  // RENAME_NOREPLACE = 1, RENAME_EXCHANGE = 2
};
struct Readlink {
  InodeId ino;
};
struct Readdir {
  InodeId ino;
  uint64_t cookie = 0;  // 0 = from the start
  uint32_t max_entries = 0;
  bool with_attrs = false;
};
struct Getxattr {
  InodeId ino;
  std::string name;
};
struct Setxattr {
  InodeId ino;
  std::string name;
  std::string value;
  uint32_t flags = 0;  // XATTR_CREATE = 1, XATTR_REPLACE = 2
};
struct Listxattr {
  InodeId ino;
};
struct Removexattr {
  InodeId ino;
  std::string name;
};
struct Statfs {};
struct Open {
  InodeId ino;
  uint32_t flags = 0;
};
// access(2): R_OK 4, W_OK 2, X_OK 1 (0 = exists).
struct Access {
  InodeId ino;
  uint32_t mask = 0;
};
// Handles released together (clients batch the releases of a few ms).
struct Release {
  struct Handle {
    InodeId ino;
    bool write = false;  // the handle was open for writing
  };
  std::vector<Handle> handles;  // never empty
};
// A flush of buffered writes landed (see pb::WrittenOp).
struct Written {
  struct Extent {
    uint64_t offset = 0;
    std::string data;
  };
  InodeId ino;
  uint64_t end = 0;
  int64_t mtime_ns = 0;  // 0: now
  bool keep_times = false;
  std::optional<Setattr> attrs;  // changes made under attr_authority
  int64_t allocated_delta = 0;
  std::vector<Extent> inline_writes;
  bool inline_report = false;
  uint64_t append = 0;  // a shared appender's reservation (WrittenOp.append)
};
struct Sync {
  uint64_t seq = 0;  // 0: through now
};
struct Inline {
  InodeId ino;
  bool uninline = false;
};
// Reads this session served, for relatime (see pb::AtimeOp).
struct Atime {
  struct Read {
    InodeId ino;
    int64_t atime_ns = 0;
  };
  std::vector<Read> reads;
  bool strict = false;
};
// An advisory lock request (pb::LockOp); `lock` is checked and its owner
// is in the request's session.
struct Lock {
  enum class Action { kSet, kGet, kDrop };
  Action action = Action::kSet;
  locks::Lock lock;
  uint32_t wait_ms = 0;
};

}  // namespace req

using Operation =
    std::variant<std::monostate, req::Lookup, req::Getattr, req::Setattr, req::Create, req::Mkdir,
                 req::Symlink, req::Link, req::Unlink, req::Rmdir, req::Rename, req::Readlink,
                 req::Readdir, req::Getxattr, req::Setxattr, req::Listxattr, req::Removexattr,
                 req::Statfs, req::Open, req::Release, req::Written, req::Sync, req::Access,
                 req::Inline, req::Atime, req::Lock>;

struct Request {
  SessionId session;
  RequestId id;      // 0: not remembered
  RequestId oldest;  // the client's oldest unanswered (or unsafe) request
  posix::Credentials cred;
  uint32_t umask = 0;  // as the wire's: none given, none applied
  // The client takes an early ("unsafe") reply.
  bool unsafe_ok = false;
  // A resend after an MDS restart of a request answered unsafe (Reconnect):
  // its place in the old history, the inode it created, its timestamps.
  uint64_t replay_seq = 0;
  InodeId replay_ino;
  int64_t replay_time_ns = 0;
  Operation op;  // monostate: none given (refused with EINVAL)

  template <typename T>
  const T* As() const {
    return std::get_if<T>(&op);
  }
  template <typename T>
  bool Is() const {
    return std::holds_alternative<T>(op);
  }
};

// The request `wire` describes, or EINVAL for a malformed lock (a bad range,
// kind, type or action: the same refusals as before the conversion).
absl::StatusOr<Request> FromWire(const pb::MetaRequest& wire);

}  // namespace weft::mds
