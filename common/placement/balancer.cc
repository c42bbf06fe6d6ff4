#include "common/placement/balancer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/placement/placement.h"

namespace weft::placement {
namespace {

// What a move does to the item count; the balancer prefers the cheapest.
enum class MoveCost { kCancel = 0, kRetarget = 1, kAdd = 2 };

struct Move {
  uint32_t seed = 0;
  size_t to = 0;  // index into Balancer::osds_
  MoveCost cost = MoveCost::kAdd;
  std::vector<UpmapItem> items;  // the PG's items after the move
  std::vector<OsdId> up;         // the PG's up set after the move
};

// OsdMap::Validate's rule for one PG's items: sources distinct, targets
// distinct, no item onto its own source.
bool DistinctEnds(const std::vector<UpmapItem>& items) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].from == items[i].to) return false;
    for (size_t j = 0; j < i; ++j) {
      if (items[j].from == items[i].from || items[j].to == items[i].to) return false;
    }
  }
  return true;
}

// The pool's OSDs with their failure domains and fair shares, and every PG's
// set twice: raw (placement without items) and current (with the items kept
// or made so far).
class Balancer {
 public:
  // Starts from the pool's items that still apply.
  Balancer(const OsdMap& map, const PoolInfo& pool);

  // Largest count / share over the OSDs; 0 without replicas.
  double MaxRatio() const;
  // Keeps at most `max_items` items, dropping whole PGs' items from the
  // highest seed down.
  void TrimItems(size_t max_items);
  // Moves one replica off the worst OSD. False when the worst OSD is at most
  // `goal` or cannot give anything away.
  bool Step(double goal, size_t max_items);
  std::vector<UpmapItem> Items() const;

 private:
  struct Osd {
    OsdId id;
    double weight = 0;
    bool up = false;  // down OSDs give replicas away but never receive them
    int domain = 0;
    double share = 0;  // fair share of the pool's replicas (see balancer.h)
    int count = 0;     // replicas held now
    std::set<uint32_t> pgs;  // seeds of the PGs holding a replica here
  };

  void ComputeShares();
  int IndexOf(OsdId id) const;  // -1 for an OSD that cannot hold PGs
  int DomainOf(OsdId id) const;
  double Ratio(size_t i, int extra = 0) const {
    return osds_[i].share > 0 ? (osds_[i].count + extra) / osds_[i].share : 0;
  }
  std::optional<Move> TryMove(uint32_t seed, size_t from, size_t to, size_t max_items) const;
  std::optional<Move> BestMove(size_t from, size_t max_items) const;
  void SetPg(uint32_t seed, std::vector<UpmapItem> items, std::vector<OsdId> up);

  const uint32_t pg_num_;
  const uint32_t size_;
  std::vector<Osd> osds_;                      // sorted by id
  std::vector<double> domain_weight_;          // by domain index
  std::vector<std::vector<OsdId>> raw_;        // by seed: up without items
  std::vector<std::vector<OsdId>> cur_;        // by seed: up with items_
  std::vector<std::vector<UpmapItem>> items_;  // by seed, each sorted
  size_t item_count_ = 0;
};

Balancer::Balancer(const OsdMap& map, const PoolInfo& pool)
    : pg_num_(pool.pg_num), size_(pool.size) {
  std::map<std::string, int> domains;  // key -> index
  for (const OsdInfo& o : map.osds) {
    if (!HoldsPgs(o)) continue;
    const auto [it, added] = domains.emplace(FailureDomainKey(o, pool.failure_domain),
                                             static_cast<int>(domain_weight_.size()));
    if (added) domain_weight_.push_back(0);
    domain_weight_[it->second] += o.placement_weight();
    Osd osd;
    osd.id = o.id;
    osd.weight = o.placement_weight();
    osd.up = o.up;
    osd.domain = it->second;
    osds_.push_back(std::move(osd));
  }
  std::sort(osds_.begin(), osds_.end(), [](const Osd& a, const Osd& b) { return a.id < b.id; });

  PoolInfo bare = pool;
  bare.upmap_items.clear();
  const PoolPlacement placement(map, bare);
  raw_.resize(pg_num_);
  cur_.resize(pg_num_);
  items_.resize(pg_num_);
  std::vector<std::vector<UpmapItem>> given(pg_num_);
  for (const UpmapItem& item : pool.upmap_items) {
    if (item.pg_seed < pg_num_) given[item.pg_seed].push_back(item);
  }
  // Keep the items that apply. Dropping one that does not changes nothing,
  // since it changed nothing.
  for (uint32_t seed = 0; seed < pg_num_; ++seed) {
    raw_[seed] = placement.Map(seed).up;
    std::vector<OsdId> up = raw_[seed];
    std::vector<UpmapItem> kept;
    if (!given[seed].empty()) {
      std::sort(given[seed].begin(), given[seed].end());
      std::vector<bool> applied;
      internal::ApplyUpmapItems(
          given[seed], [this](OsdId id) { return DomainOf(id); }, &up, &applied);
      for (size_t i = 0; i < given[seed].size(); ++i) {
        if (applied[i]) kept.push_back(given[seed][i]);
      }
    }
    SetPg(seed, std::move(kept), std::move(up));
  }
  ComputeShares();
}

// Water-fills the replicas over the failure domains (a domain holds at most one
// replica per PG, so at most pg_num), then splits each domain's share over its
// OSDs by weight.
void Balancer::ComputeShares() {
  double replicas = 0;
  for (const std::vector<OsdId>& up : raw_) replicas += up.size();
  const double cap = pg_num_;
  std::vector<bool> capped(domain_weight_.size(), false);
  std::vector<double> share(domain_weight_.size(), cap);
  for (bool changed = true; changed;) {
    changed = false;
    double rest_replicas = replicas, rest_weight = 0;
    for (size_t d = 0; d < share.size(); ++d) {
      if (capped[d]) {
        rest_replicas -= cap;
      } else {
        rest_weight += domain_weight_[d];
      }
    }
    for (size_t d = 0; d < share.size(); ++d) {
      if (capped[d]) continue;
      share[d] = rest_replicas * domain_weight_[d] / rest_weight;
      if (share[d] > cap) capped[d] = changed = true;  // then redo the others
    }
  }
  for (Osd& o : osds_) o.share = share[o.domain] * o.weight / domain_weight_[o.domain];
}

int Balancer::IndexOf(OsdId id) const {
  auto it = std::lower_bound(osds_.begin(), osds_.end(), id,
                             [](const Osd& o, OsdId want) { return o.id < want; });
  return it != osds_.end() && it->id == id ? static_cast<int>(it - osds_.begin()) : -1;
}

int Balancer::DomainOf(OsdId id) const {
  const int i = IndexOf(id);
  return i < 0 ? -1 : osds_[i].domain;
}

double Balancer::MaxRatio() const {
  double worst = 0;
  for (size_t i = 0; i < osds_.size(); ++i) worst = std::max(worst, Ratio(i));
  return worst;
}

void Balancer::SetPg(uint32_t seed, std::vector<UpmapItem> items, std::vector<OsdId> up) {
  for (OsdId id : cur_[seed]) {
    Osd& o = osds_[IndexOf(id)];
    --o.count;
    o.pgs.erase(seed);
  }
  for (OsdId id : up) {
    Osd& o = osds_[IndexOf(id)];
    ++o.count;
    o.pgs.insert(seed);
  }
  item_count_ = item_count_ - items_[seed].size() + items.size();
  items_[seed] = std::move(items);
  cur_[seed] = std::move(up);
}

void Balancer::TrimItems(size_t max_items) {
  for (uint32_t seed = pg_num_; seed-- > 0 && item_count_ > max_items;) {
    if (!items_[seed].empty()) SetPg(seed, {}, raw_[seed]);
  }
}

// Moving the replica of PG `seed` on osds_[from] to osds_[to], if placement
// would honour it, with the PG's items after the move.
std::optional<Move> Balancer::TryMove(uint32_t seed, size_t from, size_t to,
                                      size_t max_items) const {
  const OsdId from_id = osds_[from].id, to_id = osds_[to].id;
  const std::vector<OsdId>& up = cur_[seed];
  // 1. Cheap checks: the target is not in the PG and its domain is free.
  for (OsdId id : up) {
    if (id == to_id || (id != from_id && DomainOf(id) == osds_[to].domain)) return std::nullopt;
  }
  // 2. The PG's items after the move. The balancer never chains items: a
  //    replica that an item put here is moved by retargeting that item.
  Move move{seed, to, MoveCost::kAdd, items_[seed], up};
  auto it = std::find_if(move.items.begin(), move.items.end(),
                         [&](const UpmapItem& item) { return item.to == from_id; });
  if (it == move.items.end()) {
    if (item_count_ >= max_items) return std::nullopt;
    move.items.push_back(UpmapItem{seed, from_id, to_id});
  } else if (it->from == to_id) {
    move.cost = MoveCost::kCancel;
    move.items.erase(it);
  } else {
    move.cost = MoveCost::kRetarget;
    it->to = to_id;
  }
  std::sort(move.items.begin(), move.items.end());
  *std::find(move.up.begin(), move.up.end(), from_id) = to_id;
  // 3. Placement applies the items in order, each against the set the earlier
  //    ones left: check that every item applies and the result is the one
  //    intended, and that the map will accept the items.
  if (move.items.size() > size_ || !DistinctEnds(move.items)) return std::nullopt;
  std::vector<OsdId> check = raw_[seed];
  std::vector<bool> applied;
  internal::ApplyUpmapItems(
      move.items, [this](OsdId id) { return DomainOf(id); }, &check, &applied);
  if (check != move.up || std::count(applied.begin(), applied.end(), false) > 0) {
    return std::nullopt;
  }
  return move;
}

// The move off osds_[from] that helps most: a cancelled item if any, else to
// the OSD that ends lowest (retargeting an item rather than adding one on a
// tie). Only to OSDs that end below `from`'s ratio now, which is what makes
// the balancer terminate.
std::optional<Move> Balancer::BestMove(size_t from, size_t max_items) const {
  const double from_ratio = Ratio(from);
  std::vector<std::pair<double, size_t>> targets;  // (ratio after, index); ids break ties
  for (size_t t = 0; t < osds_.size(); ++t) {
    if (t != from && osds_[t].up && Ratio(t, 1) < from_ratio) {
      targets.emplace_back(Ratio(t, 1), t);
    }
  }
  std::sort(targets.begin(), targets.end());
  std::optional<Move> best;
  // 1. Cancelling an item that put this replica here, to any target.
  for (uint32_t seed : osds_[from].pgs) {
    for (const UpmapItem& item : items_[seed]) {
      if (item.to != osds_[from].id) continue;
      const int t = IndexOf(item.from);
      if (t < 0 || !osds_[t].up || !(Ratio(t, 1) < from_ratio)) continue;
      std::optional<Move> m = TryMove(seed, from, t, max_items);
      if (m && (!best || Ratio(m->to, 1) < Ratio(best->to, 1))) best = std::move(m);
    }
  }
  if (best) return best;
  // 2. The lowest target that can take any of the PGs, the cheapest way.
  for (const auto& [ratio_after, t] : targets) {
    for (uint32_t seed : osds_[from].pgs) {
      std::optional<Move> m = TryMove(seed, from, t, max_items);
      if (m && (!best || m->cost < best->cost)) best = std::move(m);
      if (best && best->cost == MoveCost::kRetarget) break;  // cancels were step 1
    }
    if (best) return best;
  }
  return std::nullopt;
}

bool Balancer::Step(double goal, size_t max_items) {
  size_t worst = 0;
  for (size_t i = 1; i < osds_.size(); ++i) {
    if (Ratio(i) > Ratio(worst)) worst = i;  // ties: the lower id
  }
  if (osds_.empty() || Ratio(worst) <= goal) return false;
  std::optional<Move> move = BestMove(worst, max_items);
  if (!move) return false;
  SetPg(move->seed, std::move(move->items), std::move(move->up));
  return true;
}

std::vector<UpmapItem> Balancer::Items() const {
  std::vector<UpmapItem> out;
  out.reserve(item_count_);
  for (const std::vector<UpmapItem>& items : items_) {
    out.insert(out.end(), items.begin(), items.end());
  }
  return out;
}

}  // namespace

double MaxOverShare(const OsdMap& map, const PoolInfo& pool) {
  // The balancer's own bookkeeping keeps the items that apply, which is exactly
  // what placement does with all of them.
  return Balancer(map, pool).MaxRatio();
}

std::vector<UpmapItem> Balance(const OsdMap& map, const PoolInfo& pool, double max_over_share,
                               int max_items) {
  if (max_items <= 0) return {};
  const size_t items_max = static_cast<size_t>(max_items);
  Balancer balancer(map, pool);
  balancer.TrimItems(items_max);
  // Each step strictly lowers the sorted vector of ratios, so this ends; the
  // bound is a backstop (one move per replica is far more than balancing needs).
  const uint64_t steps_max = uint64_t{pool.pg_num} * pool.size + items_max;
  for (uint64_t step = 0; step < steps_max && balancer.Step(max_over_share, items_max); ++step) {
  }
  return balancer.Items();
}

}  // namespace weft::placement
