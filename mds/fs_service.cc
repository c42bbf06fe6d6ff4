#include "mds/fs_service.h"

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/rpc/rpc.h"
#include "common/status/status.h"
#include "mds/reply.h"
#include "mds/request.h"

namespace weft::mds {
namespace {

absl::Status NotReady() { return absl::UnavailableError("the MDS is starting"); }

}  // namespace

#define WEFT_DAEMON_OR_REPLY(reply)                                  \
  MdsDaemon* d = daemon_->load();                                    \
  if (d == nullptr) {                                                \
    rpc::ToProto(NotReady(), (reply)->mutable_status());             \
    return grpc::Status::OK;                                         \
  }

grpc::Status MdsService::SessionOpen(grpc::ServerContext*, const pb::SessionOpenRequest* req,
                                     pb::SessionReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  auto rank = d->RankByName(req->fs(), req->rank());
  if (!rank.ok()) {
    rpc::ToProto(rank.status(), reply->mutable_status());
    return grpc::Status::OK;
  }
  if (req->client().empty() || req->client().size() > 256) {
    rpc::ToProto(ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL,
                            "client names are 1 to 256 bytes"),
                 reply->mutable_status());
    return grpc::Status::OK;
  }
  if (req->osd_client().size() > 256) {
    rpc::ToProto(ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL,
                            "OSD client names are at most 256 bytes"),
                 reply->mutable_status());
    return grpc::Status::OK;
  }
  auto result = (*rank)->SessionOpen(req->client(), req->osd_client(), req->reclaim());
  if (result.ok()) *reply = *result;
  rpc::ToProto(result.status(), reply->mutable_status());
  return grpc::Status::OK;
}

grpc::Status MdsService::SessionRenew(grpc::ServerContext*, const pb::SessionRequest* req,
                                      pb::SessionReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  auto rank = d->RankOfSession(req->session());
  absl::StatusOr<pb::SessionReply> result =
      rank.ok() ? (*rank)->SessionRenew(req->session(), req->cached_inodes()) : rank.status();
  if (result.ok()) *reply = *result;
  rpc::ToProto(result.status(), reply->mutable_status());
  return grpc::Status::OK;
}

grpc::Status MdsService::SessionClose(grpc::ServerContext*, const pb::SessionRequest* req,
                                      pb::SessionReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  auto rank = d->RankOfSession(req->session());
  absl::Status status = rank.ok() ? (*rank)->SessionClose(req->session()) : rank.status();
  rpc::ToProto(status, reply->mutable_status());
  return grpc::Status::OK;
}

grpc::Status MdsService::Call(grpc::ServerContext*, const pb::MetaRequest* req,
                              pb::MetaReply* reply) {
  const absl::Time start = absl::Now();
  CallOnRank(*req, reply);
  reply->set_tid(req->tid());
  metrics_->Observe(req->op_case(), absl::Now() - start, reply->status().code() != 0);
  return grpc::Status::OK;
}

void MdsService::CallOnRank(const pb::MetaRequest& req, pb::MetaReply* reply) {
  MdsDaemon* d = daemon_->load();
  if (d == nullptr) return rpc::ToProto(NotReady(), reply->mutable_status());
  auto rank = d->RankOfSession(req.session());
  if (!rank.ok()) {
    absl::Status status = rank.status();
    if (absl::IsNotFound(status)) {
      status = ErrnoError(absl::StatusCode::kFailedPrecondition, ENOTCONN, "no such session");
    }
    return rpc::ToProto(status, reply->mutable_status());
  }
  absl::StatusOr<Request> request = FromWire(req);
  Reply answer;
  if (request.ok()) {
    answer = (*rank)->Handle(*request);
  } else {
    (*rank)->FinishReply(request.status(), &answer);
  }
  ToWire(answer, req.tid(), reply);
}

grpc::Status MdsService::Reconnect(grpc::ServerContext*, const pb::ReconnectRequest* req,
                                   pb::ReconnectReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  auto rank = d->RankOfSession(req->session());
  absl::StatusOr<pb::ReconnectReply> result =
      rank.ok() ? (*rank)->Reconnect(*req) : rank.status();
  if (result.ok()) *reply = *result;
  rpc::ToProto(result.status(), reply->mutable_status());
  return grpc::Status::OK;
}

grpc::Status MdsService::FsStatus(grpc::ServerContext*, const pb::FsStatusRequest* req,
                                  pb::FsStatusReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  auto rank = d->RankByName(req->fs(), req->rank());
  if (!rank.ok()) {
    rpc::ToProto(rank.status(), reply->mutable_status());
    return grpc::Status::OK;
  }
  *reply = (*rank)->Status();
  return grpc::Status::OK;
}

grpc::Status MdsService::LeaseStream(grpc::ServerContext* ctx, const pb::SessionRequest* req,
                                     grpc::ServerWriter<pb::LeaseEvent>* writer) {
  MdsDaemon* d = daemon_->load();
  if (d == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the MDS is starting");
  auto rank = d->RankOfSession(req->session());
  if (!rank.ok()) return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "no such session");
  absl::Status status = (*rank)->ServeLeases(
      req->session(), [ctx] { return ctx->IsCancelled(); },
      [writer](const pb::LeaseEvent& e) { return writer->Write(e); });
  if (!status.ok()) {
    return grpc::Status(absl::IsUnavailable(status) ? grpc::StatusCode::UNAVAILABLE
                                                    : grpc::StatusCode::FAILED_PRECONDITION,
                        std::string(status.message()));
  }
  return grpc::Status::OK;
}

grpc::Status MdsService::LeaseAck(grpc::ServerContext*, const pb::LeaseAckRequest* req,
                                  pb::SessionReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  auto rank = d->RankOfSession(req->session());
  absl::StatusOr<pb::SessionReply> result =
      rank.ok() ? (*rank)->LeaseAck(*req) : rank.status();
  if (result.ok()) *reply = *result;
  rpc::ToProto(result.status(), reply->mutable_status());
  return grpc::Status::OK;
}

grpc::Status MdsService::ClientList(grpc::ServerContext*, const pb::ClientListRequest* req,
                                    pb::ClientListReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  auto rank = d->RankByName(req->fs());
  if (!rank.ok()) {
    rpc::ToProto(rank.status(), reply->mutable_status());
    return grpc::Status::OK;
  }
  for (pb::ClientInfo& c : (*rank)->ClientList()) *reply->add_clients() = std::move(c);
  return grpc::Status::OK;
}

grpc::Status MdsService::ClientEvict(grpc::ServerContext*, const pb::ClientEvictRequest* req,
                                     pb::ClientEvictReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  // The rank the session is with (its id says which), on this daemon.
  auto rank = d->RankByName(req->fs(), SessionId(req->session()).rank());
  absl::Status status = rank.status();
  if (status.ok() && req->reason().size() > 256) {
    status = ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL,
                        "an eviction's reason is at most 256 bytes");
  }
  if (status.ok() && SessionId(req->session()).fs() != (*rank)->fs_id()) {
    status = ErrnoError(absl::StatusCode::kFailedPrecondition, ENOTCONN,
                        absl::StrCat("no session ", req->session(), " in filesystem ", req->fs()));
  }
  if (status.ok()) {
    absl::StatusOr<uint64_t> epoch = (*rank)->Evict(
        SessionId(req->session()), req->reason().empty() ? "weft client evict" : req->reason());
    if (epoch.ok()) reply->set_osd_epoch(*epoch);
    status = epoch.status();
  }
  rpc::ToProto(status, reply->mutable_status());
  return grpc::Status::OK;
}

grpc::Status FilesystemsService::FsNew(grpc::ServerContext*, const pb::FsNewRequest* req,
                                       pb::AdminReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  absl::Status status = d->FsNew(req->name(), req->metadata_pool(), req->data_pool());
  rpc::ToProto(status, reply->mutable_status());
  reply->set_epoch(fsmap_->map().epoch());
  return grpc::Status::OK;
}

grpc::Status FilesystemsService::FsAddDataPool(grpc::ServerContext*,
                                               const pb::FsAddDataPoolRequest* req,
                                               pb::AdminReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  absl::Status status = d->FsAddDataPool(req->name(), req->data_pool());
  if (absl::IsAlreadyExists(status)) status = absl::OkStatus();
  rpc::ToProto(status, reply->mutable_status());
  reply->set_epoch(fsmap_->map().epoch());
  return grpc::Status::OK;
}

grpc::Status FilesystemsService::FsList(grpc::ServerContext*, const pb::FsListRequest*,
                                        pb::FsListReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  *reply->mutable_fsmap() = fsmap_->map();
  for (pb::MdsAlive& alive : d->registry()->daemons()) *reply->add_daemons() = std::move(alive);
  reply->set_leader_addr(d->leader_addr());
  return grpc::Status::OK;
}

grpc::Status FilesystemsService::FsSet(grpc::ServerContext*, const pb::FsSetRequest* req,
                                       pb::AdminReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  absl::Status status = d->FsSet(req->name(), req->key(), req->value());
  if (absl::IsAlreadyExists(status)) status = absl::OkStatus();  // as asked already
  rpc::ToProto(status, reply->mutable_status());
  reply->set_epoch(fsmap_->map().epoch());
  return grpc::Status::OK;
}

grpc::Status FilesystemsService::MdsFail(grpc::ServerContext*, const pb::MdsFailRequest* req,
                                         pb::AdminReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  auto failed = d->MdsFail(req->who());
  rpc::ToProto(failed.status(), reply->mutable_status());
  if (failed.ok()) reply->set_message(*failed);
  reply->set_epoch(fsmap_->map().epoch());
  return grpc::Status::OK;
}

grpc::Status FilesystemsService::RankStopped(grpc::ServerContext*,
                                             const pb::RankStoppedRequest* req,
                                             pb::AdminReply* reply) {
  WEFT_DAEMON_OR_REPLY(reply);
  rpc::ToProto(d->RankStopped(*req), reply->mutable_status());
  reply->set_epoch(fsmap_->map().epoch());
  return grpc::Status::OK;
}

// Sends at once when the fsmap's epoch changes (where the ranks are), and
// with each kWatchHeartbeat (the live daemons, and a sign of life); one
// wait per send, no polling: every client holds one of these. Ends when
// the client goes or the daemon stops.
grpc::Status FilesystemsService::WatchFsMap(grpc::ServerContext* ctx,
                                            const pb::FsListRequest* req,
                                            grpc::ServerWriter<pb::FsListReply>* writer) {
  while (!ctx->IsCancelled()) {
    pb::FsListReply reply;
    (void)FsList(ctx, req, &reply);
    if (!rpc::FromProto(reply.status()).ok()) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the MDS is not serving");
    }
    if (!writer->Write(reply)) break;
    fsmap_->WaitNewer(reply.fsmap().epoch(), kWatchHeartbeat);
  }
  return grpc::Status::OK;
}

}  // namespace weft::mds
