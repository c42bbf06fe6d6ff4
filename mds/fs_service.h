// The gRPC adapters of weft-mds's filesystem services: the namespace (Mds)
// and filesystem administration (Filesystems). Thin: every call forwards to
// the MdsDaemon or the rank serving the filesystem.
#pragma once

#include <atomic>

#include "mds/mds_daemon.h"
#include "mds/mds_metrics.h"
#include "proto/cluster.grpc.pb.h"
#include "proto/mds_client.grpc.pb.h"

namespace weft::mds {

class MdsService final : public pb::Mds::Service {
 public:
  // `daemon` is null until the daemon is up (calls answer UNAVAILABLE).
  // `metrics` times every namespace request (Call).
  MdsService(std::atomic<MdsDaemon*>* daemon, MdsMetrics* metrics)
      : daemon_(daemon), metrics_(metrics) {}

  grpc::Status SessionOpen(grpc::ServerContext*, const pb::SessionOpenRequest*,
                           pb::SessionReply*) override;
  grpc::Status SessionRenew(grpc::ServerContext*, const pb::SessionRequest*,
                            pb::SessionReply*) override;
  grpc::Status SessionClose(grpc::ServerContext*, const pb::SessionRequest*,
                            pb::SessionReply*) override;
  grpc::Status Call(grpc::ServerContext*, const pb::MetaRequest*, pb::MetaReply*) override;
  grpc::Status Reconnect(grpc::ServerContext*, const pb::ReconnectRequest*,
                         pb::ReconnectReply*) override;
  grpc::Status FsStatus(grpc::ServerContext*, const pb::FsStatusRequest*,
                        pb::FsStatusReply*) override;
  grpc::Status LeaseStream(grpc::ServerContext*, const pb::SessionRequest*,
                           grpc::ServerWriter<pb::LeaseEvent>*) override;
  grpc::Status LeaseAck(grpc::ServerContext*, const pb::LeaseAckRequest*,
                        pb::SessionReply*) override;
  grpc::Status ClientList(grpc::ServerContext*, const pb::ClientListRequest*,
                          pb::ClientListReply*) override;
  grpc::Status ClientEvict(grpc::ServerContext*, const pb::ClientEvictRequest*,
                           pb::ClientEvictReply*) override;

 private:
  void CallOnRank(const pb::MetaRequest& req, pb::MetaReply* reply);

  std::atomic<MdsDaemon*>* const daemon_;
  MdsMetrics* const metrics_;
};

class FilesystemsService final : public pb::Filesystems::Service {
 public:
  FilesystemsService(std::atomic<MdsDaemon*>* daemon, FsMapStore* fsmap)
      : daemon_(daemon), fsmap_(fsmap) {}

  grpc::Status FsNew(grpc::ServerContext*, const pb::FsNewRequest*, pb::AdminReply*) override;
  grpc::Status FsAddDataPool(grpc::ServerContext*, const pb::FsAddDataPoolRequest*,
                             pb::AdminReply*) override;
  grpc::Status FsList(grpc::ServerContext*, const pb::FsListRequest*, pb::FsListReply*) override;
  grpc::Status FsSet(grpc::ServerContext*, const pb::FsSetRequest*, pb::AdminReply*) override;
  grpc::Status MdsFail(grpc::ServerContext*, const pb::MdsFailRequest*, pb::AdminReply*) override;
  grpc::Status RankStopped(grpc::ServerContext*, const pb::RankStoppedRequest*,
                           pb::AdminReply*) override;
  grpc::Status WatchFsMap(grpc::ServerContext*, const pb::FsListRequest*,
                          grpc::ServerWriter<pb::FsListReply>*) override;
  static constexpr absl::Duration kWatchHeartbeat = absl::Seconds(1);

 private:
  std::atomic<MdsDaemon*>* const daemon_;
  FsMapStore* const fsmap_;
};

}  // namespace weft::mds
