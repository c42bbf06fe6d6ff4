// When a read moves an inode's atime. FUSE leaves atime to the file system
// (the kernel marks FUSE inodes S_NOATIME), so Weft does what Linux does for
// a local one: relatime by default (atime_needs_update and
// relatime_need_update in fs/inode.c), or strictatime. The client reports
// only reads that are due by what it knows; the MDS decides with the inode
// as it stands.
#pragma once

#include <cstdint>

namespace weft::posix {

// Reads in one AtimeOp at most (the MDS refuses more; the client sends no
// more).
inline constexpr int kMaxAtimeReads = 4096;

inline bool AtimeDue(int64_t atime_ns, int64_t mtime_ns, int64_t ctime_ns, int64_t read_ns,
                     bool strict) {
  constexpr int64_t kDayNs = int64_t{24} * 3600 * 1000000000;
  if (read_ns <= atime_ns) return false;  // a read never moves atime back
  if (strict) return true;
  return atime_ns <= mtime_ns || atime_ns <= ctime_ns || read_ns - atime_ns >= kDayNs;
}

}  // namespace weft::posix
