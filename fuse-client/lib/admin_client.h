// Admin calls to the map manager (the elected weft-mds): OSD and pool
// management and cluster status. Tries each configured MDS; a non-leader
// names the leader and the call is sent there.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/rpc/rpc.h"
#include "proto/cluster.grpc.pb.h"

namespace weft::client {

// Calls `fn(addr, &leader)` on each MDS address in turn until one answers
// with something other than "not the map manager" or a transport failure;
// a refusal that names the leader (through `leader`, or "leader=ADDR" in its
// message) sends the call there next. At most 8 attempts.
absl::Status CallLeader(const std::vector<std::string>& mds_addrs,
                        const std::function<absl::Status(const std::string& addr,
                                                         std::string* leader)>& fn);

class AdminClient {
 public:
  explicit AdminClient(std::vector<std::string> mds_addrs, int64_t timeout_ms = 15000)
      : mds_addrs_(std::move(mds_addrs)), timeout_ms_(timeout_ms) {}

  absl::StatusOr<int32_t> OsdCreate(const std::string& host, const std::string& rack,
                                    double weight, int32_t id);
  absl::Status OsdSetIn(int32_t id, bool in);
  absl::Status OsdReweight(int32_t id, double reweight);
  absl::Status OsdRemove(int32_t id, bool purge);
  absl::Status SetRatio(const std::string& which, double ratio);
  // Adds (or renews) `client` on the OSD blocklist until `expires_ms` (0:
  // until removed), or removes it.
  absl::Status Blocklist(const std::string& client, bool remove, int64_t expires_ms);
  absl::Status PoolCreate(const pb::PoolCreateRequest& req);
  absl::Status PoolRemove(const std::string& name, const std::string& confirm);
  absl::Status PoolSet(const std::string& name, const std::string& key, const std::string& value);
  absl::StatusOr<pb::StatusReply> Status();
  absl::StatusOr<std::string> GetMapBytes();

 private:
  // Calls `fn(stub)` on each MDS until one that is not "not the leader"
  // answers; `fn` returns the transport status and the reply's status.
  absl::Status Call(const std::function<absl::Status(pb::Cluster::Stub*, std::string* leader)>& fn);
  // An admin command answered by an AdminReply: `method` of the leader's
  // Cluster stub with `req`.
  template <typename Req>
  using AdminMethod = grpc::Status (pb::Cluster::Stub::*)(grpc::ClientContext*, const Req&,
                                                          pb::AdminReply*);
  template <typename Req>
  absl::Status CallAdmin(AdminMethod<Req> method, const Req& req);

  std::vector<std::string> mds_addrs_;
  int64_t timeout_ms_;
  rpc::ChannelCache channels_;
};

}  // namespace weft::client
