// Directory trees for tests: what lstat, readlink and the xattrs say about
// every entry below a root, and the differences between two trees, file
// contents compared byte for byte. Used to check a tree on a mount against
// the same tree on local disk, or a mount against itself before a restart.
//
//   auto a = SnapshotTree(local_root);
//   auto b = SnapshotTree(mount_root);
//   std::vector<std::string> diffs = CompareTrees(local_root, *a, mount_root, *b, {});
//   // empty: the same names, types, modes, owners, sizes, mtimes, link
//   // targets, hard-link groups, xattrs and contents
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace weft::testing {

struct TreeEntry {
  mode_t mode = 0;  // type and permission bits
  uid_t uid = 0;
  gid_t gid = 0;
  uint64_t size = 0;
  uint64_t nlink = 0;
  uint64_t ino = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t rdev = 0;
  std::string link_target;                    // symlinks
  std::map<std::string, std::string> xattrs;  // every listed name and its value
};

struct TreeSnapshot {
  // By path relative to the root ("a/b/c"); the root itself is not included.
  std::map<std::string, TreeEntry> entries;
};

// lstat of every entry below `root`, symlinks not followed.
absl::StatusOr<TreeSnapshot> SnapshotTree(const std::string& root);

struct TreeCompareOptions {
  bool owner = true;      // uid, gid
  bool mtime = true;      // all but directories' sizes are filesystem-neutral
  bool ctime = false;     // same filesystem only (a copy gets a new ctime)
  bool ino = false;       // same filesystem only
  bool dir_size = false;  // directory sizes differ between filesystems
  bool xattrs = true;
  bool contents = true;   // read both copies of every regular file
  size_t max_differences = 30;
};

// Every difference between the trees (up to `max_differences`), one line
// each: "path: what (a ... b ...)". Hard links are compared as groups: the
// paths sharing an inode in `a` must share one in `b`.
std::vector<std::string> CompareTrees(const std::string& root_a, const TreeSnapshot& a,
                                      const std::string& root_b, const TreeSnapshot& b,
                                      const TreeCompareOptions& options);

// Compares two files byte for byte; "" when equal, else where they differ.
std::string CompareFiles(const std::string& path_a, const std::string& path_b);

}  // namespace weft::testing
