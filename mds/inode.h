// An inode as the metadata core works on it: plain values with strong ids.
// The cache holds these, the operations read and edit them (through
// OpContext), and they are converted to and from the stored record
// (mds/store/records.proto's InodeRec) at the two edges only: where the
// store's bytes enter or leave the cache (MetaCache::MergeInode, TakeDirty)
// and where an operation's changes become a journal event and an event is
// applied (OpContext::Finish, MetaCache::Apply), so that replay and the live
// path apply the same event. inode_test checks every field there and back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/fs/attr.h"
#include "mds/ids.h"
#include "mds/store/records.pb.h"

namespace weft::mds {

// An extended attribute; names and values are any bytes.
struct Xattr {
  std::string name;
  std::string value;
  bool operator==(const Xattr&) const = default;
};

// A directory subtree's totals (recursive statistics).
struct RStat {
  uint64_t rbytes = 0;
  uint64_t rfiles = 0;
  uint64_t rsubdirs = 0;
  int64_t rctime_ns = 0;
  bool operator==(const RStat&) const = default;
};

// A pending change of a directory's recursive statistics (a delta, signed).
struct RStatDelta {
  int64_t rbytes = 0, rfiles = 0, rsubdirs = 0;
  int64_t rctime_ns = 0;
  bool operator==(const RStatDelta&) const = default;
};

struct Inode {
  InodeId ino;
  uint32_t mode = 0;  // type and permission bits, as st_mode
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;
  uint32_t nlink = 0;
  uint64_t rdev = 0;
  int64_t atime_ns = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  int64_t btime_ns = 0;
  uint64_t version = 0;  // bumped on every change
  InodeId parent;        // the directory of its first link (rstats, rename checks)
  std::string symlink;
  std::vector<Xattr> xattrs;  // one per name (FindXattr, SetXattr, RemoveXattr)
  fs::FileLayout layout;      // files: fixed once the file has data (all zero: none)
  fs::FileLayout dir_layout;  // directories: what new files inherit (pool 0: unset)
  std::vector<uint32_t> frags;  // directories: leaf fragments, (bits << 24) | value
  RStat rstat;                  // directories: the subtree's totals
  uint64_t generation = 0;
  // Regular files: bytes held by data objects (see InodeRec.allocated);
  // absent on files made before it existed: st_blocks follows the size.
  std::optional<uint64_t> allocated;
  // Regular files: the data lives in the MDS (docs/ARCHITECTURE.md, "Inline
  // data"). `inline_data` present means loaded (or changed, in an event).
  bool data_inline = false;
  std::optional<std::string> inline_data;
  uint64_t inline_version = 0;  // bumped on every change of the inline bytes

  bool operator==(const Inode&) const = default;
};

// The stored record's values, and back. A layout of all zeros is not
// stored, as before; everything else is kept as it was.
Inode InodeOf(const pb::InodeRec& rec);
pb::InodeRec RecordOf(const Inode& inode);

}  // namespace weft::mds
