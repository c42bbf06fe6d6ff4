#include "fuse-client/lib/dir_stream.h"

#include <utility>

namespace weft::client {

void DirStream::Keep(uint64_t off, DirPage rest, absl::Time fetched, uint64_t changes) {
  absl::MutexLock lock(&mu_);
  kept_ = Kept{std::move(rest), fetched, changes};
  off_ = off;
}

std::optional<DirStream::Kept> DirStream::Take(uint64_t off, absl::Time now,
                                               uint64_t changes) {
  absl::MutexLock lock(&mu_);
  std::optional<Kept> kept = std::exchange(kept_, std::nullopt);
  if (!kept.has_value() || off != off_ || now - kept->fetched >= max_age_ ||
      kept->changes != changes) {
    return std::nullopt;
  }
  return kept;
}

}  // namespace weft::client
