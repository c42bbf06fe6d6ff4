// Placement: object name -> placement group -> ordered set of OSDs. Pure
// functions of the OSD map; every daemon and client computes them, there is no
// location catalogue.
//
// Object -> PG: HashObjectName, then Ceph's stable_mod over pg_num, so that
// growing pg_num only splits PGs (an object either stays or moves to a new PG).
//
// PG -> OSDs: weighted rendezvous hashing (straw2-like) over failure domains.
// Every candidate gets a draw ln(u) / weight, u in (0, 1] taken from the high
// 53 bits of XXH3-64 of (pool id, pg seed, candidate key, attempt); the largest
// draws win. Domains (hosts, racks, or single OSDs for FailureDomain::kOsd) are
// ranked first, with the sum of their in-OSD weights as weight; then one OSD is
// drawn inside each chosen domain. Because a candidate's draw depends only on
// itself, adding or removing a candidate only moves PGs to or from it (with
// unequal domain weights the correction below also nudges the others a little).
//
// Failure-domain keys: an OSD's host is `host`, or the OSD itself when `host` is
// empty; its rack is `rack`, or its host key when `rack` is empty.
//
// Balance correction (the "multi-pick anomaly"): choosing `size` domains by
// rendezvous gives heavy domains less than their weight share (with 3 of 10
// hosts and weights 2 vs 1, the light hosts got ~5% too many PGs). The domain
// draws therefore use adjusted weights, solved once per (map, pool) so that
// each domain's probability of being in a PG is size * weight / total weight
// (capped at 1: a domain holding more than 1/size of the weight is in every PG
// and cannot get its full share). With equal domain weights the adjusted
// weights are equal and this is exactly plain rendezvous.
//
// Replicated pools: `up` is ordered by the draws on the raw domain weights
// (the first is the primary when it is up). Erasure pools: each shard position
// r draws its own domain (attempt r), retrying on collision like Ceph's
// "indep" mode, so a new domain takes over single positions instead of
// shifting every later one (measured: x1.2-1.4 of the ideal movement, against
// ~x3.7 for one ranking of all positions; collisions cause the excess).
//
// Upmap items (PoolInfo::upmap_items, written by the balancer in balancer.h)
// are applied last, to `up`, in their sorted order: each replaces its `from`
// by its `to` at the same position, if `from` is in the set and `to` exists, is
// in with weight > 0, is not in the set, and is in a failure domain (at the
// pool's level) that no other member uses. Otherwise the item is ignored, so
// an item made stale by a map change never breaks placement; the balancer
// drops it on its next run. `acting` and the primary derive from the final
// `up`. Erasure pools are the same: the shard position is kept.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/cluster_map/osd_map.h"
#include "common/cluster_map/types.h"

namespace weft::placement {

// XXH3-64 (seed 0) of the object name. Part of the on-disk contract: changing
// it moves every object.
uint64_t HashObjectName(absl::string_view name);

// Ceph's stable_mod of `hash` over `pg_num`: moving from pg_num to a larger
// pg_num only moves objects to PGs >= the old pg_num (children split off their
// parent). 0 when pg_num is 0.
uint32_t StableMod(uint64_t hash, uint32_t pg_num);
uint32_t ObjectToPgSeed(absl::string_view name, uint32_t pg_num);
PgId ObjectToPg(const PoolInfo& pool, absl::string_view name);

// True for an OSD placement may choose: in, with a finite weight > 0.
bool HoldsPgs(const OsdInfo& osd);

// The failure domain of `osd` at `level`, as placement groups OSDs: "osd.<id>",
// "host:<host>" or "rack:<rack>", with the fallbacks described at the top.
std::string FailureDomainKey(const OsdInfo& osd, FailureDomain level);
// Distinct failure domains at `level` among the OSDs that can hold PGs (in,
// weight > 0): the longest `up` set a pool with that failure domain can get.
size_t CountFailureDomains(const OsdMap& map, FailureDomain level);

struct PgMapping {
  // Chosen among IN OSDs with weight > 0, distinct failure domains, at most
  // pool.size members; shorter when there are fewer domains. A down OSD that is
  // still in stays here: that is what makes a short outage move no data.
  std::vector<OsdId> up;
  // Replicated: `up` without the down OSDs, order kept. Erasure: same length
  // and positions as `up`, kNoOsd where the OSD is down (shard i stays at i).
  std::vector<OsdId> acting;
  // First non-hole member of `acting`; kNoOsd when there is none.
  OsdId primary = kNoOsd;

  friend bool operator==(const PgMapping&, const PgMapping&) = default;
};

// The per-(map, pool) part of placement, computed once and reused for every PG
// of the pool: failure domains, adjusted weights and up/down state are copied
// out of the map (the map need not outlive this object). Build one per map
// epoch when mapping many PGs. Construction is O(OSDs) with equal domain
// weights; with unequal ones it solves the balance correction, about
// 10 iterations of O(384 * domains * size) (measured: see placement_test
// "[perf]"); a pool with upmap items adds O(OSDs log OSDs + items). Map() costs
// O(OSDs) for replicated pools, O(domains * size) more for erasure pools, plus
// O(log items + size^2) for the pool's upmap items.
class PoolPlacement {
 public:
  PoolPlacement(const OsdMap& map, const PoolInfo& pool);

  PgMapping Map(uint32_t pg_seed) const;

 private:
  struct Member {
    OsdId id;
    double weight;
    bool up;
    uint64_t key;
  };
  struct Domain {
    uint64_t key;
    double weight;       // sum of the members' weights
    double draw_weight;  // adjusted weight (see the balance correction above)
    bool always;         // holds > 1/size of the weight: in every replicated PG
    std::vector<Member> members;
  };

  // An OSD that can hold PGs, for the upmap checks.
  struct Slot {
    OsdId id;
    int domain;  // index into domains_
    bool up;
  };

  std::vector<int> RankReplicated(uint32_t pg_seed) const;
  std::vector<int> RankErasure(uint32_t pg_seed) const;
  const Member& PickMember(const Domain& domain, uint32_t pg_seed) const;
  const Slot* FindSlot(OsdId id) const;

  uint32_t pool_id_;
  PoolType type_;
  uint32_t size_;
  std::vector<Domain> domains_;  // sorted by key string, so independent of OSD order
  std::vector<UpmapItem> upmap_items_;  // the pool's, sorted
  std::vector<Slot> slots_;  // sorted by id; empty when the pool has no items
};

// Equivalent to PoolPlacement(map, pool).Map(pg_seed).
PgMapping MapPg(const OsdMap& map, const PoolInfo& pool, uint32_t pg_seed);

// Exposed for tests and the balancer.
namespace internal {

// Applies one PG's upmap items, in the given order, to its `up` set, with the
// rule at the top of this file. `domain_of` returns an OSD's failure domain at
// the pool's level as any number equal for equal domains, or a negative number
// for an OSD that cannot hold PGs (absent, out, weight 0). Items for other PGs
// are not looked at: pass only this PG's. When `applied` is not null it gets
// one flag per item.
void ApplyUpmapItems(absl::Span<const UpmapItem> items,
                     absl::FunctionRef<int(OsdId)> domain_of, std::vector<OsdId>* up,
                     std::vector<bool>* applied = nullptr);

// Weights v such that choosing `k` of the items by rendezvous on v includes
// item i with probability min(1, k * w_i / sum(w)) (water-filled). Items whose
// share is capped at 1 are flagged in `*capped` and given the sum of the other
// adjusted weights. `weights` must all be > 0.
std::vector<double> AdjustWeights(absl::Span<const double> weights, uint32_t k,
                                  std::vector<bool>* capped);

// Probability that item i is among the `k` largest of ln(u_i) / v_i, i.e. in
// the first k of a weighted sampling without replacement. Numerical (graded
// Gauss-Legendre); within 1e-12 of exact enumeration in the tests.
std::vector<double> InclusionProbabilities(absl::Span<const double> v, uint32_t k);

}  // namespace internal
}  // namespace weft::placement
