// The MDS's Prometheus series: namespace requests by operation (count,
// errors, latency from arrival to reply), each filesystem's rank state
// (sessions, cache, journal, strays), and the map manager's epoch.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "common/metrics/metrics.h"

namespace weft::mds {

class MapManager;
class MdsDaemon;

class MdsMetrics {
 public:
  // `daemon` is null until the daemon is up; `manager` outlives this.
  MdsMetrics(MapManager* manager, std::atomic<MdsDaemon*>* daemon);

  // One namespace request: `op` is its MetaRequest op case (0 when unset).
  void Observe(int op, absl::Duration took, bool failed);

  const metrics::Registry* registry() const { return &registry_; }

 private:
  struct Op {
    metrics::Histogram latency;
    std::atomic<uint64_t> errors{0};
  };

  metrics::Registry registry_;
  std::map<int, std::unique_ptr<Op>> ops_;  // every op case, fixed at construction
};

}  // namespace weft::mds
