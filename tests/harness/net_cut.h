// Cuts processes off the network without a reset, as a pulled cable or a
// firewall would: the processes started in a NetCut's cgroup (a cgroup v2
// group of its own, Process::Spawn's `cgroup_procs`) lose every packet they
// send or would receive while Cut() stands (nftables rules on the socket's
// cgroup, both ways); Heal() lets them through again. Their TCP connections
// stay open and simply stop moving, so nobody gets an error until its own
// timeouts fire.
//
// Needs root, a cgroup2 mount and nft (Debian's nftables). Available() says
// whether this machine can do it, and why not.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace weft::testing {

class NetCut {
 public:
  NetCut();  // the cgroup and an nftables table of its own, with no rule yet
  ~NetCut();  // heals, moves what is left to the root group, removes both
  NetCut(const NetCut&) = delete;
  NetCut& operator=(const NetCut&) = delete;

  // OK, or why this machine cannot cut processes off.
  const absl::Status& Available() const { return available_; }
  // The cgroup.procs file a child writes "0" into to join the group.
  const std::string& cgroup_procs() const { return procs_; }
  absl::Status Cut();
  absl::Status Heal();

 private:
  absl::Status Nft(const std::string& script);

  absl::Status available_;
  std::string dir_;    // the cgroup's directory
  std::string procs_;  // dir_/cgroup.procs
  std::string root_procs_;
  std::string table_;  // the nftables table (family inet)
  std::string rules_;  // what Cut() adds
  bool cut_ = false;
};

}  // namespace weft::testing
