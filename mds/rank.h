// One MDS rank: a filesystem's namespace served from this daemon.
//
// The rooms of a rank, each with its own header and contract:
//   MetaCache    cache/meta_cache.h      inodes, dentries, strays, purge queue, pending truncates
//   Sessions     sessions/sessions.h     sessions, their open files, completed replies
//   Leases       caps/leases.h           directory leases, recalls of buffered writes, holds,
//                                        and the per-session streams they travel on
//   InlineMoves  cache/inline_moves.h    moves of small files' inline data to objects
//   Trims        trims/trims.h           truncates' cuts of data objects
//   RankLocks    locks/rank_locks.h      advisory locks
//   Journal      journal/journal.h       events, group-committed; has its own lock
//   MetaStore    store/meta_store.h      the objects behind all of them (I/O only)
// Every field of the first six is guarded by the rank's mutex mu_; so are
// the fields of this class marked so.
//
// Request flow (docs/ARCHITECTURE.md, "Metadata server"): Handle() makes a
// RequestRun (request_run.h) and Drive()s it: each step runs under mu_ and
// says what the request needs next — the answer, I/O to do without the lock
// (load metadata, move inline data, cut objects, wait for the journal), or a
// wait for another owner (a lease returned, a recall answered, a move or a
// cut finished, a lock released). The step that commits applies the
// operation's one event to the cache, gives it the next sequence number and
// queues it to the journal, all under mu_, so the journal's order is the
// order of application.
//
// Background (RankOptions::threads): the journal's writer; the flusher,
// which writes dirty metadata to the backing objects once the events that
// produced it are durable, then trims the journal; the janitor, which times
// out sessions, propagates recursive statistics, purges deleted files' data,
// retries truncates' cuts and trims the cache. Without the threads the
// owner calls the same steps (FlushOnce, ...), as the simulation does.
//
// Lock order: flush_mu_, then mu_, then the journal's lock; mu_, then the
// locks of the maps the env's callbacks read. No I/O under mu_.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "common/objects/striped_io.h"
#include "mds/cache/inline_moves.h"
#include "mds/cache/meta_cache.h"
#include "mds/caps/leases.h"
#include "mds/journal/journal.h"
#include "mds/locks/rank_locks.h"
#include "mds/ops/op_context.h"
#include "mds/outcome.h"
#include "mds/rank_options.h"
#include "mds/reply.h"
#include "mds/request.h"
#include "mds/sessions/sessions.h"
#include "mds/store/meta_store.h"
#include "mds/trims/trims.h"
#include "proto/mds_client.pb.h"
#include "mds/store/records.pb.h"

namespace weft::mds {

class RequestRun;

class MdsRank {
 public:
  MdsRank(RankOptions options, RankEnv env);
  ~MdsRank();

  // Creates the filesystem's objects (root directory, tables, journal); for
  // a rank above 0, that rank's tables and journal.
  absl::Status Create();
  // Whether the rank's journal exists (a rank above 0 is created when it is
  // first started).
  absl::StatusOr<bool> Created();
  // Loads tables, replays the journal, starts the background threads.
  absl::Status Start();
  // Standby-replay (docs/ARCHITECTURE.md): follows the journal the rank's
  // holder appends to (Journal::Tail), applying its events to this cache
  // and these sessions, writing nothing; the first call loads the tables.
  // Start() then replays only what was appended after the last call.
  // FailedPrecondition when it fell behind: a fresh rank must start over.
  // Returns the last sequence applied. Before Start only, one thread.
  absl::StatusOr<uint64_t> Follow();
  void Stop();

  uint32_t fs_id() const { return options_.fs_id; }
  uint32_t rank() const { return options_.rank; }
  const std::string& fs_name() const { return options_.fs_name; }
  uint64_t boot() const { return boot_; }

  // `osd_client` is the client's OSD identity (what eviction blocklists);
  // refused (ESHUTDOWN) when an earlier session of it was evicted.
  absl::StatusOr<pb::SessionReply> SessionOpen(const std::string& client,
                                               const std::string& osd_client, uint64_t reclaim);
  // `cached_inodes`: how many the client says it caches (for client ls).
  absl::StatusOr<pb::SessionReply> SessionRenew(uint64_t session, uint64_t cached_inodes);
  absl::Status SessionClose(uint64_t session);

  // Any namespace operation. Errors are in Reply::status (with errno). Every
  // reply carries the rank's boot id and durable journal sequence.
  Reply Handle(const Request& request);
  // A session back after a restart: its open files, and its requests that an
  // earlier incarnation answered unsafe (see proto ReconnectRequest). Returns
  // once every resent request of every session is applied and durable.
  absl::StatusOr<pb::ReconnectReply> Reconnect(const pb::ReconnectRequest& request);

  // A session's lease stream: registers it (which ends what an earlier
  // stream of the session held), writes a hello, then every event for the
  // session through `write` until `write` fails, `cancelled` says so, the
  // session ends or the rank stops.
  absl::Status ServeLeases(uint64_t session, const std::function<bool()>& cancelled,
                           const std::function<bool(const pb::LeaseEvent&)>& write);
  // The client no longer trusts these leases, or flushed what was recalled.
  absl::StatusOr<pb::SessionReply> LeaseAck(const pb::LeaseAckRequest& request);

  // The client sessions, for `weft client ls`.
  std::vector<pb::ClientInfo> ClientList();
  std::vector<pb::ClientInfo> ClientListLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Evicts `session` (docs/ARCHITECTURE.md, "Eviction"): its requests are
  // refused from now on; its OSD identity is blocklisted through
  // RankEnv::fence_client, which returns once this rank's own object client
  // has the map that says so; then the session is closed (its leases, caps,
  // locks and strays go as on a close) and every later reply carries the
  // epoch as the OSD epoch barrier. Returns that epoch. ENOTCONN for no such
  // session; the fence's error leaves the session as it was.
  absl::StatusOr<uint64_t> Evict(SessionId session, const std::string& reason);

  pb::FsStatusReply Status();
  // Flushes everything dirty and trims the journal (tests, clean shutdown).
  absl::Status FlushAll();

  // ---- driving a rank by hand (RankOptions::threads false; tests/sim)
  // A request's run; Step, IoDone and End take the lock themselves, DoIo
  // must be called without it. Handle() is Start + Drive + FinishReply.
  std::unique_ptr<RequestRun> StartRun(const Request& request, Reply* reply);
  RunOutcome StepRun(RequestRun& run);
  bool WaitOver(const RunWait& wait);  // ready, or past its deadline
  absl::Status DoIo(const RunOutcome& outcome);
  void IoDoneRun(RequestRun& run, const absl::Status& status);
  void EndRun(RequestRun& run);
  // The reply for a run that ended with `status` (as Handle gives it).
  void FinishReply(absl::Status status, Reply* reply);
  // Reconnect in parts: the session's opens, locks and resent requests are
  // taken (applied when the window closes), without waiting.
  absl::StatusOr<pb::ReconnectReply> ReconnectBegin(const pb::ReconnectRequest& request);
  bool Reconnecting();
  // Once the window closed: whether every resent request is applied and
  // durable (what Reconnect answers).
  absl::Status ReconnectResult();
  // Ends the reconnect window once every session is back or it timed out:
  // applies the resent requests in their original order. Idempotent.
  void MaybeFinishReconnect();
  // A session's stream, without a thread: opens it, and takes its events.
  absl::StatusOr<uint64_t> OpenLeaseStream(uint64_t session);
  bool TakeLeaseEvents(uint64_t session, uint64_t gen, std::deque<pb::LeaseEvent>* out);
  // The background steps. ExpireSessions evicts the sessions that lapsed
  // (no renewal for session_timeout_ms) and those requests asked to evict
  // (WantEvictLocked); a session that cannot be fenced is closed unfenced.
  absl::Status FlushOnce();
  void ExpireSessions();
  void PropagateRstats();
  // Samples the request count for the rate (once a second).
  void SampleRequests();
  void PurgeSome();
  void RunPendingTrims();
  void TrimCache();
  // Writes one batch of the journal (false: nothing queued).
  bool WriteJournal() { return journal_.WriteOnce(); }
  uint64_t durable_seq() { return journal_.durable_seq(); }
  absl::Status journal_error() { return journal_.error(); }

  // For checks (tests/sim): reads the rank's state under its lock.
  template <typename Fn>
  auto Inspect(Fn fn) {
    absl::MutexLock lock(&mu_);
    return fn(static_cast<const MetaCache&>(cache_), static_cast<const Sessions&>(sessions_),
              static_cast<const absl::flat_hash_map<uint64_t, RStatDelta>&>(rstat_pending_));
  }

  // For checks (tests/sim): the caps invariant of mds/caps/leases.h, now.
  absl::Status CheckCaps() {
    absl::MutexLock lock(&mu_);
    return leases_.CheckCaps(env_.clock->Now());
  }

  const RankOptions& options() const { return options_; }

 private:
  friend class RequestRun;

  // The tables as stored (at start, or when standby-replay begins).
  absl::Status LoadTables();
  // A replayed or followed event into the cache and the sessions.
  absl::Status ApplyReplayed(Event& event);
  // Drives `run` to its end on this thread (the daemon's requests).
  absl::Status Drive(RequestRun& run);
  // mu_ for a request's steps, timed into lock_wait_ns_ (returns when it was
  // taken) and, given that back, lock_held_ns_: how much a finer lock could
  // win (docs/ARCHITECTURE.md, "One lock per rank").
  int64_t LockForRun() ABSL_EXCLUSIVE_LOCK_FUNCTION(mu_);
  void UnlockForRun(int64_t taken) ABSL_UNLOCK_FUNCTION(mu_);
  OpEnv OpEnvLocked() const { return OpEnv{&options_, &env_}; }
  // Reads `load` into the cache (takes mu_ to merge, never over newer state).
  absl::Status LoadMissing(const Load& load);
  // Writes a file's inline data to its first object (a request's move).
  absl::Status WriteMove(const InlineMove& move);
  // Cuts a truncate's objects (I/O).
  absl::Status CutObjects(const Cut& cut);
  uint64_t CommitLocked(Event* event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keeps rstat_pending_ as the event says (live and in replay).
  void NoteRStatsLocked(const Event& event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseSessionLocked(SessionId session, Event* event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A stray whose last holder (`releasing` aside) went: its inode goes and
  // its data is purged.
  void ReleaseStrayLocked(uint64_t ino, SessionId releasing, Event* event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a reconnect: every stray no session holds open is released
  // (purged), in one event.
  void ReleaseUnheldStraysLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends the release to the writers held for `ino` once no request wants
  // them held and no cut of the file is pending.
  void MaybeReleaseHoldsLocked(uint64_t ino) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits, releasing mu_, until `ready` or `deadline` (RankEnv::wait).
  void WaitLocked(const std::function<bool()>& ready, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A janitor's or a start's cut of `ino`'s pending trim: one try; on
  // failure the trim stays pending for the next.
  absl::Status RunTrim(uint64_t ino);
  // Applies resent requests in their original order; whether they are durable.
  absl::Status Replay(std::vector<Request> requests);
  void FlusherLoop();
  void JanitorLoop();
  // The journal broke: the rank must not serve on.
  void JournalFailed(const absl::Status& broken);
  absl::StatusOr<pb::SessionReply> SessionReplyFor(SessionId session);

  const RankOptions options_;
  const RankEnv env_;
  objects::Objects* const objects_;
  MetaStore store_;
  Journal journal_;
  const uint64_t boot_;         // this incarnation
  objects::StripedIo trim_io_;  // thread-safe: used without mu_

  absl::Mutex mu_;
  MetaCache cache_ ABSL_GUARDED_BY(mu_);
  Sessions sessions_ ABSL_GUARDED_BY(mu_);
  Leases leases_ ABSL_GUARDED_BY(mu_);
  InlineMoves moves_ ABSL_GUARDED_BY(mu_);
  Trims trims_ ABSL_GUARDED_BY(mu_);
  RankLocks locks_ ABSL_GUARDED_BY(mu_);
  uint64_t last_seq_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Standby-replay (Follow, then Start; one thread before Start).
  bool followed_ = false;
  uint64_t followed_events_ = 0;
  int64_t replay_ms_ ABSL_GUARDED_BY(mu_) = 0;
  // The reconnect window (after a restart with open sessions).
  bool reconnecting_ ABSL_GUARDED_BY(mu_) = false;
  bool replaying_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time reconnect_until_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint64_t> awaiting_reconnect_ ABSL_GUARDED_BY(mu_);
  std::vector<Request> replays_ ABSL_GUARDED_BY(mu_);
  absl::Status reconnect_result_ ABSL_GUARDED_BY(mu_);
  // Directories' statistics changes not yet propagated up their trees, and
  // the first event that made one of them (0: none pending): the journal is
  // not trimmed past it, so that replay finds them all again.
  absl::flat_hash_map<uint64_t, RStatDelta> rstat_pending_ ABSL_GUARDED_BY(mu_);
  uint64_t rstat_pending_since_ ABSL_GUARDED_BY(mu_) = 0;

  absl::Mutex flush_mu_;  // one flush at a time; taken before mu_
  std::optional<FlushBatch> failed_batch_ ABSL_GUARDED_BY(flush_mu_);
  uint64_t flushed_seq_ ABSL_GUARDED_BY(flush_mu_) = 0;  // the last flush's
  std::thread flusher_;
  std::thread janitor_;

  // Requests driven (Drive), their time from the first step to the last,
  // and how long they waited for mu_ and held it (FsStatusReply.requests...).
  // Eviction: OSD identities evicted by this incarnation (refused a new
  // session), the epoch every reply asks clients' maps to reach, counts.
  absl::flat_hash_set<std::string> evicted_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> osd_epoch_barrier_{0};
  uint64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_eviction_ ABSL_GUARDED_BY(mu_);
  // Evictions the rank decided itself (a lapsed session, a recall or an
  // invalidation not answered within revoke_timeout_ms): session -> reason,
  // evicted by ExpireSessions (the janitor), and those it is evicting now.
  absl::flat_hash_map<uint64_t, std::string> evict_wanted_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint64_t> evict_running_ ABSL_GUARDED_BY(mu_);
  // Asks for `session`'s eviction; false when it cannot be fenced (no OSD
  // identity, or no fence here): it is then passed over, as before eviction.
  bool WantEvictLocked(SessionId session, const std::string& reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the eviction of `session` asked for is over (evicted, gone, or
  // failed).
  bool EvictSettledLocked(SessionId session) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::atomic<uint64_t> requests_{0};
  // (ms, requests_) once a second by the janitor, the last kRateSamples:
  // the request rate `weft fs status` shows.
  std::deque<std::pair<int64_t, uint64_t>> request_samples_ ABSL_GUARDED_BY(mu_);
  static constexpr size_t kRateSamples = 11;
  std::atomic<uint64_t> request_ns_{0};
  std::atomic<uint64_t> lock_wait_ns_{0};
  std::atomic<uint64_t> lock_held_ns_{0};
};

}  // namespace weft::mds
