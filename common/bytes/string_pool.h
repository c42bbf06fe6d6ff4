// Large strings kept for reuse, so that a buffer read into again and again is
// not zero-filled each time: std::string cannot grow without writing every new
// byte (C++20 has no resize_and_overwrite), and for an OSD answering 4 MiB
// reads that fill was ~6% of the machine's CPU (docs/ARCHITECTURE.md, Copies
// on the read path). Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace weft {

class StringPool {
 public:
  // Keeps strings of capacity [min_capacity, max_capacity], at most
  // max_bytes of capacity in all.
  StringPool(size_t min_capacity, size_t max_capacity, size_t max_bytes)
      : min_capacity_(min_capacity), max_capacity_(max_capacity), max_bytes_(max_bytes) {}

  // A string of size `size` whose bytes are whatever a kept string held
  // (zeros where it grew): the caller overwrites them or cuts them off, and
  // never lets them out. Sizes below min_capacity get a new string.
  std::string Take(size_t size);
  // Keeps `s` if its capacity is in range and there is room; otherwise
  // leaves it as it was, to be freed by the caller.
  void Give(std::string&& s);

  size_t kept_bytes() const;

 private:
  const size_t min_capacity_, max_capacity_, max_bytes_;
  mutable absl::Mutex mu_;
  std::vector<std::string> kept_ ABSL_GUARDED_BY(mu_);
  size_t kept_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace weft
