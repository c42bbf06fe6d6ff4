#include "fuse-client/lib/file_locks.h"

#include <cerrno>

#include "common/locks/lock_proto.h"
#include "common/log/log.h"
#include "common/status/status.h"

namespace weft::client {
FileLocks::FileLocks(MetaClient* meta) : meta_(meta) {
  meta_->SetLockHooks([this] { return HeldLocks(); },
                      [this](const std::vector<pb::LockInfo>& lost) { Lost(lost); });
}

FileLocks::~FileLocks() { meta_->SetLockHooks(nullptr, nullptr); }

absl::StatusOr<pb::MetaReply> FileLocks::Call(pb::LockOp op) {
  pb::MetaRequest request;
  *request.mutable_lock() = std::move(op);
  return meta_->Call(std::move(request));
}

absl::StatusOr<locks::Lock> FileLocks::Test(const locks::Lock& want) {
  pb::LockOp op;
  op.set_action(pb::LockOp::GET);
  locks::ToProto(want, op.mutable_lock());
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(std::move(op)));
  if (reply.lock().type() == pb::LK_UNLOCK) {  // nothing in the way
    locks::Lock none;
    none.type = locks::Type::kUnlock;
    return none;
  }
  return locks::FromProto(reply.lock());
}

absl::Status FileLocks::Set(const locks::Lock& want, uint64_t fh, bool wait,
                            const std::function<bool()>& cancelled) {
  pb::LockOp op;
  op.set_action(pb::LockOp::SET);
  locks::ToProto(want, op.mutable_lock());
  if (wait && want.type != locks::Type::kUnlock) op.set_wait_ms(kWaitSliceMs);
  for (;;) {
    if (op.wait_ms() > 0 && cancelled && cancelled()) {
      return ErrnoError(absl::StatusCode::kCancelled, EINTR, "lock wait interrupted");
    }
    ASSIGN_OR_RETURN(pb::MetaReply reply, Call(op));
    if (!reply.lock_retry()) break;
  }
  absl::MutexLock lock(&mu_);
  held_.Apply(want);
  if (want.kind == locks::Kind::kPosix && want.type != locks::Type::kUnlock && fh != 0) {
    via_[want.ino][want.owner.id].insert(fh);
  }
  return absl::OkStatus();
}

absl::Status FileLocks::DropOwner(uint64_t ino, locks::Kind kind, uint64_t owner) {
  {
    absl::MutexLock lock(&mu_);
    if (kind == locks::Kind::kPosix) {
      auto it = via_.find(ino);
      if (it != via_.end() && it->second.erase(owner) > 0 && it->second.empty()) via_.erase(it);
    }
    if (!held_.Holds(ino, kind, locks::Owner{0, owner})) return absl::OkStatus();
  }
  locks::Lock all;
  all.ino = ino;
  all.kind = kind;
  all.type = locks::Type::kUnlock;
  all.owner.id = owner;
  pb::LockOp op;
  op.set_action(pb::LockOp::DROP);
  locks::ToProto(all, op.mutable_lock());
  absl::Status status = Call(std::move(op)).status();
  // Dropped here also when the MDS call failed: the MDS drops them itself
  // with the file's last release, or with the session.
  absl::MutexLock lock(&mu_);
  held_.DropOwner(ino, kind, locks::Owner{0, owner});
  return status;
}

absl::Status FileLocks::ReleaseHandle(uint64_t ino, uint64_t fh) {
  std::vector<uint64_t> owners;  // whose locks came through fh alone
  {
    absl::MutexLock lock(&mu_);
    auto file = via_.find(ino);
    if (file == via_.end()) return absl::OkStatus();
    for (auto& [owner, fhs] : file->second) {
      if (fhs.erase(fh) > 0 && fhs.empty()) owners.push_back(owner);
    }
  }
  absl::Status first;
  for (uint64_t owner : owners) {
    absl::Status s = DropOwner(ino, locks::Kind::kPosix, owner);
    if (first.ok()) first = s;
  }
  return first;
}

std::vector<pb::LockInfo> FileLocks::HeldLocks() {
  std::vector<pb::LockInfo> out;
  absl::MutexLock lock(&mu_);
  for (const locks::Lock& l : held_.LocksOf()) locks::ToProto(l, &out.emplace_back());
  return out;
}

void FileLocks::Lost(const std::vector<pb::LockInfo>& lost) {
  absl::MutexLock lock(&mu_);
  for (const pb::LockInfo& in : lost) {
    LOG(ERROR) << "event=lock_lost ino=" << in.ino() << " owner=" << in.owner()
               << " kind=" << static_cast<int>(in.kind()) << " start=" << in.start()
               << " end=" << in.end();
    absl::StatusOr<locks::Lock> l = locks::FromProto(in);
    if (!l.ok()) continue;
    l->owner.session = 0;
    l->type = locks::Type::kUnlock;
    held_.Apply(*l);
  }
}

}  // namespace weft::client
