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
WEFT_OSD_RPC(RepOp, RepOpRequest, RepOpReply)
WEFT_OSD_RPC(PgQuery, PgQueryRequest, PgQueryReply)
WEFT_OSD_RPC(Push, PushRequest, PushReply)
WEFT_OSD_RPC(Activate, ActivateRequest, ActivateReply)
WEFT_OSD_RPC(Rollback, RollbackRequest, PushReply)

#undef WEFT_OSD_RPC

}  // namespace weft::osd
