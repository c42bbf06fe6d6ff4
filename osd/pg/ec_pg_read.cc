// Erasure-coded PGs: reads.
//
// Shard reads (OPF_SHARD) are served by whichever OSD holds the shard, without
// the primary: clients read the data chunks they need straight from their
// shards (common/ec/ec_read.h). A shard refuses when it is not at that
// position in its current interval, when the object's stored shard id differs,
// when it is missing the object (being rebuilt), or when the object's last
// write is not known to be committed on every shard (it might still be rolled
// back); the client then asks the primary, which orders reads after writes and
// decodes from any k shards.
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status/status.h"
#include "osd/pg/osd_error.h"
#include "osd/pg/pg.h"
#include "osd/pg/pg_codec.h"

namespace weft::osd {
namespace {

bool Less(const Version& a, const Version& b) {
  return a.epoch != b.epoch ? a.epoch < b.epoch : a.seq < b.seq;
}

uint64_t ParseU64(const std::string& s) {
  uint64_t v = 0;
  return absl::SimpleAtoi(s, &v) ? v : 0;
}

bool IsInternalXattr(const std::string& name) { return name.rfind("_ec.", 0) == 0; }

}  // namespace

absl::Status Pg::EcShardRead(const pb::OpRequest& req, pb::OpReply* reply) {
  const std::string& oid = req.oid();
  Version committed;
  const bool rebuild = req.flags() & pb::OPF_REBUILD_READ;
  {
    absl::MutexLock lock(&mu_);
    if (rebuild) {
      // Checked below against the object's stored shard id only.
    } else if (req.shard() >= interval_.shards.size() ||
               interval_.shards[req.shard()] != ctx_.whoami) {
      return absl::FailedPreconditionError(absl::StrCat(
          "osd.", ctx_.whoami.value(), " does not hold shard ", req.shard(), " of pg ", coll_));
    }
    // A shard that came back serves nothing until a primary has activated it:
    // only then does its missing set name what it missed. One that stayed in
    // the acting set since its activation missed nothing (every write went to
    // it or failed), so it keeps serving while the PG is below min_size.
    if (!rebuild && !ec_readable_) {
      return absl::UnavailableError(absl::StrCat("pg ", coll_, " is not active on osd.",
                                                 ctx_.whoami.value(), " yet"));
    }
    if (!rebuild && log_.IsMissing(oid)) {
      return absl::UnavailableError(
          absl::StrCat("object is being rebuilt on osd.", ctx_.whoami.value()));
    }
    committed = ec_committed_;
  }
  ASSIGN_OR_RETURN(ObjectMeta meta, ctx_.store->Stat(coll_, oid));
  ASSIGN_OR_RETURN(auto xattrs, ctx_.store->GetXattrs(coll_, oid));
  std::string shard_id, logical;
  for (const auto& [k, v] : xattrs) {
    if (k == kEcShardXattr) shard_id = v;
    if (k == kEcSizeXattr) logical = v;
  }
  if (shard_id != absl::StrCat(req.shard())) {
    return absl::FailedPreconditionError(absl::StrCat("object on osd.", ctx_.whoami.value(),
                                                      " holds shard '", shard_id, "', not ",
                                                      req.shard()));
  }
  if (!(req.flags() & (pb::OPF_PRIMARY_READ | pb::OPF_REBUILD_READ)) &&
      Less(committed, meta.version)) {
    // Aborted, like shards that disagree: the reader asks the primary.
    return absl::AbortedError("the object's last write is not committed on every shard yet");
  }
  const uint64_t logical_size = ParseU64(logical);
  uint64_t bytes = 0;
  for (const pb::ObjectOp& op : req.ops()) {
    auto* result = reply->add_results();
    result->set_size(logical_size);
    result->set_mtime_ns(meta.mtime_ns);
    ToProto(meta.version, result->mutable_version());
    if (op.type() == pb::READ) {
      if (op.offset() >= meta.size) continue;
      uint64_t len = op.length() == 0 ? meta.size : op.length();
      len = std::min<uint64_t>(len, meta.size - op.offset());
      auto data = ctx_.store->Read(coll_, oid, op.offset(), len);
      if (absl::IsDataLoss(data.status())) {
        // The reader decodes around this shard; the primary rebuilds it.
        ReportDamaged(oid, data.status());
      }
      RETURN_IF_ERROR(data.status());
      bytes += data->size();
      result->set_data(std::move(*data));
    } else if (op.type() == pb::GETXATTRS) {
      for (const auto& [k, v] : xattrs) {
        auto* kv = result->add_kvs();
        kv->set_key(k);
        kv->set_value(v);
      }
    } else if (op.type() != pb::STAT) {
      return absl::InvalidArgumentError("shard requests carry READ, STAT or GETXATTRS only");
    }
  }
  // Stat, xattrs and data are separate store reads: a sub-write applied in
  // between would pair the old version with new bytes. Check nothing moved.
  if (bytes > 0) {
    ASSIGN_OR_RETURN(ObjectMeta again, ctx_.store->Stat(coll_, oid));
    if (Less(meta.version, again.version) || Less(again.version, meta.version)) {
      return absl::UnavailableError("the object changed during the shard read");
    }
  }
  ctx_.counters->read_bytes += bytes;
  return absl::OkStatus();
}

std::vector<bool> Pg::EcAvailable() {
  absl::MutexLock lock(&mu_);
  std::vector<bool> out(layout_.k + layout_.m, false);
  for (size_t i = 0; i < out.size() && i < interval_.shards.size(); ++i) {
    out[i] = interval_.shards[i] != kNoOsd;
  }
  return out;
}

std::vector<ec::ShardReply> Pg::EcFetch(const std::string& oid,
                                        const std::vector<ec::ShardRead>& reads, bool stat,
                                        const std::vector<OsdId>* via) {
  std::vector<OsdId> shards;
  Epoch epoch = 0;
  {
    absl::MutexLock lock(&mu_);
    shards = interval_.shards;
    epoch = map_->epoch;
  }
  auto make = [&](const ec::ShardRead& r) {
    pb::OpRequest req;
    req.set_map_epoch(epoch);
    req.set_pool(id_.pool.value());
    req.set_pg_seed(id_.seed);
    req.set_oid(oid);
    req.set_flags(pb::OPF_LOCAL | pb::OPF_SHARD | pb::OPF_PRIMARY_READ |
                  (via != nullptr ? pb::OPF_REBUILD_READ : 0));
    req.set_shard(r.shard);
    auto* op = req.add_ops();
    if (stat) {
      op->set_type(pb::GETXATTRS);
    } else {
      op->set_type(pb::READ);
      op->set_offset(r.offset);
      op->set_length(r.length);
    }
    return req;
  };
  std::vector<ec::ShardReply> out(reads.size());
  std::vector<pb::OpReply> replies(reads.size());
  std::vector<absl::Status> statuses(reads.size(), absl::UnavailableError("shard has no OSD"));
  std::vector<std::string> addrs;
  std::vector<pb::OpRequest> remote;
  std::vector<size_t> remote_index;
  for (size_t i = 0; i < reads.size(); ++i) {
    const OsdId osd = via != nullptr                   ? (*via)[i]
                      : reads[i].shard < shards.size() ? shards[reads[i].shard]
                                                       : kNoOsd;
    if (osd == kNoOsd) continue;
    if (osd == ctx_.whoami) {
      statuses[i] = EcShardRead(make(reads[i]), &replies[i]);
    } else {
      addrs.push_back(AddrOf(osd));
      remote.push_back(make(reads[i]));
      remote_index.push_back(i);
    }
  }
  if (!remote.empty()) {
    std::vector<pb::OpReply> remote_replies;
    auto remote_statuses = ctx_.peers->OpAll(addrs, remote, &remote_replies);
    for (size_t j = 0; j < remote.size(); ++j) {
      statuses[remote_index[j]] = remote_statuses[j];
      replies[remote_index[j]] = std::move(remote_replies[j]);
    }
  }
  for (size_t i = 0; i < reads.size(); ++i) {
    out[i].status = statuses[i];
    if (!statuses[i].ok() || replies[i].results_size() == 0) continue;
    auto* r = replies[i].mutable_results(0);
    out[i].data = std::move(*r->mutable_data());
    out[i].logical_size = r->size();
    out[i].version_epoch = r->version().epoch();
    out[i].version_seq = r->version().seq();
    out[i].mtime_ns = r->mtime_ns();
    if (stat) {
      // The xattrs ride in `data` as an encoded result for EcStat's callers.
      out[i].data = r->SerializeAsString();
    }
  }
  return out;
}

absl::StatusOr<Pg::EcObject> Pg::EcStat(const std::string& oid) {
  // Our own shard first, then the others; the first that knows wins.
  std::vector<uint32_t> order;
  {
    absl::MutexLock lock(&mu_);
    for (uint32_t i = 0; i < interval_.shards.size(); ++i) {
      if (interval_.shards[i] == ctx_.whoami) order.insert(order.begin(), i);
      else if (interval_.shards[i] != kNoOsd) order.push_back(i);
    }
  }
  absl::Status last = absl::UnavailableError("no shard reachable");
  for (uint32_t shard : order) {
    auto replies = EcFetch(oid, {{shard, 0, 0}}, /*stat=*/true);
    const ec::ShardReply& r = replies[0];
    if (absl::IsNotFound(r.status)) return EcObject{};
    if (!r.status.ok()) {
      last = r.status;
      continue;
    }
    EcObject o;
    o.exists = true;
    o.size = r.logical_size;
    o.version = Version{r.version_epoch, r.version_seq};
    o.mtime_ns = r.mtime_ns;
    return o;
  }
  return Annotate(last, "stat of erasure-coded object");
}

absl::StatusOr<ec::RangeRead> Pg::EcReadRange(const std::string& oid, uint64_t a, uint64_t b) {
  return ec::ReadRange(layout_, ec_.get(), a, b, EcAvailable(),
                       [this, &oid](const std::vector<ec::ShardRead>& reads) {
                         return EcFetch(oid, reads, /*stat=*/false);
                       });
}

absl::Status Pg::EcPrimaryRead(const pb::OpRequest& req, pb::OpReply* reply) {
  if (req.flags() & pb::OPF_LOCAL) {
    return absl::InvalidArgumentError(
        "erasure-coded objects have no local copy: read shards (OPF_SHARD)");
  }
  // Ordered with writes: a read never sees a half-applied write.
  SectionGuard ordered(&order_);
  uint64_t interval_id = 0;
  RETURN_IF_ERROR(CheckPrimary(&interval_id));
  const std::string& oid = req.oid();
  ASSIGN_OR_RETURN(EcObject obj, EcStat(oid));
  if (!obj.exists) return absl::NotFoundError("no such object");
  uint64_t bytes = 0;
  for (const pb::ObjectOp& op : req.ops()) {
    auto* result = reply->add_results();
    result->set_size(obj.size);
    result->set_mtime_ns(obj.mtime_ns);
    ToProto(obj.version, result->mutable_version());
    switch (op.type()) {
      case pb::STAT:
        break;
      case pb::READ: {
        uint64_t end = op.length() == 0 ? obj.size : std::min(obj.size, op.offset() + op.length());
        if (op.offset() >= end) break;
        ASSIGN_OR_RETURN(ec::RangeRead r, EcReadRange(oid, op.offset(), end));
        if (r.version_epoch != obj.version.epoch || r.version_seq != obj.version.seq) {
          return absl::AbortedError("object changed during the read");
        }
        bytes += r.data.size();
        result->set_data(std::move(r.data));
        break;
      }
      case pb::GETXATTR:
      case pb::GETXATTRS: {
        uint32_t any = 0;
        auto replies = EcFetch(oid, {{any, 0, 0}}, /*stat=*/true);
        for (uint32_t s = 1; !replies[0].status.ok() && s < layout_.k + layout_.m; ++s) {
          replies = EcFetch(oid, {{s, 0, 0}}, /*stat=*/true);
        }
        RETURN_IF_ERROR(replies[0].status);
        pb::ObjectOpResult full;
        full.ParseFromString(replies[0].data);
        bool found = false;
        for (const auto& kv : full.kvs()) {
          if (IsInternalXattr(kv.key())) continue;
          if (op.type() == pb::GETXATTRS) {
            *result->add_kvs() = kv;
          } else if (kv.key() == op.name()) {
            result->set_data(kv.value());
            found = true;
          }
        }
        if (op.type() == pb::GETXATTR && !found) {
          return ErrnoError(absl::StatusCode::kNotFound, ENODATA, "no such xattr");
        }
        break;
      }
      default:
        return absl::UnimplementedError("omap is not supported on erasure-coded pools");
    }
  }
  ctx_.counters->read_bytes += bytes;
  return absl::OkStatus();
}

}  // namespace weft::osd
