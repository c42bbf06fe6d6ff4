// Supplementary groups of recent callers, so that not every FUSE request
// reads /proc/<tid>/status (fuse_req_getgroups: 12 % of weft-fuse's CPU in a
// create benchmark, more than any other single cost).
//
// An entry is keyed by thread id, uid and gid and lives `ttl` (default 1 s).
// Only a privileged process can change its groups without changing its uid
// or gid; every other change (su, sudo, newgrp, a new process on a reused
// thread id) changes the key and misses. A privileged process that drops
// groups and stays root is still root to the MDS.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace weft::client {

class GroupsCache {
 public:
  explicit GroupsCache(absl::Duration ttl = absl::Seconds(1), size_t max_entries = 4096)
      : ttl_(ttl), max_entries_(max_entries) {}

  // The groups of (tid, uid, gid): cached ones younger than the TTL, else
  // what `fetch` returns (then cached).
  std::vector<uint32_t> Get(pid_t tid, uint32_t uid, uint32_t gid, absl::Time now,
                            const std::function<std::vector<uint32_t>()>& fetch);

 private:
  struct Key {
    pid_t tid;
    uint32_t uid;
    uint32_t gid;
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.tid, k.uid, k.gid);
    }
  };
  struct Entry {
    std::vector<uint32_t> groups;
    absl::Time fetched;
  };

  const absl::Duration ttl_;
  const size_t max_entries_;
  absl::Mutex mu_;
  absl::flat_hash_map<Key, Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::client
