#include "osd/recovery_throttle.h"

#include <algorithm>

#include "absl/time/clock.h"

namespace weft::osd {

void RecoveryThrottle::Acquire() {
  absl::MutexLock lock(&mu_);
  auto free = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return active_ < max_active_; };
  mu_.Await(absl::Condition(&free));
  ++active_;
  peak_active_ = std::max(peak_active_, active_);
}

void RecoveryThrottle::Release() {
  absl::MutexLock lock(&mu_);
  --active_;
}

void RecoveryThrottle::Charge(uint64_t bytes) {
  // Client I/O first: a piece waits while clients are being served, up to
  // client_wait_ (then it goes anyway, so recovery never starves).
  const absl::Time give_up = absl::Now() + client_wait_;
  while (client_ops_.load(std::memory_order_relaxed) > 0 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  if (max_bytes_per_sec_ == 0 || bytes == 0) return;
  absl::Time wake;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    // At most a second of unused allowance carries over (the bucket's depth).
    paid_until_ = std::max(paid_until_, now - absl::Seconds(1));
    paid_until_ += absl::Seconds(static_cast<double>(bytes) / max_bytes_per_sec_);
    wake = paid_until_;
  }
  const absl::Duration wait = wake - absl::Now();
  if (wait > absl::ZeroDuration()) absl::SleepFor(wait);
}

}  // namespace weft::osd
