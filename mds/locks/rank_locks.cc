#include "mds/locks/rank_locks.h"

#include <cerrno>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/locks/lock_proto.h"
#include "common/log/log.h"
#include "common/status/status.h"

namespace weft::mds {
namespace {

constexpr uint32_t kLockWaitMaxMs = 30000;

absl::Status Err(int err, absl::string_view message) { return ::weft::ErrnoToStatus(err, message); }

// Not retried by the client (kUnavailable would be): the lock is taken.
absl::Status Held(const locks::Lock& by) {
  return ErrnoError(absl::StatusCode::kFailedPrecondition, EAGAIN,
                    absl::StrCat("lock held by session ", by.owner.session, " pid ", by.pid));
}

}  // namespace

RankLocks::Step RankLocks::Try(SessionId session, const req::Lock& op,
                               const Sessions& sessions, absl::Time now, Wait* wait,
                               Reply* reply, absl::Status* status) {
  const locks::Lock& want = op.lock;
  DCHECK(want.owner.session == session.value()) << "a lock request owned by another session";
  auto done = [&](absl::Status s) {
    *status = std::move(s);
    return Step::kDone;
  };
  if (wait->waiter != 0) {  // back from a wait
    waiters_.erase(wait->waiter);
    wait->waiter = 0;
    if (gen_ == wait->gen && now >= wait->give_up) {
      reply->lock_retry = true;  // not an error: the client asks again
      return done(absl::OkStatus());
    }
    // The file may have been closed, or the session ended, meanwhile.
    if (!sessions.HasOpen(session, want.ino, /*write=*/false)) {
      return done(Err(EBADF, absl::StrCat("inode ", want.ino, " closed while waiting for a lock")));
    }
  } else if (!sessions.HasOpen(session, want.ino, /*write=*/false)) {
    return done(Err(EBADF, absl::StrCat("lock of inode ", want.ino, ", not open in the session")));
  }
  switch (op.action) {
    case req::Lock::Action::kGet: {
      if (want.type == locks::Type::kUnlock) return done(Err(EINVAL, "F_GETLK of F_UNLCK"));
      std::optional<locks::Lock> conflict = locks_.FirstConflict(want);
      if (conflict.has_value()) {
        reply->lock_query = Reply::LockQuery{*conflict};
      } else {
        reply->lock_query = Reply::LockQuery{};
      }
      return done(absl::OkStatus());
    }
    case req::Lock::Action::kDrop:
      if (locks_.DropOwner(want.ino, want.kind, want.owner)) ++gen_;
      return done(absl::OkStatus());
    case req::Lock::Action::kSet:
      break;
  }
  if (want.type == locks::Type::kUnlock) {
    if (locks_.Apply(want)) ++gen_;
    return done(absl::OkStatus());
  }
  if (!wait->started) {
    wait->started = true;
    wait->give_up = now + absl::Milliseconds(std::min(op.wait_ms, kLockWaitMaxMs));
  }
  std::vector<locks::Lock> conflicts = locks_.ConflictsWith(want);
  if (conflicts.empty()) {
    if (locks_.Apply(want)) ++gen_;
    return done(absl::OkStatus());
  }
  if (op.wait_ms == 0) return done(Held(conflicts.front()));
  if (want.kind == locks::Kind::kPosix && WouldDeadlock(want.owner, conflicts)) {
    return done(Err(EDEADLK, absl::StrCat("waiting for session ", conflicts.front().owner.session,
                                          " pid ", conflicts.front().pid, " would deadlock")));
  }
  wait->waiter = ++next_waiter_;
  wait->gen = gen_;
  waiters_[wait->waiter] = want;
  return Step::kWait;
}

void RankLocks::Done(Wait* wait) {
  if (wait->waiter != 0) waiters_.erase(wait->waiter);
  wait->waiter = 0;
}

// Owner A waiting for `blockers` closes a cycle when one of them waits, in
// turn, for a lock of an owner that ... waits for A (as Linux's
// posix_locks_deadlock, but following every blocker, not only the first).
bool RankLocks::WouldDeadlock(const locks::Owner& owner, const std::vector<locks::Lock>& blockers) {
  std::vector<locks::Owner> frontier;
  absl::flat_hash_set<locks::Owner> seen;
  for (const locks::Lock& b : blockers) {
    if (seen.insert(b.owner).second) frontier.push_back(b.owner);
  }
  while (!frontier.empty()) {
    const locks::Owner next = frontier.back();
    frontier.pop_back();
    if (next == owner) return true;
    for (const auto& [id, waiting] : waiters_) {
      if (waiting.owner != next || waiting.kind != locks::Kind::kPosix) continue;
      for (const locks::Lock& b : locks_.ConflictsWith(waiting)) {
        if (seen.insert(b.owner).second) frontier.push_back(b.owner);
      }
    }
  }
  return false;
}

void RankLocks::DropSession(SessionId session, uint64_t ino) {
  const bool dropped =
      ino == 0 ? locks_.DropSession(session.value()) : locks_.DropSessionIno(session.value(), ino);
  if (dropped) ++gen_;
}

void RankLocks::Reclaim(const pb::ReconnectRequest& request, const Sessions& sessions,
                        pb::ReconnectReply* reply) {
  for (const pb::LockInfo& in : request.locks()) {
    absl::StatusOr<locks::Lock> l = locks::FromProto(in, request.session());
    const bool kept = l.ok() && l->type != locks::Type::kUnlock &&
                      sessions.HasOpen(SessionId(request.session()), l->ino, /*write=*/false) &&
                      !locks_.FirstConflict(*l).has_value();
    if (kept) {
      locks_.Apply(*l);
      continue;
    }
    LOG(WARNING) << "event=lock_not_reclaimed session=" << request.session() << " ino=" << in.ino()
                 << " owner=" << in.owner() << " start=" << in.start() << " end=" << in.end();
    *reply->add_locks_lost() = in;
  }
}

}  // namespace weft::mds
