// Advisory locks of a rank (proto LockOp): one LockTable (common/locks) for
// every session, in memory only. Sessions give their locks back after a
// restart (Reclaim, from Reconnect); a session's locks go with its last open
// of a file and with the session.
//
// A SET that conflicts waits: Try() then says so (kWait), with the
// generation a waiter watches (gen(): it moves whenever a lock goes or gets
// weaker) and until when; the request asks again when it moved. A waiting
// request is registered (for deadlock detection and status) from the Try()
// that made it wait until Done() — also when it is abandoned.
//
// Not thread-safe: the rank's mutex guards it (MdsRank::mu_); no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/locks/lock_table.h"
#include "mds/ids.h"
#include "mds/reply.h"
#include "mds/request.h"
#include "mds/sessions/sessions.h"
#include "proto/mds_client.pb.h"

namespace weft::mds {

class RankLocks {
 public:
  // One request's place in a wait, kept across its Try() calls.
  struct Wait {
    uint64_t waiter = 0;  // registered while waiting (0: not)
    uint64_t gen = 0;     // gen() when it started to wait
    absl::Time give_up;   // set by the first Try() that waits
    bool started = false;
  };
  enum class Step { kDone, kWait };

  // One step of lock request `op` of `session` (which exists; the lock's
  // owner is in it). kDone: the answer is in `reply` and *status; kWait:
  // wait until gen() != wait->gen or wait->give_up, then call again.
  Step Try(SessionId session, const req::Lock& op, const Sessions& sessions, absl::Time now,
           Wait* wait, Reply* reply, absl::Status* status);
  // The request ended (answered or abandoned).
  void Done(Wait* wait);

  uint64_t gen() const { return gen_; }
  // The session's locks on `ino` (0: all of them) go; waiters look again.
  void DropSession(SessionId session, uint64_t ino);
  // A reconnecting session's locks, after its opens: those that cannot be
  // given back are listed in reply->locks_lost.
  void Reclaim(const pb::ReconnectRequest& request, const Sessions& sessions,
               pb::ReconnectReply* reply);

  size_t size() const { return locks_.size(); }
  size_t waiters() const { return waiters_.size(); }

 private:
  bool WouldDeadlock(const locks::Owner& owner, const std::vector<locks::Lock>& blockers);

  locks::LockTable locks_;
  uint64_t gen_ = 0;
  uint64_t next_waiter_ = 0;
  absl::flat_hash_map<uint64_t, locks::Lock> waiters_;
};

}  // namespace weft::mds
