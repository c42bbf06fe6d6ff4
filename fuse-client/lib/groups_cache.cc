#include "fuse-client/lib/groups_cache.h"

#include <utility>

namespace weft::client {

std::vector<uint32_t> GroupsCache::Get(pid_t tid, uint32_t uid, uint32_t gid, absl::Time now,
                                       const std::function<std::vector<uint32_t>()>& fetch) {
  const Key key{tid, uid, gid};
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && now - it->second.fetched < ttl_) return it->second.groups;
  }
  std::vector<uint32_t> groups = fetch();  // no lock held: it reads /proc
  absl::MutexLock lock(&mu_);
  if (entries_.size() >= max_entries_) {
    absl::erase_if(entries_, [&](const auto& e) { return now - e.second.fetched >= ttl_; });
    if (entries_.size() >= max_entries_) entries_.clear();
  }
  entries_[key] = Entry{groups, now};
  return groups;
}

}  // namespace weft::client
