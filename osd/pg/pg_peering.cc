// Peering and recovery of a replicated PG.
//
// When the acting set or the primary changes, the primary (holding the PG's
// order section, so no write runs meanwhile):
//   1. reloads its own log from disk and queries every acting member for its
//      info, log and missing set; an unreachable member fails the attempt, and
//      it is retried until the map drops that member;
//   2. picks the authoritative log: the highest last_update (every
//      acknowledged write is on every member of the interval that took it, so
//      the newest member has them all; unacknowledged writes it holds are
//      rolled forward, which a client retrying with the same request id sees
//      as done);
//   3. pulls what it lacks itself from the members that have it, then adopts
//      the authoritative log;
//   4. computes each replica's missing set — entries it does not have,
//      entries it has that the authoritative log does not (divergent), what it
//      had still missing — or, if its log ends before the authoritative log
//      begins, compares full listings (backfill);
//   5. activates the replicas with the log and their missing sets (persisted
//      there), goes active and pushes missing objects in the background, one
//      object per order-section turn, so client writes interleave. A write to
//      a missing object pushes that object first.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/executor/thread_pool.h"
#include "common/log/log.h"
#include "common/placement/past_intervals.h"
#include "common/status/status.h"
#include "osd/pg/osd_error.h"
#include "osd/pg/pg.h"
#include "osd/pg/pg_codec.h"

namespace weft::osd {

struct Pg::PeerMember {
  OsdId osd{-1};
  std::string addr;
  PgInfo info;
  std::vector<LogEntry> log;
  std::set<std::string> missing;
  int32_t ec_shard = -1;     // erasure pools: the position its objects were written for
  int32_t ec_position = -1;  // ... and its position now
  // Not in the acting set: an up OSD of a past interval, queried for its log
  // and pulled from, never activated.
  bool stray = false;
};

namespace {

bool Less(const Version& a, const Version& b) {
  return a.epoch != b.epoch ? a.epoch < b.epoch : a.seq < b.seq;
}
bool Same(const Version& a, const Version& b) { return a.epoch == b.epoch && a.seq == b.seq; }

using Member = Pg::PeerMember;

std::set<std::pair<uint64_t, uint64_t>> VersionSet(const std::vector<LogEntry>& log) {
  std::set<std::pair<uint64_t, uint64_t>> out;
  for (const auto& e : log) out.insert({e.version.epoch, e.version.seq});
  return out;
}

// Objects `m` lacks or holds stale relative to `auth`, from the logs alone.
std::set<std::string> LogMissing(const Member& m, const Member& auth) {
  std::set<std::string> out = m.missing;
  auto mine = VersionSet(m.log);
  auto theirs = VersionSet(auth.log);
  for (const LogEntry& e : auth.log) {
    if (Less(m.info.log_tail, e.version) && !mine.count({e.version.epoch, e.version.seq})) {
      out.insert(e.oid);
    }
  }
  for (const LogEntry& e : m.log) {
    if (!theirs.count({e.version.epoch, e.version.seq}) && Less(auth.info.log_tail, e.version)) {
      out.insert(e.oid);  // divergent: written here, never acknowledged
    }
  }
  return out;
}

bool NeedsBackfill(const Member& m, const Member& auth) {
  return Less(m.info.last_update, auth.info.log_tail);
}

std::set<std::string> ListingDiff(const std::map<std::string, Version>& auth,
                                  const std::map<std::string, Version>& other) {
  std::set<std::string> out;
  for (const auto& [oid, v] : auth) {
    auto it = other.find(oid);
    if (it == other.end() || !Same(it->second, v)) out.insert(oid);
  }
  for (const auto& [oid, v] : other) {
    if (!auth.count(oid)) out.insert(oid);
  }
  return out;
}

}  // namespace

void Pg::SchedulePeering(uint64_t interval_id, int64_t delay_ms) {
  auto self = shared_from_this();
  ctx_.background->Submit([self, interval_id, delay_ms] {
    if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    if (!self->StillInterval(interval_id)) return;
    absl::Status status = self->Peer(interval_id);
    if (status.ok()) return;
    LOG(INFO) << "pg=" << self->coll_ << " event=peering_retry reason=\"" << status.message()
              << "\"";
    {
      absl::MutexLock lock(&self->mu_);
      if (self->interval_.id != interval_id) return;
      self->state_ = State::kPeering;
    }
    self->SchedulePeering(interval_id, 1000);
  });
}

absl::StatusOr<std::map<std::string, Version>> Pg::ListAll(const std::string& addr, bool local) {
  std::map<std::string, Version> out;
  std::string after;
  for (;;) {
    bool more = false;
    if (local) {
      auto page = ctx_.store->ListObjects(coll_, after, 1000, &more);
      if (absl::IsNotFound(page.status())) return out;
      RETURN_IF_ERROR(page.status());
      for (const auto& [oid, meta] : *page) out[oid] = meta.version;
      if (!page->empty()) after = page->back().first;
    } else {
      pb::PgListRequest req;
      req.set_pool(id_.pool.value());
      req.set_pg_seed(id_.seed);
      req.set_start_after(after);
      req.set_max_entries(1000);
      req.set_flags(pb::OPF_LOCAL);
      pb::PgListReply reply;
      RETURN_IF_ERROR(ctx_.peers->List(addr, req, &reply));
      for (const auto& o : reply.objects()) out[o.oid()] = FromProto(o.version());
      more = reply.more();
      if (reply.objects_size() > 0) after = reply.objects().rbegin()->oid();
    }
    if (!more) return out;
  }
}

absl::Status Pg::Peer(uint64_t interval_id) {
  SectionGuard ordered(&order_);
  std::vector<OsdId> acting;
  std::vector<OsdId> strays;  // up OSDs of past intervals, outside `acting`
  Epoch epoch = 0;
  bool down = false;
  {
    absl::MutexLock lock(&mu_);
    if (interval_.id != interval_id) return absl::OkStatus();
    repeer_scheduled_ = false;
    if (interval_.acting.size() < interval_.min_size) {
      state_ = State::kIncomplete;
      StateChanged();
      return absl::OkStatus();  // waits for the map to bring members back
    }
    acting = interval_.acting;
    epoch = map_->epoch;
    // Past intervals: every one that may have taken writes must be heard
    // from, through an acting member or, failing that, an up OSD that was in
    // it (queried below as a stray); otherwise the PG waits, down.
    const PoolInfo* pool = map_->FindPool(id_.pool);
    if (pool != nullptr) {
      placement::PastIntervalCheck check =
          placement::CheckPastIntervals(*map_, *pool, id_.seed, acting);
      if (!check.blocked_by.empty()) {
        const bool logged = state_ == State::kDown && down_blocked_by_ == check.blocked_by;
        state_ = State::kDown;
        down_blocked_by_ = std::move(check.blocked_by);
        if (!logged) {
          LOG(WARNING) << "pg=" << coll_ << " event=down epoch=" << epoch << " waiting_for=\""
                       << absl::StrJoin(down_blocked_by_, "; ") << "\"";
        }
        down = true;
      } else {
        down_blocked_by_.clear();
        strays.assign(check.probe.begin(), check.probe.end());
      }
    }
  }
  if (down) {
    StateChanged();
    return absl::OkStatus();  // a later map peers again (OnMap)
  }
  // 1. Our own state as on disk, then every other member's.
  ASSIGN_OR_RETURN(PgLog mine, PgLog::Load(ctx_.store, coll_, ctx_.options->pg_log_max_entries));
  std::vector<Member> members;
  Member self;
  self.osd = ctx_.whoami;
  self.info = mine.info();
  self.log.assign(mine.entries().begin(), mine.entries().end());
  self.missing = mine.missing();
  {
    absl::MutexLock lock(&mu_);
    log_ = std::move(mine);
  }
  {
    absl::MutexLock lock(&mu_);
    self.ec_shard = ec_stored_shard_;
  }
  members.push_back(std::move(self));
  std::vector<OsdId> queried = acting;
  queried.insert(queried.end(), strays.begin(), strays.end());
  for (OsdId osd : queried) {
    if (osd == ctx_.whoami) continue;
    Member m;
    m.osd = osd;
    m.stray = std::find(acting.begin(), acting.end(), osd) == acting.end();
    m.addr = AddrOf(osd);
    pb::PgQueryRequest req;
    req.set_map_epoch(epoch);
    req.set_pool(id_.pool.value());
    req.set_pg_seed(id_.seed);
    pb::PgQueryReply reply;
    RETURN_IF_ERROR(Annotate(ctx_.peers->Query(m.addr, req, &reply),
                             absl::StrCat("query osd.", osd.value())));
    m.info = FromProto(reply.info());
    for (const auto& e : reply.log()) m.log.push_back(FromProto(e));
    m.missing.insert(reply.missing().begin(), reply.missing().end());
    m.ec_shard = static_cast<int32_t>(reply.ec_shard_plus_one()) - 1;
    members.push_back(std::move(m));
  }
  // 2. Erasure pools: a newest write on fewer than k shards cannot be rebuilt;
  // undo it where it was applied.
  if (ec_) RETURN_IF_ERROR(EcRollbackPartial(epoch, &members));
  // The authoritative member: newest last_update, ourselves on a tie.
  size_t auth = 0;
  for (size_t i = 1; i < members.size(); ++i) {
    if (Less(members[auth].info.last_update, members[i].info.last_update)) auth = i;
  }
  // 3. Bring ourselves up to the authoritative state. Erasure pools rebuild
  // what we lack after activation instead of pulling it now.
  std::set<std::string> self_missing;
  if (ec_) self_missing = members[0].missing;
  if (auth != 0) {
    std::set<std::string> need;
    if (NeedsBackfill(members[0], members[auth])) {
      ASSIGN_OR_RETURN(auto theirs, ListAll(members[auth].addr, false));
      ASSIGN_OR_RETURN(auto ours, ListAll("", true));
      need = ListingDiff(theirs, ours);
    } else {
      need = LogMissing(members[0], members[auth]);
    }
    std::vector<std::string> sources;
    sources.push_back(members[auth].addr);
    for (size_t i = 1; i < members.size(); ++i) {
      if (i != auth) sources.push_back(members[i].addr);
    }
    for (const std::string& oid : need) {
      if (ec_) break;
      if (!StillInterval(interval_id)) return absl::OkStatus();
      RecoveryThrottle::Slot slot(ctx_.recovery);
      RETURN_IF_ERROR(PullObject(oid, sources, interval_id));
    }
    if (ec_) self_missing.insert(need.begin(), need.end());
    Transaction txn;
    {
      absl::MutexLock lock(&mu_);
      log_.Adopt(members[auth].info, members[auth].log, &txn);
      std::vector<std::string> stale(log_.missing().begin(), log_.missing().end());
      for (const auto& oid : stale) log_.RemoveMissing(oid, &txn);
      for (const auto& oid : self_missing) log_.AddMissing(oid, &txn);
    }
    RETURN_IF_ERROR(ctx_.store->Apply(coll_, std::move(txn)));
    members[0].info = members[auth].info;
    members[0].log = members[auth].log;
    members[0].missing.clear();
  } else if (!members[0].missing.empty() && !ec_) {
    // We are newest but still lack objects from an earlier recovery.
    std::vector<std::string> sources;
    for (size_t i = 1; i < members.size(); ++i) sources.push_back(members[i].addr);
    for (const std::string& oid : members[0].missing) {
      RecoveryThrottle::Slot slot(ctx_.recovery);
      RETURN_IF_ERROR(PullObject(oid, sources, interval_id));
    }
    members[0].missing.clear();
  }
  if (ec_) RETURN_IF_ERROR(EcRebuildIfMoved(members[0], members[auth], auth != 0, &self_missing));
  // 4-5. Each replica's missing set, activation, then active.
  std::map<OsdId, std::set<std::string>> peer_missing;
  std::map<std::string, Version> our_listing;
  bool listed = false;
  std::set<OsdId> backfill;
  for (size_t i = 1; i < members.size(); ++i) {
    Member& m = members[i];
    if (m.stray) continue;
    std::set<std::string> missing;
    const bool moved = ec_ && m.ec_shard >= 0 && m.ec_shard != m.ec_position;
    // New to the PG (no history at all) or too far behind: a backfill,
    // whether the log or the listings say what to copy.
    const Version none;
    if (Same(m.info.last_update, none) && !Same(members[0].info.last_update, none)) {
      backfill.insert(m.osd);
    }
    if (NeedsBackfill(m, members[0]) || moved) {
      backfill.insert(m.osd);
      if (!listed) {
        // Erasure pools: our own shard may still lack objects; the
        // authoritative member's listing is complete.
        const bool remote = ec_ && auth != 0;
        ASSIGN_OR_RETURN(our_listing, ListAll(remote ? members[auth].addr : "", !remote));
        listed = true;
      }
      ASSIGN_OR_RETURN(auto theirs, ListAll(m.addr, false));
      missing = ListingDiff(our_listing, theirs);
      if (moved) {  // same versions, other shard: everything is rebuilt
        for (const auto& [oid, v] : our_listing) missing.insert(oid);
        for (const auto& [oid, v] : theirs) missing.insert(oid);
      }
      missing.insert(m.missing.begin(), m.missing.end());
    } else {
      missing = LogMissing(m, members[0]);
    }
    pb::ActivateRequest req;
    req.set_map_epoch(epoch);
    req.set_pool(id_.pool.value());
    req.set_pg_seed(id_.seed);
    ToProto(members[0].info, req.mutable_info());
    for (const auto& e : members[0].log) ToProto(e, req.add_log());
    for (const auto& oid : missing) req.add_missing(oid);
    RETURN_IF_ERROR(Annotate(ctx_.peers->Activate(m.addr, req),
                             absl::StrCat("activate osd.", m.osd.value())));
    if (!missing.empty()) peer_missing[m.osd] = std::move(missing);
  }
  Transaction txn;
  bool recover = !peer_missing.empty();
  {
    absl::MutexLock lock(&mu_);
    if (interval_.id != interval_id) return absl::OkStatus();
    peer_missing_ = std::move(peer_missing);
    backfill_targets_ = std::move(backfill);
    if (!self_missing.empty()) peer_missing_[ctx_.whoami] = self_missing;
    recover |= !self_missing.empty();
    // Everything in the adopted log is settled (rolled forward or back).
    if (ec_) EcCommitLocked(log_.info().last_update, &txn);
    if (ec_) EcStoreShardLocked(&txn);
    ec_readable_ = true;
    log_.SetLastEpochStarted(epoch, &txn);
    state_ = State::kActive;
  }
  RETURN_IF_ERROR(ctx_.store->Apply(coll_, std::move(txn)));
  StateChanged();
  LOG(INFO) << "pg=" << coll_ << " event=active epoch=" << epoch << " members=" << acting.size()
            << " strays=" << strays.size() << " auth=osd." << members[auth].osd.value()
            << " recovering=" << recover;
  if (recover) {
    auto self_ptr = shared_from_this();
    const int64_t delay_ms = ctx_.options->fault_recovery_delay_ms;
    ctx_.background->Submit([self_ptr, interval_id, delay_ms] {
      if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      self_ptr->RecoverAll(interval_id);
    });
  }
  return absl::OkStatus();
}

// Erasure pools: our own copy written for another position is rebuilt whole.
absl::Status Pg::EcRebuildIfMoved(const Member& self, const Member& auth, bool auth_remote,
                                  std::set<std::string>* self_missing) {
  if (self.ec_shard < 0 || self.ec_shard == self.ec_position) return absl::OkStatus();
  ASSIGN_OR_RETURN(auto theirs, ListAll(auth_remote ? auth.addr : "", !auth_remote));
  ASSIGN_OR_RETURN(auto ours, ListAll("", true));
  for (const auto& [oid, v] : theirs) self_missing->insert(oid);
  for (const auto& [oid, v] : ours) self_missing->insert(oid);
  Transaction txn;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& oid : *self_missing) log_.AddMissing(oid, &txn);
  }
  return ctx_.store->Apply(coll_, std::move(txn));
}

// Erasure pools: notes each member's position, then rolls back a newest write
// held by fewer than k of them, on every member that has it.
absl::Status Pg::EcRollbackPartial(Epoch epoch, std::vector<Member>* members) {
  {
    absl::MutexLock lock(&mu_);
    for (Member& m : *members) {
      for (size_t i = 0; i < interval_.shards.size(); ++i) {
        if (interval_.shards[i] == m.osd) m.ec_position = static_cast<int32_t>(i);
      }
    }
  }
  for (int round = 0; round < 8; ++round) {
    Version newest;
    for (const Member& m : *members) {
      if (Less(newest, m.info.last_update)) newest = m.info.last_update;
    }
    if (newest.epoch == 0 && newest.seq == 0) return absl::OkStatus();
    uint32_t have = 0;
    for (const Member& m : *members) {
      have += VersionSet(m.log).count({newest.epoch, newest.seq});
    }
    if (have >= layout_.k) return absl::OkStatus();
    // A remove rolls forward from any number of shards: completing it needs
    // no data, and its shards kept none to undo it. The authoritative member
    // then holds it, and recovery removes the object where it is missing.
    for (const Member& m : *members) {
      if (!Same(m.info.last_update, newest) || m.log.empty()) continue;
      if (m.log.back().op == LogEntry::kDelete) {
        LOG(INFO) << "pg=" << coll_ << " event=ec_remove_rolled_forward version=" << newest.epoch
                  << "." << newest.seq << " holders=" << have;
        return absl::OkStatus();
      }
      break;
    }
    for (Member& m : *members) {
      if (!Same(m.info.last_update, newest) || m.log.empty()) continue;
      if (m.osd == ctx_.whoami) {
        RETURN_IF_ERROR(EcRollbackLocal(newest));
      } else {
        pb::RollbackRequest req;
        req.set_map_epoch(epoch);
        req.set_pool(id_.pool.value());
        req.set_pg_seed(id_.seed);
        ToProto(newest, req.mutable_version());
        RETURN_IF_ERROR(Annotate(ctx_.peers->Rollback(m.addr, req),
                                 absl::StrCat("rollback on osd.", m.osd.value())));
      }
      LOG(INFO) << "pg=" << coll_ << " event=ec_rolled_back osd=" << m.osd.value()
                << " version=" << newest.epoch << "." << newest.seq << " holders=" << have;
      m.log.pop_back();
      m.info.last_update = m.log.empty() ? m.info.log_tail : m.log.back().version;
    }
  }
  return absl::OkStatus();
}

void Pg::RecoverAll(uint64_t interval_id) {
  // Members whose disk refused (past its failsafe ratio, or a backfill
  // target past backfillfull): passed over this round, tried again in 5 s,
  // since peering again would change nothing and deletes make room.
  std::set<OsdId> held;
  for (;;) {
    // A slot first (osd_recovery_max_active), then the PG's order: a PG
    // waiting for a slot does not hold up its clients' writes.
    RecoveryThrottle::Slot slot(ctx_.recovery);
    SectionGuard ordered(&order_);
    OsdId target{-1};
    std::string oid;
    absl::Status status;
    {
      absl::MutexLock lock(&mu_);
      if (interval_.id != interval_id || state_ != State::kActive) return;
      for (auto& [osd, missing] : peer_missing_) {
        if (!missing.empty() && !held.count(osd)) {
          target = osd;
          oid = *missing.begin();
          break;
        }
      }
      const OsdInfo* info = target == kNoOsd ? nullptr : map_->FindOsd(target);
      if (info != nullptr && info->backfillfull && backfill_targets_.count(target)) {
        status = ErrnoToStatus(ENOSPC, absl::StrCat("osd.", target.value(),
                                                    " is past the backfillfull ratio"));
      }
    }
    if (target == kNoOsd) break;
    if (status.ok()) status = PushObject(target, AddrOf(target), oid, interval_id);
    if (StatusToErrno(status) == ENOSPC) {
      held.insert(target);
      bool first = false;  // logged once per stretch of refusals
      {
        absl::MutexLock lock(&mu_);
        first = !recovery_toofull_;
        recovery_toofull_ = true;
      }
      if (first) {
        LOG(WARNING) << "pg=" << coll_ << " event=recovery_toofull osd=" << target.value()
                     << " reason=\"" << status.message() << "\"";
        StateChanged();
      }
      continue;
    }
    if (!status.ok()) {
      RequestRepeer(interval_id, Annotate(status, "recovery push"));
      return;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    if (interval_.id == interval_id) recovery_toofull_ = !held.empty();
  }
  if (held.empty()) return;
  auto self = shared_from_this();
  ctx_.background->Submit([self, interval_id] {
    std::this_thread::sleep_for(std::chrono::seconds(5));
    self->RecoverAll(interval_id);
  });
}

}  // namespace weft::osd
