// Advisory file locks for one MDS session: POSIX byte-range (fcntl) locks
// and flock locks, decided by the MDS for every client of the filesystem
// (proto LockOp), so that processes on different mounts exclude each other
// as processes on one host do.
//
// The client keeps a copy of what the MDS granted it (a LockTable), for two
// things: a restarted MDS gets the session's locks back from it
// (MetaClient's reconnect), and a close that holds no lock costs no MDS
// call. What the MDS could not give back, or a session the MDS lost, is
// logged and dropped from the copy: POSIX has no way to tell the holder.
//
// Thread-safe. No lock is held across an RPC.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/locks/lock_table.h"
#include "fuse-client/lib/meta_client.h"

namespace weft::client {

class FileLocks {
 public:
  // Registers with `meta` what its reconnect needs; `meta` outlives this.
  explicit FileLocks(MetaClient* meta);
  ~FileLocks();  // unregisters from `meta`

  // What a frontend asks is a locks::Lock whose owner.id is its lock owner
  // (per process for POSIX locks, per open file description for flock and
  // OFD locks), unique within the mount; owner.session is left 0 (the MDS
  // puts this session's). The MDS checks the range, kind and type (EINVAL).

  // F_GETLK: the first lock of anyone else in the way of `want` (its
  // owner's session tells whether it is this mount's), or a lock of type
  // kUnlock.
  absl::StatusOr<locks::Lock> Test(const locks::Lock& want);
  // F_SETLK / F_SETLKW, flock(2): takes the lock (or removes the range, for
  // kUnlock), which came through open file `fh` (0: none; see
  // ReleaseHandle). Without `wait`, EAGAIN if another owner holds a
  // conflicting lock. With it, waits until the lock is granted; EDEADLK if
  // waiting would deadlock; EINTR once `cancelled` returns true (asked every
  // few seconds and whenever the MDS answers).
  absl::Status Set(const locks::Lock& want, uint64_t fh, bool wait,
                   const std::function<bool()>& cancelled);
  // Drops every lock of `owner` of `kind` on `ino` (close for POSIX locks,
  // the last release of an open file description for flock). No MDS call
  // when this client holds none.
  absl::Status DropOwner(uint64_t ino, locks::Kind kind, uint64_t owner);
  // The last release of open file `fh` of `ino`: drops the POSIX-kind
  // locks of every owner that took locks on `ino` through `fh` alone. Those
  // are open file description (OFD, F_OFD_SETLK) locks, whose owner is the
  // description: a process's own POSIX locks went with the close of each of
  // its descriptors (DropOwner), and the kernel neither releases OFD locks
  // of a FUSE file itself nor names their owner at release.
  absl::Status ReleaseHandle(uint64_t ino, uint64_t fh);

  // How long one MDS call of a waiting Set waits there.
  static constexpr uint32_t kWaitSliceMs = 3000;

 private:
  absl::StatusOr<pb::MetaReply> Call(pb::LockOp op);
  std::vector<pb::LockInfo> HeldLocks();
  void Lost(const std::vector<pb::LockInfo>& lost);

  MetaClient* const meta_;
  absl::Mutex mu_;
  // Owners are (0, frontend owner): one session.
  locks::LockTable held_ ABSL_GUARDED_BY(mu_);
  // ino -> owner -> the open files its POSIX locks came through, until the
  // owner's close (DropOwner) or the release of the last of them.
  using Via = absl::flat_hash_map<uint64_t, absl::flat_hash_set<uint64_t>>;
  absl::flat_hash_map<uint64_t, Via> via_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::client
