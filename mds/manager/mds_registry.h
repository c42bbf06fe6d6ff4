// Which MDS daemons are alive: each registers /weft/<fsid>/alive/mds.NAME
// (a pb::MdsAlive: name, address, object client) bound to its own etcd
// lease, separate from map-manager leadership, with a short TTL
// (mds_beacon_grace, default 4 s), so that a dead or frozen daemon's record
// is gone within seconds and the map manager hands its ranks to a standby.
// Every daemon watches all the records: the map manager to assign ranks,
// any daemon to answer FsList with the standbys.
//
// A daemon holding a rank may serve only while its own record surely
// stands (Trusted: before the lease's expiry by the keeper's last renewal):
// after that the map manager may have fenced it and handed its rank on. A
// daemon that finds its lease lost (frozen past the TTL, or cut off from
// etcd) is told through on_lost; weft-mds then starts over as a standby.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/etcd/etcd_client.h"
#include "proto/cluster.pb.h"

namespace weft::mds {

class MdsRegistry {
 public:
  // `self.name`, `self.addr` and `self.client` must be set; `ttl_s` >= 1.
  MdsRegistry(etcd::Client* etcd, const std::string& fsid, pb::MdsAlive self, int64_t ttl_s);
  ~MdsRegistry();

  // Creates this daemon's record if no daemon of its name has one. A record
  // left by an earlier life of this name (killed, not stopped) runs out
  // within the TTL, so Register waits that long for it; a record still
  // renewed after that belongs to a running daemon: AlreadyExists, with its
  // address. Then follows every daemon's record. `on_lost` is called once,
  // from the keeper's thread, if the lease is lost.
  absl::Status Register(std::function<void()> on_lost);
  // Revokes the lease: the record goes at once (a clean stop needs no TTL).
  void Stop();

  const pb::MdsAlive& self() const { return self_; }
  // Whether this daemon's record surely still stands now.
  bool Trusted() const;
  // The live daemons, by name (this one included once registered).
  std::vector<pb::MdsAlive> daemons();
  // The record of `name`, if alive.
  std::optional<pb::MdsAlive> Find(const std::string& name);
  // Bumped whenever a record appears or goes; WaitChange waits up to
  // `timeout` for a generation above `seen` and returns the current one.
  uint64_t generation();
  uint64_t WaitChange(uint64_t seen, absl::Duration timeout);

  static std::string KeyOf(const std::string& fsid, const std::string& name);

 private:
  void OnEvents(const std::vector<etcd::WatchEvent>& events);
  absl::Status Reload();

  etcd::Client* const etcd_;
  const std::string prefix_;  // /weft/<fsid>/alive/mds.
  const pb::MdsAlive self_;
  const int64_t ttl_s_;

  mutable absl::Mutex mu_;
  std::map<std::string, pb::MdsAlive> alive_ ABSL_GUARDED_BY(mu_);  // by key
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t lease_ = 0;
  std::atomic<bool> stopped_{false};
  // Set by Register, reset only by the destructor (Trusted reads it).
  std::unique_ptr<etcd::LeaseKeeper> keeper_;
  std::unique_ptr<etcd::Watch> watch_;
};

}  // namespace weft::mds
