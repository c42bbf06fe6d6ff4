#include "osd/peer_client.h"

#include "absl/synchronization/blocking_counter.h"
#include "common/rpc/aliased.h"

namespace weft::osd {

std::unique_ptr<pb::Osd::Stub> PeerClient::Stub(const std::string& addr) {
  return pb::Osd::NewStub(channels_->Get(addr));
}

std::vector<absl::Status> PeerClient::RepOpAll(const std::vector<RepOpTarget>& targets,
                                               std::shared_ptr<const pb::RepOpRequest> req,
                                               const std::function<absl::Status()>& local) {
  std::vector<std::shared_ptr<const pb::RepOpRequest>> reqs(targets.size(), req);
  return RepOpEach(targets, reqs, local);
}

std::vector<absl::Status> PeerClient::OpAll(const std::vector<std::string>& addrs,
                                            const std::vector<pb::OpRequest>& reqs,
                                            std::vector<pb::OpReply>* replies) {
  struct Call {
    grpc::ClientContext ctx;
    grpc::Status status;
    std::unique_ptr<pb::Osd::Stub> stub;
  };
  replies->assign(reqs.size(), pb::OpReply());
  std::vector<Call> calls(reqs.size());
  absl::BlockingCounter done(static_cast<int>(reqs.size()));
  for (size_t i = 0; i < reqs.size(); ++i) {
    Call& call = calls[i];
    call.ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
    call.stub = Stub(addrs[i]);
    call.stub->async()->Op(&call.ctx, &reqs[i], &(*replies)[i], [&call, &done](grpc::Status s) {
      call.status = std::move(s);
      done.DecrementCount();
    });
  }
  done.Wait();
  std::vector<absl::Status> out;
  for (size_t i = 0; i < reqs.size(); ++i) {
    absl::Status s = rpc::FromGrpc(calls[i].status, addrs[i]);
    if (s.ok()) s = rpc::FromProto((*replies)[i].status());
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<absl::Status> PeerClient::RepOpEach(
    const std::vector<RepOpTarget>& targets,
    const std::vector<std::shared_ptr<const pb::RepOpRequest>>& reqs,
    const std::function<absl::Status()>& local) {
  struct Call {
    grpc::ClientContext ctx;
    pb::RepOpReply reply;
    grpc::Status status;
  };
  std::vector<Call> calls(targets.size());
  absl::BlockingCounter done(static_cast<int>(targets.size()));
  const pb::RepOpRequest* serialized = nullptr;
  grpc::ByteBuffer buffer;
  for (size_t i = 0; i < targets.size(); ++i) {
    Call& call = calls[i];
    call.ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
    if (reqs[i].get() != serialized) {  // RepOpAll: one serialization for all
      buffer = rpc::AliasedMessage(reqs[i]);
      serialized = reqs[i].get();
    }
    rpc::StartUnaryCall(channels_->Get(targets[i].addr), &call.ctx, "/weft.pb.Osd/RepOp",
                        buffer, &call.reply, [&call, &done](grpc::Status s) {
                          call.status = std::move(s);
                          done.DecrementCount();
                        });
  }
  absl::Status local_status = local();
  done.Wait();
  std::vector<absl::Status> out;
  out.reserve(targets.size() + 1);
  out.push_back(std::move(local_status));
  for (size_t i = 0; i < targets.size(); ++i) {
    absl::Status s = rpc::FromGrpc(calls[i].status, targets[i].addr);
    if (s.ok()) s = rpc::FromProto(calls[i].reply.status());
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

constexpr int64_t kLongCallFactor = 6;

template <typename Reply>
absl::Status Finish(const grpc::Status& status, const Reply& reply, const std::string& addr) {
  absl::Status s = rpc::FromGrpc(status, addr);
  if (!s.ok()) return s;
  return rpc::FromProto(reply.status());
}

}  // namespace

absl::Status PeerClient::Query(const std::string& addr, const pb::PgQueryRequest& req,
                               pb::PgQueryReply* reply) {
  grpc::ClientContext ctx;
  ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
  return Finish(Stub(addr)->PgQuery(&ctx, req, reply), *reply, addr);
}

absl::Status PeerClient::List(const std::string& addr, const pb::PgListRequest& req,
                              pb::PgListReply* reply) {
  grpc::ClientContext ctx;
  ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
  return Finish(Stub(addr)->PgList(&ctx, req, reply), *reply, addr);
}

absl::Status PeerClient::Op(const std::string& addr, const pb::OpRequest& req,
                            pb::OpReply* reply) {
  grpc::ClientContext ctx;
  ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
  return Finish(Stub(addr)->Op(&ctx, req, reply), *reply, addr);
}

absl::Status PeerClient::Push(const std::string& addr, const pb::PushRequest& req) {
  grpc::ClientContext ctx;
  ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
  pb::PushReply reply;
  return Finish(Stub(addr)->Push(&ctx, req, &reply), reply, addr);
}

absl::Status PeerClient::Activate(const std::string& addr, const pb::ActivateRequest& req) {
  grpc::ClientContext ctx;
  ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
  pb::ActivateReply reply;
  return Finish(Stub(addr)->Activate(&ctx, req, &reply), reply, addr);
}

absl::Status PeerClient::ScrubMap(const std::string& addr, const pb::ScrubMapRequest& req,
                                  pb::ScrubMapReply* reply) {
  grpc::ClientContext ctx;
  ctx.set_deadline(rpc::DeadlineIn(kLongCallFactor * timeout_ms_));
  return Finish(Stub(addr)->ScrubMap(&ctx, req, reply), *reply, addr);
}

absl::Status PeerClient::PgCommand(const std::string& addr, const pb::PgCommandRequest& req,
                                   pb::PgCommandReply* reply) {
  grpc::ClientContext ctx;
  ctx.set_deadline(rpc::DeadlineIn(kLongCallFactor * timeout_ms_));
  return Finish(Stub(addr)->PgCommand(&ctx, req, reply), *reply, addr);
}

absl::Status PeerClient::Rollback(const std::string& addr, const pb::RollbackRequest& req) {
  grpc::ClientContext ctx;
  ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
  pb::PushReply reply;
  return Finish(Stub(addr)->Rollback(&ctx, req, &reply), reply, addr);
}

}  // namespace weft::osd
