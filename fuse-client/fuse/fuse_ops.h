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
// Kernel caching (until capabilities exist): entries and attributes for
// kAttrTimeoutS seconds, page cache dropped at every open (close-to-open),
// no writeback cache. Caps will replace the timeouts with invalidations.
// Permissions are checked by the MDS (and the client under leases), not the
// kernel (no default_permissions: with it every create and unlink costs the
// kernel a getattr of the directory). So names are given to the kernel for
// kAttrTimeoutS only in directories every caller may search, else for 0 s
// (each walk through them asks), and a directory of this mount that stops
// being searchable by all has its names dropped from the kernel at once
// (KernelDirs). A change made through another mount reaches the kernel's
// names within kAttrTimeoutS.
#pragma once

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

#include <cstdint>

#include "fuse-client/fuse/kernel_dirs.h"
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
  KernelDirs dirs;
};

// The operation table; userdata of the session is a MountContext*.
const fuse_lowlevel_ops& Operations();

}  // namespace weft::fuse
