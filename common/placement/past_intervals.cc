#include "common/placement/past_intervals.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/placement/placement.h"

namespace weft::placement {
namespace {

std::vector<OsdId> Members(const PgMapping& mapping) {
  std::vector<OsdId> out;
  for (OsdId osd : mapping.acting) {
    if (osd != kNoOsd) out.push_back(osd);
  }
  return out;
}

}  // namespace

void RecordPastIntervals(const OsdMap& prev, OsdMap* next) {
  for (PoolInfo& pool : next->pools) {
    const PoolInfo* old = prev.FindPool(pool.id);
    if (old == nullptr || old->pg_num != pool.pg_num) continue;
    const PoolPlacement before(prev, *old);
    const PoolPlacement after(*next, pool);
    std::vector<PastInterval> added;
    for (uint32_t seed = 0; seed < pool.pg_num; ++seed) {
      const PgMapping a = before.Map(seed);
      const PgMapping b = after.Map(seed);
      if (a.acting == b.acting && a.primary == b.primary) continue;
      std::vector<OsdId> members = Members(a);
      if (a.primary == kNoOsd || members.size() < old->min_size) continue;
      added.push_back(PastInterval{seed, prev.epoch, std::move(members)});
    }
    if (added.empty()) continue;
    std::vector<PastInterval> merged;
    merged.reserve(pool.past_intervals.size() + added.size());
    std::merge(pool.past_intervals.begin(), pool.past_intervals.end(), added.begin(), added.end(),
               std::back_inserter(merged), [](const PastInterval& x, const PastInterval& y) {
                 return std::tie(x.pg_seed, x.last_epoch) < std::tie(y.pg_seed, y.last_epoch);
               });
    // One record per distinct member set of a PG, the newest: two with the
    // same members ask peering for the same thing, and the newer one is the
    // stricter for pruning. A flapping OSD so adds two records, not two per flap.
    pool.past_intervals.clear();
    for (size_t i = 0; i < merged.size(); ++i) {
      bool newer_same = false;
      for (size_t j = i + 1; j < merged.size() && merged[j].pg_seed == merged[i].pg_seed; ++j) {
        newer_same |= merged[j].acting == merged[i].acting;
      }
      if (!newer_same) pool.past_intervals.push_back(std::move(merged[i]));
    }
  }
}

bool PrunePastIntervals(const std::map<PgId, Epoch>& clean_since, OsdMap* map) {
  bool changed = false;
  for (PoolInfo& pool : map->pools) {
    auto& list = pool.past_intervals;
    const size_t before = list.size();
    list.erase(std::remove_if(list.begin(), list.end(),
                              [&](const PastInterval& p) {
                                auto it = clean_since.find(PgId{pool.id, p.pg_seed});
                                return it != clean_since.end() && p.last_epoch < it->second;
                              }),
               list.end());
    changed |= list.size() != before;
  }
  return changed;
}

PastIntervalCheck CheckPastIntervals(const OsdMap& map, const PoolInfo& pool, uint32_t pg_seed,
                                     const std::vector<OsdId>& acting) {
  PastIntervalCheck out;
  const bool erasure = pool.type == PoolType::kErasure;
  const size_t need = erasure ? pool.ec_k : 1;
  for (const PastInterval& past : pool.past_intervals) {
    if (past.pg_seed != pg_seed) continue;
    size_t in_acting = 0;
    std::vector<OsdId> up_elsewhere;
    for (OsdId osd : past.acting) {
      if (std::find(acting.begin(), acting.end(), osd) != acting.end()) {
        ++in_acting;
      } else if (map.IsUp(osd)) {
        up_elsewhere.push_back(osd);
      }
    }
    if (in_acting >= need) continue;
    if (!erasure && !up_elsewhere.empty()) {
      out.probe.insert(up_elsewhere.begin(), up_elsewhere.end());
      continue;
    }
    std::vector<std::string> names;
    for (OsdId osd : past.acting) {
      names.push_back(absl::StrCat("osd.", osd.value(),
                                   map.IsUp(osd) ? " (up, no longer mapped here)" : ""));
      out.waiting_for.insert(osd);
    }
    out.blocked_by.push_back(absl::StrCat(absl::StrJoin(names, ", "), " (acting until epoch ",
                                          past.last_epoch, erasure ? ", needs " : "",
                                          erasure ? absl::StrCat(need, " of them") : "", ")"));
  }
  return out;
}

}  // namespace weft::placement
