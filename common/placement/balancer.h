// The upmap balancer: evens out how many PG replicas each OSD of a pool holds
// by writing per-PG exceptions to placement into the map (PoolInfo::
// upmap_items, Ceph's pg_upmap_items; placement.h says how they apply).
//
// Why: hash placement is only proportional on average. At ~100 PG replicas
// per OSD, the most loaded OSD of a 10-OSD pool holds ~1.17-1.20 times its
// share (placement_test "[stats]"), and the fullest OSD is what limits the
// cluster. A few dozen items bring that to the target.
//
// How: greedy, like Ceph's calc_pg_upmaps. Repeatedly take the OSD furthest
// above its share and move one of its PG replicas to the OSD furthest below
// its share that can take it: up (a down one would leave the PG degraded), not
// in the PG already, failure domains of the PG still distinct. Moves that
// cancel an existing item come first, then moves that retarget one, then new
// items. A move is made only if the receiving OSD ends below the giving OSD's
// ratio, so every move strictly lowers the sorted vector of ratios and the
// loop ends. Deterministic: no hash-map order, no clock, no randomness; the
// same map and pool give the same items.
//
// Measured (balancer_test "[stats]", 200 pool ids each, goal 1.10): the three
// layouts of placement_test's balance tests (10 OSDs / 10 hosts, 12 / 4, mixed
// weights; ~100 replicas per OSD) go from 1.17-1.20 to <= 1.10 every time
// with a median of 4-5 items and at most 42.
//
// Both functions are pure; the map manager calls Balance inside a map mutation
// after pool creation and OSD create/in/out and stores the result in the pool.
#pragma once

#include <vector>

#include "common/cluster_map/osd_map.h"

namespace weft::placement {

// The pool's imbalance with its upmap items applied: the largest, over OSDs
// that can hold PGs (in, weight > 0), of (replicas of the pool it holds) /
// (its fair share). The fair share is the OSD's weight share of all the pool's
// replicas, except that a failure domain holds at most one replica per PG: a
// domain whose weight share exceeds pg_num gets pg_num, and the others share
// the rest by weight (water-filled). Without such heavy domains this is the
// plain weight share, and with equal weights it is max/mean PGs per OSD.
// 0 when the pool has no replicas. Cost: maps every PG of the pool.
double MaxOverShare(const OsdMap& map, const PoolInfo& pool);

// The complete new upmap item list for `pool` (sorted, valid for
// OsdMap::Validate; `pool.upmap_items` is only read):
// - the pool's current items that still apply are kept (dropping those the map
//   made stale), so that balancing again after a small map change moves little;
// - then items are added, retargeted or cancelled until MaxOverShare of the
//   pool with the result is <= `max_over_share` (e.g. 1.10), or no single move
//   lowers the worst OSD any more, or `max_items` items exist and only moves
//   that do not add one remain.
// With more than `max_items` current items, whole PGs' items are dropped from
// the highest seed down first. `max_items` <= 0 returns no items.
//
// Cost: O(PGs * size) to map the pool, then per move O(OSDs * PGs on the
// worst OSD * size^2) at most; a few ms for the 10-OSD, 333-PG pool.
std::vector<UpmapItem> Balance(const OsdMap& map, const PoolInfo& pool, double max_over_share,
                               int max_items);

}  // namespace weft::placement
