// Erasure pools, client side: reading bytes [a, b) of an object straight from
// the shards that hold them (common/ec/ec_read.h). Each shard read carries the
// shard id and the client's map epoch; the OSD checks that it holds that shard
// position and that the object's last write is committed everywhere.
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "common/ec/ec_read.h"
#include "common/placement/placement.h"
#include "common/status/status.h"
#include "common/objects/object_client.h"
#include "proto/osd.grpc.pb.h"

namespace weft::objects {

ec::ErasureCode* ObjectClient::Code(uint32_t k, uint32_t m) {
  absl::MutexLock lock(&mu_);
  auto& code = codes_[(uint64_t{k} << 32) | m];
  if (code == nullptr) {
    auto made = ec::ErasureCode::Create(static_cast<int>(k), static_cast<int>(m));
    if (!made.ok()) return nullptr;
    code = std::move(*made);
  }
  return code.get();
}

void ObjectClient::CountReceived(int32_t osd, uint64_t bytes) {
  if (bytes == 0) return;
  absl::MutexLock lock(&mu_);
  received_[osd] += bytes;
}

std::map<int32_t, uint64_t> ObjectClient::ReceivedBytes() {
  absl::MutexLock lock(&mu_);
  return received_;
}

absl::StatusOr<OpResult> ObjectClient::EcRead(const OsdMap& m, const PoolInfo& pool,
                                              const std::string& oid, const pb::ObjectOp& op,
                                              uint32_t shard_mask) {
  ec::ErasureCode* code = Code(pool.ec_k, pool.ec_m);
  if (code == nullptr) return absl::InvalidArgumentError("bad erasure profile");
  const uint32_t seed = placement::ObjectToPgSeed(oid, pool.pg_num);
  const placement::PgMapping mapping = placement::MapPg(m, pool, seed);
  const uint32_t n = pool.ec_k + pool.ec_m;
  std::vector<bool> available(n, false);
  std::vector<const OsdInfo*> osds(n, nullptr);
  for (uint32_t i = 0; i < n && i < mapping.acting.size(); ++i) {
    if (mapping.acting[i] == kNoOsd) continue;
    osds[i] = m.FindOsd(mapping.acting[i]);
    available[i] = osds[i] != nullptr && osds[i]->up && (shard_mask & (1u << i));
  }
  auto fetch = [&](const std::vector<ec::ShardRead>& reads) {
    struct Call {
      pb::OpRequest req;
      pb::OpReply reply;
      grpc::ClientContext ctx;
      grpc::Status status;
      std::unique_ptr<pb::Osd::Stub> stub;
    };
    std::vector<Call> calls(reads.size());
    absl::BlockingCounter done(static_cast<int>(reads.size()));
    for (size_t i = 0; i < reads.size(); ++i) {
      Call& call = calls[i];
      call.req.set_map_epoch(m.epoch);
      call.req.set_pool(pool.id.value());
      call.req.set_pg_seed(seed);
      call.req.set_oid(oid);
      call.req.set_flags(pb::OPF_LOCAL | pb::OPF_SHARD);
      call.req.set_shard(reads[i].shard);
      auto* read = call.req.add_ops();
      read->set_type(pb::READ);
      read->set_offset(reads[i].offset);
      read->set_length(reads[i].length);
      call.ctx.set_deadline(rpc::DeadlineIn(options_.rpc_timeout_ms));
      call.stub = pb::Osd::NewStub(channels_.Get(osds[reads[i].shard]->addr));
      call.stub->async()->Op(&call.ctx, &call.req, &call.reply, [&call, &done](grpc::Status s) {
        call.status = std::move(s);
        done.DecrementCount();
      });
    }
    done.Wait();
    std::vector<ec::ShardReply> out(reads.size());
    for (size_t i = 0; i < reads.size(); ++i) {
      Call& call = calls[i];
      out[i].status = rpc::FromGrpc(call.status, osds[reads[i].shard]->addr);
      if (out[i].status.ok()) out[i].status = rpc::FromProto(call.reply.status());
      if (!out[i].status.ok() || call.reply.results_size() == 0) continue;
      auto* r = call.reply.mutable_results(0);
      CountReceived(osds[reads[i].shard]->id.value(), r->data().size());
      out[i].data = std::move(*r->mutable_data());
      out[i].logical_size = r->size();
      out[i].version_epoch = r->version().epoch();
      out[i].version_seq = r->version().seq();
      out[i].mtime_ns = r->mtime_ns();
    }
    return out;
  };
  striping::StripeLayout layout{pool.ec_k, pool.ec_m, pool.ec_chunk_bytes};
  const uint64_t end = op.offset() + op.length();
  auto read = ec::ReadRange(layout, code, op.offset(), end, available, fetch);
  if (!read.ok()) return read.status();
  OpResult result;
  OpResult::Item item;
  item.data = ByteChain(std::move(read->data));
  item.size = read->logical_size;
  item.mtime_ns = read->mtime_ns;
  item.version_epoch = read->version_epoch;
  item.version_seq = read->version_seq;
  result.items.push_back(std::move(item));
  return result;
}

absl::StatusOr<std::string> ObjectClient::EcReadUsing(PoolId pool_id, const std::string& oid,
                                                      uint64_t offset, uint64_t length,
                                                      uint32_t shard_mask) {
  auto m = map();
  const PoolInfo* pool = m->FindPool(pool_id);
  if (pool == nullptr || pool->type != PoolType::kErasure) {
    return absl::InvalidArgumentError("not an erasure-coded pool");
  }
  pb::ObjectOp op;
  op.set_type(pb::READ);
  op.set_offset(offset);
  op.set_length(length);
  ASSIGN_OR_RETURN(OpResult r, EcRead(*m, *pool, oid, op, shard_mask));
  return r.items.at(0).data.ToString();
}

}  // namespace weft::objects
