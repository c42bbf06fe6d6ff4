#include "mds/manager/slow_disks.h"

#include <algorithm>

namespace weft::mds {

std::vector<DiskLatency> SlowDisks(const std::vector<DiskLatency>& disks,
                                   const SlowDiskOptions& options, double* median_ms) {
  std::vector<double> means;
  for (const DiskLatency& d : disks) {
    if (d.commits >= options.min_commits) means.push_back(d.mean_ms);
  }
  double median = -1;  // none: too few to compare
  if (means.size() >= 3) {
    std::sort(means.begin(), means.end());
    const size_t n = means.size();
    median = n % 2 == 1 ? means[n / 2] : (means[n / 2 - 1] + means[n / 2]) / 2;
  }
  if (median_ms != nullptr) *median_ms = median;
  std::vector<DiskLatency> slow;
  for (const DiskLatency& d : disks) {
    if (d.commits < options.min_commits || d.mean_ms < options.floor_ms) continue;
    const bool outlier = median >= 0 && d.mean_ms >= options.ratio * median;
    if (outlier || d.mean_ms >= options.absolute_ms) slow.push_back(d);
  }
  return slow;
}

}  // namespace weft::mds
