// A mounted Weft filesystem as a library: the namespace operations of the MDS
// and striped file I/O over the OSDs, for any frontend (the FUSE adapter, the
// CLI, tests). It never links libfuse and never chooses an errno: every error
// is an absl::Status carrying the errno POSIX needs (common/status), and only
// the frontend turns it into one.
//
// Caching (until capabilities exist, issue 6): the client caches the
// attributes of an inode for `attr_ttl` (default 1 s), which is all a single
// client may safely cache without caps; its own writes, truncates and
// setattrs refresh the entry at once. Cached entries live while a frontend
// holds references (Remember/Forget, the FUSE lookup count) or an open file;
// caps will govern the same entries later, replacing the TTL. Data is not
// cached: reads go to the OSDs, writes are write-through and followed by a
// WrittenOp that reports size and mtime to the MDS.
//
// Every call takes the caller's credentials; the MDS checks permissions with
// them. Thread-safe.
//
// Lock order: FileSystemClient::mu_ (inode table, handles) may be taken
// alone, or before OpenFile::mu_; StripedIo::mu_ is a leaf. No lock is held
// across an RPC.
#pragma once

#include <fcntl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "fuse-client/lib/meta_client.h"
#include "fuse-client/lib/object_client.h"
#include "fuse-client/lib/striped_io.h"
#include "proto/mds.pb.h"

namespace weft::client {

struct FileSystemClientOptions {
  std::vector<std::string> mds_addrs;
  std::string fs;
  std::string client_name;                    // default client.<host>.<pid>
  uint64_t inflight_bytes_max = 256ull << 20; // data I/O in flight, all files together
  absl::Duration attr_ttl = absl::Seconds(1);
  int64_t op_timeout_ms = 120000;
  int64_t connect_timeout_ms = 15000;  // Connect gives up after this (mount time)

  absl::Status Validate() const;
};

// Who is asking: checked by the MDS.
struct Creds {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;
  uint32_t umask = 0;
};

// Attributes as the MDS reports them.
using Attr = pb::Attr;

// Which SetattrArgs fields apply: pb::SetattrMask bits (SA_MODE, SA_SIZE, ...).
struct SetattrArgs {
  uint32_t valid = 0;
  uint32_t mode = 0, uid = 0, gid = 0;
  uint64_t size = 0;
  int64_t atime_ns = 0, mtime_ns = 0;
};

struct DirPage {
  std::vector<pb::DirEntry> entries;  // cookie of each entry continues after it
  bool eof = false;
};

using FileHandle = uint64_t;  // 0 is never a handle

class FileSystemClient {
 public:
  // Opens an MDS session with filesystem `options.fs` and starts following
  // the cluster map. Fails (without retrying for long) if neither is reachable.
  static absl::StatusOr<std::unique_ptr<FileSystemClient>> Connect(
      FileSystemClientOptions options);
  ~FileSystemClient();  // releases open files and closes the session

  uint64_t root() const;
  // The inode of `path` ("/a/b", relative to the filesystem root) as root.
  absl::StatusOr<Attr> ResolvePath(const std::string& path);

  // ---- inode references (the frontend's lookup counts)
  void Remember(const Attr& attr);        // one more reference to attr.ino(), caching attr
  void Forget(uint64_t ino, uint64_t n);  // n fewer; cached state dropped at 0

  // ---- namespace
  absl::StatusOr<Attr> Lookup(const Creds& c, uint64_t parent, const std::string& name);
  // Cached attributes if fresh, else from the MDS.
  absl::StatusOr<Attr> Getattr(const Creds& c, uint64_t ino);
  // With SA_SIZE, trims the data objects past a smaller size after the MDS
  // has the new size. `fh` (or 0) is a handle open for writing (ftruncate).
  absl::StatusOr<Attr> Setattr(const Creds& c, uint64_t ino, const SetattrArgs& args,
                               FileHandle fh);
  absl::StatusOr<Attr> Mknod(const Creds& c, uint64_t parent, const std::string& name,
                             uint32_t mode, uint64_t rdev);
  absl::StatusOr<Attr> Mkdir(const Creds& c, uint64_t parent, const std::string& name,
                             uint32_t mode);
  absl::StatusOr<Attr> Symlink(const Creds& c, uint64_t parent, const std::string& name,
                               const std::string& target);
  absl::StatusOr<Attr> Link(const Creds& c, uint64_t ino, uint64_t new_parent,
                            const std::string& new_name);
  absl::Status Unlink(const Creds& c, uint64_t parent, const std::string& name);
  absl::Status Rmdir(const Creds& c, uint64_t parent, const std::string& name);
  // flags: RENAME_NOREPLACE = 1, RENAME_EXCHANGE = 2 (as Linux).
  absl::Status Rename(const Creds& c, uint64_t parent, const std::string& name,
                      uint64_t new_parent, const std::string& new_name, uint32_t flags);
  absl::StatusOr<std::string> Readlink(const Creds& c, uint64_t ino);
  // Entries after `cookie` (0 = from the start), at most `max_entries`.
  absl::StatusOr<DirPage> Readdir(const Creds& c, uint64_t ino, uint64_t cookie,
                                  uint32_t max_entries, bool with_attrs);
  absl::StatusOr<std::string> Getxattr(const Creds& c, uint64_t ino, const std::string& name);
  // flags: XATTR_CREATE = 1, XATTR_REPLACE = 2.
  absl::Status Setxattr(const Creds& c, uint64_t ino, const std::string& name,
                        const std::string& value, uint32_t flags);
  absl::StatusOr<std::vector<std::string>> Listxattr(const Creds& c, uint64_t ino);
  absl::Status Removexattr(const Creds& c, uint64_t ino, const std::string& name);
  absl::StatusOr<pb::StatfsReply> Statfs(const Creds& c);
  // R_OK/W_OK/X_OK (F_OK = 0), decided by the MDS as an open or exec would
  // be: mode bits, ACLs, root passing except X_OK on a file no one may
  // execute. EACCES when refused.
  absl::Status Access(const Creds& c, uint64_t ino, int mask);

  // ---- files
  struct Opened {
    Attr attr;
    FileHandle fh = 0;
  };
  // open(2) flags: O_ACCMODE, O_APPEND, O_TRUNC (truncates through the handle).
  absl::StatusOr<Opened> Open(const Creds& c, uint64_t ino, int flags);
  // O_CREAT with `flags`; O_EXCL makes an existing name EEXIST.
  absl::StatusOr<Opened> Create(const Creds& c, uint64_t parent, const std::string& name,
                                uint32_t mode, int flags);
  // Exactly min(length, size - offset) bytes (empty past the end); holes are zeros.
  absl::StatusOr<std::string> Read(FileHandle fh, uint64_t offset, uint64_t length);
  // Writes all of `data` at `offset` (at the end of file with O_APPEND) and
  // reports size/mtime to the MDS; returns the bytes written.
  absl::StatusOr<uint64_t> Write(const Creds& c, FileHandle fh, uint64_t offset,
                                 absl::string_view data);
  // Data and size are durable (write-through: nothing is pending).
  absl::Status Fsync(FileHandle fh);
  // Ends the handle; the MDS learns this session no longer holds the file.
  absl::Status Release(FileHandle fh);

 private:
  // One open(2) of a file by this client.
  struct OpenFile {
    uint64_t ino = 0;
    int flags = 0;
    Creds creds;     // of the open: WrittenOp runs as the opener
    FileData data;
    // Serializes appends through this handle: an append's offset is the size
    // after the previous one. The only lock held across I/O, on purpose.
    absl::Mutex append_mu;
    bool writable() const { return (flags & O_ACCMODE) != O_RDONLY; }
  };
  struct CachedInode {
    Attr attr;
    absl::Time fetched;
    uint64_t refs = 0;
  };

  FileSystemClient(FileSystemClientOptions options, std::unique_ptr<MetaClient> meta,
                   std::unique_ptr<ObjectClient> objects);
  absl::StatusOr<pb::MetaReply> Call(const Creds& c, pb::MetaRequest request);
  absl::StatusOr<Attr> CallAttr(const Creds& c, pb::MetaRequest request);
  absl::StatusOr<Attr> FetchAttr(const Creds& c, uint64_t ino);
  void CacheAttr(const Attr& attr);
  void Invalidate(uint64_t ino);
  absl::StatusOr<FileData> DataOf(const Attr& attr);
  absl::StatusOr<std::shared_ptr<OpenFile>> Handle(FileHandle fh);
  absl::StatusOr<Opened> AddHandle(const Creds& c, const Attr& attr, int flags);
  // Data to the OSDs, then size and mtime to the MDS.
  absl::Status WriteAt(const Creds& c, const OpenFile& f, uint64_t offset, absl::string_view data);
  // Applies O_TRUNC to a handle just opened (releasing it on failure).
  absl::StatusOr<Opened> TruncateOnOpen(const Creds& c, Opened opened, int flags);
  // How many ReleaseOps ending `f` sends (see mds_opens_).
  int ReleasesToSend(const OpenFile& f) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status TrimAfterTruncate(const Attr& before, const Attr& after);

  const FileSystemClientOptions options_;
  std::unique_ptr<MetaClient> meta_;
  std::unique_ptr<ObjectClient> objects_;
  StripedIo io_;

  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, CachedInode> inodes_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<FileHandle, std::shared_ptr<OpenFile>> handles_ ABSL_GUARDED_BY(mu_);
  FileHandle next_fh_ ABSL_GUARDED_BY(mu_) = 1;
  // Works around the MDS's ReleaseOp, which carries no open mode and so also
  // ends a write open when a read-only handle is released: while this client
  // holds a writable handle of an inode, releases of its read-only handles
  // are deferred until the last writable one goes.
  struct MdsOpens {
    int writers = 0;
    int deferred_releases = 0;
  };
  absl::flat_hash_map<uint64_t, MdsOpens> mds_opens_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::client
