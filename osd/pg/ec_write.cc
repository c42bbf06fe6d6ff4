// Erasure-coded PGs: the write path.
//
// The primary orders the request (the PG's order section), resolves it
// against the object's logical state, applies it to whole stripes in memory
// (StripeEdit: partial stripes are read first, from the data shards or by
// decoding), encodes the changed stripes, and sends every shard its own
// sub-write: its chunks at shard offsets, the new shard size, the logical size
// and shard id xattrs, and the PG log entry. The client is acknowledged once
// every acting shard has it on disk.
//
// Atomicity across shards: before applying a sub-write, a shard saves what it
// overwrites (old extents, old size, xattrs, version) under collection meta
// "ecrb/<version>" in the same store transaction. A write is "committed" once
// the primary knows every shard has it; the primary says so in the next
// sub-write (and in a commit-only message right after acknowledging), and
// shards then drop the saved data. If the primary dies in the middle, the next
// primary peers: a write held by at least k shards is rolled forward (the
// others rebuild the object from k shards), one held by fewer is rolled back
// from the saved data (see pg_peering.cc). Either way each stripe is entirely
// old or entirely new. A write that removes the object saves no data: a
// remove needs none to complete, so it always rolls forward (the shards that
// missed it remove their copy in recovery), and the purge of a deleted file
// does not copy the file through the store's metadata.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/bytes/zeros.h"
#include "common/executor/thread_pool.h"
#include "common/fault/fault.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "osd/pg/ec_stripe_edit.h"
#include "osd/pg/object_ops.h"
#include "osd/pg/osd_error.h"
#include "osd/pg/pg.h"
#include "osd/pg/pg_codec.h"

namespace weft::osd {
namespace {

bool Less(const Version& a, const Version& b) {
  return a.epoch != b.epoch ? a.epoch < b.epoch : a.seq < b.seq;
}

// Rollback data of the write `v`, in pieces (a whole shard can exceed the
// store's metadata value limit): "ecrb/<version>/<piece:04>".
std::string RollbackPrefix(const Version& v) { return "ecrb/" + LogKey(v).substr(4) + "/"; }
std::string RollbackKey(const Version& v, uint32_t piece) {
  return RollbackPrefix(v) + absl::StrFormat("%04u", piece);
}
constexpr size_t kRollbackPieceBytes = 8 << 20;

// Applies the resolved client ops to `edit`; user xattr ops after the last
// removal go to `xattr_ops` (they are sent to every shard).
// Moves the data out of `ops`.
absl::Status ApplyToEdit(google::protobuf::RepeatedPtrField<pb::ObjectOp>* ops, StripeEdit* edit,
                         std::vector<pb::ObjectOp>* xattr_ops) {
  for (pb::ObjectOp& op : *ops) {
    switch (op.type()) {
      case pb::CREATE: edit->Create(); break;
      case pb::WRITE:
        RETURN_IF_ERROR(edit->Write(op.offset(), std::move(*op.mutable_data())));
        break;
      case pb::WRITE_FULL:
        edit->Replace();
        RETURN_IF_ERROR(edit->Write(0, std::move(*op.mutable_data())));
        break;
      case pb::TRUNCATE: RETURN_IF_ERROR(edit->Truncate(op.offset())); break;
      case pb::REMOVE:
        edit->Remove();
        xattr_ops->clear();
        break;
      case pb::SETXATTR:
      case pb::RMXATTR:
        if (op.name().rfind("_ec.", 0) == 0) {
          return absl::InvalidArgumentError("xattr names starting with _ec. are reserved");
        }
        xattr_ops->push_back(op);
        break;
      default:
        return absl::UnimplementedError("omap is not supported on erasure-coded pools");
    }
  }
  return absl::OkStatus();
}

}  // namespace

// The k + m shard buffers of stripes [first, last]: data chunks copied out of
// the edit's stripes (zeros where it has none), parity computed by one ISA-L
// call over the whole run.
static std::vector<std::string> EncodeRun(const striping::StripeLayout& layout,
                                          ec::ErasureCode* code, const StripeEdit& edit,
                                          uint64_t first, uint64_t last) {
  const uint64_t c = layout.chunk;
  const uint64_t len = (last - first + 1) * c;
  // Data shards are built by appending each stripe's chunk (zeros past its
  // content), so no data byte is written twice (they were zero-filled, then
  // copied over).
  std::vector<std::string> bufs(layout.k + layout.m);
  for (uint32_t i = 0; i < layout.k; ++i) bufs[i].reserve(len);
  for (uint64_t s = first; s <= last; ++s) {
    const absl::string_view stripe = edit.Stripe(s);  // shorter: zeros follow
    for (uint32_t i = 0; i < layout.k; ++i) {
      const absl::string_view chunk = i * c < stripe.size() ? stripe.substr(i * c, c) : "";
      bufs[i].append(chunk.data(), chunk.size());
      bufs[i].append(c - chunk.size(), '\0');
    }
  }
  for (uint32_t p = 0; p < layout.m; ++p) bufs[layout.k + p].resize(len);
  std::vector<const uint8_t*> data(layout.k);
  std::vector<uint8_t*> parity(layout.m);
  for (uint32_t i = 0; i < layout.k; ++i) data[i] = reinterpret_cast<uint8_t*>(bufs[i].data());
  for (uint32_t p = 0; p < layout.m; ++p) {
    parity[p] = reinterpret_cast<uint8_t*>(bufs[layout.k + p].data());
  }
  code->Encode(len, data.data(), parity.data());
  return bufs;
}

// Builds each shard's ops from the edited stripes: encodes every run of
// consecutive changed stripes in one ISA-L call over shard-contiguous buffers.
static std::vector<pb::RepOpRequest> BuildSubWrites(const striping::StripeLayout& layout,
                                                    ec::ErasureCode* code, const StripeEdit& edit,
                                                    bool old_exists, uint64_t old_size,
                                                    const std::vector<pb::ObjectOp>& xattr_ops) {
  const uint32_t n = layout.k + layout.m;
  const uint64_t c = layout.chunk;
  std::vector<pb::RepOpRequest> subs(n);
  for (uint32_t i = 0; i < n; ++i) subs[i].set_shard(i);
  if (!edit.exists()) {
    for (auto& sub : subs) sub.add_ops()->set_type(pb::REMOVE);
    return subs;
  }
  const uint64_t new_stripes = layout.NumStripes(edit.size());
  // Runs of consecutive stripes to encode: [first, last].
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  if (edit.rewritten()) {
    if (new_stripes > 0) runs.push_back({0, new_stripes - 1});
  } else {
    for (uint64_t s : edit.ChangedStripes()) {
      if (!runs.empty() && runs.back().second + 1 == s) {
        runs.back().second = s;
      } else {
        runs.push_back({s, s});
      }
    }
  }
  if (edit.removed() && old_exists) {
    for (auto& sub : subs) sub.add_ops()->set_type(pb::REMOVE);
  }
  if (!edit.rewritten()) {
    // Shard sizes: first cut what a truncate in the request cut (a later
    // extension in the same request reads zeros there, not the old bytes),
    // then set the final size.
    uint64_t shard_size = layout.ShardSize(old_size);
    for (uint64_t target : {layout.ShardSize(edit.min_size()), layout.ShardSize(edit.size())}) {
      if (target == shard_size) continue;
      for (auto& sub : subs) {
        auto* op = sub.add_ops();
        op->set_type(pb::TRUNCATE);
        op->set_offset(target);
      }
      shard_size = target;
    }
  }
  if (edit.rewritten() && runs.empty()) {
    for (auto& sub : subs) sub.add_ops()->set_type(pb::WRITE_FULL);  // empty object
  }
  for (const auto& [first, last] : runs) {
    std::vector<std::string> bufs = EncodeRun(layout, code, edit, first, last);
    for (uint32_t i = 0; i < n; ++i) {
      auto* op = subs[i].add_ops();
      if (edit.rewritten()) {
        // A shard rewritten whole travels without its trailing zeros and is
        // sized by a truncate: a small object's last stripe is mostly zeros
        // on every shard (parity of zeros is zero), so a 100-byte file moved
        // six 64 KiB chunks before.
        const uint64_t full = bufs[i].size();
        bufs[i].resize(WithoutTrailingZeros(bufs[i]));
        op->set_type(pb::WRITE_FULL);
        op->set_data(std::move(bufs[i]));
        if (op->data().size() < full) {
          auto* size = subs[i].add_ops();
          size->set_type(pb::TRUNCATE);
          size->set_offset(full);
        }
        continue;
      }
      op->set_type(pb::WRITE);
      op->set_offset(first * c);
      op->set_data(std::move(bufs[i]));
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    auto* size = subs[i].add_ops();
    size->set_type(pb::SETXATTR);
    size->set_name(kEcSizeXattr);
    size->set_data(absl::StrCat(edit.size()));
    auto* shard = subs[i].add_ops();
    shard->set_type(pb::SETXATTR);
    shard->set_name(kEcShardXattr);
    shard->set_data(absl::StrCat(i));
    for (const auto& op : xattr_ops) *subs[i].add_ops() = op;
  }
  return subs;
}

absl::Status Pg::EcStampSubWrites(uint64_t interval_id, LogEntry* entry,
                                  std::shared_ptr<std::vector<pb::RepOpRequest>> subs,
                                  std::vector<PeerClient::RepOpTarget>* targets,
                                  std::vector<std::shared_ptr<const pb::RepOpRequest>>* target_reqs,
                                  pb::RepOpRequest** local) {
  const int64_t mtime_ns = absl::GetCurrentTimeNanos();
  absl::MutexLock lock(&mu_);
  if (interval_.id != interval_id) return OsdError(pb::PG_NOT_ACTIVE, "pg interval changed");
  entry->version = log_.NextVersion(map_->epoch);
  for (uint32_t i = 0; i < subs->size(); ++i) {
    pb::RepOpRequest& sub = (*subs)[i];
    sub.set_map_epoch(map_->epoch);
    sub.set_pool(id_.pool.value());
    sub.set_pg_seed(id_.seed);
    sub.set_oid(entry->oid);
    ToProto(*entry, sub.mutable_entry());
    sub.set_mtime_ns(mtime_ns);
    ToProto(ec_committed_, sub.mutable_committed());  // tells the shards of earlier writes
    const OsdId osd = i < interval_.shards.size() ? interval_.shards[i] : kNoOsd;
    if (osd == kNoOsd) continue;  // a hole: rebuilt when an OSD takes the position
    if (osd == ctx_.whoami) {
      *local = &sub;
      continue;
    }
    const OsdInfo* info = map_->FindOsd(osd);
    targets->push_back({osd, info ? info->addr : std::string()});
    // Shares ownership of the whole vector: gRPC may hold a shard's bytes
    // after the write is answered (see common/rpc/aliased.h).
    target_reqs->push_back(std::shared_ptr<const pb::RepOpRequest>(subs, &sub));
  }
  if (Less(ec_commit_told_, ec_committed_)) ec_commit_told_ = ec_committed_;
  return absl::OkStatus();
}

absl::Status Pg::EcWrite(pb::OpRequest* mutable_req, pb::OpReply* reply) {
  const pb::OpRequest& req = *mutable_req;
  SectionGuard ordered(&order_);
  uint64_t interval_id = 0;
  RETURN_IF_ERROR(CheckPrimary(&interval_id));
  const std::string& oid = req.oid();
  if (AnswerIfApplied(req, reply)) return absl::OkStatus();
  RETURN_IF_ERROR(RecoverBeforeWrite(oid, interval_id));
  ASSIGN_OR_RETURN(EcObject old, EcStat(oid));
  std::optional<ObjectMeta> existing;
  if (old.exists) {
    existing = ObjectMeta{};
    existing->size = old.size;
  }
  uint64_t bytes = 0;
  for (const auto& op : req.ops()) bytes += op.data().size();
  ASSIGN_OR_RETURN(ResolvedWrite resolved, ResolveWrite(existing, mutable_req->mutable_ops(),
                                                        {ctx_.options->max_object_bytes}));
  StripeEdit edit(layout_, old.exists, old.size, [&](uint64_t s) -> absl::StatusOr<std::string> {
    const uint64_t w = layout_.stripe_width();
    ASSIGN_OR_RETURN(ec::RangeRead r, EcReadRange(oid, s * w, (s + 1) * w));
    return std::move(r.data);
  });
  std::vector<pb::ObjectOp> xattr_ops;
  RETURN_IF_ERROR(ApplyToEdit(&resolved.ops, &edit, &xattr_ops));
  auto subs = std::make_shared<std::vector<pb::RepOpRequest>>(
      BuildSubWrites(layout_, ec_.get(), edit, old.exists, old.size, xattr_ops));

  LogEntry entry;
  entry.oid = oid;
  entry.op = edit.exists() ? LogEntry::kModify : LogEntry::kDelete;
  entry.client = req.reqid().client();
  entry.tid = req.reqid().tid();
  std::vector<PeerClient::RepOpTarget> targets;
  std::vector<std::shared_ptr<const pb::RepOpRequest>> target_reqs;
  pb::RepOpRequest* local = nullptr;
  RETURN_IF_ERROR(EcStampSubWrites(interval_id, &entry, subs, &targets, &target_reqs, &local));
  // Fault point: the next non-creating write reaches the first N shards only
  // (the primary's own first), then the primary dies as kill -9 would.
  if (std::optional<int64_t> n = old.exists ? fault::Value(fault::kOsdEcPartialWrite)
                                            : std::nullopt) {
    if (local != nullptr && *n > 0) (void)EcApplySubWrite(local);
    for (int i = 0; i + (local ? 1 : 0) < *n && i < static_cast<int>(targets.size()); ++i) {
      (void)ctx_.peers->RepOpEach({targets[i]}, {target_reqs[i]}, [] { return absl::OkStatus(); });
    }
    LOG(ERROR) << "pg=" << coll_ << " event=fault_point name=ec_partial_write shards=" << *n;
    _exit(137);
  }
  std::vector<absl::Status> results = ctx_.peers->RepOpEach(
      targets, target_reqs, [&] { return local ? EcApplySubWrite(local) : absl::OkStatus(); });
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].ok()) continue;
    std::string who = i == 0 ? "local store" : absl::StrCat("osd.", targets[i - 1].osd.value());
    absl::Status why = Annotate(results[i], who);
    RequestRepeer(interval_id, why);
    return OsdError(pb::PG_NOT_ACTIVE, absl::StrCat("write not acknowledged: ", why.message()));
  }
  ctx_.counters->write_bytes += bytes;
  EcSendCommit(entry.version);
  ToProto(entry.version, reply->mutable_version());
  reply->set_size_before(resolved.size_before);
  reply->set_size_after(resolved.size_after);
  return absl::OkStatus();
}

// Notes that `committed` is on all shards. The other shards learn it from the
// PG's next sub-write, which carries the commit point; until then they send
// shard reads of the object to the primary. A commit-only message tells them
// if no sub-write did within osd_ec_commit_delay_ms: sending one per write cost
// five more RPCs per small EC write, 17% of the OSDs' CPU while untarring small
// files (perf and an A/B of the whole untar). Not waited for.
void Pg::EcSendCommit(const Version& committed) {
  {
    absl::MutexLock lock(&mu_);
    EcNoteCommittedLocked(committed);
    if (!Less(ec_commit_told_, ec_committed_)) return;
    if (ctx_.options->ec_commit_delay_ms > 0) {
      if (ec_commit_due_ == absl::InfiniteFuture()) {
        ec_commit_due_ = absl::Now() + absl::Milliseconds(ctx_.options->ec_commit_delay_ms);
      }
      return;
    }
  }
  EcFlushCommit(absl::Now(), /*force=*/true);
}

void Pg::EcFlushCommit(absl::Time now, bool force) {
  if (ec_ == nullptr) return;
  pb::RepOpRequest msg;
  std::vector<PeerClient::RepOpTarget> targets;
  {
    absl::MutexLock lock(&mu_);
    if (!Less(ec_commit_told_, ec_committed_)) {
      ec_commit_due_ = absl::InfiniteFuture();
      return;
    }
    if (!force && ec_commit_due_ > now) return;
    ec_commit_due_ = absl::InfiniteFuture();
    ec_commit_told_ = ec_committed_;
    msg.set_map_epoch(map_->epoch);
    for (OsdId osd : interval_.acting) {
      if (osd == ctx_.whoami) continue;
      const OsdInfo* info = map_->FindOsd(osd);
      targets.push_back({osd, info ? info->addr : std::string()});
    }
    ToProto(ec_committed_, msg.mutable_committed());
  }
  msg.set_pool(id_.pool.value());
  msg.set_pg_seed(id_.seed);
  msg.set_commit_only(true);
  auto self = shared_from_this();
  auto shared = std::make_shared<const pb::RepOpRequest>(std::move(msg));
  ctx_.background->Submit([self, targets, shared] {
    self->ctx_.peers->RepOpAll(targets, shared, [] { return absl::OkStatus(); });
  });
}

void Pg::EcNoteCommittedLocked(const Version& committed) {
  if (Less(ec_committed_, committed)) ec_committed_ = committed;
}

void Pg::EcCommitLocked(const Version& committed, Transaction* txn) {
  EcNoteCommittedLocked(committed);
  if (!Less(ec_committed_persisted_, ec_committed_)) return;
  // The log is in version order: only its tail can be newly committed.
  const std::deque<LogEntry>& entries = log_.entries();
  auto first = std::upper_bound(
      entries.begin(), entries.end(), ec_committed_persisted_,
      [](const Version& v, const LogEntry& e) { return Less(v, e.version); });
  for (auto e_it = first; e_it != entries.end(); ++e_it) {
    const LogEntry& e = *e_it;
    if (!Less(ec_committed_, e.version)) {
      auto it = ec_rollback_pieces_.find(LogKey(e.version));
      const uint32_t pieces = it == ec_rollback_pieces_.end() ? 1 : it->second;
      for (uint32_t i = 0; i < pieces; ++i) txn->DeleteMeta(RollbackKey(e.version, i));
      if (it != ec_rollback_pieces_.end()) ec_rollback_pieces_.erase(it);
    }
  }
  ec_committed_persisted_ = ec_committed_;
  const Version& persisted = ec_committed_persisted_;
  pb::Version v;
  ToProto(persisted, &v);
  txn->PutMeta(kEcCommittedMeta, v.SerializeAsString());
}

// Saves what `req` overwrites on this shard, for a rollback; for a write
// that ends with the object removed, only that it existed.
static absl::StatusOr<pb::EcRollback> SaveForRollback(ObjectStore* store, const std::string& coll,
                                                      const pb::RepOpRequest& req, bool removes) {
  pb::EcRollback rb;
  auto meta = store->Stat(coll, req.oid());
  if (absl::IsNotFound(meta.status())) return rb;
  RETURN_IF_ERROR(meta.status());
  rb.set_existed(true);
  if (removes) {
    rb.set_data_dropped(true);
    return rb;
  }
  rb.set_size(meta->size);
  ToProto(meta->version, rb.mutable_version());
  rb.set_mtime_ns(meta->mtime_ns);
  ASSIGN_OR_RETURN(auto xattrs, store->GetXattrs(coll, req.oid()));
  for (auto& [k, v] : xattrs) {
    auto* kv = rb.add_xattrs();
    kv->set_key(k);
    kv->set_value(v);
  }
  auto save = [&](uint64_t from, uint64_t to) -> absl::Status {
    to = std::min(to, meta->size);
    if (from >= to) return absl::OkStatus();
    ASSIGN_OR_RETURN(std::string data, store->Read(coll, req.oid(), from, to - from));
    auto* ext = rb.add_extents();
    ext->set_offset(from);
    ext->set_data(std::move(data));
    return absl::OkStatus();
  };
  for (const pb::ObjectOp& op : req.ops()) {
    switch (op.type()) {
      case pb::WRITE: RETURN_IF_ERROR(save(op.offset(), op.offset() + op.data().size())); break;
      case pb::TRUNCATE: RETURN_IF_ERROR(save(op.offset(), meta->size)); break;
      case pb::WRITE_FULL:
      case pb::REMOVE:
        RETURN_IF_ERROR(save(0, meta->size));
        return rb;  // all of it: later ops need nothing more
      default: break;
    }
  }
  return rb;
}

absl::Status Pg::EcApplySubWrite(pb::RepOpRequest* mutable_req) {
  const pb::RepOpRequest& req = *mutable_req;
  const LogEntry entry = FromProto(req.entry());
  ASSIGN_OR_RETURN(pb::EcRollback rb, SaveForRollback(ctx_.store, coll_, req,
                                                      entry.op == LogEntry::kDelete));
  Transaction txn;
  {
    absl::MutexLock lock(&mu_);
    if (log_.IsMissing(req.oid())) {
      return absl::FailedPreconditionError("object not yet rebuilt on this shard");
    }
    EcCommitLocked(FromProto(req.committed()), &txn);
    const std::string saved = rb.SerializeAsString();
    uint32_t pieces = 0;
    for (size_t at = 0; at == 0 || at < saved.size(); at += kRollbackPieceBytes) {
      txn.PutMeta(RollbackKey(entry.version, pieces++), saved.substr(at, kRollbackPieceBytes));
    }
    ec_rollback_pieces_[LogKey(entry.version)] = pieces;
    AddToTransaction(req.oid(), mutable_req->mutable_ops(), &txn);
    if (entry.op != LogEntry::kDelete) txn.SetVersion(req.oid(), entry.version, req.mtime_ns());
    log_.Append(entry, &txn);
  }
  absl::Status status = ctx_.store->Apply(coll_, std::move(txn));
  if (!status.ok()) {
    // The in-memory log is ahead of the disk: reload it (the primary re-peers).
    absl::MutexLock lock(&mu_);
    activated_interval_ = 0;
    auto reloaded = PgLog::Load(ctx_.store, coll_, ctx_.options->pg_log_max_entries);
    if (reloaded.ok()) log_ = std::move(*reloaded);
  }
  return status;
}

void Pg::EcHandleSubWrite(pb::RepOpRequest* mutable_req, pb::RepOpReply* reply) {
  const pb::RepOpRequest& req = *mutable_req;
  SectionGuard ordered(&order_);
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    status = ReplicaCheck(req.map_epoch(), /*need_active=*/!req.commit_only());
    if (status.ok() && req.commit_only()) {
      // Only what this shard has: a shard that missed writes learns nothing.
      // Kept in memory; the saved rollback data goes with the next sub-write.
      const Version committed = FromProto(req.committed());
      if (!Less(log_.info().last_update, committed)) EcNoteCommittedLocked(committed);
      return FillStatus(status, reply->mutable_status());
    }
    if (status.ok() &&
        (req.shard() >= interval_.shards.size() || interval_.shards[req.shard()] != ctx_.whoami)) {
      status = absl::FailedPreconditionError(absl::StrCat(
          "osd.", ctx_.whoami.value(), " does not hold shard ", req.shard(), " of pg ", coll_));
    }
  }
  if (status.ok()) status = EcApplySubWrite(mutable_req);
  FillStatus(status, reply->mutable_status());
}

absl::Status Pg::EcRollbackLocal(const Version& version) {
  std::string oid;
  {
    absl::MutexLock lock(&mu_);
    const auto& entries = log_.entries();
    if (entries.empty() || !(entries.back().version.epoch == version.epoch &&
                             entries.back().version.seq == version.seq)) {
      return absl::FailedPreconditionError("rollback: not this shard's newest write");
    }
    if (!Less(ec_committed_, version)) {
      return absl::FailedPreconditionError("rollback: the write is committed");
    }
    oid = entries.back().oid;
  }
  ASSIGN_OR_RETURN(auto pieces, ctx_.store->ListMeta(coll_, RollbackPrefix(version)));
  if (pieces.empty()) return absl::NotFoundError("rollback: no saved data for the write");
  std::string saved;
  for (const auto& [key, value] : pieces) saved += value;
  pb::EcRollback rb;
  if (!rb.ParseFromString(saved)) return absl::DataLossError("rollback data is corrupt");
  if (rb.data_dropped()) {
    return absl::FailedPreconditionError("rollback: a remove only rolls forward");
  }
  Transaction txn;
  if (!rb.existed()) {
    if (ctx_.store->Stat(coll_, oid).ok()) txn.Remove(oid);
  } else {
    auto now = ctx_.store->Stat(coll_, oid);
    if (now.ok()) {
      ASSIGN_OR_RETURN(auto xattrs, ctx_.store->GetXattrs(coll_, oid));
      for (auto& [k, v] : xattrs) txn.RmXattr(oid, k);
    } else {
      txn.Touch(oid);
    }
    for (int i = rb.extents_size() - 1; i >= 0; --i) {
      txn.Write(oid, rb.extents(i).offset(), rb.extents(i).data());
    }
    txn.Truncate(oid, rb.size());
    for (const auto& kv : rb.xattrs()) txn.SetXattr(oid, kv.key(), kv.value());
    txn.SetVersion(oid, FromProto(rb.version()), rb.mtime_ns());
  }
  for (const auto& [key, value] : pieces) txn.DeleteMeta(key);
  {
    absl::MutexLock lock(&mu_);
    log_.PopNewest(&txn);
  }
  absl::Status status = ctx_.store->Apply(coll_, std::move(txn));
  absl::MutexLock lock(&mu_);
  auto reloaded = PgLog::Load(ctx_.store, coll_, ctx_.options->pg_log_max_entries);
  if (reloaded.ok()) log_ = std::move(*reloaded);
  LOG(INFO) << "pg=" << coll_ << " event=ec_rollback oid=" << oid.substr(0, 64)
            << " version=" << version.epoch << "." << version.seq << " ok=" << status.ok();
  return status;
}

void Pg::HandleRollback(const pb::RollbackRequest& req, pb::PushReply* reply) {
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    status = ReplicaCheck(req.map_epoch(), /*need_active=*/false);
  }
  if (status.ok()) {
    SectionGuard ordered(&order_);
    status = EcRollbackLocal(FromProto(req.version()));
  }
  FillStatus(status, reply->mutable_status());
}

}  // namespace weft::osd
