// Keeps recovery and backfill within bounds on one OSD (docs/ARCHITECTURE.md,
// "Recovery bounds"): at most `max_active` objects in flight, at most
// `max_bytes_per_sec` moved (0: no limit), and client I/O first — before each
// piece, recovery waits (up to `client_wait_ms`) while client requests are
// being served. Objects move in pieces of osd_recovery_max_chunk, so memory is
// about max_active × piece (× (k+1)/k while rebuilding an erasure shard),
// whatever the object sizes.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace weft::osd {

class RecoveryThrottle {
 public:
  RecoveryThrottle(int max_active, uint64_t max_bytes_per_sec, int64_t client_wait_ms)
      : max_active_(max_active),
        max_bytes_per_sec_(max_bytes_per_sec),
        client_wait_(absl::Milliseconds(client_wait_ms)) {}

  // One object's recovery holds a slot for its whole transfer.
  class Slot {
   public:
    explicit Slot(RecoveryThrottle* t) : t_(t) {
      if (t_ != nullptr) t_->Acquire();
    }
    ~Slot() {
      if (t_ != nullptr) t_->Release();
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    RecoveryThrottle* t_;
  };

  // A client request in service (OsdDaemon::Op, RepOp) for its scope:
  // "client I/O first". Null: not counted (recovery's own reads).
  class ClientOp {
   public:
    explicit ClientOp(RecoveryThrottle* t) : t_(t) {
      if (t_ != nullptr) t_->client_ops_.fetch_add(1, std::memory_order_relaxed);
    }
    ~ClientOp() {
      if (t_ != nullptr) t_->client_ops_.fetch_sub(1, std::memory_order_relaxed);
    }
    ClientOp(const ClientOp&) = delete;
    ClientOp& operator=(const ClientOp&) = delete;

   private:
    RecoveryThrottle* t_;
  };

  // Before moving `bytes`: waits for the rate and for client requests.
  void Charge(uint64_t bytes);

  int active() {
    absl::MutexLock lock(&mu_);
    return active_;
  }
  // The most objects ever in flight at once (tests, metrics).
  int peak_active() {
    absl::MutexLock lock(&mu_);
    return peak_active_;
  }

 private:
  void Acquire();
  void Release();

  const int max_active_;
  const uint64_t max_bytes_per_sec_;
  const absl::Duration client_wait_;
  std::atomic<int64_t> client_ops_{0};

  absl::Mutex mu_;
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  int peak_active_ ABSL_GUARDED_BY(mu_) = 0;
  // Token bucket: the time at which everything charged so far has been paid.
  absl::Time paid_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace weft::osd
