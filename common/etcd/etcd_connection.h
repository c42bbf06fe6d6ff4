// Internal to common/etcd/: the gRPC channels to the etcd endpoints and the one
// retry loop every unary call goes through. Proto and gRPC types stay inside
// common/etcd/; nothing outside includes this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/etcd/rpc.grpc.pb.h"

namespace weft::etcd {

// The one place gRPC errors become absl::Status: same code (the numbering is
// shared), message "<context>: <grpc message>" on one line.
absl::Status FromGrpc(const grpc::Status& status, absl::string_view context);

// Bytes of a key made printable for logs and error messages.
std::string PrintableKey(absl::string_view key);

struct Endpoint {
  std::string address;  // "host:port"
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
};

// Lets another thread abort a call in progress, so that the destructors of
// Watch and LeaseKeeper never wait for an RPC deadline or a backoff sleep.
class Canceller {
 public:
  // Idempotent. Cancels the registered context, if any.
  void Cancel();
  bool cancelled() const;
  // Registers the context of the call about to start; false (not registered)
  // if already cancelled. The caller Unregisters before destroying `ctx`.
  bool Register(grpc::ClientContext* ctx);
  void Unregister();
  // Sleeps for `duration` or until Cancel(); true if cancelled.
  bool SleepFor(absl::Duration duration);

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* ctx_ ABSL_GUARDED_BY(mu_) = nullptr;
};

// How a failed attempt may be repeated.
enum class Retry {
  // Repeating the request leaves the same state: retry on any UNAVAILABLE.
  kIdempotent,
  // Send only over a connected channel, and never again once sent: a request
  // that may have been applied must not be applied twice (a Txn's compare
  // would see its own first effect and take the wrong branch).
  kAtMostOnce,
};

class Connection {
 public:
  // `addresses` must be non-empty, each "host:port".
  explicit Connection(std::vector<std::string> addresses);

  const std::vector<std::string>& addresses() const { return addresses_; }
  size_t size() const { return endpoints_.size(); }
  Endpoint& endpoint(size_t index) { return endpoints_[index]; }

  // The endpoint calls try first: the last one that answered.
  size_t Current() const;
  void SetCurrent(size_t index);
  // After a failure on `failed`: moves on to the next endpoint, unless another
  // thread has already moved on.
  void Rotate(size_t failed);

  absl::Duration rpc_timeout() const;
  void set_rpc_timeout(absl::Duration timeout);

  // One attempt: issue the RPC on `endpoint` with `ctx` (deadline already set).
  using Attempt = absl::FunctionRef<grpc::Status(Endpoint& endpoint, grpc::ClientContext* ctx)>;

  // Runs `attempt` until it succeeds, fails with a code other than UNAVAILABLE,
  // `deadline` passes, or `canceller` (optional) is cancelled. On UNAVAILABLE it
  // rotates to the next endpoint, and sleeps with backoff after each full round.
  // `what` names the operation in errors ("etcd Put key=/a").
  absl::Status CallUntil(absl::string_view what, Retry retry, absl::Time deadline,
                         Attempt attempt, Canceller* canceller = nullptr);
  // CallUntil with the deadline now + rpc_timeout().
  absl::Status Call(absl::string_view what, Retry retry, Attempt attempt);

  // One linearizable read on endpoint `index`, for Connect.
  grpc::Status Probe(size_t index, absl::Time deadline);

 private:
  // Waits (up to `deadline`) for endpoint `index` to have a connected channel.
  bool WaitConnected(size_t index, absl::Time deadline);

  const std::vector<std::string> addresses_;
  std::vector<Endpoint> endpoints_;  // Fixed after construction.

  mutable absl::Mutex mu_;
  size_t current_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration rpc_timeout_ ABSL_GUARDED_BY(mu_) = absl::Seconds(5);
};

// Renews `lease` once over a short LeaseKeepAlive stream (etcd has no unary
// keep-alive). Returns the new TTL in seconds; kNotFound if the lease is gone.
absl::StatusOr<int64_t> KeepAliveOnce(Connection& conn, int64_t lease, absl::Time deadline,
                                      Canceller* canceller);

}  // namespace weft::etcd
