#include "osd/pg/pg.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "osd/pg/object_ops.h"
#include "osd/pg/osd_error.h"
#include "osd/pg/pg_codec.h"

namespace weft::osd {

std::string CollectionName(const PgId& id) { return id.ToString(); }

void OrderedSection::Enter() {
  absl::MutexLock lock(&mu_);
  const uint64_t ticket = next_ticket_++;
  auto my_turn = [this, ticket]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return serving_ == ticket; };
  mu_.Await(absl::Condition(&my_turn));
}

void OrderedSection::Leave() {
  absl::MutexLock lock(&mu_);
  ++serving_;
}

namespace {

bool Contains(const std::vector<OsdId>& set, OsdId osd) {
  return std::find(set.begin(), set.end(), osd) != set.end();
}

}  // namespace

namespace {

std::unique_ptr<ec::ErasureCode> MakeCode(const PoolInfo& pool) {
  if (pool.type != PoolType::kErasure) return nullptr;
  auto code = ec::ErasureCode::Create(static_cast<int>(pool.ec_k), static_cast<int>(pool.ec_m));
  CHECK(code.ok()) << "pool " << pool.name << ": " << code.status();
  return std::move(*code);
}

}  // namespace

Pg::Pg(PgId id, PgContext ctx, PgLog log, const PoolInfo& pool)
    : id_(id),
      coll_(CollectionName(id)),
      ctx_(ctx),
      ec_(MakeCode(pool)),
      layout_{pool.ec_k, pool.ec_m, pool.ec_chunk_bytes},
      log_(std::move(log)) {
  if (ec_) {
    auto committed = ctx_.store->GetMeta(coll_, kEcCommittedMeta);
    pb::Version v;
    if (committed.ok() && v.ParseFromString(*committed)) {
      ec_committed_ = ec_committed_persisted_ = FromProto(v);
    }
    auto shard = ctx_.store->GetMeta(coll_, kEcShardMeta);
    if (shard.ok()) ec_stored_shard_ = std::atoi(shard->c_str());
    // Rollback data still kept ("ecrb/<32 hex digits>/<piece>"), by LogKey.
    auto saved = ctx_.store->ListMeta(coll_, "ecrb/");
    if (saved.ok()) {
      for (const auto& [key, value] : *saved) {
        if (key.size() > 37) ec_rollback_pieces_["log/" + key.substr(5, 32)]++;
      }
    }
  }
  const ScrubStamps stamps = ReadScrubStamps(ctx_.store, coll_);
  scrub_.last_scrub_ms = stamps.last_scrub_ms;
  scrub_.last_deep_scrub_ms = stamps.last_deep_scrub_ms;
  scrub_.saved = stamps.saved;
  scrub_.inconsistent = stamps.inconsistent;
}

void Pg::OnMap(std::shared_ptr<const OsdMap> map, const PoolInfo& pool,
               const placement::PgMapping& mapping) {
  uint64_t peer_interval = 0;
  {
    absl::MutexLock lock(&mu_);
    if (map_ != nullptr && map->epoch < map_->epoch) return;  // intervals only move forward
    map_ = map;
    std::vector<OsdId> acting;
    for (OsdId osd : mapping.acting) {
      if (osd != kNoOsd) acting.push_back(osd);
    }
    bool changed = interval_.id == 0 || acting != interval_.acting ||
                   (ec_ && mapping.acting != interval_.shards) ||
                   mapping.primary != interval_.primary || pool.size != interval_.size ||
                   pool.min_size != interval_.min_size;
    interval_.up = mapping.up;
    if (!changed) {
      // A down PG peers again with every map: one may bring back an OSD it
      // waits for.
      if (state_ != State::kDown || interval_.primary != ctx_.whoami) return;
      state_ = State::kPeering;
      peer_interval = interval_.id;
    } else {
      interval_.id++;
      interval_.start_epoch = map->epoch;
      interval_.acting = std::move(acting);
      if (ec_) interval_.shards = mapping.acting;
      interval_.primary = mapping.primary;
      interval_.size = pool.size;
      interval_.min_size = pool.min_size;
      peer_missing_.clear();
      activated_interval_ = 0;
      repeer_scheduled_ = false;
      down_blocked_by_.clear();
      backfill_targets_.clear();
      recovery_toofull_ = false;
      if (!Contains(interval_.acting, ctx_.whoami)) ec_readable_ = false;
      if (interval_.primary == ctx_.whoami) {
        state_ = State::kPeering;
        peer_interval = interval_.id;
      } else if (Contains(interval_.acting, ctx_.whoami)) {
        state_ = State::kReplica;
      } else {
        state_ = State::kStray;
      }
      VLOG(1) << "pg=" << coll_ << " new_interval=" << interval_.id << " epoch=" << map->epoch
              << " primary=" << interval_.primary << " acting=" << interval_.acting.size();
    }
  }
  if (peer_interval != 0) SchedulePeering(peer_interval, 0);
}

void Pg::EcStoreShardLocked(Transaction* txn) {
  for (size_t i = 0; i < interval_.shards.size(); ++i) {
    if (interval_.shards[i] != ctx_.whoami) continue;
    if (ec_stored_shard_ != static_cast<int32_t>(i)) {
      ec_stored_shard_ = static_cast<int32_t>(i);
      txn->PutMeta(kEcShardMeta, std::to_string(i));
    }
    return;
  }
}

bool Pg::IsPrimary() {
  absl::MutexLock lock(&mu_);
  return interval_.primary == ctx_.whoami;
}

bool Pg::IsStray() {
  absl::MutexLock lock(&mu_);
  return state_ == State::kStray;
}

absl::Status Pg::CleanCheck(pb::PgCommandReply* reply) {
  const std::string state = StateName();
  absl::MutexLock lock(&mu_);
  if (state_ != State::kActive || state.rfind("active+clean", 0) != 0) {
    return absl::FailedPreconditionError(absl::StrCat("pg ", coll_, " is ", state));
  }
  for (OsdId osd : interval_.acting) reply->add_acting(osd.value());
  return absl::OkStatus();
}

bool Pg::StillInterval(uint64_t interval_id) {
  absl::MutexLock lock(&mu_);
  return interval_.id == interval_id;
}

std::string Pg::AddrOf(OsdId osd) {
  absl::MutexLock lock(&mu_);
  const OsdInfo* info = map_ ? map_->FindOsd(osd) : nullptr;
  return info ? info->addr : std::string();
}

std::string Pg::StateName() {
  absl::MutexLock lock(&mu_);
  switch (state_) {
    case State::kStray: return "stray";
    case State::kPeering: return "peering";
    case State::kIncomplete: return "undersized+peered";
    case State::kDown: return "down";
    case State::kReplica: return "replica+waiting";
    case State::kReplicaActive: return "replica";
    case State::kActive: break;
  }
  std::string name = "active";
  bool recovering = false;
  for (const auto& [osd, missing] : peer_missing_) recovering |= !missing.empty();
  bool undersized = interval_.acting.size() < interval_.size;
  const bool backfilling = !backfill_targets_.empty();
  if (recovering && recovery_toofull_) {
    name += backfilling ? "+backfill_toofull" : "+recovery_toofull";
  } else if (recovering) {
    name += backfilling ? "+backfilling" : "+recovering";
  }
  if (undersized) name += "+undersized";
  if (recovering || undersized) name += "+degraded";
  if (!recovering && !undersized) name += "+clean";
  if (scrub_.scrubbing) name += scrub_.deep ? "+scrubbing+deep" : "+scrubbing";
  if (!scrub_.inconsistent.empty()) name += "+inconsistent";
  return name;
}

std::string Pg::Describe() {
  const std::string state = StateName();
  absl::MutexLock lock(&mu_);
  auto ids = [](const std::vector<OsdId>& osds) {
    std::string out;
    for (OsdId o : osds) {
      absl::StrAppend(&out, out.empty() ? "" : ",", o == kNoOsd ? "-" : absl::StrCat(o.value()));
    }
    return absl::StrCat("[", out, "]");
  };
  const PgInfo& info = log_.info();
  std::string out = absl::StrCat(
      "pg: ", coll_, "\nstate: ", state, "\nosd: ", ctx_.whoami.value(),
      "\nprimary: ", interval_.primary.value(), "\nepoch: ", map_ ? map_->epoch : 0,
      "\ninterval: ", interval_.id, " (since epoch ", interval_.start_epoch, ")",
      "\nacting: ", ids(interval_.acting), "\nup: ", ids(interval_.up));
  if (ec_) absl::StrAppend(&out, "\nshards: ", ids(interval_.shards));
  absl::StrAppend(&out, "\nsize: ", interval_.size, ", min_size: ", interval_.min_size,
                  "\nlast_update: ", info.last_update.epoch, ".", info.last_update.seq,
                  "\nlog_tail: ", info.log_tail.epoch, ".", info.log_tail.seq,
                  "\nlog entries: ", log_.entries().size(),
                  "\nmissing here: ", log_.missing().size());
  for (const auto& [osd, missing] : peer_missing_) {
    absl::StrAppend(&out, "\nmissing on osd.", osd.value(), ": ", missing.size());
  }
  absl::StrAppend(&out, "\nlast scrub: ", absl::FormatTime(absl::FromUnixMillis(
                                               scrub_.last_scrub_ms), absl::UTCTimeZone()),
                  "\nlast deep scrub: ",
                  absl::FormatTime(absl::FromUnixMillis(scrub_.last_deep_scrub_ms),
                                   absl::UTCTimeZone()),
                  "\ninconsistent objects: ", scrub_.inconsistent.size());
  if (state_ == State::kIncomplete) {
    absl::StrAppend(&out, "\nwhy not active: ", interval_.acting.size(), " members up, min_size ",
                    interval_.min_size, " (bring OSDs back, or weft pool set NAME min_size M)");
  } else if (state_ == State::kDown) {
    absl::StrAppend(&out, "\nwhy not active: down: no member of an interval that may have taken "
                    "the newest writes can be heard from; waiting for ",
                    absl::StrJoin(down_blocked_by_, "; "),
                    " (bring one back; its data is needed)");
  } else if (state_ == State::kPeering) {
    absl::StrAppend(&out, "\nwhy not active: peering (querying the members' logs)");
  }
  return out;
}

void Pg::FillStat(pb::PgStat* stat) {
  // Sizes of the copies still to make: at most this many are looked up per
  // PG and report (beyond, their average is assumed), so a large recovery
  // costs the statistics a few thousand store lookups, not one per object.
  constexpr size_t kSizedMax = 64;
  std::vector<std::string> sample;
  uint64_t missing = 0;
  {
    absl::MutexLock lock(&mu_);
    stat->set_interval_start_epoch(interval_.start_epoch);
    for (const std::string& b : down_blocked_by_) stat->add_blocked_by(b);
    missing = log_.missing().size();
    for (const auto& [osd, oids] : peer_missing_) {
      missing += oids.size();
      for (const std::string& oid : oids) {
        if (sample.size() == kSizedMax) break;
        sample.push_back(oid);
      }
    }
  }
  stat->set_objects_missing(missing);
  if (sample.empty()) return;
  uint64_t bytes = 0;
  for (const std::string& oid : sample) {
    auto meta = ctx_.store->Stat(coll_, oid);
    if (meta.ok()) bytes += meta->size;  // erasure pools: a shard
  }
  stat->set_bytes_missing(bytes * missing / sample.size());
}

absl::Status Pg::CheckPrimary(uint64_t* interval_id) {
  absl::MutexLock lock(&mu_);
  if (interval_.primary != ctx_.whoami) {
    return OsdError(pb::NOT_PRIMARY, absl::StrCat("osd.", ctx_.whoami.value(),
                                                  " is not the primary of pg ", coll_));
  }
  if (state_ != State::kActive) {
    return OsdError(pb::PG_NOT_ACTIVE,
                    absl::StrCat("pg ", coll_, " is not active (",
                                 state_ == State::kPeering ? "peering"
                                 : state_ == State::kDown  ? "down, waiting for past members"
                                                           : "undersized",
                                 ")"));
  }
  *interval_id = interval_.id;
  return absl::OkStatus();
}

void Pg::HandleOp(pb::OpRequest* mutable_req, pb::OpReply* reply) {
  const pb::OpRequest& req = *mutable_req;
  ObjectLimits limits{ctx_.options->max_object_bytes};
  bool mutating = false;
  absl::Status status = ValidateOps(req.oid(), req.ops(), limits, &mutating);
  if (status.ok() && ec_ && !mutating) {
    status = (req.flags() & pb::OPF_SHARD) ? EcShardRead(req, reply) : EcPrimaryRead(req, reply);
  } else if (status.ok() && ec_) {
    status = (req.flags() & (pb::OPF_LOCAL | pb::OPF_SHARD))
                 ? absl::InvalidArgumentError("a shard or local-copy request may only read")
                 : EcWrite(mutable_req, reply);
  } else if (status.ok() && (req.flags() & pb::OPF_SHARD)) {
    status = absl::InvalidArgumentError("shard reads are for erasure-coded pools");
  } else if (status.ok() && (req.flags() & pb::OPF_LOCAL)) {
    if (mutating) {
      status = absl::InvalidArgumentError("a local-copy request may only read");
    } else {
      absl::MutexLock lock(&mu_);
      if (log_.IsMissing(req.oid())) {
        status = absl::UnavailableError(absl::StrCat("object is being recovered on osd.",
                                                     ctx_.whoami.value()));
      }
    }
    if (status.ok()) {
      uint64_t bytes = 0;
      status = ExecuteReads(ctx_.store, coll_, req.oid(), req.ops(), reply, &bytes);
      ctx_.counters->read_bytes += bytes;
      // Our copy is damaged: the primary pulls a good one for itself; a
      // local-copy reader gets the error, and the primary rewrites ours.
      if (absl::IsDataLoss(status)) ReportDamaged(req.oid(), status);
    }
  } else if (status.ok() && mutating) {
    status = DoWrite(mutable_req, reply);
  } else if (status.ok()) {
    uint64_t interval_id = 0;
    status = CheckPrimary(&interval_id);
    if (status.ok() && IsMissingHere(req.oid())) {
      // Being rewritten a piece at a time (a read repair): wait for the
      // rewrite, which holds the PG's order section, and never serve half.
      SectionGuard ordered(&order_);
      if (IsMissingHere(req.oid())) {
        status = absl::UnavailableError(
            absl::StrCat("object is being recovered on osd.", ctx_.whoami.value()));
      }
    }
    if (status.ok()) {
      uint64_t bytes = 0;
      status = ExecuteReads(ctx_.store, coll_, req.oid(), req.ops(), reply, &bytes);
      if (absl::IsDataLoss(status)) {
        // Never the error while another member holds a good copy: it
        // replaces ours, and the read runs again.
        reply->clear_results();
        status = RepairLocalCopy(req.oid(), interval_id, status);
        if (status.ok()) {
          status = ExecuteReads(ctx_.store, coll_, req.oid(), req.ops(), reply, &bytes);
        }
      }
      ctx_.counters->read_bytes += bytes;
    }
  }
  if (!status.ok()) reply->clear_results();
  ctx_.counters->ops++;
  FillStatus(status, reply->mutable_status());
}

absl::Status Pg::RecoverBeforeWrite(const std::string& oid, uint64_t interval_id) {
  std::vector<OsdId> targets;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [osd, missing] : peer_missing_) {
      if (missing.count(oid)) targets.push_back(osd);
    }
  }
  for (OsdId osd : targets) {
    RETURN_IF_ERROR(PushObject(osd, AddrOf(osd), oid, interval_id));
  }
  return absl::OkStatus();
}

bool Pg::AnswerIfApplied(const pb::OpRequest& req, pb::OpReply* reply) {
  absl::MutexLock lock(&mu_);
  auto done = log_.FindRequest(req.reqid().client(), req.reqid().tid());
  if (!done) return false;
  ToProto(*done, reply->mutable_version());
  return true;
}

void Pg::ClearPeerMissing(OsdId target, const std::string& oid) {
  absl::MutexLock lock(&mu_);
  auto it = peer_missing_.find(target);
  if (it == peer_missing_.end()) return;
  it->second.erase(oid);
  if (!it->second.empty()) return;
  peer_missing_.erase(it);
  StateChanged();
}

absl::Status Pg::DoWrite(pb::OpRequest* mutable_req, pb::OpReply* reply) {
  const pb::OpRequest& req = *mutable_req;
  SectionGuard ordered(&order_);
  uint64_t interval_id = 0;
  RETURN_IF_ERROR(CheckPrimary(&interval_id));
  const std::string& oid = req.oid();
  if (AnswerIfApplied(req, reply)) return absl::OkStatus();
  std::optional<ObjectMeta> existing;
  auto stat = ctx_.store->Stat(coll_, oid);
  if (stat.ok()) {
    existing = *stat;
  } else if (!absl::IsNotFound(stat.status())) {
    return stat.status();
  }
  ASSIGN_OR_RETURN(ResolvedWrite resolved,
                   ResolveWrite(existing, mutable_req->mutable_ops(),
                                {ctx_.options->max_object_bytes}));
  RETURN_IF_ERROR(RecoverBeforeWrite(oid, interval_id));

  // Steps under mu_: version, log entry, targets. The log entry enters the
  // in-memory log now; if the write fails anywhere the PG re-peers, which
  // reloads the log from disk.
  const int64_t mtime_ns = absl::GetCurrentTimeNanos();
  // Shared: gRPC may hold the replicas' bytes after the write is answered
  // (common/rpc/aliased.h).
  auto shared_rep = std::make_shared<pb::RepOpRequest>();
  pb::RepOpRequest& rep = *shared_rep;
  Transaction txn;
  std::vector<PeerClient::RepOpTarget> targets;
  LogEntry entry;
  {
    absl::MutexLock lock(&mu_);
    if (interval_.id != interval_id) return OsdError(pb::PG_NOT_ACTIVE, "pg interval changed");
    entry.version = log_.NextVersion(map_->epoch);
    entry.oid = oid;
    entry.op = resolved.deletes ? LogEntry::kDelete : LogEntry::kModify;
    entry.client = req.reqid().client();
    entry.tid = req.reqid().tid();
    // The replicas' request owns the resolved ops; the local transaction
    // borrows their data from it (the request must stay intact while the
    // replicas receive it).
    rep.mutable_ops()->Swap(&resolved.ops);
    AddToTransaction(oid, shared_rep, rep.ops(), &txn);
    if (!resolved.deletes) txn.SetVersion(oid, entry.version, mtime_ns);
    log_.Append(entry, &txn);
    for (OsdId osd : interval_.acting) {
      if (osd == ctx_.whoami) continue;
      const OsdInfo* info = map_->FindOsd(osd);
      targets.push_back({osd, info ? info->addr : std::string()});
    }
    rep.set_map_epoch(map_->epoch);
  }
  rep.set_pool(id_.pool.value());
  rep.set_pg_seed(id_.seed);
  rep.set_oid(oid);
  ToProto(entry, rep.mutable_entry());
  rep.set_mtime_ns(mtime_ns);

  std::vector<absl::Status> results = ctx_.peers->RepOpAll(
      targets, shared_rep, [&] { return ctx_.store->Apply(coll_, std::move(txn)); });
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].ok()) continue;
    std::string who = i == 0 ? "local store" : absl::StrCat("osd.", targets[i - 1].osd.value());
    absl::Status why = Annotate(results[i], who);
    RequestRepeer(interval_id, why);
    return OsdError(pb::PG_NOT_ACTIVE, absl::StrCat("write not acknowledged: ", why.message()));
  }
  uint64_t bytes = 0;
  for (const auto& op : rep.ops()) bytes += op.data().size();
  ctx_.counters->write_bytes += bytes;
  ToProto(entry.version, reply->mutable_version());
  reply->set_size_before(resolved.size_before);
  reply->set_size_after(resolved.size_after);
  return absl::OkStatus();
}

void Pg::RequestRepeer(uint64_t interval_id, const absl::Status& why) {
  {
    absl::MutexLock lock(&mu_);
    if (interval_.id != interval_id || interval_.primary != ctx_.whoami) return;
    state_ = State::kPeering;
    if (repeer_scheduled_) return;
    repeer_scheduled_ = true;
  }
  LOG(WARNING) << "pg=" << coll_ << " event=repeer reason=\"" << why.message() << "\"";
  SchedulePeering(interval_id, 500);
}

void Pg::HandleList(const pb::PgListRequest& req, pb::PgListReply* reply) {
  absl::Status status;
  if (!(req.flags() & pb::OPF_LOCAL)) {
    uint64_t interval_id = 0;
    status = CheckPrimary(&interval_id);
  }
  if (status.ok()) {
    uint32_t max = req.max_entries() == 0 ? 1000 : std::min<uint32_t>(req.max_entries(), 10000);
    bool more = false;
    auto objects = ctx_.store->ListObjects(coll_, req.start_after(), max, &more, req.prefix());
    if (objects.ok()) {
      for (const auto& [oid, meta] : *objects) {
        auto* o = reply->add_objects();
        o->set_oid(oid);
        o->set_size(meta.size);
        ToProto(meta.version, o->mutable_version());
      }
      // An erasure primary serves before it has rebuilt its own shards: the
      // objects it still lacks exist too. Named on the last page, unsized,
      // for clients only: peering lists members (OPF_LOCAL) by version.
      if (!more && !(req.flags() & pb::OPF_LOCAL)) AddSelfMissing(req, reply);
      reply->set_more(more);
    } else if (!absl::IsNotFound(objects.status())) {
      status = objects.status();
    }
  }
  FillStatus(status, reply->mutable_status());
}

void Pg::AddSelfMissing(const pb::PgListRequest& req, pb::PgListReply* reply) {
  std::set<std::string> names;
  {
    absl::MutexLock lock(&mu_);
    auto it = peer_missing_.find(ctx_.whoami);
    if (it == peer_missing_.end()) return;
    for (const std::string& oid : it->second) {
      if (absl::StartsWith(oid, req.prefix()) && oid > req.start_after()) names.insert(oid);
    }
  }
  for (const auto& o : reply->objects()) names.erase(o.oid());
  if (names.empty()) return;
  for (const std::string& oid : names) reply->add_objects()->set_oid(oid);
  auto by_name = [](const pb::ObjectVersion& a, const pb::ObjectVersion& b) {
    return a.oid() < b.oid();
  };
  std::sort(reply->mutable_objects()->begin(), reply->mutable_objects()->end(), by_name);
}

// --- Replica side -----------------------------------------------------------

absl::Status Pg::ReplicaCheck(Epoch sender_epoch, bool need_active) {
  if (sender_epoch < interval_.start_epoch) {
    return OsdError(pb::STALE_MAP, absl::StrCat("pg ", coll_, " started a new interval at epoch ",
                                                interval_.start_epoch));
  }
  if (!Contains(interval_.acting, ctx_.whoami) || interval_.primary == ctx_.whoami) {
    return OsdError(pb::NOT_PRIMARY, absl::StrCat("osd.", ctx_.whoami.value(),
                                                  " is not a replica of pg ", coll_));
  }
  if (need_active && activated_interval_ != interval_.id) {
    return OsdError(pb::PG_NOT_ACTIVE, absl::StrCat("pg ", coll_, " replica not activated"));
  }
  return absl::OkStatus();
}

void Pg::HandleRepOp(pb::RepOpRequest* mutable_req, pb::RepOpReply* reply) {
  if (ec_) return EcHandleSubWrite(mutable_req, reply);
  const pb::RepOpRequest& req = *mutable_req;
  SectionGuard ordered(&order_);
  Transaction txn;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    status = ReplicaCheck(req.map_epoch(), /*need_active=*/true);
    if (status.ok() && log_.IsMissing(req.oid())) {
      status = absl::FailedPreconditionError("object not yet recovered on this replica");
    }
    if (status.ok()) {
      LogEntry entry = FromProto(req.entry());
      AddToTransaction(req.oid(), mutable_req->mutable_ops(), &txn);
      if (entry.op != LogEntry::kDelete) txn.SetVersion(req.oid(), entry.version, req.mtime_ns());
      log_.Append(entry, &txn);
    }
  }
  if (status.ok()) {
    status = ctx_.store->Apply(coll_, std::move(txn));
    if (!status.ok()) {
      // The in-memory log is ahead of the disk: forget activation so that the
      // primary re-peers, and reload the log then.
      absl::MutexLock lock(&mu_);
      activated_interval_ = 0;
      auto reloaded = PgLog::Load(ctx_.store, coll_, ctx_.options->pg_log_max_entries);
      if (reloaded.ok()) log_ = std::move(*reloaded);
    }
  }
  FillStatus(status, reply->mutable_status());
}

void Pg::HandleQuery(const pb::PgQueryRequest& req, pb::PgQueryReply* reply) {
  absl::MutexLock lock(&mu_);
  ToProto(log_.info(), reply->mutable_info());
  for (const LogEntry& e : log_.entries()) ToProto(e, reply->add_log());
  for (const std::string& oid : log_.missing()) reply->add_missing(oid);
  reply->set_ec_shard_plus_one(static_cast<uint32_t>(ec_stored_shard_ + 1));
  FillStatus(absl::OkStatus(), reply->mutable_status());
}

void Pg::HandleActivate(const pb::ActivateRequest& req, pb::ActivateReply* reply) {
  SectionGuard ordered(&order_);
  Transaction txn;
  absl::Status status;
  uint64_t interval_id = 0;
  {
    absl::MutexLock lock(&mu_);
    status = ReplicaCheck(req.map_epoch(), /*need_active=*/false);
    if (status.ok()) {
      std::vector<LogEntry> entries;
      entries.reserve(req.log_size());
      for (const auto& e : req.log()) entries.push_back(FromProto(e));
      log_.Adopt(FromProto(req.info()), std::move(entries), &txn);
      std::set<std::string> wanted(req.missing().begin(), req.missing().end());
      std::vector<std::string> stale;
      for (const std::string& oid : log_.missing()) {
        if (!wanted.count(oid)) stale.push_back(oid);
      }
      for (const std::string& oid : stale) log_.RemoveMissing(oid, &txn);
      for (const std::string& oid : wanted) log_.AddMissing(oid, &txn);
      if (ec_) EcCommitLocked(log_.info().last_update, &txn);
      if (ec_) EcStoreShardLocked(&txn);
      interval_id = interval_.id;
    }
  }
  if (status.ok()) status = ctx_.store->Apply(coll_, std::move(txn));
  {
    absl::MutexLock lock(&mu_);
    if (status.ok() && interval_.id == interval_id) {
      activated_interval_ = interval_id;
      state_ = State::kReplicaActive;
      ec_readable_ = true;
    } else if (!status.ok()) {
      auto reloaded = PgLog::Load(ctx_.store, coll_, ctx_.options->pg_log_max_entries);
      if (reloaded.ok()) log_ = std::move(*reloaded);
    }
  }
  FillStatus(status, reply->mutable_status());
}

}  // namespace weft::osd
