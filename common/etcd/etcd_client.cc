// Client: connection set-up, KV and lease calls. Watches live in etcd_watch.cc,
// the lease keeper in etcd_lease_keeper.cc.
#include "common/etcd/etcd_client.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/etcd/etcd_connection.h"
#include "common/log/log.h"
#include "common/status/status.h"

namespace weft::etcd {
namespace {

Compare MakeCompare(Compare::Target target, absl::string_view key, Compare::Result result,
                    int64_t number) {
  Compare c;
  c.target = target;
  c.result = result;
  c.key = std::string(key);
  c.number = number;
  return c;
}

KeyValue FromProto(const mvccpb::KeyValue& kv) {
  KeyValue out;
  out.key = kv.key();
  out.value = kv.value();
  out.create_revision = kv.create_revision();
  out.mod_revision = kv.mod_revision();
  out.version = kv.version();
  out.lease = kv.lease();
  return out;
}

RangeResult FromProto(const etcdserverpb::RangeResponse& response) {
  RangeResult out;
  out.kvs.reserve(response.kvs_size());
  for (const mvccpb::KeyValue& kv : response.kvs()) out.kvs.push_back(FromProto(kv));
  out.revision = response.header().revision();
  out.more = response.more();
  out.count = response.count();
  return out;
}

void ToProto(const Compare& c, etcdserverpb::Compare* out) {
  using P = etcdserverpb::Compare;
  switch (c.result) {
    case Compare::kEqual: out->set_result(P::EQUAL); break;
    case Compare::kNotEqual: out->set_result(P::NOT_EQUAL); break;
    case Compare::kLess: out->set_result(P::LESS); break;
    case Compare::kGreater: out->set_result(P::GREATER); break;
  }
  out->set_key(c.key);
  out->set_range_end(c.range_end);
  switch (c.target) {
    case Compare::kVersion:
      out->set_target(P::VERSION);
      out->set_version(c.number);
      break;
    case Compare::kCreateRevision:
      out->set_target(P::CREATE);
      out->set_create_revision(c.number);
      break;
    case Compare::kModRevision:
      out->set_target(P::MOD);
      out->set_mod_revision(c.number);
      break;
    case Compare::kValue:
      out->set_target(P::VALUE);
      out->set_value(c.value);
      break;
    case Compare::kLease:
      out->set_target(P::LEASE);
      out->set_lease(c.number);
      break;
  }
}

void ToProto(const Op& op, etcdserverpb::RequestOp* out) {
  switch (op.type) {
    case Op::kGet: {
      etcdserverpb::RangeRequest* r = out->mutable_request_range();
      r->set_key(op.key);
      r->set_range_end(op.range_end);
      r->set_limit(op.limit);
      break;
    }
    case Op::kPut: {
      etcdserverpb::PutRequest* r = out->mutable_request_put();
      r->set_key(op.key);
      r->set_value(op.value);
      r->set_lease(op.lease);
      break;
    }
    case Op::kDelete: {
      etcdserverpb::DeleteRangeRequest* r = out->mutable_request_delete_range();
      r->set_key(op.key);
      r->set_range_end(op.range_end);
      break;
    }
  }
}

// Accepts "host:port" and "http://host:port".
absl::StatusOr<std::string> NormalizeEndpoint(absl::string_view endpoint) {
  absl::string_view e = endpoint;
  if (absl::ConsumePrefix(&e, "https://")) {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd endpoint ", endpoint, ": TLS unsupported"));
  }
  absl::ConsumePrefix(&e, "http://");
  absl::ConsumeSuffix(&e, "/");
  if (e.empty() || !absl::StrContains(e, ':')) {
    return absl::InvalidArgumentError(absl::StrCat("etcd endpoint '", endpoint,
                                                   "' is not host:port"));
  }
  return std::string(e);
}

}  // namespace

// ---- Compare, Op, PrefixEnd ----

Compare Compare::Version(absl::string_view key, Result result, int64_t version) {
  return MakeCompare(kVersion, key, result, version);
}
Compare Compare::CreateRevision(absl::string_view key, Result result, int64_t revision) {
  return MakeCompare(kCreateRevision, key, result, revision);
}
Compare Compare::ModRevision(absl::string_view key, Result result, int64_t revision) {
  return MakeCompare(kModRevision, key, result, revision);
}
Compare Compare::Value(absl::string_view key, Result result, absl::string_view value) {
  Compare c = MakeCompare(kValue, key, result, 0);
  c.value = std::string(value);
  return c;
}
Compare Compare::Lease(absl::string_view key, Result result, int64_t lease) {
  return MakeCompare(kLease, key, result, lease);
}

Op Op::Get(absl::string_view key) {
  Op op;
  op.type = kGet;
  op.key = std::string(key);
  return op;
}
Op Op::GetPrefix(absl::string_view prefix, int64_t limit) {
  Op op = Get(prefix);
  op.range_end = PrefixEnd(prefix);
  op.limit = limit;
  return op;
}
Op Op::Put(absl::string_view key, absl::string_view value, int64_t lease) {
  Op op;
  op.type = kPut;
  op.key = std::string(key);
  op.value = std::string(value);
  op.lease = lease;
  return op;
}
Op Op::Delete(absl::string_view key) {
  Op op;
  op.type = kDelete;
  op.key = std::string(key);
  return op;
}
Op Op::DeletePrefix(absl::string_view prefix) {
  Op op = Delete(prefix);
  op.range_end = PrefixEnd(prefix);
  return op;
}

std::string PrefixEnd(absl::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // etcd's "every key from `key` on".
}

// ---- Client: set-up ----

Client::Client(std::shared_ptr<Connection> conn) : conn_(std::move(conn)) {}
Client::~Client() = default;

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(std::vector<std::string> endpoints,
                                                        absl::Duration timeout) {
  if (endpoints.empty()) return absl::InvalidArgumentError("etcd: no endpoints given");
  std::vector<std::string> addresses;
  for (const std::string& e : endpoints) {
    ASSIGN_OR_RETURN(std::string address, NormalizeEndpoint(e));
    addresses.push_back(std::move(address));
  }
  auto conn = std::make_shared<Connection>(addresses);
  const absl::Time deadline = absl::Now() + timeout;
  std::string last_error = "no attempt made";
  // Rounds over the endpoints until one serves a linearizable read: that also
  // proves the cluster has a leader. A refused connection fails at once.
  while (true) {
    for (size_t i = 0; i < conn->size(); ++i) {
      absl::Time attempt_deadline = std::min(deadline, absl::Now() + absl::Seconds(1));
      grpc::Status status = conn->Probe(i, attempt_deadline);
      if (status.ok()) {
        conn->SetCurrent(i);
        VLOG(1) << "etcd connected endpoint=" << addresses[i];
        return std::unique_ptr<Client>(new Client(std::move(conn)));
      }
      last_error = std::string(FromGrpc(status, addresses[i]).message());
      if (absl::Now() >= deadline) break;
    }
    if (absl::Now() >= deadline) break;
    absl::SleepFor(std::min(absl::Milliseconds(100), deadline - absl::Now()));
  }
  return absl::UnavailableError(absl::StrCat("etcd unreachable: no answer from ",
                                             absl::StrJoin(addresses, ","), " within ",
                                             absl::FormatDuration(timeout),
                                             " (last error: ", last_error, ")"));
}

void Client::SetRpcTimeout(absl::Duration timeout) { conn_->set_rpc_timeout(timeout); }
absl::Duration Client::RpcTimeout() const { return conn_->rpc_timeout(); }
const std::vector<std::string>& Client::endpoints() const { return conn_->addresses(); }
std::string Client::CurrentEndpoint() const { return conn_->addresses()[conn_->Current()]; }

// ---- Client: KV ----

absl::StatusOr<RangeResult> Client::Get(absl::string_view key) { return Range(key, "", 0, 0); }

absl::StatusOr<RangeResult> Client::GetPrefix(absl::string_view prefix, int64_t limit) {
  return Range(prefix, PrefixEnd(prefix), limit, 0);
}

absl::StatusOr<RangeResult> Client::Range(absl::string_view key, absl::string_view range_end,
                                          int64_t limit, int64_t revision) {
  etcdserverpb::RangeRequest request;
  request.set_key(std::string(key));
  request.set_range_end(std::string(range_end));
  request.set_limit(limit);
  request.set_revision(revision);
  etcdserverpb::RangeResponse response;
  RETURN_IF_ERROR(conn_->Call(absl::StrCat("etcd Range key=", PrintableKey(key)),
                              Retry::kIdempotent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
                                response.Clear();
                                return ep.kv->Range(ctx, request, &response);
                              }));
  return FromProto(response);
}

absl::StatusOr<int64_t> Client::Put(absl::string_view key, absl::string_view value,
                                    int64_t lease) {
  etcdserverpb::PutRequest request;
  request.set_key(std::string(key));
  request.set_value(std::string(value));
  request.set_lease(lease);
  etcdserverpb::PutResponse response;
  RETURN_IF_ERROR(conn_->Call(absl::StrCat("etcd Put key=", PrintableKey(key)),
                              Retry::kIdempotent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
                                response.Clear();
                                return ep.kv->Put(ctx, request, &response);
                              }));
  return response.header().revision();
}

absl::StatusOr<int64_t> Client::Delete(absl::string_view key) {
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(std::string(key));
  etcdserverpb::DeleteRangeResponse response;
  RETURN_IF_ERROR(conn_->Call(absl::StrCat("etcd Delete key=", PrintableKey(key)),
                              Retry::kIdempotent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
                                response.Clear();
                                return ep.kv->DeleteRange(ctx, request, &response);
                              }));
  return response.deleted();
}

absl::StatusOr<int64_t> Client::DeletePrefix(absl::string_view prefix) {
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(std::string(prefix));
  request.set_range_end(PrefixEnd(prefix));
  etcdserverpb::DeleteRangeResponse response;
  RETURN_IF_ERROR(conn_->Call(absl::StrCat("etcd DeletePrefix prefix=", PrintableKey(prefix)),
                              Retry::kIdempotent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
                                response.Clear();
                                return ep.kv->DeleteRange(ctx, request, &response);
                              }));
  return response.deleted();
}

absl::StatusOr<TxnResult> Client::Txn(const std::vector<Compare>& compares,
                                      const std::vector<Op>& success,
                                      const std::vector<Op>& failure) {
  etcdserverpb::TxnRequest request;
  for (const Compare& c : compares) ToProto(c, request.add_compare());
  for (const Op& op : success) ToProto(op, request.add_success());
  for (const Op& op : failure) ToProto(op, request.add_failure());
  etcdserverpb::TxnResponse response;
  std::string what = "etcd Txn";
  if (!compares.empty()) absl::StrAppend(&what, " key=", PrintableKey(compares[0].key));
  RETURN_IF_ERROR(conn_->Call(what, Retry::kAtMostOnce,
                              [&](Endpoint& ep, grpc::ClientContext* ctx) {
                                response.Clear();
                                return ep.kv->Txn(ctx, request, &response);
                              }));
  TxnResult result;
  result.succeeded = response.succeeded();
  result.revision = response.header().revision();
  for (const etcdserverpb::ResponseOp& op : response.responses()) {
    if (op.has_response_range()) result.ranges.push_back(FromProto(op.response_range()));
  }
  return result;
}

absl::Status Client::Compact(int64_t revision) {
  etcdserverpb::CompactionRequest request;
  request.set_revision(revision);
  request.set_physical(true);
  etcdserverpb::CompactionResponse response;
  return conn_->Call(absl::StrCat("etcd Compact revision=", revision), Retry::kIdempotent,
                     [&](Endpoint& ep, grpc::ClientContext* ctx) {
                       return ep.kv->Compact(ctx, request, &response);
                     });
}

// ---- Client: leases ----

absl::StatusOr<int64_t> Client::LeaseGrant(int64_t ttl_seconds) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_seconds);
  etcdserverpb::LeaseGrantResponse response;
  // A repeated grant only leaves an unused lease that expires after its TTL.
  RETURN_IF_ERROR(conn_->Call(absl::StrCat("etcd LeaseGrant ttl=", ttl_seconds),
                              Retry::kIdempotent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
                                response.Clear();
                                return ep.lease->LeaseGrant(ctx, request, &response);
                              }));
  if (!response.error().empty()) {
    return absl::InternalError(absl::StrCat("etcd LeaseGrant ttl=", ttl_seconds, ": ",
                                            response.error()));
  }
  return response.id();
}

absl::Status Client::LeaseRevoke(int64_t lease) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseRevokeResponse response;
  return conn_->Call(absl::StrCat("etcd LeaseRevoke lease=", lease), Retry::kIdempotent,
                     [&](Endpoint& ep, grpc::ClientContext* ctx) {
                       return ep.lease->LeaseRevoke(ctx, request, &response);
                     });
}

absl::StatusOr<int64_t> Client::LeaseKeepAliveOnce(int64_t lease) {
  return KeepAliveOnce(*conn_, lease, absl::Now() + conn_->rpc_timeout(), nullptr);
}

absl::StatusOr<int64_t> Client::LeaseTimeToLive(int64_t lease) {
  etcdserverpb::LeaseTimeToLiveRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseTimeToLiveResponse response;
  RETURN_IF_ERROR(conn_->Call(absl::StrCat("etcd LeaseTimeToLive lease=", lease),
                              Retry::kIdempotent, [&](Endpoint& ep, grpc::ClientContext* ctx) {
                                response.Clear();
                                return ep.lease->LeaseTimeToLive(ctx, request, &response);
                              }));
  if (response.ttl() < 0) {
    return absl::NotFoundError(absl::StrCat("etcd lease ", lease, " expired or not found"));
  }
  return response.ttl();
}

}  // namespace weft::etcd
