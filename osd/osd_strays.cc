// Stray copies: when a PG moves (an OSD out, reweighted, new OSDs), the OSDs
// it left keep their copy until the PG is whole elsewhere; then they delete
// it, so that the space backfill filled on the new members comes back on
// the old ones. A copy is deleted only when all of these hold under this
// OSD's newest map: we are neither in the PG's up nor acting set, no past
// interval of the PG names us (the PG may still need to hear from us), and
// the PG's primary says it is active+clean in an acting set without us.
// The deletion re-checks the map under apply_mu_, so a map making us a
// member again cannot interleave with it.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/log/log.h"
#include "common/placement/placement.h"
#include "osd/osd_daemon.h"

namespace weft::osd {
namespace {

bool Holds(const placement::PgMapping& mapping, OsdId me) {
  return std::find(mapping.up.begin(), mapping.up.end(), me) != mapping.up.end() ||
         std::find(mapping.acting.begin(), mapping.acting.end(), me) != mapping.acting.end();
}

// We may still be needed: not mapped here, and no past interval names us.
bool Unneeded(const OsdMap& map, const PgId& id, OsdId me, placement::PgMapping* mapping) {
  const PoolInfo* pool = map.FindPool(id.pool);
  if (pool == nullptr) return false;  // ApplyMap drops PGs of removed pools
  *mapping = placement::MapPg(map, *pool, id.seed);
  if (Holds(*mapping, me)) return false;
  for (const PastInterval& past : pool->past_intervals) {
    if (past.pg_seed == id.seed &&
        std::find(past.acting.begin(), past.acting.end(), me) != past.acting.end()) {
      return false;
    }
  }
  return true;
}

}  // namespace

void OsdDaemon::SweepStrays() {
  const OsdId me(options_.id);
  for (const std::shared_ptr<Pg>& pg : AllPgs()) {
    if (shutdown_.HasBeenNotified()) return;
    if (!pg->IsStray()) continue;
    std::shared_ptr<const OsdMap> map = CurrentMap();
    placement::PgMapping mapping;
    if (!Unneeded(*map, pg->id(), me, &mapping) || mapping.primary == kNoOsd) continue;
    const OsdInfo* primary = map->FindOsd(mapping.primary);
    if (primary == nullptr || !primary->up) continue;
    pb::PgCommandRequest req;
    req.set_pool(pg->id().pool.value());
    req.set_pg_seed(pg->id().seed);
    req.set_type(pb::PGC_CLEAN_CHECK);
    pb::PgCommandReply reply;
    if (!peers_->PgCommand(primary->addr, req, &reply).ok()) continue;  // not clean yet
    const auto& acting = reply.acting();
    if (std::find(acting.begin(), acting.end(), me.value()) != acting.end()) continue;
    RemoveStray(pg);
  }
}

void OsdDaemon::RemoveStray(const std::shared_ptr<Pg>& pg) {
  absl::MutexLock apply(&apply_mu_);
  placement::PgMapping mapping;
  if (!pg->IsStray() || !Unneeded(*CurrentMap(), pg->id(), OsdId(options_.id), &mapping)) return;
  {
    absl::MutexLock lock(&pgs_mu_);
    auto it = pgs_.find(pg->coll());
    if (it == pgs_.end() || it->second != pg) return;
    pgs_.erase(it);
  }
  const absl::Status status = store_->RemoveCollection(pg->coll());
  LOG(INFO) << "pg=" << pg->coll() << " event=stray_removed status=\"" << status.message()
            << "\"";
}

}  // namespace weft::osd
