#include "common/rpc/rpc.h"

#include "absl/strings/str_cat.h"
#include "common/status/status.h"

namespace weft::rpc {

void ToProto(const absl::Status& status, pb::Status* out) {
  out->set_code(static_cast<int32_t>(status.code()));
  out->set_message(std::string(status.message()));
  out->set_err(status.ok() ? 0 : StatusToErrno(status));
}

absl::Status FromProto(const pb::Status& status) {
  if (status.code() == 0) return absl::OkStatus();
  auto code = static_cast<absl::StatusCode>(status.code());
  if (status.code() < 0 || status.code() > 16) code = absl::StatusCode::kUnknown;
  if (status.err() > 0) return ErrnoError(code, status.err(), status.message());
  return absl::Status(code, status.message());
}

absl::Status FromGrpc(const grpc::Status& status, absl::string_view peer) {
  if (status.ok()) return absl::OkStatus();
  auto code = static_cast<absl::StatusCode>(status.error_code());
  return absl::Status(code, absl::StrCat(peer, ": ", status.error_message()));
}

grpc::ChannelArguments ChannelArgs() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // Reconnect quickly after a daemon restarts: the default backoff grows to
  // two minutes, far longer than an OSD restart.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  // Each channel gets its own connection: OSD-to-OSD traffic should not share
  // one TCP connection with unrelated clients in the same process.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return args;
}

void ConfigureServer(grpc::ServerBuilder* builder) {
  builder->SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder->SetMaxSendMessageSize(kMaxMessageBytes);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 5000);
  // The sync server keeps between MIN and MAX threads polling for requests.
  // Its defaults (1 and 2) mean that with a few concurrent callers nearly
  // every request spawns a thread and every reply ends one: 45 context
  // switches per file create through the mount, most of them thread churn.
  // Idle pollers cost a stack each, nothing more.
  builder->SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder->SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 4);
  builder->SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 64);
}

std::shared_ptr<grpc::Channel> ChannelCache::Get(const std::string& addr) {
  absl::MutexLock lock(&mu_);
  auto& channel = channels_[addr];
  if (channel == nullptr) {
    channel = grpc::CreateCustomChannel(addr, grpc::InsecureChannelCredentials(), ChannelArgs());
  }
  return channel;
}

std::chrono::system_clock::time_point DeadlineIn(int64_t ms) {
  return std::chrono::system_clock::now() + std::chrono::milliseconds(ms);
}

}  // namespace weft::rpc
