#include "common/objects/object_client.h"

#include <unistd.h>

#include <atomic>
#include <random>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log/log.h"
#include "common/placement/placement.h"
#include "common/rpc/aliased.h"
#include "common/objects/op_reply.h"
#include "common/status/status.h"
#include "proto/osd.grpc.pb.h"

namespace weft::objects {

// --- Map ---------------------------------------------------------------------------

ObjectClient::ObjectClient(ClientOptions options, std::unique_ptr<MapSource> source)
    : options_(std::move(options)), source_(std::move(source)), name_(options_.name) {}

std::string ObjectClient::name() const {
  absl::MutexLock lock(&name_mu_);
  return name_;
}

std::string ObjectClient::NewName() {
  std::random_device rd;
  return absl::StrCat("client.", getpid(), ".", rd() % 1000000);
}

void ObjectClient::Rename(std::string name) {
  absl::MutexLock lock(&name_mu_);
  name_ = std::move(name);
}

absl::StatusOr<std::unique_ptr<ObjectClient>> ObjectClient::Connect(
    ClientOptions options, std::unique_ptr<MapSource> source) {
  if (source == nullptr) {
    if (options.mds_addrs.empty()) return absl::InvalidArgumentError("no MDS address given");
    source = std::make_unique<MdsMapSource>(options.mds_addrs);
  }
  if (options.name.empty()) options.name = NewName();
  std::unique_ptr<ObjectClient> client(new ObjectClient(std::move(options), std::move(source)));
  ASSIGN_OR_RETURN(std::shared_ptr<const OsdMap> first, client->source_->Fetch());
  client->Install(std::move(first));
  client->watcher_ = std::thread([c = client.get()] {
    c->source_->Follow([c] { return c->map()->epoch; },
                       [c](std::shared_ptr<const OsdMap> map) { c->Install(std::move(map)); });
  });
  return client;
}

ObjectClient::~ObjectClient() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  source_->Stop();
  if (watcher_.joinable()) watcher_.join();
}

void ObjectClient::Install(std::shared_ptr<const OsdMap> map) {
  if (map == nullptr) return;
  absl::MutexLock lock(&mu_);
  if (map_ && map_->epoch >= map->epoch) return;
  map_ = std::move(map);
}

void ObjectClient::InstallBytes(const std::string& bytes) {
  auto map = OsdMap::Decode(bytes);
  if (!map.ok()) {
    LOG(WARNING) << "event=bad_map status=\"" << map.status() << "\"";
    return;
  }
  Install(std::make_shared<const OsdMap>(std::move(*map)));
}

std::shared_ptr<const OsdMap> ObjectClient::map() {
  absl::MutexLock lock(&mu_);
  return map_;
}

std::shared_ptr<const OsdMap> ObjectClient::WaitNewer(Epoch epoch, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this, epoch]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || (map_ && map_->epoch > epoch);
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  return map_;
}

absl::StatusOr<PoolId> ObjectClient::LookupPool(const std::string& name) {
  auto m = map();
  const PoolInfo* pool = m->FindPoolByName(name);
  if (pool == nullptr) return absl::NotFoundError(absl::StrCat("pool '", name, "' does not exist"));
  return pool->id;
}

// --- Operations ----------------------------------------------------------------------

absl::StatusOr<OpResult> ObjectClient::Execute(PoolId pool_id, const std::string& oid,
                                               ObjectOperation&& op) {
  return Run(pool_id, oid, std::move(op), kNoOsd, nullptr);
}

absl::StatusOr<OpResult> ObjectClient::ExecuteOn(PoolId pool_id, const std::string& oid,
                                                 const ObjectOperation& op, OsdId from_osd) {
  ObjectOperation copy = op;
  return Run(pool_id, oid, std::move(copy), from_osd, nullptr);
}

absl::StatusOr<OpResult> ObjectClient::ExecuteReusing(PoolId pool_id, const std::string& oid,
                                                      ObjectOperation&& op,
                                                      std::vector<std::string>* spent) {
  return Run(pool_id, oid, std::move(op), kNoOsd, spent);
}

absl::StatusOr<OpResult> ObjectClient::Run(PoolId pool_id, const std::string& oid,
                                           ObjectOperation&& op, OsdId from_osd,
                                           std::vector<std::string>* spent) {
  const absl::Time deadline = absl::Now() + absl::Milliseconds(options_.op_timeout_ms);
  // Built once, taking the ops and their data; each attempt only restamps the
  // epoch and the PG. Shared: gRPC may hold the data after an attempt ends.
  auto shared_req = std::make_shared<pb::OpRequest>();
  pb::OpRequest& req = *shared_req;
  absl::Cleanup give_back = [&] {
    // Ours alone: every buffer gRPC made from the request (each holding a
    // reference) is gone. The fence pairs with the release in the last one's
    // drop, so gRPC's reads of the data happen before the caller's writes.
    if (spent == nullptr || shared_req.use_count() != 1) return;
    std::atomic_thread_fence(std::memory_order_acquire);
    for (pb::ObjectOp& o : *req.mutable_ops()) {
      if (!o.data().empty()) spent->push_back(std::move(*o.mutable_data()));
    }
  };
  req.set_pool(pool_id.value());
  req.set_oid(oid);
  uint64_t data_bytes = 0;
  for (pb::ObjectOp& o : std::move(op).TakeOps()) {
    data_bytes += o.data().size();
    *req.add_ops() = std::move(o);
  }
  req.mutable_reqid()->set_client(name());
  req.mutable_reqid()->set_tid(next_tid_++);
  if (from_osd != kNoOsd) req.set_flags(pb::OPF_LOCAL);
  if (options_.full_try) req.set_flags(req.flags() | pb::OPF_FULL_TRY);
  absl::Status last = absl::DeadlineExceededError("no attempt made");
  if (from_osd == kNoOsd && req.ops_size() == 1 && req.ops(0).type() == pb::READ &&
      req.ops(0).length() > 0) {
    auto m = map();
    const PoolInfo* pool = m->FindPool(pool_id);
    if (pool != nullptr && pool->type == PoolType::kErasure) {
      auto direct = EcRead(*m, *pool, oid, req.ops(0));
      if (direct.ok()) return direct;
      VLOG(1) << "event=ec_direct_read_failed oid=" << oid.substr(0, 64)
              << " status=\"" << direct.status() << "\"";
    }
  }
  for (int attempt = 0; absl::Now() < deadline; ++attempt) {
    auto m = map();
    const PoolInfo* pool = m->FindPool(pool_id);
    if (pool == nullptr) {
      return absl::NotFoundError(absl::StrCat("pool ", pool_id.value(), " does not exist"));
    }
    uint32_t seed = placement::ObjectToPgSeed(oid, pool->pg_num);
    OsdId target = from_osd;
    if (target == kNoOsd) target = placement::MapPg(*m, *pool, seed).primary;
    const OsdInfo* osd = target == kNoOsd ? nullptr : m->FindOsd(target);
    if (osd == nullptr || !osd->up) {
      last = absl::UnavailableError(absl::StrCat("pg ", pool_id.value(), ".", seed,
                                                 " has no primary up at epoch ", m->epoch));
      WaitNewer(m->epoch, absl::Seconds(1));
      continue;
    }
    req.set_map_epoch(m->epoch);
    req.set_pg_seed(seed);
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(std::min<int64_t>(
        options_.rpc_timeout_ms, absl::ToInt64Milliseconds(deadline - absl::Now()) + 1)));
    // The request's data goes out from its own buffers when it is large
    // (AliasedMessage); the reply's data stays in the received slices
    // (ParseOpReply).
    grpc::ByteBuffer request;
    if (data_bytes >= kAliasedDataBytes) {
      request = rpc::AliasedMessage(shared_req);
    } else {
      bool own = false;
      const grpc::Status made = grpc::GenericSerialize<grpc::ProtoBufferWriter, pb::OpRequest>(
          req, &request, &own);
      if (!made.ok()) return rpc::FromGrpc(made, "serialize request");
    }
    grpc::ByteBuffer received;
    const grpc::Status sent = rpc::UnaryCall(channels_.Get(osd->addr), &ctx, "/weft.pb.Osd/Op",
                                             std::move(request), &received);
    absl::Status transport =
        rpc::FromGrpc(sent, absl::StrCat("osd.", target.value(), " ", osd->addr));
    if (!transport.ok()) {
      // The OSD is unreachable: it is probably dying, and the map will say so.
      last = transport;
      WaitNewer(m->epoch, absl::Milliseconds(std::min(100 * (attempt + 1), 1000)));
      continue;
    }
    pb::OpReply reply;
    std::vector<ByteChain> data;
    // Not retried: an OSD that sends what does not parse would send it again.
    RETURN_IF_ERROR(Annotate(objects::ParseOpReply(received, &reply, &data),
                             absl::StrCat("osd.", target.value(), " ", osd->addr)));
    if (!reply.osdmap().empty()) InstallBytes(reply.osdmap());
    switch (reply.status().code()) {
      case pb::STALE_MAP:
      case pb::NOT_PRIMARY:
      case pb::NEWER_MAP:
      case pb::PG_NOT_ACTIVE:
        last = absl::UnavailableError(reply.status().message());
        if (reply.status().code() != pb::STALE_MAP || reply.osdmap().empty()) {
          WaitNewer(m->epoch, absl::Milliseconds(std::min(50 * (attempt + 1), 500)));
        }
        continue;
      default:
        break;
    }
    RETURN_IF_ERROR(rpc::FromProto(reply.status()));
    // A request of reads is answered one result per read (a mutation with
    // none): anything else is refused here, so that no caller indexes past
    // what a misbehaving OSD sent.
    const bool reads = req.ops_size() > 0 && IsRead(req.ops(0).type());
    if (reads && reply.results_size() != req.ops_size()) {
      return absl::DataLossError(absl::StrCat("osd.", target.value(), " answered ",
                                              reply.results_size(), " results to ",
                                              req.ops_size(), " reads of '", oid.substr(0, 64),
                                              "'"));
    }
    OpResult result;
    uint64_t received_bytes = 0;
    for (const ByteChain& d : data) received_bytes += d.size();
    CountReceived(target.value(), received_bytes);
    result.version_epoch = reply.version().epoch();
    result.version_seq = reply.version().seq();
    result.size_before = reply.size_before();
    result.size_after = reply.size_after();
    for (int i = 0; i < reply.results_size(); ++i) {
      const pb::ObjectOpResult& r = reply.results(i);
      OpResult::Item item;
      item.data = std::move(data[i]);
      item.size = r.size();
      item.mtime_ns = r.mtime_ns();
      item.version_epoch = r.version().epoch();
      item.version_seq = r.version().seq();
      for (const auto& kv : r.kvs()) item.kvs.emplace_back(kv.key(), kv.value());
      item.more = r.more();
      result.items.push_back(std::move(item));
    }
    return result;
  }
  return absl::DeadlineExceededError(absl::StrCat("operation on '", oid.substr(0, 64),
                                                  "' timed out; last error: ", last.message()));
}

absl::StatusOr<std::string> ObjectClient::GetFrom(PoolId pool, const std::string& oid,
                                                  OsdId from_osd) {
  std::string out;
  for (;;) {
    ObjectOperation op;
    op.Read(out.size(), kMaxPieceBytes);
    ASSIGN_OR_RETURN(OpResult r, ExecuteOn(pool, oid, op, from_osd));
    const auto& item = r.items.at(0);
    item.data.AppendTo(&out);
    if (out.size() >= item.size || item.data.empty()) return out;
  }
}

absl::StatusOr<std::vector<std::string>> ObjectClient::ListPg(PoolId pool_id, uint32_t seed,
                                                              const std::string& prefix) {
  std::vector<std::string> out;
  std::string after;
  const absl::Time deadline = absl::Now() + absl::Milliseconds(options_.op_timeout_ms);
  absl::Status last;
  while (absl::Now() < deadline) {
    auto m = map();
    const PoolInfo* pool = m->FindPool(pool_id);
    if (pool == nullptr) return absl::NotFoundError("pool does not exist");
    OsdId primary = placement::MapPg(*m, *pool, seed).primary;
    const OsdInfo* osd = primary == kNoOsd ? nullptr : m->FindOsd(primary);
    if (osd == nullptr || !osd->up) {
      WaitNewer(m->epoch, absl::Seconds(1));
      continue;
    }
    pb::PgListRequest req;
    req.set_map_epoch(m->epoch);
    req.set_pool(pool_id.value());
    req.set_pg_seed(seed);
    req.set_start_after(after);
    req.set_max_entries(1000);
    req.set_prefix(prefix);
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(options_.rpc_timeout_ms));
    pb::PgListReply reply;
    last = rpc::FromGrpc(pb::Osd::NewStub(channels_.Get(osd->addr))->PgList(&ctx, req, &reply),
                         osd->addr);
    if (!reply.osdmap().empty()) InstallBytes(reply.osdmap());
    if (last.ok() && reply.status().code() < 0) {
      last = absl::UnavailableError(reply.status().message());
    } else if (last.ok()) {
      RETURN_IF_ERROR(rpc::FromProto(reply.status()));
      for (const auto& o : reply.objects()) out.push_back(o.oid());
      if (!reply.more()) return out;
      if (reply.objects_size() > 0) after = reply.objects().rbegin()->oid();
      continue;
    }
    WaitNewer(m->epoch, absl::Milliseconds(200));
  }
  return absl::DeadlineExceededError(absl::StrCat("listing pg timed out: ", last.message()));
}

absl::StatusOr<std::vector<std::string>> ObjectClient::List(PoolId pool_id,
                                                            const std::string& prefix) {
  auto m = map();
  const PoolInfo* pool = m->FindPool(pool_id);
  if (pool == nullptr) return absl::NotFoundError("pool does not exist");
  std::vector<std::string> out;
  for (uint32_t seed = 0; seed < pool->pg_num; ++seed) {
    ASSIGN_OR_RETURN(auto names, ListPg(pool_id, seed, prefix));
    out.insert(out.end(), names.begin(), names.end());
  }
  return out;
}

}  // namespace weft::objects
