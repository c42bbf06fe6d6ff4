// Moving whole objects between members of a PG: the primary pulls what it
// lacks from a peer, and pushes what a replica lacks. An object travels as its
// full state — data in pieces of osd_recovery_max_chunk, xattrs, omap,
// version — and replaces the receiver's copy; a deleted object travels as a
// delete. The receiver applies each piece as it comes, the object marked
// missing until the last (osd/recovery_throttle.h bounds how many move).
#include "absl/strings/str_cat.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "osd/pg/osd_error.h"
#include "osd/pg/pg.h"
#include "osd/pg/pg_codec.h"

namespace weft::osd {

void AddPushPiece(const pb::PushRequest& req, Transaction* txn) {
  const std::string& oid = req.oid();
  if (req.deleted()) {
    txn->Remove(oid);
    return;
  }
  if (req.offset() == 0) {
    txn->Remove(oid);
    txn->Touch(oid);
    for (const auto& kv : req.xattrs()) txn->SetXattr(oid, kv.key(), kv.value());
    std::vector<std::pair<std::string, std::string>> omap;
    for (const auto& kv : req.omap()) omap.emplace_back(kv.key(), kv.value());
    if (!omap.empty()) txn->OmapSet(oid, std::move(omap));
  }
  if (!req.data().empty()) txn->Write(oid, req.offset(), req.data());
  if (req.last()) txn->SetVersion(oid, FromProto(req.version()), req.mtime_ns());
}

absl::Status Pg::PullObject(const std::string& oid, const std::vector<std::string>& sources,
                            uint64_t interval_id, const Version* expect) {
  absl::Status last_error = absl::UnavailableError("no member to pull from");
  for (const std::string& addr : sources) {
    pb::OpRequest head;
    head.set_pool(id_.pool.value());
    head.set_pg_seed(id_.seed);
    head.set_oid(oid);
    head.set_flags(pb::OPF_LOCAL);
    head.add_ops()->set_type(pb::STAT);
    head.add_ops()->set_type(pb::GETXATTRS);
    auto* omap = head.add_ops();
    omap->set_type(pb::OMAP_LIST);
    omap->set_max_entries(100000);
    pb::OpReply reply;
    absl::Status status = ctx_.peers->Op(addr, head, &reply);
    pb::PushRequest piece;
    piece.set_oid(oid);
    if (expect != nullptr && status.ok() && FromProto(reply.results(0).version()) != *expect) {
      const Version has = FromProto(reply.results(0).version());
      status = absl::DataLossError(absl::StrCat("its copy is at version ", has.epoch, ".",
                                                has.seq, ", not ", expect->epoch, ".",
                                                expect->seq));
    } else if (expect != nullptr && absl::IsNotFound(status)) {
      status = absl::DataLossError("it has no copy");
    }
    if (absl::IsNotFound(status)) {
      piece.set_deleted(true);
    } else if (!status.ok()) {
      last_error = Annotate(status, addr);
      continue;
    } else {
      const auto& stat = reply.results(0);
      piece.set_size(stat.size());
      *piece.mutable_version() = stat.version();
      piece.set_mtime_ns(stat.mtime_ns());
      *piece.mutable_xattrs() = reply.results(1).kvs();
      *piece.mutable_omap() = reply.results(2).kvs();
    }
    // The data, a piece per transaction, so that memory holds one piece
    // whatever the object's size. The first marks the object missing here
    // and the last clears the mark: a crash or a failed source in between
    // leaves it missing (pulled again, never served half-written).
    uint64_t offset = 0;
    bool failed = false;
    // Later pieces carry no xattrs or omap (the first one set them).
    pb::PushRequest rest = piece;
    rest.clear_xattrs();
    rest.clear_omap();
    do {
      pb::PushRequest part = offset == 0 ? piece : rest;
      part.set_offset(offset);
      uint64_t len = std::min<uint64_t>(ctx_.options->recovery_max_chunk, piece.size() - offset);
      if (ctx_.recovery != nullptr) ctx_.recovery->Charge(len);
      if (!piece.deleted() && len > 0) {
        pb::OpRequest read = head;
        read.clear_ops();
        auto* op = read.add_ops();
        op->set_type(pb::READ);
        op->set_offset(offset);
        op->set_length(len);
        pb::OpReply data;
        status = ctx_.peers->Op(addr, read, &data);
        if (!status.ok()) {
          failed = true;
          break;
        }
        part.set_data(std::move(*data.mutable_results(0)->mutable_data()));
      }
      offset += len;
      part.set_last(offset >= piece.size());
      Transaction txn;
      AddPushPiece(part, &txn);
      {
        absl::MutexLock lock(&mu_);
        if (part.offset() == 0 && !part.last()) log_.AddMissing(oid, &txn);
        if (part.last()) log_.RemoveMissing(oid, &txn);
      }
      status = ctx_.store->Apply(coll_, std::move(txn));
      if (!status.ok()) return Annotate(status, absl::StrCat("pull ", oid));
      ctx_.counters->recovery_bytes += len;
    } while (offset < piece.size());
    if (failed) {
      last_error = status;
      continue;
    }
    return absl::OkStatus();
  }
  return Annotate(last_error, absl::StrCat("pull ", oid));
}

absl::Status Pg::PushObject(OsdId target, const std::string& addr, const std::string& oid,
                            uint64_t interval_id) {
  if (ec_) return EcPushShard(target, oid, interval_id);
  Epoch epoch = 0;
  {
    absl::MutexLock lock(&mu_);
    if (interval_.id != interval_id) return OsdError(pb::PG_NOT_ACTIVE, "pg interval changed");
    epoch = map_->epoch;
  }
  pb::PushRequest head;
  head.set_map_epoch(epoch);
  head.set_pool(id_.pool.value());
  head.set_pg_seed(id_.seed);
  head.set_oid(oid);
  auto meta = ctx_.store->Stat(coll_, oid);
  if (absl::IsNotFound(meta.status())) {
    head.set_deleted(true);
    head.set_last(true);
    RETURN_IF_ERROR(ctx_.peers->Push(addr, head));
  } else {
    RETURN_IF_ERROR(meta.status());
    ToProto(meta->version, head.mutable_version());
    head.set_mtime_ns(meta->mtime_ns);
    head.set_size(meta->size);
    ASSIGN_OR_RETURN(auto xattrs, ctx_.store->GetXattrs(coll_, oid));
    for (auto& [k, v] : xattrs) {
      auto* kv = head.add_xattrs();
      kv->set_key(k);
      kv->set_value(v);
    }
    std::string after;
    for (;;) {
      bool more = false;
      ASSIGN_OR_RETURN(auto page, ctx_.store->OmapList(coll_, oid, after, "", 10000, &more));
      for (auto& [k, v] : page) {
        auto* kv = head.add_omap();
        kv->set_key(k);
        kv->set_value(v);
      }
      if (!more || page.empty()) break;
      after = page.back().first;
    }
    uint64_t offset = 0;
    do {
      pb::PushRequest part;
      if (offset == 0) {
        part = head;
      } else {
        part.set_map_epoch(epoch);
        part.set_pool(id_.pool.value());
        part.set_pg_seed(id_.seed);
        part.set_oid(oid);
        *part.mutable_version() = head.version();
        part.set_mtime_ns(head.mtime_ns());
        part.set_size(head.size());
      }
      uint64_t len = std::min<uint64_t>(ctx_.options->recovery_max_chunk, meta->size - offset);
      part.set_offset(offset);
      if (ctx_.recovery != nullptr) ctx_.recovery->Charge(len);
      if (len > 0) {
        ASSIGN_OR_RETURN(std::string data, ctx_.store->Read(coll_, oid, offset, len));
        part.set_data(std::move(data));
      }
      offset += len;
      part.set_last(offset >= meta->size);
      RETURN_IF_ERROR(ctx_.peers->Push(addr, part));
      ctx_.counters->recovery_bytes += len;
    } while (offset < meta->size);
  }
  ClearPeerMissing(target, oid);
  return absl::OkStatus();
}

void Pg::HandlePush(const pb::PushRequest& req, pb::PushReply* reply) {
  SectionGuard ordered(&order_);
  Transaction txn;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    status = ReplicaCheck(req.map_epoch(), /*need_active=*/true);
    if (status.ok()) {
      AddPushPiece(req, &txn);
      // Half an object is never served: missing from its first piece on.
      if (req.offset() == 0 && !req.last() && !req.deleted()) log_.AddMissing(req.oid(), &txn);
      if (req.last() || req.deleted()) log_.RemoveMissing(req.oid(), &txn);
    }
  }
  if (status.ok()) status = ctx_.store->Apply(coll_, std::move(txn));
  if (!status.ok()) {
    absl::MutexLock lock(&mu_);
    auto reloaded = PgLog::Load(ctx_.store, coll_, ctx_.options->pg_log_max_entries);
    if (reloaded.ok()) log_ = std::move(*reloaded);
  }
  FillStatus(status, reply->mutable_status());
}

}  // namespace weft::osd
