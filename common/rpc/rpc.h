// gRPC helpers shared by daemons and clients: status conversion at the wire,
// channel options, and a cache of channels by address.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "proto/common.pb.h"

namespace weft::rpc {

// Largest message either side accepts: a 32 MiB write plus headers. Larger
// objects are written in pieces by the client.
inline constexpr int kMaxMessageBytes = 40 << 20;

// Wire status <-> absl::Status (the errno payload travels too).
void ToProto(const absl::Status& status, pb::Status* out);
absl::Status FromProto(const pb::Status& status);
// A transport-level gRPC failure, with the peer named.
absl::Status FromGrpc(const grpc::Status& status, absl::string_view peer);

// Channel arguments used for every Weft channel and server.
grpc::ChannelArguments ChannelArgs();
void ConfigureServer(grpc::ServerBuilder* builder);

// One channel per address, created on first use; thread-safe.
class ChannelCache {
 public:
  std::shared_ptr<grpc::Channel> Get(const std::string& addr);

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<grpc::Channel>> channels_ ABSL_GUARDED_BY(mu_);
};

// A deadline `ms` from now.
std::chrono::system_clock::time_point DeadlineIn(int64_t ms);

}  // namespace weft::rpc
