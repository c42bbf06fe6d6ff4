// Who does what among the MDS daemons, read from the fsmap and the daemons'
// liveness records: the one place that says when a daemon holds a rank (its
// name and its object client both match the rank's holder; a restarted
// daemon of the same name is another process). The map manager assigns
// ranks with it, the health checks and `weft fs status` / `weft status`
// show it. A standby may follow a rank's journal (standby-replay).
#pragma once

#include <string>
#include <vector>

#include "proto/cluster.pb.h"

namespace weft::fs {

inline bool HoldsRank(const pb::FsRank& rank, const pb::MdsAlive& daemon) {
  return rank.name() == daemon.name() && rank.client() == daemon.client();
}

// The filesystems whose rank 0 `daemon` holds, in fsmap order (none: a
// standby).
inline std::vector<std::string> RanksHeldBy(const pb::FsMap& map, const pb::MdsAlive& daemon) {
  std::vector<std::string> out;
  for (const pb::FsInfo& fs : map.filesystems()) {
    if (HoldsRank(fs.rank0(), daemon)) out.push_back(fs.name());
  }
  return out;
}

// Whether `daemon` follows `rank`'s journal as its standby-replay.
inline bool FollowsRank(const pb::FsRank& rank, const pb::MdsAlive& daemon) {
  return rank.standby_replay().name() == daemon.name() &&
         rank.standby_replay().client() == daemon.client();
}

// The filesystems whose rank 0 `daemon` follows as standby-replay.
inline std::vector<std::string> RanksFollowedBy(const pb::FsMap& map, const pb::MdsAlive& daemon) {
  std::vector<std::string> out;
  for (const pb::FsInfo& fs : map.filesystems()) {
    if (FollowsRank(fs.rank0(), daemon)) out.push_back(fs.name());
  }
  return out;
}

// Whether one of `daemons` holds `rank`.
inline bool RankServed(const pb::FsRank& rank, const std::vector<pb::MdsAlive>& daemons) {
  for (const pb::MdsAlive& d : daemons) {
    if (HoldsRank(rank, d)) return true;
  }
  return false;
}

}  // namespace weft::fs
