// One placement group on this OSD: its role in the current interval, its log,
// and the replicated write path, peering and recovery.
//
// Concurrency. Two locks, always taken in this order:
//   1. order_ — a FIFO ticket section that orders the PG's mutations: client
//      writes, recovery pushes and peering steps run one at a time, in arrival
//      order, so replicas apply them in the primary's order. It is held across
//      I/O on purpose: it is the PG's sequencer, not a data lock.
//   2. mu_ — guards the fields below; never held across I/O or RPCs.
// Reads take neither across I/O: the store applies transactions atomically.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/cluster_map/osd_map.h"
#include "common/ec/ec_read.h"
#include "common/ec/erasure_code.h"
#include "common/striping/stripe_layout.h"
#include "common/placement/placement.h"
#include "osd/osd_options.h"
#include "osd/peer_client.h"
#include "osd/pg/pg_log.h"
#include "osd/recovery_throttle.h"
#include "osd/store/object_store.h"
#include "proto/cluster.pb.h"
#include "proto/osd.pb.h"

namespace weft {
class ThreadPool;
}

namespace weft::osd {

// Counters shared by all PGs of the daemon, for metrics and `weft status`.
struct OsdCounters {
  std::atomic<uint64_t> read_bytes{0};
  std::atomic<uint64_t> write_bytes{0};
  std::atomic<uint64_t> recovery_bytes{0};
  std::atomic<uint64_t> ops{0};
  std::atomic<uint64_t> read_repairs{0};   // copies rewritten after a bad read
  std::atomic<uint64_t> scrub_errors{0};   // inconsistent objects found by scrubs, ever
  std::atomic<uint64_t> scrub_repairs{0};  // copies rewritten by repairs
  std::atomic<uint64_t> scrubbed_bytes{0}; // read by deep scrubs
};

// What a PG needs from its daemon.
struct PgContext {
  ObjectStore* store = nullptr;
  OsdId whoami{-1};
  PeerClient* peers = nullptr;
  ThreadPool* background = nullptr;  // peering and recovery run here
  RecoveryThrottle* recovery = nullptr;  // bounds on recovery (may be null: none)
  const OsdOptions* options = nullptr;
  OsdCounters* counters = nullptr;
  // Called when the state this PG reports may have changed (peering ended,
  // a member recovered): the daemon republishes its statistics soon rather
  // than at its next tick, so `weft status` follows a map change quickly.
  std::function<void()> state_changed;
};

// A FIFO ticket lock: waiters enter in the order they arrived.
class OrderedSection {
 public:
  void Enter();
  void Leave();

 private:
  absl::Mutex mu_;
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t serving_ ABSL_GUARDED_BY(mu_) = 0;
};

// Holds an OrderedSection for a scope.
class SectionGuard {
 public:
  explicit SectionGuard(OrderedSection* section) : section_(section) { section_->Enter(); }
  ~SectionGuard() { section_->Leave(); }
  SectionGuard(const SectionGuard&) = delete;
  SectionGuard& operator=(const SectionGuard&) = delete;

 private:
  OrderedSection* section_;
};

class Pg : public std::enable_shared_from_this<Pg> {
 public:
  // kDown: a past interval that may hold the newest writes cannot be heard
  // from (common/placement/past_intervals.h); waits for its OSDs.
  enum class State { kStray, kPeering, kIncomplete, kDown, kActive, kReplica, kReplicaActive };

  // `pool` gives the PG its kind: replicated, or erasure-coded with its
  // profile (which never changes for a pool).
  Pg(PgId id, PgContext ctx, PgLog log, const PoolInfo& pool);

  const PgId& id() const { return id_; }
  const std::string& coll() const { return coll_; }

  // A new map epoch: recomputes this OSD's role; when the acting set or the
  // primary changed, a new interval starts (the primary peers again).
  void OnMap(std::shared_ptr<const OsdMap> map, const PoolInfo& pool,
             const placement::PgMapping& mapping);

  // Client operations (this OSD must be the active primary, or the request
  // asks for the local copy). Blocking; fills `reply->status`.
  // A retry of a request already in the log: fills its version and returns
  // true (the write is not applied again). The daemon asks too before it
  // refuses a write for a full cluster.
  bool AnswerIfApplied(const pb::OpRequest& req, pb::OpReply* reply);
  void HandleOp(pb::OpRequest* req, pb::OpReply* reply);  // writes move the data out
  void HandleList(const pb::PgListRequest& req, pb::PgListReply* reply);

  // From the primary.
  void HandleRepOp(pb::RepOpRequest* req, pb::RepOpReply* reply);  // moves the data out
  void HandleQuery(const pb::PgQueryRequest& req, pb::PgQueryReply* reply);
  void HandlePush(const pb::PushRequest& req, pb::PushReply* reply);
  void HandleActivate(const pb::ActivateRequest& req, pb::ActivateReply* reply);
  // Erasure pools, during peering: undo this shard's newest write.
  void HandleRollback(const pb::RollbackRequest& req, pb::PushReply* reply);

  // A member's state as peering sees it (pg_peering.cc).
  struct PeerMember;

  // "active+clean", "peering", ... and the number of local objects.
  std::string StateName();
  // Primary: the first epoch of the current interval, what a down PG waits
  // for, the copies its members (itself included) still lack (PgStat).
  void FillStat(pb::PgStat* stat);
  // weft pg query: state, interval, members, log bounds, what is missing
  // where, scrubs, and why the PG is not active when it is not. Lines of
  // "key: value".
  std::string Describe();

  // ---- scrub and repair (pg_scrub.cc; docs/ARCHITECTURE.md, "Scrub and
  // repair")
  // Primary: compares the members' copies of every object, a chunk at a
  // time with the PG's writes held for the chunk (PGC_SCRUB: sizes,
  // versions, xattrs, omap; PGC_DEEP_SCRUB: also every byte; PGC_REPAIR:
  // deep, then every bad copy rewritten from a good one). Blocking; only on
  // an active+clean PG. The inconsistencies found go to *found and stay in
  // the PG's state until a later scrub finds them gone.
  absl::Status Scrub(pb::PgCommandType type, std::vector<pb::InconsistentObject>* found);
  // Primary: a member (`bad`) read a damaged copy of `oid`: rewrites it from
  // a good one.
  absl::Status RepairObject(const std::string& oid, OsdId bad);
  // Member: what it holds of a chunk of objects (ScrubMapRequest).
  void HandleScrubMap(const pb::ScrubMapRequest& req, pb::ScrubMapReply* reply);
  pb::PgScrubStat ScrubStat();
  std::vector<pb::InconsistentObject> Inconsistent();
  // Primary: the scrub this PG is due for at `now` (PGC_NONE: none).
  pb::PgCommandType ScrubDue(absl::Time now);
  // Erasure pools: sends the commit point to the other shards if one is due
  // (osd_ec_commit_delay_ms passed without a sub-write carrying it), or now
  // with `force`. The daemon's commit ticker calls this for every PG.
  void EcFlushCommit(absl::Time now, bool force = false);
  bool IsPrimary();
  // Not a member of the current interval: a copy left from an earlier one.
  bool IsStray();
  // PGC_CLEAN_CHECK: OK and the acting set when active+clean.
  absl::Status CleanCheck(pb::PgCommandReply* reply);

 private:
  struct Interval {
    uint64_t id = 0;           // bumps with every change of acting set or primary
    Epoch start_epoch = 0;
    std::vector<OsdId> acting;
    std::vector<OsdId> up;
    std::vector<OsdId> shards;  // erasure pools: OSD of each shard position, kNoOsd holes
    OsdId primary{-1};
    uint32_t size = 0;
    uint32_t min_size = 0;
  };

  // Write path (pg.cc).
  absl::Status DoWrite(pb::OpRequest* req, pb::OpReply* reply);
  // `target` now has `oid` (pushed or rebuilt).
  void ClearPeerMissing(OsdId target, const std::string& oid);
  // Tells the daemon that what this PG reports may have changed.
  void StateChanged() const {
    if (ctx_.state_changed) ctx_.state_changed();
  }
  absl::Status CheckPrimary(uint64_t* interval_id);
  bool IsMissingHere(const std::string& oid) {
    absl::MutexLock lock(&mu_);
    return log_.IsMissing(oid);
  }
  absl::Status RecoverBeforeWrite(const std::string& oid, uint64_t interval_id);
  absl::Status ReplicaCheck(Epoch sender_epoch, bool need_active)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RequestRepeer(uint64_t interval_id, const absl::Status& why);

  // Read repair (pg_scrub.cc). Primary of a replicated pool, its own copy
  // of `oid` failed its checksums (`why`): pulls a good one from another
  // member (order_ taken here). DataLoss naming the object when none is.
  absl::Status RepairLocalCopy(const std::string& oid, uint64_t interval_id,
                               const absl::Status& why);
  // This OSD's copy of `oid` failed a read (`why`) outside the primary's
  // repairing read path (a shard read, a replica's local read): asks the
  // primary, in the background, to rewrite it. At most one report per
  // object at a time.
  void ReportDamaged(const std::string& oid, const absl::Status& why);
  // Rewrites member `bad`'s copy of `oid` from a good one (order_ held).
  absl::Status RepairObjectLocked(const std::string& oid, OsdId bad, uint64_t interval_id);
  // The other acting members that are not missing `oid`, by address.
  std::vector<std::string> PullSources(const std::string& oid);
  // Scrub internals (pg_scrub.cc).
  struct ScrubCopy;
  absl::Status BuildScrubMap(const pb::ScrubMapRequest& req, pb::ScrubMapReply* reply);
  absl::Status ScrubObject(const std::string& oid, const std::vector<ScrubCopy>& list, bool deep,
                           bool repair, uint64_t interval_id, pb::InconsistentObject* bad);
  absl::Status EcDeepCheck(const std::string& oid, uint64_t logical_size,
                           std::vector<uint32_t>* bad_parity);

  // Erasure pools: shard reads and the primary's read path (ec_read.cc).
  struct EcObject {
    bool exists = false;
    uint64_t size = 0;  // logical
    Version version;
    int64_t mtime_ns = 0;
  };
  absl::Status EcShardRead(const pb::OpRequest& req, pb::OpReply* reply);
  absl::Status EcPrimaryRead(const pb::OpRequest& req, pb::OpReply* reply);
  // Reads shards (stat: GETXATTRS) through the shard OSDs or ourselves. With
  // `via`, read i goes to via[i] as a rebuild read (OPF_REBUILD_READ).
  std::vector<ec::ShardReply> EcFetch(const std::string& oid,
                                      const std::vector<ec::ShardRead>& reads, bool stat,
                                      const std::vector<OsdId>* via = nullptr);
  std::vector<bool> EcAvailable();
  absl::StatusOr<EcObject> EcStat(const std::string& oid);
  absl::StatusOr<ec::RangeRead> EcReadRange(const std::string& oid, uint64_t a, uint64_t b);
  // Erasure writes (ec_write.cc).
  absl::Status EcWrite(pb::OpRequest* req, pb::OpReply* reply);
  // Versions the write (under mu_) and addresses each shard's sub-write.
  absl::Status EcStampSubWrites(uint64_t interval_id, LogEntry* entry,
                                std::shared_ptr<std::vector<pb::RepOpRequest>> subs,
                                std::vector<PeerClient::RepOpTarget>* targets,
                                std::vector<std::shared_ptr<const pb::RepOpRequest>>* target_reqs,
                                pb::RepOpRequest** local);
  absl::Status EcApplySubWrite(pb::RepOpRequest* req);  // moves the data out
  void EcHandleSubWrite(pb::RepOpRequest* req, pb::RepOpReply* reply);
  // Raises the commit point and drops the rollback data it releases.
  void EcCommitLocked(const Version& committed, Transaction* txn)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EcNoteCommittedLocked(const Version& committed) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void EcSendCommit(const Version& committed);
  // Undoes this shard's newest write (order_ held by the caller).
  absl::Status EcRollbackLocal(const Version& version);
  // Erasure recovery (ec_recovery.cc): rebuilds `oid`'s shard on `target`.
  absl::Status EcPushShard(OsdId target, const std::string& oid, uint64_t interval_id);
  // The xattrs shard `shard` of `oid` must carry, from another shard.
  absl::Status EcRebuildXattrs(const std::string& oid, uint32_t shard, pb::PushRequest* head);
  absl::StatusOr<std::string> EcRebuildRange(const std::string& oid, uint32_t shard,
                                              const EcObject& obj, uint64_t offset,
                                              uint64_t length);

  absl::Status EcRollbackPartial(Epoch epoch, std::vector<PeerMember>* members);
  // Adds to the last page of a listing the objects this primary still lacks.
  void AddSelfMissing(const pb::PgListRequest& req, pb::PgListReply* reply);
  absl::Status EcRebuildIfMoved(const PeerMember& self, const PeerMember& auth, bool auth_remote,
                                std::set<std::string>* self_missing);

  // Peering and recovery (pg_peering.cc).
  void SchedulePeering(uint64_t interval_id, int64_t delay_ms);
  absl::Status Peer(uint64_t interval_id);
  // With `expect`, a source whose copy is absent or at another version is
  // passed over (read repair: the member must hold what the log says).
  absl::Status PullObject(const std::string& oid, const std::vector<std::string>& sources,
                          uint64_t interval_id, const Version* expect = nullptr);
  absl::Status PushObject(OsdId target, const std::string& addr, const std::string& oid,
                          uint64_t interval_id);
  void RecoverAll(uint64_t interval_id);
  absl::StatusOr<std::map<std::string, Version>> ListAll(const std::string& addr, bool local);
  std::string AddrOf(OsdId osd);
  bool StillInterval(uint64_t interval_id);

  const PgId id_;
  const std::string coll_;
  const PgContext ctx_;
  // Erasure pools only (null otherwise); fixed at construction.
  const std::unique_ptr<ec::ErasureCode> ec_;
  const striping::StripeLayout layout_;
  OrderedSection order_;

  absl::Mutex mu_;
  std::shared_ptr<const OsdMap> map_ ABSL_GUARDED_BY(mu_);
  Interval interval_ ABSL_GUARDED_BY(mu_);
  State state_ ABSL_GUARDED_BY(mu_) = State::kStray;
  PgLog log_ ABSL_GUARDED_BY(mu_);
  // Replica -> objects it lacks, known by the primary after peering.
  std::map<OsdId, std::set<std::string>> peer_missing_ ABSL_GUARDED_BY(mu_);
  uint64_t activated_interval_ ABSL_GUARDED_BY(mu_) = 0;  // replica: activated by primary
  bool repeer_scheduled_ ABSL_GUARDED_BY(mu_) = false;
  // Members peering found new to the PG or too far behind for the log to
  // say what they lack: they get copies of everything that differs
  // ("backfilling" rather than "recovering"), and none while their OSD is
  // past the backfillfull ratio.
  std::set<OsdId> backfill_targets_ ABSL_GUARDED_BY(mu_);
  // A member refused a recovery push for a full disk; retried every 5 s.
  bool recovery_toofull_ ABSL_GUARDED_BY(mu_) = false;
  // kDown: the past intervals peering could not hear from, for people.
  std::vector<std::string> down_blocked_by_ ABSL_GUARDED_BY(mu_);
  // Erasure pools: every write up to here is on all shards of its interval;
  // newer ones may still be rolled back (and are not served by shard reads).
  Version ec_committed_ ABSL_GUARDED_BY(mu_);
  // The commit point on disk: rollback data up to here is deleted.
  Version ec_committed_persisted_ ABSL_GUARDED_BY(mu_);
  // The commit point the other shards were last told (in a sub-write or a
  // commit message), and when a newer one goes out by itself.
  Version ec_commit_told_ ABSL_GUARDED_BY(mu_);
  absl::Time ec_commit_due_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  // The shard position this OSD's objects of the PG were written for; -1 none.
  int32_t ec_stored_shard_ ABSL_GUARDED_BY(mu_) = -1;
  // Erasure pools: pieces of each write's rollback data, by LogKey(version).
  std::map<std::string, uint32_t> ec_rollback_pieces_ ABSL_GUARDED_BY(mu_);
  // Shard reads allowed: activated since this OSD started, and in the acting
  // set of every interval since.
  bool ec_readable_ ABSL_GUARDED_BY(mu_) = false;
  // Records our current position as the stored one (at activation).
  void EcStoreShardLocked(Transaction* txn) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Scrub state: when the last ones ended (persisted as collection meta
  // "scrub_stamps", so a restart does not rescrub everything), what the last
  // one found and left (persisted too), and the objects reported damaged
  // whose repair is under way.
  struct ScrubState {
    int64_t last_scrub_ms = 0;
    int64_t last_deep_scrub_ms = 0;
    bool saved = false;  // the stamps are on disk
    bool scrubbing = false;
    bool deep = false;
    uint64_t objects = 0;
    std::vector<pb::InconsistentObject> inconsistent;
  };
  ScrubState scrub_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> damage_reported_ ABSL_GUARDED_BY(mu_);
};

// Erasure pools: internal xattrs of every shard object.
inline constexpr char kEcSizeXattr[] = "_ec.size";    // logical size, decimal
inline constexpr char kEcShardXattr[] = "_ec.shard";  // shard position, decimal
inline constexpr char kEcCommittedMeta[] = "ec_committed";
inline constexpr char kEcShardMeta[] = "ec_shard";

// The scrub state of `coll` as a PG's constructor finds it: the stamps
// saved, or now for a PG never scrubbed (the scheduler counts its intervals
// from then), and what the last scrub left unrepaired.
struct ScrubStamps {
  int64_t last_scrub_ms = 0;
  int64_t last_deep_scrub_ms = 0;
  bool saved = false;
  std::vector<pb::InconsistentObject> inconsistent;  // what the last scrub left
};
ScrubStamps ReadScrubStamps(ObjectStore* store, const std::string& coll);

// Adds a recovery piece to `txn` (the receiver's side of a push or pull).
void AddPushPiece(const pb::PushRequest& req, Transaction* txn);

// "1.2a" collection name for a PG.
std::string CollectionName(const PgId& id);

}  // namespace weft::osd
