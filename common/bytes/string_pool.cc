#include "common/bytes/string_pool.h"

#include <utility>

namespace weft {

std::string StringPool::Take(size_t size) {
  std::string out;
  if (size >= min_capacity_) {  // a small one is not worth a large buffer
    absl::MutexLock lock(&mu_);
    // The last kept string that is large enough: the most recently used,
    // so the likeliest to be in cache.
    for (size_t i = kept_.size(); i-- > 0;) {
      if (kept_[i].capacity() < size) continue;
      std::swap(kept_[i], kept_.back());
      out = std::move(kept_.back());
      kept_.pop_back();
      kept_bytes_ -= out.capacity();
      break;
    }
  }
  out.resize(size);  // fills only past the kept size; never reallocates a kept one
  return out;
}

void StringPool::Give(std::string&& s) {
  const size_t capacity = s.capacity();
  if (capacity < min_capacity_ || capacity > max_capacity_) return;
  absl::MutexLock lock(&mu_);
  if (kept_bytes_ + capacity > max_bytes_) return;
  kept_bytes_ += capacity;
  kept_.push_back(std::move(s));
}

size_t StringPool::kept_bytes() const {
  absl::MutexLock lock(&mu_);
  return kept_bytes_;
}

}  // namespace weft
