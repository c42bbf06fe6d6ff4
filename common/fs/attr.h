// Inodes, directory entries and the filesystem as the MDS reports them and
// the client library tells its frontends: plain values, the same fields as
// proto/mds_client.proto's Attr, DirEntry and StatfsReply, so that neither
// the MDS's operations nor a frontend need a wire type. They are converted
// in one place (attr_wire.h): where the MDS's replies leave its adapter, and
// where they enter the client.
#pragma once

#include <cstdint>
#include <string>

#include "common/cluster_map/types.h"
#include "common/striping/striping.h"

namespace weft::fs {

// Where a file's data lives: its striping and its data pool. All zero for an
// inode without data objects (anything but a regular file).
struct FileLayout {
  striping::Layout stripe;
  PoolId pool;

  // Anything but all zeros (an inode without data objects has none).
  bool has_value() const {
    return pool.value() != 0 || stripe.stripe_unit != 0 || stripe.stripe_count != 0 ||
           stripe.object_size != 0;
  }
  bool operator==(const FileLayout&) const = default;
};

// An inode's attributes as the MDS reports them. Every change of the inode
// makes a new `version`; ino 0: no attributes.
struct Attr {
  uint64_t ino = 0;
  uint32_t mode = 0;  // type and permission bits (st_mode)
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint64_t size = 0;  // bytes
  uint32_t nlink = 0;
  uint64_t rdev = 0;
  int64_t atime_ns = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  int64_t btime_ns = 0;
  uint64_t version = 0;
  uint64_t generation = 0;
  FileLayout layout;
  // No extended attributes stored (the virtual weft.* aside): getxattr of
  // security.*, trusted.* and the ACL names is ENODATA while these
  // attributes are trusted.
  bool no_xattrs = false;
  // No access ACL: the mode bits alone decide access.
  bool no_acl = false;
  uint64_t allocated = 0;  // bytes allocated to the data (st_blocks * 512)
  // A directory every caller may search, by its mode and its ACL.
  bool searchable_by_all = false;
  bool data_inline = false;  // a regular file whose data the MDS keeps
};

// One entry of a directory listing.
struct DirEntry {
  std::string name;
  uint64_t ino = 0;
  uint32_t type = 0;    // the inode type, as st_mode >> 12
  uint64_t cookie = 0;  // a listing continues after this entry from it
  Attr attr;            // a listing with attributes only (else ino 0)

  bool has_attr() const { return attr.ino != 0; }
};

// What statfs(2) reports: the MDS's sum of what the OSDs report.
struct FsStats {
  uint64_t bytes_total = 0;
  uint64_t bytes_avail = 0;
  uint64_t bytes_used = 0;
  uint64_t files = 0;
  uint64_t files_free = 0;
  uint32_t name_max = 0;  // bytes in a name
};

}  // namespace weft::fs
