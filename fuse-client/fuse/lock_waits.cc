#include "fuse-client/fuse/lock_waits.h"

#include <utility>

namespace weft::fuse {

bool LockWaits::Start(fuse_req_t req, Wait wait, Reply reply) {
  std::vector<std::thread> done;
  bool admitted = false;
  {
    absl::MutexLock lock(&mu_);
    done = TakeDoneLocked();
    admitted = !stopping_ && waits_.size() < max_waits_;
    if (admitted) waits_[req] = false;
  }
  for (std::thread& t : done) t.join();  // they only return
  if (!admitted) return false;
  // Outside mu_: libfuse calls OnInterrupt at once if the request was
  // interrupted already, and holds the request's lock while it runs.
  fuse_req_interrupt_func(req, &LockWaits::OnInterrupt, this);
  absl::MutexLock lock(&mu_);
  const uint64_t id = ++next_id_;
  threads_[id] = std::thread([this, id, req, wait = std::move(wait), reply = std::move(reply)] {
    Run(id, req, wait, reply);
  });
  return true;
}

void LockWaits::Run(uint64_t id, fuse_req_t req, const Wait& wait, const Reply& reply) {
  auto cancelled = [this, req] {
    absl::MutexLock lock(&mu_);
    auto it = waits_.find(req);
    return stopping_ || it == waits_.end() || it->second;
  };
  const absl::Status status = wait(cancelled);
  {
    absl::MutexLock lock(&mu_);
    waits_.erase(req);
  }
  reply(req, status);
  absl::MutexLock lock(&mu_);
  done_.push_back(id);
}

std::vector<std::thread> LockWaits::TakeDoneLocked() {
  // A thread is stored before it can take mu_ to say it is done.
  std::vector<std::thread> out;
  for (uint64_t id : done_) {
    auto it = threads_.find(id);
    if (it == threads_.end()) continue;
    out.push_back(std::move(it->second));
    threads_.erase(it);
  }
  done_.clear();
  return out;
}

void LockWaits::OnInterrupt(fuse_req_t req, void* self) {
  auto* waits = static_cast<LockWaits*>(self);
  absl::MutexLock lock(&waits->mu_);
  auto it = waits->waits_.find(req);
  if (it != waits->waits_.end()) it->second = true;
}

void LockWaits::Stop() {
  std::vector<std::thread> all;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [id, t] : threads_) all.push_back(std::move(t));
    threads_.clear();
    done_.clear();
  }
  for (std::thread& t : all) t.join();
}

size_t LockWaits::waiting() {
  absl::MutexLock lock(&mu_);
  return waits_.size();
}

}  // namespace weft::fuse
