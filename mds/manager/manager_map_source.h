// The MDS's own object client takes its maps from the map manager running in
// the same process (which follows the osdmap in etcd, leader or not), not
// from a gRPC stream to its own port: common/objects/map_source.h.
#pragma once

#include "absl/synchronization/mutex.h"
#include "common/objects/map_source.h"
#include "mds/manager/map_manager.h"

namespace weft::mds {

class ManagerMapSource final : public objects::MapSource {
 public:
  // `manager` must outlive the source and have been Start()ed.
  explicit ManagerMapSource(MapManager* manager) : manager_(manager) {}

  absl::StatusOr<std::shared_ptr<const OsdMap>> Fetch() override;
  void Follow(const std::function<Epoch()>& have, const Install& install) override;
  void Stop() override;

 private:
  MapManager* const manager_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace weft::mds
