#include "common/placement/placement.h"

#include <xxhash.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace weft::placement {
namespace {

// Erasure pools: rounds of per-position draws before the collision fallback.
constexpr uint32_t kIndepRounds = 16;
// Balance correction: fixed-point iterations and their stopping error (relative
// error of the worst inclusion probability). Typical maps need 5-15 rounds.
constexpr int kAdjustIterationsMax = 60;
constexpr double kAdjustTolerance = 1e-10;
// Above this many domains the exact inclusion probabilities (O(n k) per
// quadrature node, 384 nodes, per iteration) get slow; the closed-form start
// is then used alone, which is accurate when every share is small, as it is
// with that many domains.
constexpr size_t kExactDomainsMax = 4096;

void Put32(uint32_t v, unsigned char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}
void Put64(uint64_t v, unsigned char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<unsigned char>(v >> (8 * i));
}

// u in (0, 1] for one candidate. The hash input is serialized little-endian so
// that every machine computes the same placement. Only the high 53 bits are
// used, because a double holds 53; the +1 keeps u away from 0 (ln 0 = -inf
// would tie every unlucky candidate) and lets u reach 1 exactly.
double Unit(uint32_t pool, uint32_t pg_seed, uint64_t key, uint32_t attempt) {
  unsigned char buf[20];
  Put32(pool, buf);
  Put32(pg_seed, buf + 4);
  Put64(key, buf + 8);
  Put32(attempt, buf + 16);
  const uint64_t h = XXH3_64bits(buf, sizeof(buf));
  return static_cast<double>((h >> 11) + 1) * 0x1.0p-53;
}

uint64_t KeyHash(const std::string& key) { return XXH3_64bits(key.data(), key.size()); }

std::string OsdKey(OsdId id) { return absl::StrCat("osd.", id.value()); }
std::string HostKey(const OsdInfo& o) {
  return o.host.empty() ? OsdKey(o.id) : absl::StrCat("host:", o.host);
}
// AdjustWeights remembered by input, because MapPg (one PG at a time, as the
// client calls it per I/O) rebuilds the pool's placement on every call and the
// solve costs ~1 ms where the rest costs ~10 us. A memo of a pure function:
// it cannot go stale. Cleared whole when full; maps change rarely.
class AdjustCache {
 public:
  struct Entry {
    std::vector<double> v;
    std::vector<bool> capped;
  };

  Entry Get(const std::vector<double>& weights, uint32_t k) {
    auto key = std::make_pair(k, weights);
    {
      absl::MutexLock lock(&mu_);
      auto it = entries_.find(key);
      if (it != entries_.end()) return it->second;
    }
    Entry e;  // solved outside the lock; a racing duplicate solve is harmless
    e.v = internal::AdjustWeights(weights, k, &e.capped);
    absl::MutexLock lock(&mu_);
    if (entries_.size() >= kEntriesMax) entries_.clear();
    entries_.emplace(std::move(key), e);
    return e;
  }

 private:
  static constexpr size_t kEntriesMax = 64;
  absl::Mutex mu_;
  absl::flat_hash_map<std::pair<uint32_t, std::vector<double>>, Entry> entries_
      ABSL_GUARDED_BY(mu_);
};

AdjustCache& GlobalAdjustCache() {
  static AdjustCache* cache = new AdjustCache();  // never destroyed: no exit-order races
  return *cache;
}

// Quadrature on (0, 1) for the inclusion integral below: 16-point Gauss-
// Legendre on [0, 1/2], [1/2, 3/4], [3/4, 7/8], ... (kQuadratureLevels pieces,
// the last one reaching 1). The pieces shrink towards 1 because a heavy item's
// density a x^(a-1) is concentrated there. Computed once, by Newton's method.
constexpr int kGaussPoints = 16;
constexpr int kQuadratureLevels = 24;
struct Quadrature {
  std::vector<double> x, w;
};
const Quadrature& InclusionQuadrature() {
  static const Quadrature q = [] {
    const int n = kGaussPoints;
    std::array<double, kGaussPoints> gx, gw;  // on [-1, 1]
    for (int i = 0; i < n; ++i) {
      double x = std::cos(M_PI * (i + 0.75) / (n + 0.5));
      double dp = 1;
      for (int iter = 0; iter < 100; ++iter) {
        double p0 = 1, p1 = x;  // Legendre P_0, P_1; recurrence up to P_n
        for (int j = 2; j <= n; ++j) {
          const double p2 = ((2 * j - 1) * x * p1 - (j - 1) * p0) / j;
          p0 = p1;
          p1 = p2;
        }
        dp = n * (x * p1 - p0) / (x * x - 1);
        const double dx = p1 / dp;
        x -= dx;
        if (std::abs(dx) < 1e-16) break;
      }
      gx[i] = x;
      gw[i] = 2 / ((1 - x * x) * dp * dp);
    }
    Quadrature out;
    for (int level = 0; level < kQuadratureLevels; ++level) {
      const double lo = level == 0 ? 0.0 : 1 - std::ldexp(1.0, -level);
      const double hi = level == kQuadratureLevels - 1 ? 1.0 : 1 - std::ldexp(1.0, -level - 1);
      for (int i = 0; i < n; ++i) {
        out.x.push_back(lo + (hi - lo) * (gx[i] + 1) / 2);
        out.w.push_back((hi - lo) / 2 * gw[i]);
      }
    }
    return out;
  }();
  return q;
}

// Starting point of the adjusted weights: v_i = -ln(1 - target_i). This
// inverts Rosen's approximation of sampling without replacement,
// pi_i ~ 1 - e^{-v_i tau}; it is exact as shares go to 0 and leaves ~2% errors
// for 3 of 10, which the fixed point then removes.
std::vector<double> ClosedFormWeights(absl::Span<const double> target) {
  std::vector<double> v(target.size());
  for (size_t i = 0; i < target.size(); ++i) v[i] = -std::log1p(-target[i]);
  return v;
}

void Normalize(std::vector<double>* v) {
  const double sum = std::accumulate(v->begin(), v->end(), 0.0);
  for (double& x : *v) x /= sum;
}

}  // namespace

namespace internal {

std::vector<double> InclusionProbabilities(absl::Span<const double> v, uint32_t k) {
  const size_t n = v.size();
  if (k >= n) return std::vector<double>(n, 1.0);
  if (k == 0) return std::vector<double>(n, 0.0);
  // Item i is drawn at time T_i ~ Exp(v_i) (the draw ln(u)/v_i is -T_i) and is
  // chosen iff fewer than k others came before it:
  //   pi_i = integral over t of v_i e^{-v_i t} P(at most k-1 others by t) dt.
  // With x = e^{-t v_min} and a_j = v_j / v_min >= 1 this is
  //   pi_i = integral_0^1 a_i x^(a_i - 1) F_i(x) dx,
  // where item j has not fired with probability x^(a_j). All exponents are
  // >= 1, so the integrand is smooth at x = 0 (a substitution per item, such as
  // y = e^{-v_i t}, puts x^(small) terms there and loses six digits), and the
  // grid is shared by all items: F_i comes from prefix and suffix
  // Poisson-binomial tables, truncated at k terms, in O(n k) per node.
  const double v_min = *std::min_element(v.begin(), v.end());
  std::vector<double> a(n);
  for (size_t j = 0; j < n; ++j) a[j] = v[j] / v_min;
  const Quadrature& q = InclusionQuadrature();
  std::vector<double> pi(n, 0.0);
  std::vector<double> prefix((n + 1) * k), suffix((n + 1) * k), not_yet(n), fired(n);
  for (size_t node = 0; node < q.x.size(); ++node) {
    const double ln_x = std::log(q.x[node]);
    for (size_t j = 0; j < n; ++j) {
      not_yet[j] = std::exp(a[j] * ln_x);
      fired[j] = -std::expm1(a[j] * ln_x);
    }
    // prefix[i*k + m]: P(m of items [0, i) fired); suffix[i*k + m]: of [i, n).
    auto extend = [k](const double* from, double* to, double stay, double go) {
      to[0] = from[0] * stay;
      for (size_t m = 1; m < k; ++m) to[m] = from[m] * stay + from[m - 1] * go;
    };
    std::fill(prefix.begin(), prefix.begin() + k, 0.0);
    prefix[0] = 1;
    for (size_t j = 0; j < n; ++j) {
      extend(&prefix[j * k], &prefix[(j + 1) * k], not_yet[j], fired[j]);
    }
    std::fill(suffix.begin() + n * k, suffix.end(), 0.0);
    suffix[n * k] = 1;
    for (size_t j = n; j-- > 0;) {
      extend(&suffix[(j + 1) * k], &suffix[j * k], not_yet[j], fired[j]);
    }
    for (size_t i = 0; i < n; ++i) {
      // F_i = sum over b + c <= k - 1 of prefix_i[b] * suffix_{i+1}[c].
      const double* pre = &prefix[i * k];
      const double* suf = &suffix[(i + 1) * k];
      double f = 0, suf_cum = 0;
      for (size_t c = 0; c < k; ++c) {
        suf_cum += suf[c];
        f += pre[k - 1 - c] * suf_cum;
      }
      pi[i] += q.w[node] * a[i] * std::exp((a[i] - 1) * ln_x) * f;
    }
  }
  return pi;
}

namespace {

// Water-filling: an item whose share k * w / W reaches 1 is in every choice;
// flag it and share the remaining picks among the rest, until no share of the
// rest reaches 1. Returns the picks left for the rest.
uint32_t WaterFill(absl::Span<const double> weights, uint32_t k, std::vector<bool>* capped) {
  double rest_weight = std::accumulate(weights.begin(), weights.end(), 0.0);
  uint32_t rest_k = k;
  for (bool changed = true; changed && rest_k > 0;) {
    changed = false;
    // Capping several at once is safe: if w_i and w_j both reach W / k, w_j
    // still reaches (W - w_i) / (k - 1) after w_i is taken out.
    const double bar = rest_weight / rest_k;
    for (size_t i = 0; i < weights.size() && rest_k > 0; ++i) {
      if (!(*capped)[i] && weights[i] >= bar) {
        (*capped)[i] = true;
        rest_weight -= weights[i];
        --rest_k;
        changed = true;
      }
    }
  }
  return rest_k;
}

bool AllPositiveFinite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x) && x > 0; });
}

}  // namespace

std::vector<double> AdjustWeights(absl::Span<const double> weights, uint32_t k,
                                  std::vector<bool>* capped) {
  const size_t n = weights.size();
  capped->assign(n, k >= n);
  std::vector<double> v(n, 1.0);
  if (k >= n) return v;
  // 1. Items holding more than 1/k of the weight.
  const uint32_t rest_k = WaterFill(weights, k, capped);
  std::vector<size_t> rest;
  std::vector<double> rv, target;
  double rest_weight = 0;
  for (size_t i = 0; i < n; ++i) {
    if ((*capped)[i]) continue;
    rest.push_back(i);
    rv.push_back(weights[i]);
    rest_weight += weights[i];
  }
  for (double w : rv) target.push_back(rest_k * w / rest_weight);
  // 2. One pick, or equal weights, need no adjustment: rendezvous is exact.
  const bool all_equal = std::all_of(rv.begin(), rv.end(), [&](double w) { return w == rv[0]; });
  if (rest_k > 1 && !all_equal) {
    rv = ClosedFormWeights(target);
    // 3. Fixed point: scale each weight by how far its inclusion is from target.
    for (int iter = 0; iter < kAdjustIterationsMax && rv.size() <= kExactDomainsMax; ++iter) {
      Normalize(&rv);
      const std::vector<double> pi = InclusionProbabilities(rv, rest_k);
      std::vector<double> next = rv;
      double err = 0;
      for (size_t j = 0; j < rv.size(); ++j) {
        err = std::max(err, std::abs(pi[j] / target[j] - 1));
        // -ln(1 - pi) is nearly proportional to the weight (the closed form
        // above), so scaling by its ratio converges in a few rounds even for
        // shares near 1, where scaling by pi itself crawls. The clamp keeps a
        // quadrature result of 1.0 from producing ln(0).
        const double got = std::clamp(pi[j], 1e-300, 1 - 0x1.0p-52);
        next[j] *= std::log1p(-target[j]) / std::log1p(-got);
      }
      if (!AllPositiveFinite(next)) break;  // keep the last good weights

      rv = std::move(next);
      if (err < kAdjustTolerance) break;
    }
  }
  if (!rv.empty()) Normalize(&rv);
  for (size_t j = 0; j < rest.size(); ++j) v[rest[j]] = rv[j];
  // Capped items keep 1.0, the sum of the others: erasure pools (which have no
  // "always" rule) then take them for a position about half the time per draw.
  return v;
}

void ApplyUpmapItems(absl::Span<const UpmapItem> items,
                     absl::FunctionRef<int(OsdId)> domain_of, std::vector<OsdId>* up,
                     std::vector<bool>* applied) {
  if (applied != nullptr) applied->assign(items.size(), false);
  for (size_t i = 0; i < items.size(); ++i) {
    const UpmapItem& item = items[i];
    const auto from = std::find(up->begin(), up->end(), item.from);
    if (from == up->end()) continue;
    const int to_domain = domain_of(item.to);
    if (to_domain < 0) continue;  // absent, out or weight 0
    bool clash = false;
    for (auto it = up->begin(); it != up->end() && !clash; ++it) {
      // The member being replaced may share the target's domain; nobody else.
      clash = *it == item.to || (it != from && domain_of(*it) == to_domain);
    }
    if (clash) continue;
    *from = item.to;
    if (applied != nullptr) (*applied)[i] = true;
  }
}

}  // namespace internal

// Out, zero-weight (and, defensively, non-finite weight) OSDs get no PGs.
bool HoldsPgs(const OsdInfo& o) {
  return o.in && o.placement_weight() > 0 && std::isfinite(o.placement_weight());
}

std::string FailureDomainKey(const OsdInfo& osd, FailureDomain level) {
  switch (level) {
    case FailureDomain::kOsd: return OsdKey(osd.id);
    case FailureDomain::kHost: return HostKey(osd);
    case FailureDomain::kRack:
      // A rackless OSD is its host's own rack, never a rack of its own: two of
      // them on one host must not hold two copies under a rack rule.
      return osd.rack.empty() ? HostKey(osd) : absl::StrCat("rack:", osd.rack);
  }
  return OsdKey(osd.id);
}

size_t CountFailureDomains(const OsdMap& map, FailureDomain level) {
  std::set<std::string> keys;
  for (const OsdInfo& o : map.osds) {
    if (HoldsPgs(o)) keys.insert(FailureDomainKey(o, level));
  }
  return keys.size();
}

uint64_t HashObjectName(absl::string_view name) { return XXH3_64bits(name.data(), name.size()); }

uint32_t StableMod(uint64_t hash, uint32_t pg_num) {
  if (pg_num <= 1) return 0;
  // Smallest 2^b - 1 covering pg_num - 1. Seeds in [pg_num, mask] do not exist
  // yet and fold onto their parent one bit lower, which is what makes growth a
  // split: a new PG p only receives objects from p with its top bit cleared.
  const uint64_t mask = std::bit_ceil(uint64_t{pg_num}) - 1;
  return (hash & mask) < pg_num ? static_cast<uint32_t>(hash & mask)
                                : static_cast<uint32_t>(hash & (mask >> 1));
}

uint32_t ObjectToPgSeed(absl::string_view name, uint32_t pg_num) {
  return StableMod(HashObjectName(name), pg_num);
}

PgId ObjectToPg(const PoolInfo& pool, absl::string_view name) {
  return PgId{pool.id, ObjectToPgSeed(name, pool.pg_num)};
}

PoolPlacement::PoolPlacement(const OsdMap& map, const PoolInfo& pool)
    : pool_id_(pool.id.value()), type_(pool.type), size_(pool.size) {
  // 1. Group the eligible OSDs by failure domain. std::map orders domains by
  //    key so that the result does not depend on the order of map.osds.
  std::map<std::string, std::vector<Member>> by_key;
  for (const OsdInfo& o : map.osds) {
    if (!HoldsPgs(o)) continue;
    by_key[FailureDomainKey(o, pool.failure_domain)].push_back(
        Member{o.id, o.placement_weight(), o.up, KeyHash(OsdKey(o.id))});
  }
  std::vector<double> weights;
  for (auto& [key, members] : by_key) {
    double weight = 0;
    for (const Member& m : members) weight += m.weight;
    domains_.push_back(Domain{KeyHash(key), weight, weight, false, std::move(members)});
    weights.push_back(weight);
  }
  // 2. Adjusted weights for the domain draws.
  const AdjustCache::Entry adjusted = GlobalAdjustCache().Get(weights, size_);
  for (size_t i = 0; i < domains_.size(); ++i) {
    domains_[i].draw_weight = adjusted.v[i];
    domains_[i].always = adjusted.capped[i];
  }
  // 3. Upmap items, and the OSDs they may name (only when there are items:
  //    MapPg builds all this on every call).
  if (pool.upmap_items.empty()) return;
  upmap_items_ = pool.upmap_items;
  // Validate keeps them sorted; a map that skipped it must still not mislead
  // the binary search in Map().
  std::sort(upmap_items_.begin(), upmap_items_.end());
  for (size_t i = 0; i < domains_.size(); ++i) {
    for (const Member& m : domains_[i].members) {
      slots_.push_back(Slot{m.id, static_cast<int>(i), m.up});
    }
  }
  std::sort(slots_.begin(), slots_.end(),
            [](const Slot& a, const Slot& b) { return a.id < b.id; });
}

const PoolPlacement::Slot* PoolPlacement::FindSlot(OsdId id) const {
  auto it = std::lower_bound(slots_.begin(), slots_.end(), id,
                             [](const Slot& s, OsdId want) { return s.id < want; });
  return it != slots_.end() && it->id == id ? &*it : nullptr;
}

std::vector<int> PoolPlacement::RankReplicated(uint32_t pg_seed) const {
  struct Ranked {
    double select;  // decides membership
    double order;   // decides the order of the members
    uint64_t key;
    int index;
  };
  std::vector<Ranked> ranked;
  ranked.reserve(domains_.size());
  for (size_t i = 0; i < domains_.size(); ++i) {
    const Domain& d = domains_[i];
    const double ln_u = std::log(Unit(pool_id_, pg_seed, d.key, 0));
    const double select =
        d.always ? std::numeric_limits<double>::infinity() : ln_u / d.draw_weight;
    ranked.push_back(Ranked{select, ln_u / d.weight, d.key, static_cast<int>(i)});
  }
  const size_t k = std::min<size_t>(size_, ranked.size());
  // Ties (equal 53-bit u) are broken by key so the result never depends on sort
  // stability.
  std::partial_sort(ranked.begin(), ranked.begin() + k, ranked.end(),
                    [](const Ranked& a, const Ranked& b) {
                      return a.select != b.select ? a.select > b.select : a.key < b.key;
                    });
  // Order the chosen by the draws on raw weights: with equal domain weights
  // this is the selection order itself, and it does not shift when the
  // adjusted weights of other domains change.
  std::sort(ranked.begin(), ranked.begin() + k, [](const Ranked& a, const Ranked& b) {
    return a.order != b.order ? a.order > b.order : a.key < b.key;
  });
  std::vector<int> out(k);
  for (size_t i = 0; i < k; ++i) out[i] = ranked[i].index;
  return out;
}

std::vector<int> PoolPlacement::RankErasure(uint32_t pg_seed) const {
  const size_t n = domains_.size();
  const size_t m = std::min<size_t>(size_, n);
  std::vector<int> out(m, -1);
  std::vector<bool> used(n, false);
  auto best = [&](uint32_t attempt, bool skip_used) {
    int best_index = -1;
    double best_draw = 0;
    for (size_t i = 0; i < n; ++i) {
      if (skip_used && used[i]) continue;
      const Domain& d = domains_[i];
      const double draw = std::log(Unit(pool_id_, pg_seed, d.key, attempt)) / d.draw_weight;
      if (best_index < 0 || draw > best_draw ||
          (draw == best_draw && d.key < domains_[best_index].key)) {
        best_index = static_cast<int>(i);
        best_draw = draw;
      }
    }
    return best_index;
  };
  // 1. Each position draws on its own (attempt = position + size * round); a
  //    position whose winner is taken retries next round. A position's result
  //    thus depends on the others only through collisions.
  size_t filled = 0;
  for (uint32_t round = 0; round < kIndepRounds && filled < m; ++round) {
    for (size_t r = 0; r < m; ++r) {
      if (out[r] >= 0) continue;
      const int winner = best(static_cast<uint32_t>(r) + size_ * round, false);
      if (!used[winner]) {
        out[r] = winner;
        used[winner] = true;
        ++filled;
      }
    }
  }
  // 2. Rare (mostly when domains barely outnumber positions): take the best
  //    unused domain, so the set is never short while domains remain.
  for (size_t r = 0; r < m && filled < m; ++r) {
    if (out[r] >= 0) continue;
    const int winner = best(static_cast<uint32_t>(r) + size_ * kIndepRounds, true);
    out[r] = winner;
    used[winner] = true;
    ++filled;
  }
  return out;
}

const PoolPlacement::Member& PoolPlacement::PickMember(const Domain& domain,
                                                       uint32_t pg_seed) const {
  // One pick per domain: plain rendezvous is exact for a single pick.
  const Member* best = &domain.members[0];
  if (domain.members.size() == 1) return *best;
  double best_draw = -std::numeric_limits<double>::infinity();
  for (const Member& m : domain.members) {
    const double draw = std::log(Unit(pool_id_, pg_seed, m.key, 0)) / m.weight;
    if (draw > best_draw || (draw == best_draw && m.key < best->key)) {
      best = &m;
      best_draw = draw;
    }
  }
  return *best;
}

PgMapping PoolPlacement::Map(uint32_t pg_seed) const {
  const std::vector<int> ranked =
      type_ == PoolType::kErasure ? RankErasure(pg_seed) : RankReplicated(pg_seed);
  PgMapping out;
  out.up.reserve(ranked.size());
  std::vector<bool> member_up;
  member_up.reserve(ranked.size());
  for (int index : ranked) {
    const Member& m = PickMember(domains_[index], pg_seed);
    out.up.push_back(m.id);
    member_up.push_back(m.up);
  }
  // Upmap items of this PG (the list is sorted by seed first).
  const auto items = std::equal_range(
      upmap_items_.begin(), upmap_items_.end(), UpmapItem{pg_seed, kNoOsd, kNoOsd},
      [](const UpmapItem& a, const UpmapItem& b) { return a.pg_seed < b.pg_seed; });
  if (items.first != items.second) {
    const std::vector<OsdId> raw = out.up;
    internal::ApplyUpmapItems(absl::MakeConstSpan(&*items.first, items.second - items.first),
                              [this](OsdId id) {
                                const Slot* s = FindSlot(id);
                                return s == nullptr ? -1 : s->domain;
                              },
                              &out.up);
    for (size_t r = 0; r < out.up.size(); ++r) {
      if (out.up[r] != raw[r]) member_up[r] = FindSlot(out.up[r])->up;
    }
  }
  out.acting.reserve(out.up.size());
  for (size_t r = 0; r < out.up.size(); ++r) {
    if (member_up[r]) {
      out.acting.push_back(out.up[r]);
    } else if (type_ == PoolType::kErasure) {
      out.acting.push_back(kNoOsd);  // shard index = position: keep the hole
    }
  }
  for (OsdId id : out.acting) {
    if (id != kNoOsd) {
      out.primary = id;
      break;
    }
  }
  return out;
}

PgMapping MapPg(const OsdMap& map, const PoolInfo& pool, uint32_t pg_seed) {
  return PoolPlacement(map, pool).Map(pg_seed);
}

}  // namespace weft::placement
