// One client request through a rank, as a state machine that never blocks:
// each Step() runs under the rank's lock and returns an Outcome that says
// what the request needs next, and a driver does it and steps again —
// MdsRank::Drive on the request's own thread in the daemon, or the
// simulation (tests/sim), which interleaves many requests and delays each
// I/O as it likes.
//
//   kDone     the reply is ready (status in Outcome::status)
//   kLoad     read metadata from the store (Outcome::load), without the lock
//   kMove     write a file's inline data to its first object (Outcome::move)
//   kCut      cut a truncated file's objects (Outcome::cut)
//   kDurable  wait until the journal is durable through Outcome::seq
//   kWait     wait, with the lock, until Outcome::wait.ready or its deadline:
//             a lease returned, a recall answered, a move or a cut finished,
//             an advisory lock released
//
// After an I/O outcome the driver reports its result (IoDone) and steps
// again; after a wait it just steps again. The operation itself (mds/ops/)
// runs whole on each Step: what it read may have changed while the request
// waited, so it is decided again from the top, and only the step that
// commits changes anything. End() closes the request, also one abandoned
// half way (a stopping or crashing rank): it gives back what the request
// held (its inline move, its truncates' holds, its place among lock waiters).
//
// Phases: kOp (the operation, retried whole) → kInval (other openers drop
// their cached pages of a file whose data it changed) → kTrim (a truncate's cuts,
// once its event is durable) → kReply (an early "unsafe" answer, or a wait
// for the journal) → done. A lock request has its own phase (kLock).
//
// Not thread-safe: one driver at a time, each call under the rank's lock
// (except the I/O the driver does between).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "mds/caps/leases.h"
#include "mds/locks/rank_locks.h"
#include "mds/outcome.h"
#include "mds/rank.h"
#include "mds/rank_options.h"
#include "mds/reply.h"
#include "mds/request.h"
#include "mds/store/records.pb.h"
#include "proto/mds_client.pb.h"

namespace weft::mds {

class OpContext;

class RequestRun {
 public:
  using Wait = RunWait;
  using Outcome = RunOutcome;

  // `replay`: a request resent through Reconnect (its original time and
  // inode, no leases or recalls). `reply` must outlive the run.
  RequestRun(MdsRank* rank, const Request& request, Reply* reply, bool replay);
  ~RequestRun();
  RequestRun(const RequestRun&) = delete;
  RequestRun& operator=(const RequestRun&) = delete;

  // Each under the rank's lock (checked: AssertHeld, as the driver's lock
  // cannot be named in an annotation here).
  Outcome Step();
  // The result of the I/O the last Step() asked for.
  void IoDone(const absl::Status& status);
  // Gives back what the request holds. Idempotent.
  void End();

  const Request& request() const { return request_; }
  Reply* reply() { return reply_; }

 private:
  enum class Phase { kOp, kLock, kInval, kTrim, kReply, kDone };
  using Kind = Outcome::Kind;

  Outcome StepOp() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  Outcome StepLock() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  // Waits until the other openers of a file whose data or size the request
  // changed dropped their cached pages (up to revoke_timeout_ms).
  Outcome StepInval() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  // Where a committed operation goes after its invalidations.
  Outcome AfterInval() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  Outcome StepTrim() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  Outcome StepReply() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  // The operation proper, on a fresh context, once the request passed its
  // session, completed-request and lease checks.
  Outcome RunOperation(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  absl::Status Dispatch(OpContext& ctx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  // A release of every handle of the request (a batch); the first error.
  absl::Status Release(Event* event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  absl::Status ReleaseOne(uint64_t ino, bool write, Event* event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  // After the event that committed the operation: what the rank keeps
  // beside the cache (new directories' fragments, pending statistics).
  // `changed`: ctx.changed() from before the commit took the edits.
  void AfterCommit(const OpContext& ctx, const std::vector<uint64_t>& changed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);

  Outcome Done(absl::Status status);
  Outcome Io(Kind kind);
  Outcome WaitFor(const char* what, std::function<bool()> ready,
                  absl::Time deadline = absl::InfiniteFuture());
  // Waits for revoked leases or caps to come back (or run out at `until`).
  Outcome WaitLeases(absl::Time now, absl::Time until) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  // After a recall (or, with `invals`, an invalidation) went unanswered for
  // revoke_timeout_ms: asks for the eviction of the sessions that did not
  // answer and waits until each is settled (evicted, or not fenceable);
  // nullopt once there is nothing more to wait for.
  std::optional<Outcome> EvictUnanswered(const std::vector<Leases::RecallKey>& keys, bool invals,
                                         absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  // Waits on a recall of `wanted`, until revoke_timeout_ms.
  Outcome WaitRecall(std::vector<Leases::RecallKey> wanted, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  // Waits while any of `inos` is blocked by a truncate's cut, up to 10 s.
  Outcome WaitTrims(std::vector<uint64_t> inos, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);
  bool TrimsBlock(const std::vector<uint64_t>& inos) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_);

  MdsRank* const rank_;
  const Request& request_;
  Reply* const reply_;
  const bool replay_;
  const SessionId session_;
  const uint64_t tid_;  // request_.id, as the session tables key it
  Phase phase_;
  absl::Status final_;  // kDone: the answer's status
  bool ended_ = false;

  // Across the operation's runs.
  int attempts_ = 0;
  bool uncounted_ = false;  // the last wait was not a failed try
  Kind pending_io_ = Kind::kDone;
  uint64_t wait_seq_ = 0;  // the journal sequence the reply waits for
  bool reopened_ = false;  // the handle of an earlier incarnation's create+open counted
  absl::flat_hash_set<Leases::RecallKey> recalled_;
  absl::flat_hash_set<Leases::RecallKey> held_;  // writers held for this request's truncates
  uint64_t opening_ = 0;  // the file this open is under way for (Leases::Opening)
  std::optional<absl::Time> lease_give_up_;
  struct RecallWait {
    std::vector<Leases::RecallKey> keys;
    absl::Time deadline;
  };
  std::optional<RecallWait> recall_wait_;
  struct TrimWait {
    std::vector<uint64_t> inos;
    absl::Time deadline;
  };
  std::optional<TrimWait> trim_wait_;
  std::vector<Leases::RecallKey> invals_;  // phase kInval
  struct EvictWait {
    std::vector<SessionId> sessions;
    absl::Time deadline;
  };
  std::optional<EvictWait> evict_wait_;
  absl::Time inval_deadline_;
  // A move of inline data this request makes (the file is its own until the
  // request ends), and what it moved: (ino, inline_version).
  uint64_t moving_ = 0;
  std::optional<std::pair<uint64_t, uint64_t>> moved_;
  InlineMove move_;
  Load load_;
  RankLocks::Wait lock_wait_;

  // The truncates' cuts (phase kTrim): the files, which one is next, and
  // where that one is.
  std::vector<uint64_t> trims_;
  size_t trim_next_ = 0;
  enum class CutState { kStart, kCutting, kDurable, kRetry };
  CutState cut_state_ = CutState::kStart;
  bool first_durable_done_ = false;
  Cut cut_;
  absl::Status cut_error_;
  absl::Time retry_at_;
  uint64_t cut_seq_ = 0;
};

}  // namespace weft::mds
