// Which names the kernel keeps without asking, per directory, and until
// when. The kernel walks through a name it keeps (an entry with a timeout)
// without a request, so another mount's rename or unlink would not reach
// it: an open through the old name would land on the old inode. So
// weft-fuse gives the kernel a name for as long as its session holds the
// directory's lease (FileSystemClient::DirLeaseRemaining, at most
// kAttrTimeoutS), records it here once the kernel has it, and when the
// lease is revoked expires every name it gave under it that has not run
// out, before the revoke is acknowledged (fuse_ops.cc, OnDirRevoked). No
// libfuse here, so unit tests link it.
//
//   KernelNames names;
//   KernelNames::Ticket t = names.Begin();       // before deciding a timeout
//   ...reply to the kernel: "a" in dir 7, for 1 s...
//   if (!names.Given(t, 7, "a", now + 1s)) ...   // revoked meanwhile: expire "a" now
//   names.Revoke(7, now);                        // {"a"}: expire these, then acknowledge
//
// A revoke must not wait for a kernel request that holds the directory
// locked (a create in it, a chmod of it) while the MDS holds that request
// for the revoke: Enter/Leave mark such requests of this mount, and Busy
// says whether one is under way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace weft::fuse {

class KernelNames {
 public:
  using Ticket = uint64_t;

  // Taken before a name's timeout is decided from the lease.
  Ticket Begin();
  // The kernel has `name` in `dir` until `expires`. False (nothing
  // recorded) when `dir` was revoked since `ticket` was taken: the lease the
  // timeout came from may be gone, and the caller expires the name itself.
  bool Given(Ticket ticket, uint64_t dir, const std::string& name, absl::Time expires);
  // The lease on `dir` is revoked: the names the kernel may still keep
  // there, forgotten here.
  std::vector<std::string> Revoke(uint64_t dir, absl::Time now);

  void Enter(uint64_t dir);
  void Leave(uint64_t dir);
  bool Busy(uint64_t dir);

  size_t size();  // names recorded (tests)

 private:
  struct Dir {
    absl::flat_hash_map<std::string, absl::Time> names;  // name -> when the kernel's runs out
    uint64_t revoked = 0;                                // revokes_ at its last revoke
    absl::Time revoked_at;
  };
  void PruneLocked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  uint64_t revokes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, Dir> dirs_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, int> busy_ ABSL_GUARDED_BY(mu_);
  absl::Time last_prune_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::fuse
