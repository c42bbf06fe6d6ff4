// The fsmap: which filesystems exist (their metadata and data pools) and
// which MDS holds each one's rank 0. Stored in etcd at /weft/<fsid>/fsmap;
// only the elected MDS writes it, with a transaction that checks the key's
// mod revision and that the leader key still holds the leader's lease.
#pragma once

#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "common/etcd/etcd_client.h"
#include "mds/manager/map_manager.h"
#include "proto/cluster.pb.h"

namespace weft::mds {

class FsMapStore {
 public:
  FsMapStore(MapManager* manager, etcd::Client* etcd, const std::string& fsid);
  ~FsMapStore();

  absl::Status Start();  // reads the map and follows it
  void Stop();

  pb::FsMap map();
  // Waits up to `timeout` for an epoch newer than `have`.
  pb::FsMap WaitNewer(uint64_t have, absl::Duration timeout);

  // Leader only. `change` edits a copy; AlreadyExists("unchanged") publishes nothing.
  absl::Status Mutate(const std::function<absl::Status(pb::FsMap*)>& change);

  // Checks a new filesystem's name and pools against the osdmap.
  static absl::Status ValidateNew(const pb::FsMap& fsmap, const OsdMap& osdmap,
                                  const std::string& name, const std::string& metadata_pool,
                                  const std::string& data_pool);

 private:
  void OnBytes(const std::string& bytes, int64_t revision);

  MapManager* const manager_;
  etcd::Client* const etcd_;
  const std::string key_;
  const std::string leader_key_;

  absl::Mutex mu_;
  pb::FsMap map_ ABSL_GUARDED_BY(mu_);
  int64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Mutex mutate_mu_;
  std::unique_ptr<etcd::Watch> watch_;
};

}  // namespace weft::mds
