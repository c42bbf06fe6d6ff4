// The filesystem side of weft-mds: the ranks this daemon holds and the
// supervisor that starts and stops them. At this stage one MDS is active per
// cluster: the elected map manager holds rank 0 of every filesystem; the
// other MDS daemons are standbys that take the ranks over when they win the
// election (after replaying the journals).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/config/config.h"
#include "common/objects/object_client.h"
#include "mds/manager/fs_map.h"
#include "mds/manager/map_manager.h"
#include "mds/rank.h"

namespace weft::mds {

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
            objects::ObjectClient* objects);
  ~MdsDaemon();

  void Start();
  void Stop();

  absl::Status FsNew(const std::string& name, const std::string& metadata_pool,
                     const std::string& data_pool);
  absl::Status FsAddDataPool(const std::string& name, const std::string& data_pool);

  // The rank serving a filesystem (by name or id) here, or an error that says
  // where it is served.
  absl::StatusOr<std::shared_ptr<MdsRank>> RankByName(const std::string& fs);
  absl::StatusOr<std::shared_ptr<MdsRank>> RankById(uint32_t fs_id);
  // The ranks served here now.
  std::vector<std::shared_ptr<MdsRank>> Ranks();

 private:
  void SuperviseLoop();
  void SuperviseOnce();
  // Blocklists the previous holder of `fs`'s rank 0 (see mds_daemon.cc).
  absl::Status FenceHolder(const pb::FsInfo& fs);
  // Blocklists `client` (an OSD identity) for a day and waits until this
  // daemon's object client has the map that says so; returns its epoch.
  absl::StatusOr<uint64_t> Fence(const std::string& client);
  RankOptions RankOptionsFor(const pb::FsInfo& fs);
  Capacity CachedCapacity();
  // By the map the daemon's object client follows (no I/O).
  bool ClusterFull();
  // Filesystem `fs_id`'s data pools (fsmap) and the pool names (osdmap).
  DataPools DataPoolsOf(uint32_t fs_id);
  absl::Status NotHere(const std::string& fs);

  const DaemonOptions options_;
  MapManager* const manager_;
  FsMapStore* const fsmap_;
  objects::ObjectClient* const objects_;

  absl::Mutex mu_;
  std::map<uint32_t, std::shared_ptr<MdsRank>> ranks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  Capacity capacity_ ABSL_GUARDED_BY(mu_);
  int64_t capacity_ms_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Mutex new_mu_;  // one FsNew at a time
  std::thread supervisor_;
};

}  // namespace weft::mds
