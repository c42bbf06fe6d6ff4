// Past intervals of placement groups (weft::PastInterval in
// common/cluster_map/osd_map.h), kept in the OSD map by the map manager so
// that a PG whose members all changed does not go active without the OSDs
// that may hold its newest acknowledged writes. Pure functions of maps.
//
// Why the manager and not the OSDs: a new primary may never have seen the
// maps in which the old acting sets existed (it was down, or new); the map
// manager publishes every epoch, so it sees every interval, and recording
// one in the same map that ends it means no OSD can act on an epoch without
// knowing what came before.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/cluster_map/osd_map.h"
#include "common/cluster_map/types.h"

namespace weft::placement {

// Appends to `next` the intervals that `prev` -> `next` ends: every PG whose
// acting set or primary differs between the two maps, and whose acting set in
// `prev` may have taken writes (a primary, at least min_size members).
// A PG keeps one record per distinct member set, the newest. Pools absent
// from either map are left alone.
void RecordPastIntervals(const OsdMap& prev, OsdMap* next);

// Drops the records of PGs that went active+clean after them: `clean_since`
// maps a PG to the first epoch of an interval its primary reported
// active+clean, and every record of that PG that ended before it goes (that
// interval's peering heard from them, and all its members hold everything).
// Returns whether anything was dropped.
bool PrunePastIntervals(const std::map<PgId, Epoch>& clean_since, OsdMap* map);

// What a primary must do about the past intervals of its PG before it goes
// active with `acting` (non-hole members) under `map`.
struct PastIntervalCheck {
  // Up OSDs outside `acting` that peering must query (replicated pools: a
  // past interval none of whose members is acting is heard from through them).
  std::set<OsdId> probe;
  // The PG is down while these are not empty: for each interval that cannot
  // be heard from, its members. "osd.3, osd.4 (acting until epoch 17)".
  std::vector<std::string> blocked_by;
  std::set<OsdId> waiting_for;  // the OSDs of those intervals
};
// Erasure pools need `k` of an interval's members in `acting` (the shards of
// its newest writes are read only from acting members); replicated pools need
// one, acting or up.
PastIntervalCheck CheckPastIntervals(const OsdMap& map, const PoolInfo& pool, uint32_t pg_seed,
                                     const std::vector<OsdId>& acting);

}  // namespace weft::placement
