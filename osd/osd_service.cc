#include "osd/osd_service.h"

#include "osd/osd_daemon.h"

namespace weft::osd {

#define WEFT_OSD_RPC(Method, Req, Reply)                                          \
  grpc::Status OsdService::Method(grpc::ServerContext*, const pb::Req* req,       \
                                  pb::Reply* reply) {                             \
    daemon_->Method(*req, reply);                                                 \
    return grpc::Status::OK;                                                      \
  }

WEFT_OSD_RPC(PgList, PgListRequest, PgListReply)
WEFT_OSD_RPC(GetMap, GetMapRequest, GetMapReply)
WEFT_OSD_RPC(PgQuery, PgQueryRequest, PgQueryReply)
WEFT_OSD_RPC(Push, PushRequest, PushReply)
WEFT_OSD_RPC(Activate, ActivateRequest, ActivateReply)
WEFT_OSD_RPC(Rollback, RollbackRequest, PushReply)

#undef WEFT_OSD_RPC

// The synchronous API hands requests over as const, but a request belongs to
// its call and nothing reads it after the handler returns: the write paths
// move the data out of it instead of copying megabytes per request.
grpc::Status OsdService::Op(grpc::ServerContext*, const pb::OpRequest* req, pb::OpReply* reply) {
  daemon_->Op(const_cast<pb::OpRequest*>(req), reply);
  return grpc::Status::OK;
}

grpc::Status OsdService::RepOp(grpc::ServerContext*, const pb::RepOpRequest* req,
                               pb::RepOpReply* reply) {
  daemon_->RepOp(const_cast<pb::RepOpRequest*>(req), reply);
  return grpc::Status::OK;
}

}  // namespace weft::osd
