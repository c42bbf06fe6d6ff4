// LeaseKeeper: renews one lease from its own thread.
//
// The keeper tracks a conservative expiry: the time a renewal was *sent* plus
// the TTL etcd granted in answer. If no renewal succeeds before that instant
// the lease may be gone at etcd, so the owner is told it is lost even when
// etcd merely could not be reached (it must stop acting as the lease holder).
#include <algorithm>
#include <atomic>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/etcd/etcd_client.h"
#include "common/etcd/etcd_connection.h"
#include "common/log/log.h"

namespace weft::etcd {

struct LeaseKeeper::State {
  std::shared_ptr<Connection> conn;
  int64_t lease = 0;
  int64_t ttl_seconds = 0;
  std::function<void()> on_lost;
  Canceller canceller;  // Cancelled by ~LeaseKeeper.
  std::atomic<bool> alive{true};
  std::atomic<int64_t> expiry_ns{0};  // absl::ToUnixNanos of RunKeeper's `expiry`
};

namespace {

constexpr absl::Duration kMinInterval = absl::Milliseconds(100);
// Retry period after a failed renewal (each attempt already retried the
// endpoints until its own deadline).
constexpr absl::Duration kRetryInterval = absl::Milliseconds(200);

absl::Duration RenewInterval(int64_t ttl_seconds) {
  return std::max(absl::Seconds(ttl_seconds) / 3, kMinInterval);
}

void Lost(LeaseKeeper::State& s, absl::string_view why) {
  s.alive.store(false);
  if (s.canceller.cancelled()) return;
  LOG(WARNING) << "etcd lease lost lease=" << s.lease << " reason=\"" << why << "\"";
  s.on_lost();
}

void RunKeeper(std::shared_ptr<LeaseKeeper::State> s) {
  absl::Duration interval = RenewInterval(s->ttl_seconds);
  // The caller has just granted or renewed the lease.
  absl::Time expiry = absl::Now() + absl::Seconds(s->ttl_seconds);
  s->expiry_ns.store(absl::ToUnixNanos(expiry));
  absl::Duration wait = absl::ZeroDuration();  // Renew at once: refreshes `expiry`.
  while (!s->canceller.SleepFor(wait)) {
    const absl::Time sent = absl::Now();
    if (sent >= expiry) return Lost(*s, "no renewal succeeded within the TTL");
    const absl::Time deadline = std::min(sent + s->conn->rpc_timeout(), expiry);
    absl::StatusOr<int64_t> ttl = KeepAliveOnce(*s->conn, s->lease, deadline, &s->canceller);
    if (s->canceller.cancelled()) return;
    if (ttl.ok()) {
      expiry = sent + absl::Seconds(*ttl);
      s->expiry_ns.store(absl::ToUnixNanos(expiry));
      interval = RenewInterval(*ttl);
      wait = interval;
      VLOG(2) << "etcd lease renewed lease=" << s->lease << " ttl=" << *ttl;
      continue;
    }
    if (absl::IsNotFound(ttl.status())) return Lost(*s, ttl.status().message());
    LOG(WARNING) << "etcd lease renewal failed lease=" << s->lease
                 << " expires_in=" << (expiry - absl::Now()) << " error=\""
                 << ttl.status().message() << "\"";
    wait = std::min(kRetryInterval, interval);
  }
}

}  // namespace

LeaseKeeper::LeaseKeeper(std::shared_ptr<State> state, std::thread thread)
    : state_(std::move(state)), thread_(std::move(thread)) {}

LeaseKeeper::~LeaseKeeper() {
  state_->canceller.Cancel();
  // From inside on_lost the thread cannot join itself; it holds its own
  // reference to the state and returns right after on_lost.
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

int64_t LeaseKeeper::lease() const { return state_->lease; }
bool LeaseKeeper::alive() const { return state_->alive.load(); }
absl::Time LeaseKeeper::expiry() const {
  const int64_t ns = state_->expiry_ns.load();
  return ns == 0 ? absl::InfiniteFuture() : absl::FromUnixNanos(ns);
}

std::unique_ptr<LeaseKeeper> Client::KeepAlive(int64_t lease, int64_t ttl_seconds,
                                               std::function<void()> on_lost) {
  CHECK(ttl_seconds > 0) << "lease=" << lease << " ttl_seconds=" << ttl_seconds;
  auto state = std::make_shared<LeaseKeeper::State>();
  state->conn = conn_;
  state->lease = lease;
  state->ttl_seconds = ttl_seconds;
  state->on_lost = std::move(on_lost);
  state->expiry_ns.store(absl::ToUnixNanos(absl::Now() + absl::Seconds(ttl_seconds)));
  std::thread thread(RunKeeper, state);
  return std::make_unique<LeaseKeeper>(std::move(state), std::move(thread));
}

}  // namespace weft::etcd
