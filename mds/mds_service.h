// The gRPC adapter of weft-mds's cluster service: maps for clients and admin
// commands for the map manager. Thin: every call forwards to MapManager.
#pragma once

#include "mds/manager/map_manager.h"
#include "proto/cluster.grpc.pb.h"

namespace weft::mds {

class ClusterService final : public pb::Cluster::Service {
 public:
  explicit ClusterService(MapManager* manager) : manager_(manager) {}

  grpc::Status GetMap(grpc::ServerContext*, const pb::MapRequest*, pb::MapReply*) override;
  grpc::Status WatchMap(grpc::ServerContext*, const pb::MapRequest*,
                        grpc::ServerWriter<pb::MapReply>*) override;
  grpc::Status OsdCreate(grpc::ServerContext*, const pb::OsdCreateRequest*,
                         pb::OsdCreateReply*) override;
  grpc::Status OsdSetIn(grpc::ServerContext*, const pb::OsdSetRequest*,
                        pb::AdminReply*) override;
  grpc::Status SetRatio(grpc::ServerContext*, const pb::RatioRequest*, pb::AdminReply*) override;
  grpc::Status Blocklist(grpc::ServerContext*, const pb::BlocklistRequest*,
                         pb::AdminReply*) override;
  grpc::Status PoolCreate(grpc::ServerContext*, const pb::PoolCreateRequest*,
                          pb::AdminReply*) override;
  grpc::Status PoolSet(grpc::ServerContext*, const pb::PoolSetRequest*, pb::AdminReply*) override;
  grpc::Status OsdReweight(grpc::ServerContext*, const pb::OsdReweightRequest*,
                           pb::AdminReply*) override;
  grpc::Status OsdRemove(grpc::ServerContext*, const pb::OsdRemoveRequest*,
                         pb::AdminReply*) override;
  grpc::Status PoolRemove(grpc::ServerContext*, const pb::PoolRemoveRequest*,
                          pb::AdminReply*) override;
  grpc::Status Status(grpc::ServerContext*, const pb::StatusRequest*,
                      pb::StatusReply*) override;

 private:
  void FinishAdmin(const absl::Status& status, pb::AdminReply* reply);

  MapManager* manager_;
};

}  // namespace weft::mds
