// Who does what among the MDS daemons, read from the fsmap and the daemons'
// liveness records: the one place that says when a daemon holds a rank (its
// name and its object client both match the rank's holder; a restarted
// daemon of the same name is another process). The map manager assigns
// ranks with it, the health checks and `weft fs status` / `weft status`
// show it. A standby may follow a rank's journal (standby-replay).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/cluster.pb.h"

namespace weft::fs {

// Rank `r` of `fs` (an empty rank, held by nobody, when there is none).
inline const pb::FsRank& RankOf(const pb::FsInfo& fs, uint32_t r) {
  return r < static_cast<uint32_t>(fs.ranks_size()) ? fs.ranks(static_cast<int>(r))
                                                    : pb::FsRank::default_instance();
}

// How many ranks `fs` wants active (`weft fs set NAME max_mds N`).
inline uint32_t MaxMds(const pb::FsInfo& fs) { return std::max<uint32_t>(1, fs.max_mds()); }

inline bool HoldsRank(const pb::FsRank& rank, const pb::MdsAlive& daemon) {
  return rank.name() == daemon.name() && rank.client() == daemon.client();
}

// Whether `daemon` follows `rank`'s journal as its standby-replay.
inline bool FollowsRank(const pb::FsRank& rank, const pb::MdsAlive& daemon) {
  return rank.standby_replay().name() == daemon.name() &&
         rank.standby_replay().client() == daemon.client();
}

// A rank of a filesystem, by name.
struct RankRef {
  std::string fs;
  uint32_t rank = 0;
};

// "rank 0 of weft, rank 1 of weft".
inline std::string Describe(const std::vector<RankRef>& refs) {
  std::string out;
  for (const RankRef& r : refs) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", "rank ", r.rank, " of ", r.fs);
  }
  return out;
}

// The ranks of `map` for which `pred(rank)` holds, in fsmap order.
template <typename Pred>
std::vector<RankRef> RanksWhere(const pb::FsMap& map, Pred pred) {
  std::vector<RankRef> out;
  for (const pb::FsInfo& fs : map.filesystems()) {
    for (int r = 0; r < fs.ranks_size(); ++r) {
      if (pred(fs.ranks(r))) out.push_back({fs.name(), static_cast<uint32_t>(r)});
    }
  }
  return out;
}

// The ranks `daemon` holds (none: a standby).
inline std::vector<RankRef> RanksHeldBy(const pb::FsMap& map, const pb::MdsAlive& daemon) {
  return RanksWhere(map, [&](const pb::FsRank& r) { return HoldsRank(r, daemon); });
}

// The ranks whose journal `daemon` follows as standby-replay.
inline std::vector<RankRef> RanksFollowedBy(const pb::FsMap& map, const pb::MdsAlive& daemon) {
  return RanksWhere(map, [&](const pb::FsRank& r) { return FollowsRank(r, daemon); });
}

// Whether one of `daemons` holds `rank`.
inline bool RankServed(const pb::FsRank& rank, const std::vector<pb::MdsAlive>& daemons) {
  for (const pb::MdsAlive& d : daemons) {
    if (HoldsRank(rank, d)) return true;
  }
  return false;
}

}  // namespace weft::fs
