// The FUSE low-level operations of weft-fuse: thin adapters from FUSE
// requests to client::FileSystemClient. Each takes the caller's identity from
// the request (fuse_req_ctx, and fuse_req_getgroups through a 1 s cache,
// client/groups_cache.h), calls the client, and
// replies; errno is chosen in exactly one place, ReplyError(), with
// weft::StatusToErrno. No lock of this file is held while replying.
//
// Inode numbers: FUSE's root (1) is the mount's base directory (the
// filesystem root, or subdir=); every other inode number is the MDS's own.
// The kernel's lookup counts are kept by FileSystemClient (Remember/Forget).
//
// Kernel caching: an inode's attributes while this mount holds its attribute
// cap (revoked with an invalidation, OnAttrsRevoked); page cache dropped at
// every open (close-to-open), no writeback cache. Names are kept by the kernel only under the directory's lease
// (KernelNames): for at most kAttrTimeoutS and the lease's remaining time,
// and expired in the kernel when the lease is revoked, before the revoke is
// acknowledged, so a name another mount renames or removes is never reached
// through this one afterwards. Permissions are checked by the MDS (and the
// client under leases) and by the kernel (POSIX ACLs, which imply
// default_permissions: the only check of an open of a FIFO, socket or
// device node), from the attributes and ACLs it holds under the mount's
// caps; the getattr of a directory it makes after each create or unlink in
// it is answered from the attributes the reply brought. So names are given
// to the kernel in any directory under its lease. Only on a kernel without
// POSIX ACLs: names only in directories every caller may search, else for
// 0 s (each walk through them asks), and a directory of this mount that
// stops being searchable by all has its names dropped from the kernel at
// once (KernelPlaces). A change of an inode's attributes made through another
// mount reaches the kernel's before the change is answered.
#pragma once

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/executor/thread_pool.h"
#include "fuse-client/fuse/kernel_places.h"
#include "fuse-client/fuse/lock_waits.h"
#include "fuse-client/fuse/kernel_names.h"
#include "fuse-client/lib/dir_stream.h"
#include "fuse-client/lib/file_system_client.h"
#include "fuse-client/lib/groups_cache.h"

namespace weft::fuse {

inline constexpr double kAttrTimeoutS = 1.0;
inline constexpr unsigned kMaxWriteBytes = 1u << 20;  // max_pages 256

struct MountContext {
  client::FileSystemClient* fs = nullptr;
  uint64_t base_ino = 1;  // the MDS inode mounted as FUSE's root
  client::GroupsCache groups;  // callers' supplementary groups, briefly
  fuse_session* se = nullptr;  // for notifications to the kernel
  // Files opened for writing bypass the kernel's page cache (the daemon
  // buffers writes itself): asked for with the mount option direct_writes
  // (default on), granted in INIT when the kernel can still map such files
  // shared (RequestDirectIoMmap).
  bool want_direct_writes = true;
  bool direct_writes = false;
  // The kernel checks permissions itself (granted FUSE_CAP_POSIX_ACL, which
  // turns on default_permissions): it may keep names in any directory, as
  // it checks search permission on each walk.
  bool kernel_permissions = false;
  KernelPlaces places;
  KernelNames names;
  // Changes to directories through this mount and revokes of their leases:
  // what an open directory kept of a READDIR page is not used past one.
  client::DirChanges dir_changes;
  // Expires names of revoked directories in the kernel (a notification may
  // wait for a request of this mount holding the directory). Started once
  // the daemon has detached (threads do not survive a fork).
  std::unique_ptr<ThreadPool> expirer;
  // Drops from the kernel the files whose caps a recall for memory took
  // (OnCapsGivenBack): apart from the expirer, so that a large recall does
  // not hold up the names a revoke expires.
  std::unique_ptr<ThreadPool> trimmer;
  // POSIX and flock locks through the MDS, across every mount (mount option
  // locks=cluster, the default), or the kernel's own per mount
  // (locks=local). Decided in INIT: remote_posix_locks says whether close
  // must release POSIX locks (a FLUSH for every close, reads included).
  bool want_cluster_locks = true;
  bool remote_posix_locks = false;
  // Lock requests that wait; started with the expirer.
  std::unique_ptr<LockWaits> lock_waits;
};

// The operation table; userdata of the session is a MountContext*.
const fuse_lowlevel_ops& Operations();

// The lease on `dir` (MDS inode) was revoked: the names the kernel keeps in
// it are expired before this returns, unless a request of this mount holds
// the directory in the kernel (then right after it), or that takes longer
// than a second. For FileSystemClient::SetDirRevoked.
void OnDirRevoked(MountContext& ctx, uint64_t dir);
// An attribute cap of this mount on `ino` (MDS inode) was revoked: the
// kernel's attributes of it are invalidated before the revoke is
// acknowledged. Takes no lock the kernel holds for a request.
void OnAttrsRevoked(MountContext& ctx, uint64_t ino);
// A recall for memory took this mount's caps on `inos` (MDS inodes): the
// kernel forgets those it may, on the trimmer: files not open here, by
// dropping the name it has them under. Its FORGETs then let them go from
// the mount's inode table too. Directories stay (a process inside one would
// see its path "(deleted)"), as do open files (the same in /proc/PID/fd).
// For FileSystemClient::SetCapsGivenBack.
void OnCapsGivenBack(MountContext& ctx, std::vector<uint64_t> inos);
// Another session changed the data of file `ino`, now `size` bytes ending
// in `tail`: the kernel's pages of it go, and the kernel's size is raised to
// `size` if it grew (a mapping faults past the size the kernel knows
// without asking). Empty `tail`: the kernel's size stays.
void OnDataInvalidated(MountContext& ctx, uint64_t ino, uint64_t size, const std::string& tail);

}  // namespace weft::fuse
