// A fixed pool of threads running queued closures. Blocking work (fsync,
// LevelDB sync writes, waiting on peers) runs here, never on gRPC's reactor
// threads. The queue is bounded by `max_queued`: Submit blocks when it is full,
// which pushes back on the callers instead of growing memory.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace weft {

class ThreadPool {
 public:
  ThreadPool(std::string name, int threads, size_t max_queued);
  ~ThreadPool();  // runs what is queued, then joins
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Submit(std::function<void()> fn);
  // Drops every queued closure that has not started, and any submitted later.
  // For shutdown: queued peering or recovery is pointless once the daemon stops.
  void Cancel();
  size_t queued();

 private:
  void Run();

  const std::string name_;
  const size_t max_queued_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace weft
