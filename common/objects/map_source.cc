#include "common/objects/map_source.h"

#include "absl/strings/str_cat.h"
#include "common/log/log.h"
#include "proto/cluster.grpc.pb.h"

namespace weft::objects {
namespace {

// A map off the wire; null (and a warning) when it does not decode.
std::shared_ptr<const OsdMap> Decode(const std::string& bytes) {
  auto map = OsdMap::Decode(bytes);
  if (!map.ok()) {
    LOG(WARNING) << "event=bad_map status=\"" << map.status() << "\"";
    return nullptr;
  }
  return std::make_shared<const OsdMap>(std::move(*map));
}

}  // namespace

MdsMapSource::MdsMapSource(std::vector<std::string> mds_addrs) : mds_addrs_(std::move(mds_addrs)) {}

absl::StatusOr<std::shared_ptr<const OsdMap>> MdsMapSource::Fetch() {
  absl::Status last = absl::UnavailableError("no MDS address");
  for (const std::string& addr : mds_addrs_) {
    auto stub = pb::Cluster::NewStub(channels_.Get(addr));
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(5000));
    pb::MapRequest req;
    pb::MapReply reply;
    absl::Status status = rpc::FromGrpc(stub->GetMap(&ctx, req, &reply), addr);
    if (status.ok() && reply.osdmap().empty()) {
      status = absl::UnavailableError(absl::StrCat(addr, ": MDS has no map yet"));
    }
    if (status.ok()) {
      std::shared_ptr<const OsdMap> map = Decode(reply.osdmap());
      if (map != nullptr) return map;
      status = absl::DataLossError(absl::StrCat(addr, ": the map does not decode"));
    }
    last = status;
  }
  return absl::UnavailableError(
      absl::StrCat("cannot reach any MDS for the cluster map: ", last.message()));
}

void MdsMapSource::Follow(const std::function<Epoch()>& have, const Install& install) {
  if (mds_addrs_.empty()) return;
  size_t next = 0;
  for (;;) {
    const std::string& addr = mds_addrs_[next++ % mds_addrs_.size()];
    grpc::ClientContext ctx;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      watch_ctx_ = &ctx;
    }
    auto stub = pb::Cluster::NewStub(stream_channels_.Get(addr));
    pb::MapRequest req;
    req.set_have_epoch(have());
    auto reader = stub->WatchMap(&ctx, req);
    pb::MapReply reply;
    while (reader->Read(&reply)) {
      if (std::shared_ptr<const OsdMap> map = Decode(reply.osdmap())) install(std::move(map));
    }
    grpc::Status status = reader->Finish();
    {
      absl::MutexLock lock(&mu_);
      watch_ctx_ = nullptr;
      if (stopping_) return;
      auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      mu_.AwaitWithTimeout(absl::Condition(&stop), absl::Milliseconds(200));
    }
    VLOG(1) << "event=map_stream_ended mds=" << addr << " status=" << status.error_message();
  }
}

void MdsMapSource::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
  if (watch_ctx_ != nullptr) watch_ctx_->TryCancel();
}

}  // namespace weft::objects
