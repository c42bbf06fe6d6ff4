// Time as the MDS core reads it: the real clock in the daemons, a clock the
// test moves by hand in the simulation (tests/sim), so that a seed replays
// the same run whatever the machine's speed.
#pragma once

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace weft {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
  int64_t NowMs() { return absl::ToUnixMillis(Now()); }
  int64_t NowNs() { return absl::ToUnixNanos(Now()); }

  // The process's real clock (absl::Now).
  static Clock* Real();
};

// Starts at a fixed time and moves only when told. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(absl::Time start = absl::FromUnixSeconds(1767225600))  // 2026-01-01
      : now_(start) {}

  absl::Time Now() override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }
  // Moves to `t` unless that is in the past.
  void AdvanceTo(absl::Time t) {
    absl::MutexLock lock(&mu_);
    if (t > now_) now_ = t;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft
