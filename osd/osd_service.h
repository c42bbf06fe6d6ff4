// The gRPC adapter of weft-osd: a thin table from RPC to daemon entry point.
// gRPC's synchronous server runs each call on its own thread, so the blocking
// work below (store fsyncs, waiting for replicas) does not stall other calls.
#pragma once

#include "proto/osd.grpc.pb.h"

namespace weft::osd {

class OsdDaemon;

class OsdService final : public pb::Osd::Service {
 public:
  explicit OsdService(OsdDaemon* daemon) : daemon_(daemon) {}

  grpc::Status Op(grpc::ServerContext*, const pb::OpRequest*, pb::OpReply*) override;
  grpc::Status PgList(grpc::ServerContext*, const pb::PgListRequest*, pb::PgListReply*) override;
  grpc::Status GetMap(grpc::ServerContext*, const pb::GetMapRequest*, pb::GetMapReply*) override;
  grpc::Status RepOp(grpc::ServerContext*, const pb::RepOpRequest*, pb::RepOpReply*) override;
  grpc::Status PgQuery(grpc::ServerContext*, const pb::PgQueryRequest*,
                       pb::PgQueryReply*) override;
  grpc::Status Push(grpc::ServerContext*, const pb::PushRequest*, pb::PushReply*) override;
  grpc::Status Activate(grpc::ServerContext*, const pb::ActivateRequest*,
                        pb::ActivateReply*) override;
  grpc::Status Rollback(grpc::ServerContext*, const pb::RollbackRequest*,
                        pb::PushReply*) override;

 private:
  OsdDaemon* daemon_;
};

}  // namespace weft::osd
