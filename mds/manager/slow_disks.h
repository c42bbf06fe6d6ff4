// Finding the OSD whose disk is sick: slow, but without errors. The seeds'
// clusters lost most of their throughput to one such disk before anyone
// noticed, since every write waits for its slowest replica. Each OSD
// publishes the median latency of its recent store commits (a median, as a
// few large writes are slow on any disk, a sick disk makes every commit
// slow); an OSD stands out when its median is far above the others'.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::mds {

struct DiskLatency {
  int32_t osd = -1;
  uint64_t commits = 0;  // in the window
  double latency_ms = 0;  // the median commit's
};

struct SlowDiskOptions {
  // Compared with the median of the OSDs that committed enough to judge.
  double ratio = 5;
  // Below this a disk is not called slow, however fast the others are.
  double floor_ms = 50;
  // Above this a disk is slow whatever the others do (all of them, say).
  double absolute_ms = 1000;
  uint64_t min_commits = 20;  // fewer in the window: not judged
};

// The slow ones among `disks`, in the order given. An OSD is slow when it
// committed at least min_commits and its latency is at least floor_ms and
// either at least absolute_ms or at least `ratio` times the median latency
// of the OSDs that committed at least min_commits (when three or more did:
// with fewer there is nothing to compare with).
std::vector<DiskLatency> SlowDisks(const std::vector<DiskLatency>& disks,
                                   const SlowDiskOptions& options, double* median_ms = nullptr);

}  // namespace weft::mds
