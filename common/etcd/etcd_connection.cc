#include "common/etcd/etcd_connection.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log/log.h"
#include "common/status/status.h"

namespace weft::etcd {
namespace {

// Backoff between full rounds over the endpoints within one call.
constexpr absl::Duration kMinRoundBackoff = absl::Milliseconds(20);
constexpr absl::Duration kMaxRoundBackoff = absl::Milliseconds(500);
// How long a kAtMostOnce call waits for one endpoint's channel to connect
// before trying the next endpoint.
constexpr absl::Duration kConnectWait = absl::Milliseconds(500);
// With several endpoints, one attempt of a kIdempotent call gets a share of the
// call's deadline (at least this much), so that an endpoint that swallows
// packets, where a fail-fast RPC waits instead of failing, is skipped in time.
constexpr absl::Duration kMinAttemptTime = absl::Seconds(1);

std::shared_ptr<grpc::Channel> MakeChannel(const std::string& address) {
  grpc::ChannelArguments args;
  // gRPC's default reconnect backoff grows to 120 s; etcd restarts in about a
  // second, and a fail-fast RPC on a channel in backoff fails at once, so keep
  // the reconnect period short. (Despite its name, MIN_RECONNECT_BACKOFF is the
  // time one connection attempt may take, handshake included; keep it ample.)
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 2000);
  // Pings find a dead peer under a long-lived watch stream. etcd's server
  // rejects pings closer than 5 s apart and pings with no call open.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);  // An idle watch sends no data.
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

}  // namespace

absl::Status FromGrpc(const grpc::Status& status, absl::string_view context) {
  if (status.ok()) return absl::OkStatus();
  int code = static_cast<int>(status.error_code());
  // grpc::StatusCode and absl::StatusCode share their numbering (0..16).
  absl::StatusCode absl_code = (code >= 0 && code <= 16) ? static_cast<absl::StatusCode>(code)
                                                         : absl::StatusCode::kUnknown;
  return absl::Status(absl_code, absl::StrCat(context, ": ", OneLine(status.error_message())));
}

std::string PrintableKey(absl::string_view key) { return absl::CHexEscape(key); }

void Canceller::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  if (ctx_ != nullptr) ctx_->TryCancel();
}

bool Canceller::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

bool Canceller::Register(grpc::ClientContext* ctx) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return false;
  ctx_ = ctx;
  return true;
}

void Canceller::Unregister() {
  absl::MutexLock lock(&mu_);
  ctx_ = nullptr;
}

bool Canceller::SleepFor(absl::Duration duration) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&cancelled_), duration);
  return cancelled_;
}

Connection::Connection(std::vector<std::string> addresses) : addresses_(std::move(addresses)) {
  CHECK(!addresses_.empty());
  endpoints_.reserve(addresses_.size());
  for (const std::string& address : addresses_) {
    Endpoint ep;
    ep.address = address;
    ep.channel = MakeChannel(address);
    ep.kv = etcdserverpb::KV::NewStub(ep.channel);
    ep.watch = etcdserverpb::Watch::NewStub(ep.channel);
    ep.lease = etcdserverpb::Lease::NewStub(ep.channel);
    endpoints_.push_back(std::move(ep));
  }
}

size_t Connection::Current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

void Connection::SetCurrent(size_t index) {
  absl::MutexLock lock(&mu_);
  current_ = index % endpoints_.size();
}

void Connection::Rotate(size_t failed) {
  absl::MutexLock lock(&mu_);
  if (current_ == failed) current_ = (failed + 1) % endpoints_.size();
}

absl::Duration Connection::rpc_timeout() const {
  absl::MutexLock lock(&mu_);
  return rpc_timeout_;
}

void Connection::set_rpc_timeout(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  rpc_timeout_ = timeout;
}

bool Connection::WaitConnected(size_t index, absl::Time deadline) {
  grpc::Channel& channel = *endpoints_[index].channel;
  if (channel.GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) return true;
  return channel.WaitForConnected(absl::ToChronoTime(deadline));
}

absl::Status Connection::Call(absl::string_view what, Retry retry, Attempt attempt) {
  return CallUntil(what, retry, absl::Now() + rpc_timeout(), attempt);
}

absl::Status Connection::CallUntil(absl::string_view what, Retry retry, absl::Time deadline,
                                   Attempt attempt, Canceller* canceller) {
  absl::Duration backoff = kMinRoundBackoff;
  size_t failures_in_round = 0;
  std::string last_error = "deadline passed before the first attempt";
  const absl::Duration attempt_share =
      std::max((deadline - absl::Now()) / static_cast<int64_t>(endpoints_.size()),
               kMinAttemptTime);
  while (absl::Now() < deadline) {
    const size_t index = Current();
    Endpoint& ep = endpoints_[index];
    // 1. A kAtMostOnce request goes out only over a connected channel, so that
    //    an UNAVAILABLE before that point surely means "not sent".
    bool connected = retry == Retry::kIdempotent ||
                     WaitConnected(index, std::min(deadline, absl::Now() + kConnectWait));
    if (connected) {
      const absl::Time attempt_deadline =
          retry == Retry::kIdempotent ? std::min(deadline, absl::Now() + attempt_share) : deadline;
      grpc::ClientContext ctx;
      ctx.set_deadline(absl::ToChronoTime(attempt_deadline));
      if (canceller != nullptr && !canceller->Register(&ctx)) {
        return absl::CancelledError(absl::StrCat(what, ": cancelled"));
      }
      grpc::Status status = attempt(ep, &ctx);
      if (canceller != nullptr) canceller->Unregister();
      // 2. Success, or an answer from etcd (or the call's deadline): return it.
      const bool attempt_timed_out = status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
                                     attempt_deadline < deadline;
      if (status.error_code() != grpc::StatusCode::UNAVAILABLE && !attempt_timed_out) {
        return FromGrpc(status, absl::StrCat(what, " at ", ep.address));
      }
      if (retry == Retry::kAtMostOnce) {
        return absl::UnavailableError(
            absl::StrCat(what, " at ", ep.address, ": outcome unknown, connection lost after ",
                         "sending: ", OneLine(status.error_message())));
      }
      last_error = absl::StrCat(ep.address, ": ", OneLine(status.error_message()));
    } else {
      last_error = absl::StrCat(ep.address, ": not connected");
    }
    // 3. Next endpoint; after a whole round of failures, back off.
    VLOG(1) << "etcd call failed, trying next endpoint op=\"" << what << "\" error=\""
            << last_error << "\"";
    Rotate(index);
    if (++failures_in_round >= endpoints_.size()) {
      failures_in_round = 0;
      absl::Duration sleep = std::min(backoff, deadline - absl::Now());
      if (canceller != nullptr) {
        if (canceller->SleepFor(sleep)) {
          return absl::CancelledError(absl::StrCat(what, ": cancelled"));
        }
      } else if (sleep > absl::ZeroDuration()) {
        absl::SleepFor(sleep);
      }
      backoff = std::min(backoff * 2, kMaxRoundBackoff);
    }
  }
  return absl::UnavailableError(absl::StrCat(what, ": no etcd endpoint answered in time (",
                                             absl::StrJoin(addresses_, ","),
                                             "); last error: ", last_error));
}

grpc::Status Connection::Probe(size_t index, absl::Time deadline) {
  etcdserverpb::RangeRequest request;
  request.set_key("/");
  request.set_count_only(true);
  etcdserverpb::RangeResponse response;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(deadline));
  return endpoints_[index].kv->Range(&ctx, request, &response);
}

absl::StatusOr<int64_t> KeepAliveOnce(Connection& conn, int64_t lease, absl::Time deadline,
                                      Canceller* canceller) {
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseKeepAliveResponse response;
  RETURN_IF_ERROR(conn.CallUntil(
      absl::StrCat("etcd LeaseKeepAlive lease=", lease), Retry::kIdempotent, deadline,
      [&](Endpoint& ep, grpc::ClientContext* ctx) {
        response.Clear();
        auto stream = ep.lease->LeaseKeepAlive(ctx);
        // etcd answers each request before reading the next, so closing our
        // side right away still gets the answer, then a clean end of stream.
        bool sent = stream->Write(request) && stream->WritesDone();
        bool received = sent && stream->Read(&response);
        grpc::Status status = stream->Finish();
        if (status.ok() && !received) {
          return grpc::Status(grpc::StatusCode::UNAVAILABLE, "keep-alive stream closed early");
        }
        return status;
      },
      canceller));
  if (response.ttl() <= 0) {
    return absl::NotFoundError(absl::StrCat("etcd lease ", lease, " expired or not found"));
  }
  return response.ttl();
}

}  // namespace weft::etcd
