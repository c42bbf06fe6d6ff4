#include "osd/osd_service.h"

#include "osd/osd_daemon.h"

namespace weft::osd {

#define WEFT_OSD_RPC(Method, Req, Reply)                                          \
  grpc::Status OsdService::Method(grpc::ServerContext*, const pb::Req* req,       \
                                  pb::Reply* reply) {                             \
    daemon_->Method(*req, reply);                                                 \
    return grpc::Status::OK;                                                      \
  }

WEFT_OSD_RPC(Op, OpRequest, OpReply)
WEFT_OSD_RPC(PgList, PgListRequest, PgListReply)
WEFT_OSD_RPC(GetMap, GetMapRequest, GetMapReply)
WEFT_OSD_RPC(PgQuery, PgQueryRequest, PgQueryReply)
WEFT_OSD_RPC(Push, PushRequest, PushReply)
WEFT_OSD_RPC(Activate, ActivateRequest, ActivateReply)
WEFT_OSD_RPC(Rollback, RollbackRequest, PushReply)

#undef WEFT_OSD_RPC

// The synchronous API hands the request over as const, but it belongs to the
// call and nothing reads it after the handler returns: the write path moves
// shard data out of it instead of copying megabytes per sub-write.
grpc::Status OsdService::RepOp(grpc::ServerContext*, const pb::RepOpRequest* req,
                               pb::RepOpReply* reply) {
  daemon_->RepOp(const_cast<pb::RepOpRequest*>(req), reply);
  return grpc::Status::OK;
}

}  // namespace weft::osd
