#include "common/executor/thread_pool.h"

#include <pthread.h>

namespace weft {

ThreadPool::ThreadPool(std::string name, int threads, size_t max_queued)
    : name_(std::move(name)), max_queued_(max_queued) {
  threads_.reserve(threads);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Run(); });
}

ThreadPool::~ThreadPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (auto& t : threads_) t.join();
}

void ThreadPool::Submit(std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  auto has_room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return queue_.size() < max_queued_ || stopping_;
  };
  mu_.Await(absl::Condition(&has_room));
  if (cancelled_) return;
  queue_.push_back(std::move(fn));
}

void ThreadPool::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  queue_.clear();
}

size_t ThreadPool::queued() {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

void ThreadPool::Run() {
  // Named for top -H, perf and gdb (the kernel keeps 15 characters).
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  for (;;) {
    std::function<void()> fn;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
    fn();
  }
}

}  // namespace weft
