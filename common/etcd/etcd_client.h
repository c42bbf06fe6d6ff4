// A small etcd v3 client over gRPC: KV (get/put/delete/txn), leases with a
// background keeper, and resumable watches. It speaks the subset of etcd's API
// declared in proto/etcd/rpc.proto; no proto type appears in this header.
//
// Failure model, which every caller relies on:
//  - Every unary RPC has a deadline (RpcTimeout(), default 5 s) covering all its
//    attempts. On UNAVAILABLE the call moves to the next endpoint and, once all
//    endpoints have failed, retries with a short backoff until the deadline.
//  - Put, Delete, Range and lease calls are retried even if the failed attempt may
//    have reached etcd (repeating them leaves the same state). Txn is not: it is
//    only re-sent when the failed attempt cannot have left this process (the
//    endpoint was not connected); otherwise it fails with kUnavailable and
//    "outcome unknown", and the caller must re-read before deciding (a Txn that
//    fails with kDeadlineExceeded is just as unknown).
//  - gRPC errors become absl::Status with the same code and a message naming the
//    operation and the endpoint. etcd's own errors keep their text, e.g.
//    kOutOfRange "etcdserver: mvcc: required revision has been compacted".
//
// Thread safety: Client is thread-safe. Watch and LeaseKeeper run their callbacks
// on their own thread. They share the Client's connections, so they may outlive
// it (destroying them first is still the tidy order).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace weft::etcd {

class Connection;  // Endpoints, channels and the retry loop (etcd_connection.h).

struct KeyValue {
  std::string key, value;
  int64_t create_revision = 0, mod_revision = 0, version = 0, lease = 0;
};

struct RangeResult {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;  // Store revision at which the range was read.
  bool more = false;     // True if `limit` cut the result short.
  int64_t count = 0;     // Keys in the range, regardless of `limit`.
};

// One condition of a Txn. All conditions must hold for the success branch.
// A key that does not exist has version, create_revision, mod_revision and lease
// 0, so Compare::CreateRevision(key, Compare::kEqual, 0) means "key is absent".
// A Value comparison on an absent key is false whatever the operator.
struct Compare {
  enum Target { kVersion, kCreateRevision, kModRevision, kValue, kLease };
  enum Result { kEqual, kNotEqual, kLess, kGreater };

  static Compare Version(absl::string_view key, Result result, int64_t version);
  static Compare CreateRevision(absl::string_view key, Result result, int64_t revision);
  static Compare ModRevision(absl::string_view key, Result result, int64_t revision);
  static Compare Value(absl::string_view key, Result result, absl::string_view value);
  static Compare Lease(absl::string_view key, Result result, int64_t lease);

  Target target = kVersion;
  Result result = kEqual;
  std::string key;
  std::string range_end;  // Empty = only `key`; else every key in [key, range_end).
  int64_t number = 0;     // For every target but kValue.
  std::string value;      // For kValue.
};

// One operation of a Txn branch.
struct Op {
  enum Type { kGet, kPut, kDelete };

  static Op Get(absl::string_view key);
  static Op GetPrefix(absl::string_view prefix, int64_t limit = 0);
  static Op Put(absl::string_view key, absl::string_view value, int64_t lease = 0);
  static Op Delete(absl::string_view key);
  static Op DeletePrefix(absl::string_view prefix);

  Type type = kGet;
  std::string key;
  std::string range_end;  // Empty = only `key`.
  std::string value;      // kPut only.
  int64_t lease = 0;      // kPut only.
  int64_t limit = 0;      // kGet only; 0 = no limit.
};

struct TxnResult {
  bool succeeded = false;  // Whether the compares held (success branch ran).
  int64_t revision = 0;    // Store revision after the txn.
  std::vector<RangeResult> ranges;  // Results of the Get ops of the branch taken, in order.
};

struct WatchEvent {
  enum Type { kPut, kDelete } type = kPut;
  // For kDelete: key, and mod_revision = the revision of the deletion.
  KeyValue kv;
};

// The end of the key range holding every key that starts with `prefix`: the
// prefix with its last byte below 0xff incremented and what follows dropped.
// "\0" (every key) when the prefix is empty or all 0xff.
std::string PrefixEnd(absl::string_view prefix);

// Keeps one lease alive from its own thread until destroyed. Destroying it stops
// the keep-alives and joins the thread, but does not revoke the lease: it then
// expires after its TTL unless the caller revokes it.
class LeaseKeeper {
 public:
  struct State;  // Internal; made by Client::KeepAlive.
  LeaseKeeper(std::shared_ptr<State> state, std::thread thread);
  // May be called from inside on_lost (the thread is then detached, and exits
  // as soon as on_lost returns). After it returns on_lost is never called.
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  int64_t lease() const;
  // False once the lease is considered lost (on_lost has been or is being called).
  bool alive() const;
  // When the lease runs out at the latest unless renewed again: the send time
  // of the last successful renewal plus its TTL, by this host's clock (etcd
  // counts from when it got the renewal, which is later). A holder that must
  // not act on a lease etcd may have dropped checks it against absl::Now():
  // a process that was frozen sees it passed the moment it runs again.
  absl::Time expiry() const;

 private:
  std::shared_ptr<State> state_;
  std::thread thread_;
};

// A watch on a key range, delivering events on its own thread. Destroying it
// cancels the stream and joins the thread; after the destructor returns no
// callback runs. The destructor may be called from inside on_events or on_error:
// the thread is then detached and exits when the callback returns, without
// delivering anything more. It must not be called while holding a lock that a
// callback takes (from any other thread, it waits for a running callback).
class Watch {
 public:
  struct State;  // Internal; made by Client::WatchRange.
  Watch(std::shared_ptr<State> state, std::thread thread);
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

  // The revision the next delivered event will have at least (0 if the watch
  // started "now" and is not yet created). Events below it have been delivered.
  int64_t next_revision() const;

 private:
  std::shared_ptr<State> state_;
  std::thread thread_;
};

class Client {
 public:
  // Connects to any of `endpoints` ("host:port", an "http://" prefix is
  // accepted). Fails with kUnavailable and a one-line message naming the
  // endpoints if none answers a linearizable read within `timeout`, and with
  // kInvalidArgument if `endpoints` is empty.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(std::vector<std::string> endpoints,
                                                         absl::Duration timeout);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // The deadline of each unary call, all attempts included. Default 5 s.
  void SetRpcTimeout(absl::Duration timeout);
  absl::Duration RpcTimeout() const;
  // The endpoints, and the one calls currently go to first.
  const std::vector<std::string>& endpoints() const;
  std::string CurrentEndpoint() const;

  // Reads. An absent key yields an empty `kvs`, not an error.
  absl::StatusOr<RangeResult> Get(absl::string_view key);
  absl::StatusOr<RangeResult> GetPrefix(absl::string_view prefix, int64_t limit = 0);
  // [key, range_end) at `revision` (<= 0 = newest). kOutOfRange if compacted.
  absl::StatusOr<RangeResult> Range(absl::string_view key, absl::string_view range_end,
                                    int64_t limit, int64_t revision);

  // Returns the store revision of the write.
  absl::StatusOr<int64_t> Put(absl::string_view key, absl::string_view value, int64_t lease = 0);
  // Return the number of keys deleted (0 if none matched).
  absl::StatusOr<int64_t> Delete(absl::string_view key);
  absl::StatusOr<int64_t> DeletePrefix(absl::string_view prefix);

  // Atomically: if every compare holds run `success`, else `failure`. See the
  // header comment for why a Txn is never blindly retried.
  absl::StatusOr<TxnResult> Txn(const std::vector<Compare>& compares,
                                const std::vector<Op>& success, const std::vector<Op>& failure);

  // Drops history before `revision` (waits until applied). Watches and reads at
  // older revisions then fail with kOutOfRange.
  absl::Status Compact(int64_t revision);

  // Returns the lease id. etcd may raise a TTL below its minimum (about 1-2 s).
  absl::StatusOr<int64_t> LeaseGrant(int64_t ttl_seconds);
  // Deletes every key bound to the lease. kNotFound if the lease does not exist.
  absl::Status LeaseRevoke(int64_t lease);
  // Renews the lease once; returns the new TTL in seconds. kNotFound if expired.
  absl::StatusOr<int64_t> LeaseKeepAliveOnce(int64_t lease);
  // Remaining TTL in seconds, without renewing. kNotFound if expired.
  absl::StatusOr<int64_t> LeaseTimeToLive(int64_t lease);

  // Keeps `lease` (granted with `ttl_seconds` > 0) alive from its own thread,
  // renewing at once and then every ttl/3 (retrying sooner after failures). If
  // the lease is lost (etcd says it no longer exists, or no renewal succeeded
  // within the TTL, e.g. etcd unreachable) calls `on_lost` once, from the
  // keeper's thread, and stops.
  std::unique_ptr<LeaseKeeper> KeepAlive(int64_t lease, int64_t ttl_seconds,
                                         std::function<void()> on_lost);

  // Watches [key, range_end) (empty range_end = just `key`; PrefixEnd(p) for a
  // prefix) from `start_revision` (0 = from now). Each etcd response is delivered
  // as one call of on_events, in revision order; all events of one revision come
  // in the same call. When the stream breaks, the watch reconnects (any endpoint,
  // with backoff, indefinitely) and resumes from the last delivered revision + 1,
  // so no event is lost or repeated. If that revision was compacted, on_error
  // gets kOutOfRange and the watch stops: the caller re-reads and watches again.
  // Other non-retryable failures also end in one on_error call.
  std::unique_ptr<Watch> WatchRange(absl::string_view key, absl::string_view range_end,
                                    int64_t start_revision,
                                    std::function<void(const std::vector<WatchEvent>&)> on_events,
                                    std::function<void(const absl::Status&)> on_error);

 private:
  explicit Client(std::shared_ptr<Connection> conn);

  // Shared with every Watch and LeaseKeeper thread, so that a detached thread
  // never touches a destroyed Client.
  std::shared_ptr<Connection> conn_;
};

}  // namespace weft::etcd
