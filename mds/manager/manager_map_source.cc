#include "mds/manager/manager_map_source.h"

namespace weft::mds {

absl::StatusOr<std::shared_ptr<const OsdMap>> ManagerMapSource::Fetch() {
  std::shared_ptr<const OsdMap> map = manager_->map();
  if (map == nullptr) return absl::UnavailableError("the map manager has no map yet");
  return map;
}

void ManagerMapSource::Follow(const std::function<Epoch()>& have, const Install& install) {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    // Returns within a second, so that Stop() is noticed.
    std::shared_ptr<const OsdMap> map = manager_->WaitNewer(have(), absl::Seconds(1));
    if (map != nullptr) {
      install(std::move(map));
      continue;
    }
    // None in a second, or the manager stopped (then WaitNewer returns at
    // once): no spinning until our own Stop().
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(100));
  }
}

void ManagerMapSource::Stop() {
  absl::MutexLock lock(&mu_);
  stopping_ = true;
}

}  // namespace weft::mds
