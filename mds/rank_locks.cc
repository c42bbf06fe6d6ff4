// Advisory locks of a rank (proto LockOp): one LockTable for every session,
// in memory only. Sessions give their locks back after a restart
// (Reconnect); a session's locks go with its last open of a file and with
// the session.
#include <cerrno>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/locks/lock_proto.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "mds/ops/op_context.h"
#include "mds/rank.h"

namespace weft::mds {
namespace {

constexpr uint32_t kLockWaitMaxMs = 30000;

// The caller's lock: its owner is in the request's session.
absl::StatusOr<locks::Lock> LockFromProto(const pb::LockInfo& in, uint64_t session) {
  ASSIGN_OR_RETURN(locks::Lock l, locks::FromProto(in));
  l.owner.session = session;
  return l;
}

// Not retried by the client (kUnavailable would be): the lock is taken.
absl::Status Held(const locks::Lock& by) {
  return ErrnoError(absl::StatusCode::kFailedPrecondition, EAGAIN,
                    absl::StrCat("lock held by session ", by.owner.session, " pid ", by.pid));
}

}  // namespace

bool MdsRank::OpenInSessionLocked(uint64_t session, uint64_t ino) {
  SessionState* s = cache_.Session(session);
  if (s == nullptr) return false;
  auto it = s->opens.find(ino);
  return it != s->opens.end() && it->second > 0;
}

absl::Status MdsRank::RunLock(const pb::MetaRequest& request, pb::MetaReply* reply) {
  const pb::LockOp& op = request.lock();
  ASSIGN_OR_RETURN(const locks::Lock want, LockFromProto(op.lock(), request.session()));
  absl::MutexLock lock(&mu_);
  if (cache_.Session(request.session()) == nullptr) return Err(ENOTCONN, "no such session");
  if (!OpenInSessionLocked(request.session(), want.ino)) {
    return Err(EBADF, absl::StrCat("lock of inode ", want.ino, ", not open in the session"));
  }
  switch (op.action()) {
    case pb::LockOp::GET: {
      if (want.type == locks::Type::kUnlock) return Err(EINVAL, "F_GETLK of F_UNLCK");
      std::optional<locks::Lock> conflict = locks_.FirstConflict(want);
      if (conflict.has_value()) {
        locks::ToProto(*conflict, reply->mutable_lock());
      } else {
        reply->mutable_lock()->set_type(pb::LK_UNLOCK);
      }
      return absl::OkStatus();
    }
    case pb::LockOp::DROP:
      if (locks_.DropOwner(want.ino, want.kind, want.owner)) ++locks_gen_;
      return absl::OkStatus();
    case pb::LockOp::SET:
      break;
    default:
      return Err(EINVAL, "unknown lock action");
  }
  if (want.type == locks::Type::kUnlock) {
    if (locks_.Apply(want)) ++locks_gen_;
    return absl::OkStatus();
  }
  const absl::Time give_up =
      absl::Now() + absl::Milliseconds(std::min(op.wait_ms(), kLockWaitMaxMs));
  for (;;) {
    if (stopping_) return absl::UnavailableError("the MDS is stopping");
    std::vector<locks::Lock> conflicts = locks_.ConflictsWith(want);
    if (conflicts.empty()) break;
    if (op.wait_ms() == 0) return Held(conflicts.front());
    if (want.kind == locks::Kind::kPosix && WouldDeadlockLocked(want.owner, conflicts)) {
      return Err(EDEADLK, absl::StrCat("waiting for session ", conflicts.front().owner.session,
                                       " pid ", conflicts.front().pid, " would deadlock"));
    }
    const uint64_t waiter = ++next_lock_waiter_;
    lock_waiters_[waiter] = want;
    const uint64_t gen = locks_gen_;
    auto changed = [this, gen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return locks_gen_ != gen || stopping_;
    };
    const bool woke = mu_.AwaitWithDeadline(absl::Condition(&changed), give_up);
    lock_waiters_.erase(waiter);
    if (!woke) {  // not an error: the client asks again
      reply->set_lock_retry(true);
      return absl::OkStatus();
    }
    // The file may have been closed, or the session ended, meanwhile.
    if (!OpenInSessionLocked(request.session(), want.ino)) {
      return Err(EBADF, absl::StrCat("inode ", want.ino, " closed while waiting for a lock"));
    }
  }
  if (locks_.Apply(want)) ++locks_gen_;
  return absl::OkStatus();
}

// Owner A waiting for `blockers` closes a cycle when one of them waits, in
// turn, for a lock of an owner that ... waits for A (as Linux's
// posix_locks_deadlock, but following every blocker, not only the first).
bool MdsRank::WouldDeadlockLocked(const locks::Owner& owner,
                                  const std::vector<locks::Lock>& blockers) {
  std::vector<locks::Owner> frontier;
  absl::flat_hash_set<locks::Owner> seen;
  for (const locks::Lock& b : blockers) {
    if (seen.insert(b.owner).second) frontier.push_back(b.owner);
  }
  while (!frontier.empty()) {
    const locks::Owner next = frontier.back();
    frontier.pop_back();
    if (next == owner) return true;
    for (const auto& [id, waiting] : lock_waiters_) {
      if (waiting.owner != next || waiting.kind != locks::Kind::kPosix) continue;
      for (const locks::Lock& b : locks_.ConflictsWith(waiting)) {
        if (seen.insert(b.owner).second) frontier.push_back(b.owner);
      }
    }
  }
  return false;
}

void MdsRank::DropSessionLocksLocked(uint64_t session, uint64_t ino) {
  const bool dropped = ino == 0 ? locks_.DropSession(session) : locks_.DropSessionIno(session, ino);
  if (dropped) ++locks_gen_;
}

void MdsRank::ReclaimLocksLocked(const pb::ReconnectRequest& request, pb::ReconnectReply* reply) {
  for (const pb::LockInfo& in : request.locks()) {
    absl::StatusOr<locks::Lock> l = LockFromProto(in, request.session());
    bool kept = l.ok() && l->type != locks::Type::kUnlock &&
                OpenInSessionLocked(request.session(), l->ino) &&
                !locks_.FirstConflict(*l).has_value();
    if (kept) {
      locks_.Apply(*l);
      continue;
    }
    LOG(WARNING) << "event=lock_not_reclaimed session=" << request.session()
                 << " ino=" << in.ino() << " owner=" << in.owner() << " start=" << in.start()
                 << " end=" << in.end();
    *reply->add_locks_lost() = in;
  }
}

}  // namespace weft::mds
