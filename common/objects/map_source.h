// Where an ObjectClient gets the cluster map from: the seam between the
// object layer and whoever publishes maps. Clients follow an MDS's map
// stream (MdsMapSource below); the MDS itself reads the map manager running
// in the same process (mds/manager/manager_map_source.h), with no gRPC loop
// to its own port. Besides its source, an ObjectClient also installs the
// newer maps OSDs attach to their replies.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/cluster_map/osd_map.h"
#include "common/rpc/rpc.h"

namespace weft::objects {

class MapSource {
 public:
  using Install = std::function<void(std::shared_ptr<const OsdMap>)>;

  virtual ~MapSource() = default;
  // The current map: Unavailable when the source has none yet or cannot be
  // reached.
  virtual absl::StatusOr<std::shared_ptr<const OsdMap>> Fetch() = 0;
  // Calls `install` with each map newer than `have()` as it is published,
  // until Stop(); `have` is asked again whenever the source reconnects.
  // Blocks the calling thread (the ObjectClient's watcher) meanwhile.
  virtual void Follow(const std::function<Epoch()>& have, const Install& install) = 0;
  // Makes Follow return soon, and every later call at once.
  virtual void Stop() = 0;
};

// The map from an MDS: Cluster.GetMap, then the server stream
// Cluster.WatchMap, which pushes every new epoch. On a broken stream it tries
// the next address of `mds_addrs` after 200 ms. Nobody polls.
class MdsMapSource final : public MapSource {
 public:
  explicit MdsMapSource(std::vector<std::string> mds_addrs);

  absl::StatusOr<std::shared_ptr<const OsdMap>> Fetch() override;
  void Follow(const std::function<Epoch()>& have, const Install& install) override;
  void Stop() override;

 private:
  const std::vector<std::string> mds_addrs_;
  rpc::ChannelCache channels_;
  rpc::ChannelCache stream_channels_;  // the watch's own connection (as MetaClient's)
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* watch_ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace weft::objects
