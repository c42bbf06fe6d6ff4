#include "osd/osd_service.h"

#include "osd/osd_daemon.h"
#include "osd/store/file_io.h"
#include "proto/osd.pb.h"

namespace weft::osd {

#define WEFT_OSD_RPC(Method, Req, Reply)                                            \
  Add<pb::Req, pb::Reply>("/weft.pb.Osd/" #Method,                                  \
                          [daemon](grpc::ServerContext*, const pb::Req* req,        \
                                   pb::Reply* reply) {                              \
                            daemon->Method(*req, reply);                            \
                            return grpc::Status::OK;                                \
                          })

// The synchronous API hands requests over as const, but a request belongs to
// its call and nothing reads it after the handler returns: the write paths
// (Op, RepOp) move the data out of it instead of copying megabytes per request.
OsdService::OsdService(OsdDaemon* daemon) {
  // A read's buffer goes back to the store's pool once its reply is sent:
  // the next read of that size needs no zero-fill (osd/store/file_io.h).
  rpc::SharedReply<pb::OpReply>::SetRelease([](pb::OpReply* reply) {
    for (pb::ObjectOpResult& r : *reply->mutable_results()) {
      ReadBuffers().Give(std::move(*r.mutable_data()));
    }
    delete reply;
  });
  AddAliased<pb::OpRequest, pb::OpReply>(
      "/weft.pb.Osd/Op",
      [daemon](grpc::ServerContext*, const pb::OpRequest* req, pb::OpReply* reply) {
        daemon->Op(const_cast<pb::OpRequest*>(req), reply);
        return grpc::Status::OK;
      });
  WEFT_OSD_RPC(PgList, PgListRequest, PgListReply);
  WEFT_OSD_RPC(GetMap, GetMapRequest, GetMapReply);
  Add<pb::RepOpRequest, pb::RepOpReply>(
      "/weft.pb.Osd/RepOp",
      [daemon](grpc::ServerContext*, const pb::RepOpRequest* req, pb::RepOpReply* reply) {
        daemon->RepOp(const_cast<pb::RepOpRequest*>(req), reply);
        return grpc::Status::OK;
      });
  WEFT_OSD_RPC(PgQuery, PgQueryRequest, PgQueryReply);
  WEFT_OSD_RPC(Push, PushRequest, PushReply);
  WEFT_OSD_RPC(Activate, ActivateRequest, ActivateReply);
  WEFT_OSD_RPC(Rollback, RollbackRequest, PushReply);
  WEFT_OSD_RPC(PgCommand, PgCommandRequest, PgCommandReply);
  WEFT_OSD_RPC(ScrubMap, ScrubMapRequest, ScrubMapReply);
}

#undef WEFT_OSD_RPC

}  // namespace weft::osd
