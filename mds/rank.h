// One MDS rank: a filesystem's namespace served from this daemon.
//
// Request flow (see docs/ARCHITECTURE.md, "Metadata server"):
//   Handle() takes mu_, answers a retried request from the session's
//   completed table, else runs the operation (mds/ops/). An operation reads
//   the cache through an OpContext; when something is not cached it stops,
//   Handle() drops mu_, loads it from the metadata pool, and runs the
//   operation again from the top. An operation that changes something returns
//   one JournalEvent of redo records; Handle() applies it to the cache,
//   assigns it the next sequence number and queues it to the journal (all
//   under mu_, so the journal order is the order of application), drops mu_,
//   waits until the event is durable, and replies.
//
// Background threads: the journal writer; the flusher, which writes dirty
// metadata to the backing objects once the events that produced it are
// durable, then trims the journal; the janitor, which times out sessions,
// propagates recursive statistics and purges deleted files' data.
//
// Lock order: mu_, then the journal's internal lock; mu_, then the locks of
// the maps that the data_pools callback reads. No I/O under mu_.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "common/locks/lock_table.h"
#include "fuse-client/lib/object_client.h"
#include "fuse-client/lib/striped_io.h"
#include "mds/cache/dir_leases.h"
#include "mds/cache/meta_cache.h"
#include "mds/fs/layout.h"
#include "mds/journal/journal.h"
#include "mds/store/meta_store.h"
#include "proto/mds.pb.h"

namespace weft::mds {

class OpContext;

// Inline data to write to a file's first object, as of its inline_version.
struct InlineMove {
  uint64_t ino = 0;
  PoolId pool;
  std::string data;
  uint64_t inline_version = 0;
};

struct RankOptions {
  uint32_t fs_id = 0;
  std::string fs_name;
  PoolId metadata_pool;
  PoolId data_pool;                       // default layout pool
  uint64_t cache_max_bytes = 1ull << 30;  // mds_cache_memory_limit
  int64_t session_timeout_ms = 60000;
  int64_t flush_interval_ms = 1000;
  int64_t rstat_interval_ms = 1000;
  size_t frag_split_entries = 10000;
  size_t completed_per_session_max = 4096;
  // Early ("unsafe") replies while at most this many events are not durable;
  // beyond it a reply waits for the journal (backpressure).
  uint64_t unsafe_events_max = 4096;
  // After a restart, how long the rank waits for the sessions it knew to
  // reconnect and resend their unsafe requests before serving new ones.
  int64_t reconnect_timeout_ms = 10000;
  // Directory leases (mds/cache/dir_leases.h): how long a grant is trusted;
  // 0 grants none. Must be shorter than reconnect_timeout_ms: a restarted
  // rank serves nobody before every lease of its earlier life ran out.
  int64_t dir_lease_ms = 5000;
  // How long an operation waits for another session to flush the buffered
  // writes of a file it is about to show (a recall); then it goes on with
  // what the MDS has.
  int64_t write_recall_timeout_ms = 10000;
  JournalOptions journal;
  pb::FileLayout default_layout;          // pool 0 = data_pool, 4 MiB objects
  uint64_t object_bytes_max = 128ull << 20;  // osd_max_object_size: no layout above it
  // New regular files keep up to this many bytes of data in their inode
  // (InodeRec.data_inline), never more than their layout's stripe unit; 0: none.
  uint64_t inline_max_bytes = 0;
};

// Capacity for statfs, from the cluster map manager.
struct Capacity {
  uint64_t bytes_total = 0, bytes_avail = 0, bytes_used = 0;
};

// The inodes an operation's reply shows (its attr, readdir's entries) and
// those it looked at (`touched`).
std::vector<uint64_t> ShownInos(const pb::MetaReply& reply, const std::vector<uint64_t>& touched);

class MdsRank {
 public:
  // A pending change of a directory's recursive statistics.
  struct RStatDelta {
    int64_t rbytes = 0, rfiles = 0, rsubdirs = 0;
    int64_t rctime_ns = 0;
  };

  // `data_pools` reads the in-memory maps; operations call it under the
  // rank's lock, so it must not do I/O.
  MdsRank(RankOptions options, client::ObjectClient* objects,
          std::function<Capacity()> capacity, std::function<DataPools()> data_pools);
  ~MdsRank();

  // Creates the filesystem's objects (root directory, tables, journal).
  absl::Status Create();
  // Loads tables, replays the journal, starts the background threads.
  absl::Status Start();
  void Stop();

  uint32_t fs_id() const { return options_.fs_id; }
  const std::string& fs_name() const { return options_.fs_name; }

  absl::StatusOr<pb::SessionReply> SessionOpen(const std::string& client, uint64_t reclaim);
  absl::StatusOr<pb::SessionReply> SessionRenew(uint64_t session);
  absl::Status SessionClose(uint64_t session);

  // Any namespace operation. Errors are in reply.status (with errno). Every
  // reply carries the rank's boot id and durable journal sequence.
  pb::MetaReply Handle(const pb::MetaRequest& request);
  // A session back after a restart: its open files, and its requests that an
  // earlier incarnation answered unsafe (see proto ReconnectRequest). Returns
  // once every resent request of every session is applied and durable.
  absl::StatusOr<pb::ReconnectReply> Reconnect(const pb::ReconnectRequest& request);
  uint64_t boot() const { return boot_; }

  // A session's lease stream: registers it (which ends what an earlier
  // stream of the session held), writes a hello, then every revoke for the
  // session through `write` until `write` fails, `cancelled` says so, the
  // session ends or the rank stops.
  absl::Status ServeLeases(uint64_t session, const std::function<bool()>& cancelled,
                           const std::function<bool(const pb::LeaseEvent&)>& write);
  // The client no longer trusts these leases.
  absl::StatusOr<pb::SessionReply> LeaseAck(const pb::LeaseAckRequest& request);

  pb::FsStatusReply Status();
  // Flushes everything dirty and trims the journal (tests, clean shutdown).
  absl::Status FlushAll();

  // For operations (mds/ops): under mu_.
  MetaCache* cache() { return &cache_; }
  const RankOptions& options() const { return options_; }
  Capacity capacity() { return capacity_(); }
  DataPools data_pools() { return data_pools_(); }
  // By the map the rank's object client follows (no I/O).
  bool ClusterFull();

 private:
  struct Load {
    std::vector<uint64_t> inodes;
    std::vector<std::pair<uint64_t, Frag>> frags;
    std::vector<uint64_t> inline_data;
  };
  // Writes a file's inline data to its first object (an operation's
  // OpContext::MoveInline), outside mu_.
  absl::Status WriteMove(const InlineMove& move);
  // A file of `touched` whose inline data another request than the one
  // moving `mine` moved without its record being durable yet (0: none).
  uint64_t RecordedMoveLocked(const std::vector<uint64_t>& touched, uint64_t mine) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Until no request moves `ino` (or the rank stops).
  void AwaitMoveLocked(uint64_t ino) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status LoadMissing(const Load& load);
  uint64_t CommitLocked(pb::JournalEvent* event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CloseSessionLocked(uint64_t session, pb::JournalEvent* event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseStrayLocked(uint64_t ino, uint64_t releasing, pb::JournalEvent* event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Dispatch(OpContext& ctx, const pb::MetaRequest& request, pb::MetaReply* reply)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Every handle of the request (a batch); the first error, if any.
  absl::Status ReleaseLocked(const pb::MetaRequest& request, pb::JournalEvent* event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status ReleaseOneLocked(uint64_t session, uint64_t ino, bool write,
                                pb::JournalEvent* event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AfterCommitLocked(OpContext& ctx) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Before a change: revokes other sessions' leases on the directories it
  // changes and waits (releasing mu_) until they are returned or ran out.
  absl::Status WaitForLeasesLocked(const pb::MetaRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After an operation (done, or a lookup's ENOENT): leases for its reply.
  // A create of a new regular file without xattrs by a session with a lease
  // stream: the session may change its mode, owner and times on its own
  // until recalled (MetaReply.attr_authority; writers_ brings the recall).
  void GrantAttrAuthorityLocked(const pb::MetaRequest& request, pb::MetaReply* reply)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void GrantLeasesLocked(const pb::MetaRequest& request, const pb::MetaReply& done,
                         google::protobuf::RepeatedPtrField<pb::DirLease>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendLeaseEventLocked(uint64_t session, const pb::LeaseEvent& event)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropLeasesLocked(uint64_t session) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After an operation whose reply shows, or that looked at (`touched`),
  // files that other sessions hold open for writing (they may buffer writes,
  // also after close, and attribute changes): recalls those
  // writes and waits, releasing mu_, until they are acknowledged or
  // write_recall_timeout_ms passed. Returns whether it waited; the operation
  // then runs again, and `recalled` keeps it from asking the same twice.
  using RecallKey = std::pair<uint64_t, uint64_t>;  // (session, ino)
  // `trims`: the operation's truncates; their files' writers are also held
  // (LeaseEvent.hold) until the objects are cut, and `held` gets them
  // (the request's end lets them go: EndHoldsLocked).
  bool RecallWritesLocked(const pb::MetaRequest& request, const pb::MetaReply& reply,
                          const std::vector<uint64_t>& touched,
                          const std::vector<pb::TrimRec>& trims,
                          absl::flat_hash_set<RecallKey>* recalled,
                          absl::flat_hash_set<RecallKey>* held)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A session's recalls can no longer be answered (its stream ended).
  void DropRecallsLocked(uint64_t session) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keeps writers_ in step with a session's opens_write of `ino`.
  void NoteWriterLocked(uint64_t session, uint64_t ino) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropWriterLocked(uint64_t session, uint64_t ino) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ---- truncates' cuts of data objects (rank_trims.cc)
  // Cuts the objects of `ino`'s pending trim (cache_.trims()), records it
  // done and durable, then lets the held writers go. Waits for a cut another
  // thread runs. `retry`: tries again every second until done or the rank
  // stops; else one try, and the trim stays pending for the janitor.
  absl::Status RunTrim(uint64_t ino, bool retry);
  // One try at every pending trim no thread runs (start, janitor).
  void RunPendingTrims();
  // A request that held these writers ends (whether its truncate was
  // applied, failed or was decided otherwise).
  void EndHoldsLocked(const absl::flat_hash_set<RecallKey>& held)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sends the release to the writers held for `ino` once no request wants
  // them held and no cut of the file is pending.
  void MaybeReleaseHoldsLocked(uint64_t ino) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CutObjects(const pb::TrimRec& trim);
  // A file whose objects are being cut: nobody may see or write it before.
  bool TrimBlockedLocked(uint64_t ino) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return cache_.trims().contains(ino) || trims_running_.contains(ino);
  }
  // Waits (releasing mu_) while any of `inos` is blocked by a trim; returns
  // whether it waited, Unavailable after kTrimWaitMs.
  absl::StatusOr<bool> AwaitTrimsLocked(const std::vector<uint64_t>& inos)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same for what a reply shows (ShownInos), which is listed only when
  // a trim is pending at all: every operation asks.
  absl::StatusOr<bool> AwaitTrimsLocked(const pb::MetaReply& reply,
                                        const std::vector<uint64_t>& touched)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ---- advisory locks (rank_locks.cc)
  // A LockOp; may wait (releasing mu_) up to its wait_ms.
  absl::Status RunLock(const pb::MetaRequest& request, pb::MetaReply* reply);
  bool OpenInSessionLocked(uint64_t session, uint64_t ino) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool WouldDeadlockLocked(const locks::Owner& owner, const std::vector<locks::Lock>& blockers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The session's locks on `ino` (0: all of them) go; waiters look again.
  void DropSessionLocksLocked(uint64_t session, uint64_t ino) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A reconnecting session's locks, after its opens: those that cannot be
  // given back are listed in reply->locks_lost.
  void ReclaimLocksLocked(const pb::ReconnectRequest& request, pb::ReconnectReply* reply)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `replay`: a request resent through Reconnect (its original time and inode).
  absl::Status RunOp(const pb::MetaRequest& request, pb::MetaReply* reply, bool replay = false);
  // Ends the reconnect window once every session is back or it timed out:
  // applies the resent requests in their original order. Idempotent.
  void MaybeFinishReconnect();
  void Replay(std::vector<pb::MetaRequest> requests);
  void FlusherLoop();
  void JanitorLoop();
  absl::Status FlushOnce();
  void ExpireSessions();
  void PropagateRstats();
  void PurgeSome();
  // Adds an inode's statistics change to its directory's pending delta.
  friend class OpContext;

  const RankOptions options_;
  client::ObjectClient* const objects_;
  std::function<Capacity()> capacity_;
  std::function<DataPools()> data_pools_;
  MetaStore store_;
  Journal journal_;

  absl::Mutex mu_;
  MetaCache cache_ ABSL_GUARDED_BY(mu_);
  uint64_t last_seq_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_session_ ABSL_GUARDED_BY(mu_) = 1;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t replay_ms_ = 0;
  const uint64_t boot_;  // this incarnation, random
  // The reconnect window (after a restart with open sessions).
  bool reconnecting_ ABSL_GUARDED_BY(mu_) = false;
  bool replaying_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time reconnect_until_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint64_t> awaiting_reconnect_ ABSL_GUARDED_BY(mu_);
  std::vector<pb::MetaRequest> replays_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, RStatDelta> rstat_pending_ ABSL_GUARDED_BY(mu_);

  // Directory leases and the sessions' lease streams.
  struct LeaseStream {
    uint64_t gen = 0;                 // which ServeLeases call owns it
    std::deque<pb::LeaseEvent> queue; // revokes not yet written
  };
  DirLeaseTable leases_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, LeaseStream> lease_streams_ ABSL_GUARDED_BY(mu_);
  uint64_t lease_stream_gen_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t lease_returns_ ABSL_GUARDED_BY(mu_) = 0;  // bumped when a lease goes
  absl::flat_hash_map<RecallKey, uint64_t> write_recalls_ ABSL_GUARDED_BY(mu_);  // -> seq
  // ino -> sessions that hold it open for writing, kept at open, release,
  // reconnect and session close; each is checked against its opens_write.
  absl::flat_hash_map<uint64_t, absl::flat_hash_set<uint64_t>> writers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_recall_seq_ ABSL_GUARDED_BY(mu_) = 0;
  // Files whose inline data a request is moving to objects: one at a time,
  // so that no late write of old bytes lands after the move was recorded
  // and clients wrote objects. The value: the move is recorded, not yet
  // durable; no other request answers about the file until it is (the
  // mover's client writes objects only then, and so must every other).
  absl::flat_hash_map<uint64_t, bool> moving_ ABSL_GUARDED_BY(mu_);
  // Truncates: files whose objects a thread is cutting (until its trim_done
  // is durable), the sessions holding their writes meanwhile, and how many
  // holds of each file requests asked for and have not ended.
  absl::flat_hash_set<uint64_t> trims_running_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, absl::flat_hash_set<uint64_t>> trim_holds_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, int> hold_requests_ ABSL_GUARDED_BY(mu_);
  client::StripedIo trim_io_;

  // Advisory locks of every session; locks_gen_ moves whenever a lock goes
  // or gets weaker (waiters look again). lock_waiters_: requests waiting,
  // for deadlock detection and status.
  locks::LockTable locks_ ABSL_GUARDED_BY(mu_);
  uint64_t locks_gen_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_lock_waiter_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, locks::Lock> lock_waiters_ ABSL_GUARDED_BY(mu_);

  absl::Mutex flush_mu_;  // one flush at a time; taken before mu_
  std::optional<FlushBatch> failed_batch_ ABSL_GUARDED_BY(flush_mu_);
  std::thread flusher_;
  std::thread janitor_;
};

}  // namespace weft::mds
