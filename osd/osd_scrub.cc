// The daemon's side of scrub and repair: the operator's commands (weft pg
// scrub|deep-scrub|repair, weft osd scrub ... N|all), a member's report of a
// damaged copy, the scrub maps members send their primary, and the schedule
// (osd_scrub_min_interval, osd_deep_scrub_interval, osd_scrub_load_threshold_pct,
// osd_max_scrubs). The scrubbing itself is the PG's (osd/pg/pg_scrub.cc).
#include <stdlib.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "common/log/log.h"
#include "osd/osd_daemon.h"
#include "osd/pg/osd_error.h"

namespace weft::osd {
namespace {

const char* CommandName(pb::PgCommandType type) {
  switch (type) {
    case pb::PGC_SCRUB: return "scrub";
    case pb::PGC_DEEP_SCRUB: return "deep-scrub";
    case pb::PGC_REPAIR: return "repair";
    default: return "?";
  }
}

}  // namespace

void OsdDaemon::PgCommand(const pb::PgCommandRequest& req, pb::PgCommandReply* reply) {
  std::vector<std::shared_ptr<Pg>> pgs;
  if (req.all()) {
    pgs = PrimaryPgs();
  } else {
    std::shared_ptr<const OsdMap> map;
    auto pg = FindPg(0, req.pool(), req.pg_seed(), /*client=*/false, &map);
    if (!pg.ok()) return FillStatus(pg.status(), reply->mutable_status());
    if (!(*pg)->IsPrimary()) {
      return FillStatus(OsdError(pb::NOT_PRIMARY, absl::StrCat("osd.", options_.id,
                                                               " is not the primary of pg ",
                                                               (*pg)->coll())),
                        reply->mutable_status());
    }
    pgs.push_back(*pg);
  }
  switch (req.type()) {
    case pb::PGC_REPAIR_OBJECT: {
      if (req.all() || pgs.size() != 1 || req.oid().empty()) {
        return FillStatus(absl::InvalidArgumentError("repair of an object names its pg and oid"),
                          reply->mutable_status());
      }
      return FillStatus(pgs[0]->RepairObject(req.oid(), OsdId(req.osd())),
                        reply->mutable_status());
    }
    case pb::PGC_CLEAN_CHECK:
      if (pgs.size() != 1) {
        return FillStatus(absl::InvalidArgumentError("a clean check names one pg"),
                          reply->mutable_status());
      }
      return FillStatus(pgs[0]->CleanCheck(reply), reply->mutable_status());
    case pb::PGC_QUERY:
      if (pgs.size() != 1) {
        return FillStatus(absl::InvalidArgumentError("a query names one pg"),
                          reply->mutable_status());
      }
      reply->set_message(pgs[0]->Describe());
      return FillStatus(absl::OkStatus(), reply->mutable_status());
    case pb::PGC_LIST_INCONSISTENT:
      for (const auto& pg : pgs) {
        for (pb::InconsistentObject& o : pg->Inconsistent()) {
          *reply->add_inconsistent() = std::move(o);
        }
        *reply->add_pgs() = pg->ScrubStat();
      }
      return FillStatus(absl::OkStatus(), reply->mutable_status());
    case pb::PGC_SCRUB:
    case pb::PGC_DEEP_SCRUB:
    case pb::PGC_REPAIR:
      break;
    default:
      return FillStatus(absl::InvalidArgumentError("unknown pg command"),
                        reply->mutable_status());
  }
  auto waiter = std::make_shared<ScrubWaiter>();
  {
    absl::MutexLock lock(&waiter->mu);
    waiter->left = static_cast<int>(pgs.size());
  }
  {
    absl::MutexLock lock(&scrub_mu_);
    for (const auto& pg : pgs) {
      scrub_queue_.push_back({pg, req.type(), req.wait() ? waiter : nullptr});
    }
  }
  LOG(INFO) << "event=scrub_requested type=" << CommandName(req.type()) << " pgs=" << pgs.size();
  reply->set_message(absl::StrCat("osd.", options_.id, ": ", CommandName(req.type()), " of ",
                                  pgs.size(), " pg", pgs.size() == 1 ? "" : "s", " queued"));
  if (req.wait()) {
    absl::MutexLock lock(&waiter->mu);
    auto done = [&waiter] {
      waiter->mu.AssertReaderHeld();
      return waiter->left == 0;
    };
    waiter->mu.Await(absl::Condition(&done));
    for (pb::InconsistentObject& o : waiter->found) *reply->add_inconsistent() = std::move(o);
    for (const auto& pg : pgs) *reply->add_pgs() = pg->ScrubStat();
    return FillStatus(waiter->status, reply->mutable_status());
  }
  FillStatus(absl::OkStatus(), reply->mutable_status());
}

void OsdDaemon::ScrubMap(const pb::ScrubMapRequest& req, pb::ScrubMapReply* reply) {
  std::shared_ptr<const OsdMap> map;
  auto pg = FindPg(req.map_epoch(), req.pool(), req.pg_seed(), /*client=*/false, &map);
  if (!pg.ok()) return FillStatus(pg.status(), reply->mutable_status());
  (*pg)->HandleScrubMap(req, reply);
}

bool OsdDaemon::HostLoaded() const {
  double load = 0;
  if (getloadavg(&load, 1) != 1) return false;
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  return load / cores * 100 >= static_cast<double>(options_.scrub_load_threshold_pct);
}

OsdDaemon::ScrubJob OsdDaemon::NextScheduledScrub() {
  if (HostLoaded()) return {};
  std::vector<std::shared_ptr<Pg>> pgs = PrimaryPgs();
  if (pgs.empty()) return {};
  size_t start = 0;
  {
    absl::MutexLock lock(&scrub_mu_);
    start = scrub_cursor_++;
  }
  const absl::Time now = absl::Now();
  for (size_t i = 0; i < pgs.size(); ++i) {
    const auto& pg = pgs[(start + i) % pgs.size()];
    const pb::PgCommandType due = pg->ScrubDue(now);
    if (due != pb::PGC_NONE) return {pg, due, nullptr};
  }
  return {};
}

void OsdDaemon::ScrubLoop() {
  while (!shutdown_.HasBeenNotified()) {
    ScrubJob job;
    {
      absl::MutexLock lock(&scrub_mu_);
      auto ready = [this] {
        scrub_mu_.AssertReaderHeld();
        return !scrub_queue_.empty() || shutdown_.HasBeenNotified();
      };
      scrub_mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(1));
      if (shutdown_.HasBeenNotified()) break;
      if (!scrub_queue_.empty()) {
        job = std::move(scrub_queue_.front());
        scrub_queue_.pop_front();
      }
    }
    if (job.pg == nullptr) job = NextScheduledScrub();
    if (job.pg == nullptr) continue;
    std::vector<pb::InconsistentObject> found;
    const absl::Status status = job.pg->Scrub(job.type, &found);
    if (!status.ok()) {
      LOG(WARNING) << "pg=" << job.pg->coll() << " event=scrub_failed type="
                   << CommandName(job.type) << " status=\"" << status << "\"";
    }
    StatsSoon();
    if (job.waiter != nullptr) {
      absl::MutexLock lock(&job.waiter->mu);
      if (!status.ok() && job.waiter->status.ok()) {
        job.waiter->status = absl::Status(status.code(), absl::StrCat("pg ", job.pg->coll(),
                                                                      ": ", status.message()));
      }
      for (pb::InconsistentObject& o : found) job.waiter->found.push_back(std::move(o));
      --job.waiter->left;
    }
  }
  // Nobody runs what is still queued: its waiters hear so.
  absl::MutexLock lock(&scrub_mu_);
  for (ScrubJob& job : scrub_queue_) {
    if (job.waiter == nullptr) continue;
    absl::MutexLock wl(&job.waiter->mu);
    job.waiter->status = absl::UnavailableError("the osd is shutting down");
    --job.waiter->left;
  }
  scrub_queue_.clear();
}

}  // namespace weft::osd
