// The filesystem side of weft-mds: the ranks this daemon holds and the
// supervisor that starts and stops them. Each filesystem has max_mds ranks
// (FsInfo.ranks; 1 unless set), each held by the live daemon the fsmap names
// (name and object client), with its own journal and tables; the others
// are standbys. The map manager (the elected daemon) assigns them:
// when the holder's liveness record (MdsRegistry) is gone, it blocklists the
// holder's object client on the OSDs, then names a standby (the live daemon
// holding the fewest ranks), which waits for that blocklist epoch, replays
// the journal and lets the clients reconnect. A daemon serves a rank only
// while its own liveness record surely stands (MdsRegistry::Trusted), so a
// frozen holder that wakes up after its rank moved on answers nothing
// (docs/ARCHITECTURE.md, "Standbys and takeover").
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "common/config/config.h"
#include "common/objects/object_client.h"
#include "common/rpc/rpc.h"
#include "proto/cluster.grpc.pb.h"
#include "mds/manager/fs_map.h"
#include "mds/manager/map_manager.h"
#include "mds/manager/mds_registry.h"
#include "mds/rank.h"

namespace weft::mds {

// A rank of a filesystem: (fs id, rank).
using RankKey = std::pair<uint32_t, uint32_t>;

struct DaemonOptions {
  std::string name;
  std::string addr;
  uint64_t cache_memory_limit_bytes = 1ull << 30;
  int64_t session_timeout_s = 60;
  int64_t revoke_timeout_s = 30;  // mds_revoke_timeout
  uint64_t max_caps_per_client = 1000000;  // mds_max_caps_per_client (0: no limit)
  uint64_t recall_max_caps = 30000;        // mds_recall_max_caps
  int64_t recall_interval_ms = 1000;       // mds_recall_interval_ms
  size_t frag_split_entries = 10000;
  uint64_t default_object_bytes = 4 << 20;
  uint32_t default_stripe_unit_bytes = 4 << 20;
  uint32_t default_stripe_count = 1;
  int64_t reconnect_timeout_ms = 10000;  // mds_reconnect_timeout (s)
  bool unsafe_replies = true;            // mds_unsafe_replies
  int64_t journal_write_delay_ms = 0;    // mds_debug_journal_delay_ms: a fault knob for tests
  int64_t journal_batch_ms = 30;         // mds_journal_batch_ms: unsafe events gather this long
  int64_t dir_lease_ms = 5000;           // mds_dir_lease_ms: directory leases (0: none)
  uint64_t max_object_bytes = 128ull << 20;  // osd_max_object_size: no layout above it
  uint64_t inline_max_bytes = 64 << 10;  // mds_inline_max_bytes: small files' data in the MDS

  // Reads the mds_* and fs_default_* keys of the config.
  static absl::StatusOr<DaemonOptions> FromConfig(const Config& config);
};

class MdsDaemon {
 public:
  MdsDaemon(DaemonOptions options, MapManager* manager, FsMapStore* fsmap,
            MdsRegistry* registry, objects::ObjectClient* objects);
  ~MdsDaemon();

  void Start();
  void Stop();

  absl::Status FsNew(const std::string& name, const std::string& metadata_pool,
                     const std::string& data_pool);
  absl::Status FsAddDataPool(const std::string& name, const std::string& data_pool);
  // `weft fs set NAME KEY VALUE` (map manager only).
  absl::Status FsSet(const std::string& name, const std::string& key, const std::string& value);
  // `weft mds fail WHO` (map manager only): fences the daemon, hands its
  // ranks on; returns what was done, for the operator.
  absl::StatusOr<std::string> MdsFail(const std::string& who);
  // The MDS health checks of `weft status` (MapManager::SetExtraHealth).
  void AddHealthChecks(pb::StatusReply* reply);
  // How this process starts over (weft-mds: execv), when it finds its object
  // client blocklisted (failed by the operator, or fenced while frozen).
  void SetRestart(std::function<void(const std::string& reason)> restart) { restart_ = std::move(restart); }

  // Rank `rank` of a filesystem (by name) served here, or an error that says
  // where it is served.
  absl::StatusOr<std::shared_ptr<MdsRank>> RankByName(const std::string& fs, uint32_t rank = 0);
  // The rank a session is with (its id says which: SessionId), if here.
  absl::StatusOr<std::shared_ptr<MdsRank>> RankOfSession(uint64_t session);
  // A stopping rank's holder says it is flushed and stopped (map manager
  // only): the rank is held by nobody, and dropped once it is the last.
  absl::Status RankStopped(const pb::RankStoppedRequest& req);
  // The ranks served here now.
  std::vector<std::shared_ptr<MdsRank>> Ranks();
  MdsRegistry* registry() const { return registry_; }
  std::string leader_addr() const { return manager_->LeaderAddr(); }
  // Whether this daemon holds a rank while a daemon holding none is alive
  // (MapManager::SetDeferLeadership).
  bool WouldRatherNotLead();

 private:
  void SuperviseLoop();
  void SuperviseOnce();
  // Map manager: hands each rank whose holder is not alive to a live
  // daemon, fencing the holder first.
  void AssignRanks();
  // Map manager: names a standby-replay for `fs`'s rank (a live daemon
  // holding and following nothing) when the filesystem allows one and its
  // follower is gone, or clears it when it no longer does.
  void AssignFollower(const pb::FsMap& map, const pb::FsInfo& fs, uint32_t rank,
                      const std::vector<pb::MdsAlive>& alive);
  // Map manager: `edit`s rank `rank` of filesystem `fs_id` in a new fsmap
  // epoch, unless its holder or follower changed since it was `seen`
  // (Aborted).
  absl::Status MutateRank(uint32_t fs_id, uint32_t rank, const pb::FsRank& seen,
                          const std::function<void(pb::FsRank*)>& edit);
  // Starts the ranks the fsmap gives this daemon, stops those it took away;
  // starts and stops following ranks' journals as their standby-replay.
  void FollowAssignments();
  std::shared_ptr<MdsRank> MakeRank(const pb::FsInfo& fs, uint32_t rank);
  // A stopping rank held here (FsRank.stopping): flushes and stops it, and
  // tells the map manager; false when it must be started first.
  bool StopRank(const pb::FsInfo& fs, uint32_t rank);
  // Drops the last ranks while they are stopped and above max_mds.
  static void TrimStoppedRanks(pb::FsInfo* fs);
  // Standby-replay: reads the followed journals on (MdsRank::Follow).
  void FollowLoop();
  static constexpr absl::Duration kFollowInterval = absl::Milliseconds(200);
  bool Mine(const pb::FsRank& rank) const;
  // Blocklists the previous holder of `fs`'s rank `rank` (see
  // mds_daemon.cc); returns the epoch that says so (with nothing to fence,
  // the epoch this daemon has).
  absl::StatusOr<uint64_t> FenceHolder(const pb::FsInfo& fs, uint32_t rank);
  // Blocklists `client` (an OSD identity) for a day and waits until this
  // daemon's object client has the map that says so; returns its epoch.
  absl::StatusOr<uint64_t> Fence(const std::string& client);
  // Until this daemon's object client has osdmap `epoch` (at most 30 s).
  absl::Status WaitForEpoch(uint64_t epoch);
  // The map manager's BlocklistAdd, here or on the leader over gRPC.
  absl::StatusOr<uint64_t> BlocklistAdd(const std::string& client, int64_t expires_ms);
  RankOptions RankOptionsFor(const pb::FsInfo& fs, uint32_t rank);
  Capacity CachedCapacity();
  // By the map the daemon's object client follows (no I/O).
  bool ClusterFull();
  // Filesystem `fs_id`'s data pools (fsmap) and the pool names (osdmap).
  DataPools DataPoolsOf(uint32_t fs_id);
  absl::Status NotHere(const std::string& fs, uint32_t rank);
  static absl::Status Untrusted();

  const DaemonOptions options_;
  MapManager* const manager_;
  FsMapStore* const fsmap_;
  MdsRegistry* const registry_;
  objects::ObjectClient* const objects_;
  rpc::ChannelCache channels_;  // to the leader, for blocklist entries

  absl::Mutex mu_;
  std::map<RankKey, std::shared_ptr<MdsRank>> ranks_ ABSL_GUARDED_BY(mu_);
  // Stopping ranks flushed and stopped here, until the map drops them.
  std::set<RankKey> stopped_ ABSL_GUARDED_BY(mu_);
  // Ranks this daemon follows as standby-replay (not started), by fs id.
  // follow_mu_ is held while FollowLoop reads them on (taken before mu_),
  // so a takeover gets a follower between two reads.
  absl::Mutex follow_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::map<RankKey, std::shared_ptr<MdsRank>> followers_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Capacity capacity_ ABSL_GUARDED_BY(mu_);
  int64_t capacity_ms_ ABSL_GUARDED_BY(mu_) = 0;
  // Object clients `weft mds fail` fenced: not alive to AssignRanks even
  // while their records last (the daemons restart under new clients).
  absl::flat_hash_set<std::string> failed_ ABSL_GUARDED_BY(mu_);
  std::function<void(const std::string&)> restart_;
  absl::Mutex new_mu_;  // one FsNew at a time
  std::thread supervisor_;
  std::thread follower_;
};

}  // namespace weft::mds
