// RPCs from this OSD to other OSDs: replication, peering and recovery. The
// address of each OSD comes from the caller's map. Every call has a deadline.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/cluster_map/osd_map.h"
#include "common/rpc/rpc.h"
#include "proto/osd.grpc.pb.h"

namespace weft::osd {

class PeerClient {
 public:
  PeerClient(rpc::ChannelCache* channels, int64_t timeout_ms)
      : channels_(channels), timeout_ms_(timeout_ms) {}

  struct RepOpTarget {
    OsdId osd;
    std::string addr;
  };
  // Sends `req` to every target in parallel and runs `local` (the primary's
  // own apply) while they are in flight; returns `local`'s status followed by
  // one status per target. A transport failure or a non-OK reply is an error
  // for that target. The requests' data is sent without a copy (see
  // common/rpc/aliased.h): gRPC holds `req` until it is done with its bytes,
  // which must not change meanwhile.
  std::vector<absl::Status> RepOpAll(const std::vector<RepOpTarget>& targets,
                                     std::shared_ptr<const pb::RepOpRequest> req,
                                     const std::function<absl::Status()>& local);

  absl::Status Query(const std::string& addr, const pb::PgQueryRequest& req,
                     pb::PgQueryReply* reply);
  absl::Status List(const std::string& addr, const pb::PgListRequest& req,
                    pb::PgListReply* reply);
  absl::Status Op(const std::string& addr, const pb::OpRequest& req, pb::OpReply* reply);
  absl::Status Push(const std::string& addr, const pb::PushRequest& req);
  absl::Status Activate(const std::string& addr, const pb::ActivateRequest& req);
  absl::Status Rollback(const std::string& addr, const pb::RollbackRequest& req);
  // Scrub maps and repair requests read whole objects: they get several
  // times the deadline of the others.
  absl::Status ScrubMap(const std::string& addr, const pb::ScrubMapRequest& req,
                        pb::ScrubMapReply* reply);
  absl::Status PgCommand(const std::string& addr, const pb::PgCommandRequest& req,
                         pb::PgCommandReply* reply);

  // Erasure pools: like RepOpAll with one request per target (each shard gets
  // its own chunks); `reqs[i]` goes to `targets[i]`.
  std::vector<absl::Status> RepOpEach(
      const std::vector<RepOpTarget>& targets,
      const std::vector<std::shared_ptr<const pb::RepOpRequest>>& reqs,
      const std::function<absl::Status()>& local);
  // Sends `reqs[i]` to `addrs[i]` in parallel; fills `replies` and returns one
  // status per request (transport or reply status).
  std::vector<absl::Status> OpAll(const std::vector<std::string>& addrs,
                                  const std::vector<pb::OpRequest>& reqs,
                                  std::vector<pb::OpReply>* replies);

 private:
  std::unique_ptr<pb::Osd::Stub> Stub(const std::string& addr);

  rpc::ChannelCache* channels_;
  int64_t timeout_ms_;
};

}  // namespace weft::osd
