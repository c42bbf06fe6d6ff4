#include "fuse-client/fuse/kernel_names.h"

#include <algorithm>

namespace weft::fuse {
namespace {

// A revoke is remembered this long after its names are gone: far longer
// than a ticket lives (from deciding a reply's timeout to recording it).
constexpr absl::Duration kRevokeMemory = absl::Seconds(10);
constexpr absl::Duration kPruneEvery = absl::Seconds(1);

}  // namespace

KernelNames::Ticket KernelNames::Begin() {
  absl::MutexLock lock(&mu_);
  return revokes_;
}

bool KernelNames::Given(Ticket ticket, uint64_t dir, const std::string& name,
                        absl::Time expires) {
  absl::MutexLock lock(&mu_);
  PruneLocked(absl::Now());
  Dir& d = dirs_[dir];
  if (d.revoked > ticket) return false;
  absl::Time& until = d.names[name];
  until = std::max(until, expires);
  return true;
}

std::vector<std::string> KernelNames::Revoke(uint64_t dir, absl::Time now) {
  absl::MutexLock lock(&mu_);
  Dir& d = dirs_[dir];
  d.revoked = ++revokes_;
  d.revoked_at = now;
  std::vector<std::string> kept;
  for (const auto& [name, until] : d.names) {
    if (until > now) kept.push_back(name);
  }
  d.names.clear();
  return kept;
}

void KernelNames::Enter(uint64_t dir) {
  absl::MutexLock lock(&mu_);
  ++busy_[dir];
}

void KernelNames::Leave(uint64_t dir) {
  absl::MutexLock lock(&mu_);
  auto it = busy_.find(dir);
  if (it != busy_.end() && --it->second <= 0) busy_.erase(it);
}

bool KernelNames::Busy(uint64_t dir) {
  absl::MutexLock lock(&mu_);
  return busy_.contains(dir);
}

size_t KernelNames::size() {
  absl::MutexLock lock(&mu_);
  size_t n = 0;
  for (const auto& [dir, d] : dirs_) n += d.names.size();
  return n;
}

void KernelNames::PruneLocked(absl::Time now) {
  if (now - last_prune_ < kPruneEvery) return;
  last_prune_ = now;
  for (auto it = dirs_.begin(); it != dirs_.end();) {
    Dir& d = it->second;
    absl::erase_if(d.names, [now](const auto& kv) { return kv.second <= now; });
    auto here = it++;
    if (d.names.empty() && now - d.revoked_at > kRevokeMemory) dirs_.erase(here);
  }
}

}  // namespace weft::fuse
