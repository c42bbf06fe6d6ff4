// The map manager: runs in every weft-mds. Every instance follows the osdmap
// (an etcd watch) and serves it to clients; the one elected through etcd (the
// leader key, bound to its lease) also changes it:
//   - watches the OSD liveness keys (/alive/osd.N, bound to the OSDs' leases)
//     and publishes a new epoch marking an OSD up (with its address) or down;
//   - marks OSDs out once they have been down for `down_out_interval_s`;
//   - applies admin commands (osd create/in/out, pool create/rm).
// Every published map is written with a transaction that checks the map's
// mod revision and that the leader key still holds our lease, so a deposed
// leader can never overwrite a newer map.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/cluster_map/osd_map.h"
#include "common/etcd/etcd_client.h"
#include "mds/manager/slow_disks.h"
#include "proto/cluster.pb.h"

namespace weft::mds {

struct ManagerOptions {
  std::string name;             // this MDS's name
  std::string addr;             // its advertised address
  std::string fsid;
  int64_t lease_ttl_s = 10;     // leadership lease
  int64_t down_out_interval_s = 600;
  SlowDiskOptions slow_disks;   // when `weft status` calls an OSD's disk slow

  absl::Status Validate() const;
};

struct PoolSpec {
  std::string name;
  uint32_t size = 3;
  uint32_t min_size = 0;      // 0 = default
  uint32_t pg_num = 0;        // 0 = default
  std::string failure_domain; // "" = the cluster's default
  uint32_t ec_k = 0, ec_m = 0, ec_chunk_bytes = 0;
};

class MapManager {
 public:
  MapManager(ManagerOptions options, etcd::Client* etcd);
  ~MapManager();

  // Reads the current map (the cluster must be initialized) and starts the
  // follower watch and the election.
  absl::Status Start();
  void Stop();

  std::shared_ptr<const OsdMap> map();
  // The first map newer than `have`, or nullptr after `timeout` or Stop().
  std::shared_ptr<const OsdMap> WaitNewer(Epoch have, absl::Duration timeout);

  bool IsLeader();
  std::string LeaderAddr();
  // The etcd lease behind our leadership (0 when not the leader): writes of
  // other maps (the fsmap) are guarded by it too.
  int64_t LeaderLease();

  // Admin commands; FailedPrecondition naming the leader when not the leader.
  absl::StatusOr<int32_t> OsdCreate(const std::string& host, const std::string& rack,
                                    double weight, int32_t id);
  absl::Status OsdSetIn(int32_t id, bool in);
  // The operator's weight override in [0, 1] (OsdInfo::reweight).
  absl::Status OsdReweight(int32_t id, double reweight);
  // Removes an OSD from the map: refused while it is up or in, or while any
  // PG is not active+clean (its data may still be the only copy somewhere).
  // `purge` also drops what etcd still keeps of it.
  absl::Status OsdRemove(int32_t id, bool purge);
  // `which` is "full", "backfillfull" or "nearfull"; OSDs' flags follow at
  // once.
  absl::Status SetRatio(const std::string& which, double ratio);
  // Adds `client` to the blocklist until `expires_ms` (0: until removed), or
  // renews its entry; OSDs then refuse all its requests. Entries past their
  // expiry are dropped on the way. Returns an epoch whose map holds the
  // change (the one that made it, or a later one).
  absl::StatusOr<Epoch> BlocklistAdd(const std::string& client, int64_t expires_ms);
  // NotFound when `client` is not blocklisted.
  absl::Status BlocklistRemove(const std::string& client);
  absl::Status PoolCreate(const PoolSpec& spec);
  absl::Status PoolRemove(const std::string& name, const std::string& confirm);
  // Changes one setting of a pool: "min_size" (erasure pools: within [k,
  // k+m], k with a warning in Status; replicated: within [1, size]).
  absl::Status PoolSet(const std::string& name, const std::string& key, const std::string& value);
  // Names what uses a pool ("" if nothing): pools in use cannot be removed.
  // Set before the admin service is served.
  void SetPoolUser(std::function<std::string(PoolId)> user) { pool_user_ = std::move(user); }
  // Whether this daemon would rather another one managed the maps now (it
  // holds a rank and a standby is alive: a leader that dies with its rank
  // costs a takeover the leadership TTL, a standby leader only the
  // liveness TTL). A leader for which it says true steps down; a candidate
  // for which it says true gives the others kDeferFor to win first.
  void SetDeferLeadership(std::function<bool()> defer) ABSL_LOCKS_EXCLUDED(mu_);
  static constexpr absl::Duration kDeferFor = absl::Seconds(2);
  // Leaves the leadership to another daemon within a second, and does not
  // campaign for `how_long` (`weft mds fail` of the map manager itself).
  void StepDown(absl::Duration how_long) ABSL_LOCKS_EXCLUDED(mu_);

  // `weft status`, computed from the map and the OSDs' published statistics.
  absl::Status Status(pb::StatusReply* reply);
  // More health checks for Status (the MDS daemons'), before it sums them up.
  void SetExtraHealth(std::function<void(pb::StatusReply*)> add) ABSL_LOCKS_EXCLUDED(mu_);
  // FailedPrecondition "not the map manager; leader=ADDR".
  absl::Status NotLeader();

 private:
  struct Alive {
    std::string addr, host, rack;
    pb::OsdAlive stats;
  };
  // How full an OSD's file system is (0..1) by its published statistics:
  // what marks it full in the map and what `weft status` warns about.
  static double Fill(const pb::OsdAlive& stats);
  // Sets the full flag of each OSD in `alive` from its fill against the
  // map's full ratio; a flag once set stays until the fill is a point under
  // the ratio, so that a fill hovering at it does not publish an epoch per
  // statistics report. Returns whether a flag changed.
  static bool UpdateFullFlags(OsdMap* m, const absl::flat_hash_map<int32_t, Alive>& alive);

  void OnMapBytes(const std::string& bytes, int64_t mod_revision);
  void ElectionLoop();
  absl::Status LeadOnce(int64_t lease);
  bool Defers() ABSL_LOCKS_EXCLUDED(mu_);
  void OnAliveEvents(const std::vector<etcd::WatchEvent>& events);
  void Reconcile();
  // PG -> the first epoch of an interval its primary reported active+clean
  // in (the OSDs' published statistics): past intervals before it are done.
  std::map<PgId, Epoch> CleanSince();
  // Marks out OSDs down longer than the grace, counted from when this leader
  // took over at the earliest.
  void CheckDownOut(int64_t leading_since_ms);
  // Recomputes every pool's upmap items (per-PG exceptions that even out the
  // PGs per OSD). Called when the set of OSDs that hold data changes: pool
  // created, OSD created, marked in or out, or back up. Never on "down", so
  // that a short outage moves nothing.
  static void Rebalance(OsdMap* map);
  // Applies `change` to a copy of the current map and publishes epoch + 1.
  absl::Status Mutate(const std::function<absl::Status(OsdMap*)>& change);

  const ManagerOptions options_;
  etcd::Client* const etcd_;
  const std::string prefix_;

  absl::Mutex mu_;
  std::shared_ptr<const OsdMap> map_ ABSL_GUARDED_BY(mu_);
  int64_t map_revision_ ABSL_GUARDED_BY(mu_) = 0;
  bool leader_ ABSL_GUARDED_BY(mu_) = false;
  int64_t leader_lease_ ABSL_GUARDED_BY(mu_) = 0;
  std::function<bool()> defer_ ABSL_GUARDED_BY(mu_);
  absl::Time step_down_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::function<void(pb::StatusReply*)> extra_health_ ABSL_GUARDED_BY(mu_);
  std::string leader_addr_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int32_t, Alive> alive_ ABSL_GUARDED_BY(mu_);
  // When a published map last pruned past intervals (every publish does).
  absl::Time last_prune_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  // Recovery progress as Status saw it, the last ~30 s.
  struct RecoverySample {
    absl::Time at;
    uint64_t objects = 0;  // copies left
    uint64_t bytes = 0;
  };
  absl::Mutex progress_mu_;
  std::deque<RecoverySample> recovery_samples_ ABSL_GUARDED_BY(progress_mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool leader_key_changed_ ABSL_GUARDED_BY(mu_) = false;

  std::function<std::string(PoolId)> pool_user_;  // set before Start()
  absl::Mutex mutate_mu_;  // one map change at a time; taken before mu_
  std::unique_ptr<etcd::Watch> map_watch_;
  std::unique_ptr<etcd::Watch> leader_watch_;
  std::thread election_;
};

}  // namespace weft::mds
