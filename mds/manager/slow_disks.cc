#include "mds/manager/slow_disks.h"

#include <algorithm>

namespace weft::mds {

std::vector<DiskLatency> SlowDisks(const std::vector<DiskLatency>& disks,
                                   const SlowDiskOptions& options, double* median_ms) {
  std::vector<double> latencies;
  for (const DiskLatency& d : disks) {
    if (d.commits >= options.min_commits) latencies.push_back(d.latency_ms);
  }
  double median = -1;  // none: too few to compare
  if (latencies.size() >= 3) {
    std::sort(latencies.begin(), latencies.end());
    const size_t n = latencies.size();
    median = n % 2 == 1 ? latencies[n / 2] : (latencies[n / 2 - 1] + latencies[n / 2]) / 2;
  }
  if (median_ms != nullptr) *median_ms = median;
  std::vector<DiskLatency> slow;
  for (const DiskLatency& d : disks) {
    if (d.commits < options.min_commits || d.latency_ms < options.floor_ms) continue;
    const bool outlier = median >= 0 && d.latency_ms >= options.ratio * median;
    if (outlier || d.latency_ms >= options.absolute_ms) slow.push_back(d);
  }
  return slow;
}

}  // namespace weft::mds
