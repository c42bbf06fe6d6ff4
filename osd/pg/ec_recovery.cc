// Erasure-coded PGs: rebuilding a shard. The primary reads the same shard
// range from k other shards that hold the object's current version, decodes
// the missing shard's bytes, and pushes them piece by piece (bounded memory);
// the receiver replaces its copy and clears its missing mark with the last
// piece. The primary rebuilds its own shard the same way, into its own store.
#include <bit>

#include "absl/strings/str_cat.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "osd/pg/osd_error.h"
#include "osd/pg/pg.h"
#include "osd/pg/pg_codec.h"

namespace weft::osd {

absl::StatusOr<std::string> Pg::EcRebuildRange(const std::string& oid, uint32_t shard,
                                               const EcObject& obj, uint64_t offset,
                                               uint64_t length) {
  const uint32_t n = layout_.k + layout_.m;
  // Where each shard's data may be: first the OSD at that position, then any
  // member (after a position change, an OSD still holds its old shard's data
  // until it is rebuilt for its new position).
  std::vector<std::pair<uint32_t, OsdId>> candidates;
  {
    absl::MutexLock lock(&mu_);
    for (uint32_t s = 0; s < n && s < interval_.shards.size(); ++s) {
      if (s != shard && interval_.shards[s] != kNoOsd) {
        candidates.push_back({s, interval_.shards[s]});
      }
    }
    for (uint32_t s = 0; s < n && s < interval_.shards.size(); ++s) {
      for (OsdId osd : interval_.acting) {
        if (s != shard && osd != interval_.shards[s]) candidates.push_back({s, osd});
      }
    }
  }
  std::vector<std::string> bufs(n);
  uint32_t present = 0;
  std::string why;
  std::vector<bool> tried(candidates.size(), false);
  while (std::popcount(present) < static_cast<int>(layout_.k)) {
    std::vector<ec::ShardRead> reads;
    std::vector<OsdId> via;
    uint32_t asked = 0;
    for (size_t c = 0; c < candidates.size() &&
                       std::popcount(present) + std::popcount(asked) < static_cast<int>(layout_.k);
         ++c) {
      const auto [s, osd] = candidates[c];
      if (tried[c] || ((present | asked) & (1u << s))) continue;
      tried[c] = true;
      reads.push_back({s, offset, length});
      via.push_back(osd);
      asked |= 1u << s;
    }
    if (reads.empty()) {
      return absl::UnavailableError(absl::StrCat("rebuild of shard ", shard, ": fewer than k=",
                                                 layout_.k, " shards hold the object:", why));
    }
    auto replies = EcFetch(oid, reads, /*stat=*/false, &via);
    for (size_t r = 0; r < reads.size(); ++r) {
      const uint32_t s = reads[r].shard;
      if (!replies[r].status.ok()) {
        absl::StrAppend(&why, " shard ", s, ": ", replies[r].status.message(), ";");
        continue;
      }
      if (replies[r].version_epoch != obj.version.epoch ||
          replies[r].version_seq != obj.version.seq) {
        absl::StrAppend(&why, " shard ", s, ": stale version;");
        continue;  // stale shard: not a source
      }
      bufs[s] = std::move(replies[r].data);
      bufs[s].resize(length, '\0');
      present |= 1u << s;
      ctx_.counters->recovery_bytes += length;
    }
  }
  bufs[shard].assign(length, '\0');
  std::vector<uint8_t*> ptrs(n);
  for (uint32_t s = 0; s < n; ++s) {
    if (bufs[s].empty() && s != shard) bufs[s].assign(length, '\0');
    ptrs[s] = reinterpret_cast<uint8_t*>(bufs[s].data());
  }
  RETURN_IF_ERROR(ec_->Decode(length, ptrs.data(), present, 1u << shard));
  return std::move(bufs[shard]);
}

absl::Status Pg::EcRebuildXattrs(const std::string& oid, uint32_t shard,
                                 pb::PushRequest* head) {
  auto attrs = EcFetch(oid, {{shard == 0 ? 1u : 0u, 0, 0}}, /*stat=*/true);
  for (uint32_t s = 0; !attrs[0].status.ok() && s < layout_.k + layout_.m; ++s) {
    if (s != shard) attrs = EcFetch(oid, {{s, 0, 0}}, /*stat=*/true);
  }
  RETURN_IF_ERROR(Annotate(attrs[0].status, "rebuild: xattrs"));
  pb::ObjectOpResult full;
  if (!full.ParseFromString(attrs[0].data)) return absl::DataLossError("rebuild: bad xattrs");
  for (const auto& kv : full.kvs()) {
    auto* x = head->add_xattrs();
    x->set_key(kv.key());
    x->set_value(kv.key() == kEcShardXattr ? absl::StrCat(shard) : kv.value());
  }
  return absl::OkStatus();
}

absl::Status Pg::EcPushShard(OsdId target, const std::string& oid, uint64_t interval_id) {
  int shard = -1;
  Epoch epoch = 0;
  {
    absl::MutexLock lock(&mu_);
    if (interval_.id != interval_id) return OsdError(pb::PG_NOT_ACTIVE, "pg interval changed");
    epoch = map_->epoch;
    for (size_t i = 0; i < interval_.shards.size(); ++i) {
      if (interval_.shards[i] == target) shard = static_cast<int>(i);
    }
  }
  pb::PushRequest head;
  head.set_map_epoch(epoch);
  head.set_pool(id_.pool.value());
  head.set_pg_seed(id_.seed);
  head.set_oid(oid);
  const bool local = target == ctx_.whoami;
  // Our own shard: each piece applied as it is rebuilt, the object missing
  // here until the last one (never served half-rebuilt).
  auto send = [&](const pb::PushRequest& part) -> absl::Status {
    if (!local) return ctx_.peers->Push(AddrOf(target), part);
    Transaction txn;
    AddPushPiece(part, &txn);
    {
      absl::MutexLock lock(&mu_);
      if (part.offset() == 0 && !part.last()) log_.AddMissing(oid, &txn);
      if (part.last()) log_.RemoveMissing(oid, &txn);
    }
    return ctx_.store->Apply(coll_, std::move(txn));
  };
  if (shard >= 0) {
    ASSIGN_OR_RETURN(EcObject obj, EcStat(oid));
    if (!obj.exists) {
      head.set_deleted(true);
      head.set_last(true);
      RETURN_IF_ERROR(send(head));
    } else {
      RETURN_IF_ERROR(EcRebuildXattrs(oid, static_cast<uint32_t>(shard), &head));
      ToProto(obj.version, head.mutable_version());
      head.set_mtime_ns(obj.mtime_ns);
      const uint64_t size = layout_.ShardSize(obj.size);
      head.set_size(size);
      // k shard ranges of `piece` are read to rebuild one: together about
      // osd_recovery_max_chunk.
      const uint64_t per_shard = ctx_.options->recovery_max_chunk / layout_.k;
      const uint64_t piece =
          std::max<uint64_t>(layout_.chunk, per_shard / layout_.chunk * layout_.chunk);
      uint64_t offset = 0;
      do {
        pb::PushRequest part = head;
        if (offset > 0) part.clear_xattrs();
        const uint64_t len = std::min(piece, size - offset);
        part.set_offset(offset);
        if (ctx_.recovery != nullptr) ctx_.recovery->Charge(len * layout_.k);
        if (len > 0) {
          ASSIGN_OR_RETURN(std::string data, EcRebuildRange(oid, shard, obj, offset, len));
          part.set_data(std::move(data));
        }
        offset += len;
        part.set_last(offset >= size);
        RETURN_IF_ERROR(send(part));
      } while (offset < size);
    }
  } else if (local) {
    Transaction txn;
    {
      absl::MutexLock lock(&mu_);
      log_.RemoveMissing(oid, &txn);
    }
    RETURN_IF_ERROR(ctx_.store->Apply(coll_, std::move(txn)));
  }
  ClearPeerMissing(target, oid);
  return absl::OkStatus();
}

}  // namespace weft::osd
