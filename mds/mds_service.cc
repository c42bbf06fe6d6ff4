#include "mds/mds_service.h"

#include "common/rpc/rpc.h"

namespace weft::mds {

grpc::Status ClusterService::GetMap(grpc::ServerContext*, const pb::MapRequest* req,
                                    pb::MapReply* reply) {
  auto map = manager_->map();
  if (map && map->epoch > req->have_epoch()) reply->set_osdmap(map->Encode());
  return grpc::Status::OK;
}

grpc::Status ClusterService::WatchMap(grpc::ServerContext* ctx, const pb::MapRequest* req,
                                      grpc::ServerWriter<pb::MapReply>* writer) {
  Epoch have = req->have_epoch();
  while (!ctx->IsCancelled()) {
    auto map = manager_->WaitNewer(have, absl::Seconds(1));
    if (map == nullptr) continue;
    pb::MapReply reply;
    reply.set_osdmap(map->Encode());
    if (!writer->Write(reply)) break;
    have = map->epoch;
  }
  return grpc::Status::OK;
}

void ClusterService::FinishAdmin(const absl::Status& status, pb::AdminReply* reply) {
  rpc::ToProto(status, reply->mutable_status());
  if (auto map = manager_->map()) reply->set_epoch(map->epoch);
  if (!manager_->IsLeader()) reply->set_message(manager_->LeaderAddr());
}

grpc::Status ClusterService::OsdCreate(grpc::ServerContext*, const pb::OsdCreateRequest* req,
                                       pb::OsdCreateReply* reply) {
  auto id = manager_->OsdCreate(req->host(), req->rack(), req->weight() == 0 ? 1.0 : req->weight(),
                                req->id());
  rpc::ToProto(id.status(), reply->mutable_status());
  if (id.ok()) reply->set_id(*id);
  if (auto map = manager_->map()) reply->set_epoch(map->epoch);
  return grpc::Status::OK;
}

grpc::Status ClusterService::OsdSetIn(grpc::ServerContext*, const pb::OsdSetRequest* req,
                                      pb::AdminReply* reply) {
  FinishAdmin(manager_->OsdSetIn(req->id(), req->in()), reply);
  return grpc::Status::OK;
}

grpc::Status ClusterService::SetRatio(grpc::ServerContext*, const pb::RatioRequest* req,
                                      pb::AdminReply* reply) {
  FinishAdmin(manager_->SetRatio(req->which(), req->ratio()), reply);
  return grpc::Status::OK;
}

grpc::Status ClusterService::Blocklist(grpc::ServerContext*, const pb::BlocklistRequest* req,
                                       pb::AdminReply* reply) {
  FinishAdmin(req->remove() ? manager_->BlocklistRemove(req->client())
                            : manager_->BlocklistAdd(req->client(), req->expires_ms()).status(),
              reply);
  return grpc::Status::OK;
}

grpc::Status ClusterService::PoolCreate(grpc::ServerContext*, const pb::PoolCreateRequest* req,
                                        pb::AdminReply* reply) {
  PoolSpec spec;
  spec.name = req->name();
  spec.size = req->size();
  spec.min_size = req->min_size();
  spec.pg_num = req->pg_num();
  spec.failure_domain = req->failure_domain();
  spec.ec_k = req->ec_k();
  spec.ec_m = req->ec_m();
  spec.ec_chunk_bytes = req->ec_chunk_bytes();
  FinishAdmin(manager_->PoolCreate(spec), reply);
  return grpc::Status::OK;
}

grpc::Status ClusterService::PoolRemove(grpc::ServerContext*, const pb::PoolRemoveRequest* req,
                                        pb::AdminReply* reply) {
  FinishAdmin(manager_->PoolRemove(req->name(), req->confirm()), reply);
  return grpc::Status::OK;
}

grpc::Status ClusterService::PoolSet(grpc::ServerContext*, const pb::PoolSetRequest* req,
                                     pb::AdminReply* reply) {
  FinishAdmin(manager_->PoolSet(req->name(), req->key(), req->value()), reply);
  return grpc::Status::OK;
}

grpc::Status ClusterService::OsdReweight(grpc::ServerContext*, const pb::OsdReweightRequest* req,
                                         pb::AdminReply* reply) {
  FinishAdmin(manager_->OsdReweight(req->id(), req->reweight()), reply);
  return grpc::Status::OK;
}

grpc::Status ClusterService::OsdRemove(grpc::ServerContext*, const pb::OsdRemoveRequest* req,
                                       pb::AdminReply* reply) {
  FinishAdmin(manager_->OsdRemove(req->id(), req->purge()), reply);
  return grpc::Status::OK;
}

grpc::Status ClusterService::Status(grpc::ServerContext*, const pb::StatusRequest*,
                                    pb::StatusReply* reply) {
  rpc::ToProto(manager_->Status(reply), reply->mutable_status());
  return grpc::Status::OK;
}

}  // namespace weft::mds
