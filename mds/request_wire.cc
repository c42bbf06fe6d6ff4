// The adapter from the client wire's MetaRequest to the core's Request.
#include <cerrno>

#include "common/locks/lock_proto.h"
#include "common/status/status.h"
#include "mds/request.h"

namespace weft::mds {
namespace {

req::Setattr SetattrOf(const pb::SetattrOp& w) {
  req::Setattr a;
  a.ino = InodeId(w.ino());
  a.valid = w.valid();
  a.mode = w.mode();
  a.uid = w.uid();
  a.gid = w.gid();
  a.size = w.size();
  a.atime_ns = w.atime_ns();
  a.mtime_ns = w.mtime_ns();
  a.ctime_ns = w.ctime_ns();
  a.by_handle = w.by_handle();
  return a;
}

req::Written WrittenOf(const pb::WrittenOp& w) {
  req::Written a;
  a.ino = InodeId(w.ino());
  a.end = w.end();
  a.mtime_ns = w.mtime_ns();
  a.keep_times = w.keep_times();
  if (w.has_attrs()) a.attrs = SetattrOf(w.attrs());
  a.allocated_delta = w.allocated_delta();
  a.inline_writes.reserve(w.inline_writes_size());
  for (const pb::InlineExtent& e : w.inline_writes()) {
    a.inline_writes.push_back({e.offset(), e.data()});
  }
  a.inline_report = w.inline_report();
  a.append = w.append();
  return a;
}

absl::StatusOr<req::Lock> LockOf(const pb::LockOp& w, uint64_t session) {
  req::Lock a;
  switch (w.action()) {
    case pb::LockOp::SET:
      a.action = req::Lock::Action::kSet;
      break;
    case pb::LockOp::GET:
      a.action = req::Lock::Action::kGet;
      break;
    case pb::LockOp::DROP:
      a.action = req::Lock::Action::kDrop;
      break;
    default:
      return ErrnoToStatus(EINVAL, "unknown lock action");
  }
  ASSIGN_OR_RETURN(a.lock, locks::FromProto(w.lock(), session));  // the caller's
  a.wait_ms = w.wait_ms();
  return a;
}

absl::StatusOr<Operation> OperationOf(const pb::MetaRequest& w) {
  using R = pb::MetaRequest;
  switch (w.op_case()) {
    case R::kLookup:
      return req::Lookup{InodeId(w.lookup().parent()), w.lookup().name()};
    case R::kGetattr:
      return req::Getattr{InodeId(w.getattr().ino())};
    case R::kSetattr:
      return SetattrOf(w.setattr());
    case R::kCreate: {
      const pb::CreateOp& c = w.create();
      return req::Create{InodeId(c.parent()), c.name(), c.mode(),      c.rdev(),
                         c.exclusive(),       c.open(), c.open_flags()};
    }
    case R::kMkdir:
      return req::Mkdir{InodeId(w.mkdir().parent()), w.mkdir().name(), w.mkdir().mode()};
    case R::kSymlink:
      return req::Symlink{InodeId(w.symlink().parent()), w.symlink().name(), w.symlink().target()};
    case R::kLink:
      return req::Link{InodeId(w.link().ino()), InodeId(w.link().new_parent()),
                       w.link().new_name()};
    case R::kUnlink:
      return req::Unlink{InodeId(w.unlink().parent()), w.unlink().name()};
    case R::kRmdir:
      return req::Rmdir{InodeId(w.rmdir().parent()), w.rmdir().name()};
    case R::kRename: {
      const pb::RenameOp& r = w.rename();
      return req::Rename{InodeId(r.parent()), r.name(), InodeId(r.new_parent()), r.new_name(),
                         r.flags()};
    }
    case R::kReadlink:
      return req::Readlink{InodeId(w.readlink().ino())};
    case R::kReaddir: {
      const pb::ReaddirOp& r = w.readdir();
      return req::Readdir{InodeId(r.ino()), r.cookie(), r.max_entries(), r.with_attrs()};
    }
    case R::kGetxattr:
      return req::Getxattr{InodeId(w.getxattr().ino()), w.getxattr().name()};
    case R::kSetxattr: {
      const pb::SetxattrOp& x = w.setxattr();
      return req::Setxattr{InodeId(x.ino()), x.name(), x.value(), x.flags()};
    }
    case R::kListxattr:
      return req::Listxattr{InodeId(w.listxattr().ino())};
    case R::kRemovexattr:
      return req::Removexattr{InodeId(w.removexattr().ino()), w.removexattr().name()};
    case R::kStatfs:
      return req::Statfs{};
    case R::kOpen:
      return req::Open{InodeId(w.open().ino()), w.open().flags()};
    case R::kRelease: {
      req::Release a;
      a.handles.reserve(1 + w.release().more_size());
      a.handles.push_back({InodeId(w.release().ino()), w.release().write()});
      for (const pb::ReleaseRef& r : w.release().more()) {
        a.handles.push_back({InodeId(r.ino()), r.write()});
      }
      return a;
    }
    case R::kWritten:
      return WrittenOf(w.written());
    case R::kSync:
      return req::Sync{w.sync().seq()};
    case R::kAccess:
      return req::Access{InodeId(w.access().ino()), w.access().mask()};
    case R::kInlineData:
      return req::Inline{InodeId(w.inline_data().ino()), w.inline_data().uninline()};
    case R::kAtime: {
      req::Atime a;
      a.strict = w.atime().strict();
      a.reads.reserve(w.atime().reads_size());
      for (const pb::AtimeRef& r : w.atime().reads()) {
        a.reads.push_back({InodeId(r.ino()), r.atime_ns()});
      }
      return a;
    }
    case R::kLock: {
      ASSIGN_OR_RETURN(req::Lock lock, LockOf(w.lock(), w.session()));
      return lock;
    }
    case R::OP_NOT_SET:
      break;
  }
  return std::monostate{};
}

}  // namespace

absl::StatusOr<Request> FromWire(const pb::MetaRequest& wire) {
  Request r;
  r.session = SessionId(wire.session());
  r.id = RequestId(wire.tid());
  r.oldest = RequestId(wire.oldest_tid());
  r.cred.uid = wire.creds().uid();
  r.cred.gid = wire.creds().gid();
  r.cred.groups.assign(wire.creds().groups().begin(), wire.creds().groups().end());
  r.umask = wire.creds().umask() & 0777;
  r.unsafe_ok = wire.unsafe_ok();
  r.replay_seq = wire.replay_seq();
  r.replay_ino = InodeId(wire.replay_ino());
  r.replay_time_ns = wire.replay_time_ns();
  ASSIGN_OR_RETURN(r.op, OperationOf(wire));
  return r;
}

}  // namespace weft::mds
