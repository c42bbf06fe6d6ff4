// Lock requests that wait (F_SETLKW, flock without LOCK_NB), each on a
// thread of its own rather than a FUSE worker: libfuse runs at most ten
// workers, and ten processes waiting for locks would leave none for the
// unlock that lets them go. A wait ends when its lock is granted, with an
// error, when the kernel interrupts the request (a signal to the waiting
// process), or at Stop().
#pragma once

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace weft::fuse {

class LockWaits {
 public:
  // `cancelled` turns true once the request is interrupted or the mount stops.
  using Wait = std::function<absl::Status(const std::function<bool()>& cancelled)>;
  // Answers the request with the wait's outcome.
  using Reply = std::function<void(fuse_req_t req, const absl::Status& status)>;

  explicit LockWaits(size_t max_waits = 1024) : max_waits_(max_waits) {}
  ~LockWaits() { Stop(); }

  // Runs `wait` on a new thread, then `reply`. False, with nothing started,
  // when max_waits are waiting already or Stop() was called: the caller
  // answers (ENOLCK).
  bool Start(fuse_req_t req, Wait wait, Reply reply);
  // Cancels every wait, which then replies, and returns once all have.
  void Stop();
  size_t waiting();

 private:
  static void OnInterrupt(fuse_req_t req, void* self);
  void Run(uint64_t id, fuse_req_t req, const Wait& wait, const Reply& reply);
  // Threads that finished, to join (under mu_: moved out, joined outside).
  std::vector<std::thread> TakeDoneLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_waits_;
  absl::Mutex mu_;
  // Requests waiting -> interrupted. A request is removed before its reply,
  // so an interrupt that comes later finds nothing (libfuse keeps the
  // request alive while the callback runs).
  absl::flat_hash_map<fuse_req_t, bool> waits_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> done_ ABSL_GUARDED_BY(mu_);  // finished, not joined
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace weft::fuse
