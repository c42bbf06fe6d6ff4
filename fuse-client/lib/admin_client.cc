#include "fuse-client/lib/admin_client.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status/status.h"

namespace weft::client {

absl::Status CallLeader(const std::vector<std::string>& mds_addrs,
                        const std::function<absl::Status(const std::string& addr,
                                                         std::string* leader)>& fn) {
  std::vector<std::string> todo = mds_addrs;
  absl::Status last = absl::UnavailableError("no MDS address configured");
  // Leadership moves now and then (a rank holder leaves the maps to a
  // standby): while no leader is elected, ask again for up to 5 s.
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  for (size_t i = 0; i < todo.size() && i < 32; ++i) {
    std::string leader;
    absl::Status status = fn(todo[i], &leader);
    if (absl::IsFailedPrecondition(status) &&
        status.message().find("not the map manager") != absl::string_view::npos) {
      if (leader.empty()) {
        auto pos = status.message().find("leader=");
        if (pos != absl::string_view::npos) leader = std::string(status.message().substr(pos + 7));
      }
      if (!leader.empty() && leader != "none") {
        todo.push_back(leader);
        last = status;
        continue;
      }
      if (absl::Now() < deadline) {
        absl::SleepFor(absl::Milliseconds(250));
        todo.push_back(todo[i]);
        last = status;
        continue;
      }
    }
    if (absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status)) {
      last = status;
      continue;
    }
    return status;
  }
  return last;
}

absl::Status AdminClient::Call(
    const std::function<absl::Status(pb::Cluster::Stub*, std::string* leader)>& fn) {
  return CallLeader(mds_addrs_, [&](const std::string& addr, std::string* leader) {
    auto stub = pb::Cluster::NewStub(channels_.Get(addr));
    return fn(stub.get(), leader);
  });
}

absl::StatusOr<int32_t> AdminClient::OsdCreate(const std::string& host, const std::string& rack,
                                               double weight, int32_t id) {
  int32_t out = -1;
  RETURN_IF_ERROR(Call([&](pb::Cluster::Stub* stub, std::string*) {
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
    pb::OsdCreateRequest req;
    req.set_host(host);
    req.set_rack(rack);
    req.set_weight(weight);
    req.set_id(id);
    pb::OsdCreateReply reply;
    RETURN_IF_ERROR(rpc::FromGrpc(stub->OsdCreate(&ctx, req, &reply), "mds"));
    out = reply.id();
    return rpc::FromProto(reply.status());
  }));
  return out;
}

namespace {

absl::Status FinishAdmin(const grpc::Status& transport, const pb::AdminReply& reply,
                         std::string* leader) {
  RETURN_IF_ERROR(rpc::FromGrpc(transport, "mds"));
  *leader = reply.message();
  return rpc::FromProto(reply.status());
}

}  // namespace

template <typename Req>
absl::Status AdminClient::CallAdmin(AdminMethod<Req> method, const Req& req) {
  return Call([&](pb::Cluster::Stub* stub, std::string* leader) {
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
    pb::AdminReply reply;
    return FinishAdmin((stub->*method)(&ctx, req, &reply), reply, leader);
  });
}

absl::Status AdminClient::OsdSetIn(int32_t id, bool in) {
  pb::OsdSetRequest req;
  req.set_id(id);
  req.set_in(in);
  return CallAdmin(&pb::Cluster::Stub::OsdSetIn, req);
}

absl::Status AdminClient::SetRatio(const std::string& which, double ratio) {
  pb::RatioRequest req;
  req.set_which(which);
  req.set_ratio(ratio);
  return CallAdmin(&pb::Cluster::Stub::SetRatio, req);
}

absl::Status AdminClient::Blocklist(const std::string& client, bool remove,
                                    int64_t expires_ms) {
  pb::BlocklistRequest req;
  req.set_client(client);
  req.set_remove(remove);
  req.set_expires_ms(expires_ms);
  return CallAdmin(&pb::Cluster::Stub::Blocklist, req);
}

absl::Status AdminClient::PoolCreate(const pb::PoolCreateRequest& req) {
  return CallAdmin(&pb::Cluster::Stub::PoolCreate, req);
}

absl::Status AdminClient::OsdReweight(int32_t id, double reweight) {
  pb::OsdReweightRequest req;
  req.set_id(id);
  req.set_reweight(reweight);
  return CallAdmin(&pb::Cluster::Stub::OsdReweight, req);
}

absl::Status AdminClient::OsdRemove(int32_t id, bool purge) {
  pb::OsdRemoveRequest req;
  req.set_id(id);
  req.set_purge(purge);
  return CallAdmin(&pb::Cluster::Stub::OsdRemove, req);
}

absl::Status AdminClient::PoolSet(const std::string& name, const std::string& key,
                                  const std::string& value) {
  pb::PoolSetRequest req;
  req.set_name(name);
  req.set_key(key);
  req.set_value(value);
  return CallAdmin(&pb::Cluster::Stub::PoolSet, req);
}

absl::Status AdminClient::PoolRemove(const std::string& name, const std::string& confirm) {
  pb::PoolRemoveRequest req;
  req.set_name(name);
  req.set_confirm(confirm);
  return CallAdmin(&pb::Cluster::Stub::PoolRemove, req);
}

absl::StatusOr<pb::StatusReply> AdminClient::Status() {
  pb::StatusReply out;
  RETURN_IF_ERROR(Call([&](pb::Cluster::Stub* stub, std::string*) {
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
    out.Clear();
    RETURN_IF_ERROR(rpc::FromGrpc(stub->Status(&ctx, pb::StatusRequest(), &out), "mds"));
    return rpc::FromProto(out.status());
  }));
  return out;
}

absl::StatusOr<std::string> AdminClient::GetMapBytes() {
  std::string out;
  RETURN_IF_ERROR(Call([&](pb::Cluster::Stub* stub, std::string*) {
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
    pb::MapReply reply;
    RETURN_IF_ERROR(rpc::FromGrpc(stub->GetMap(&ctx, pb::MapRequest(), &reply), "mds"));
    out = reply.osdmap();
    return rpc::FromProto(reply.status());
  }));
  return out;
}

}  // namespace weft::client
