// A mounted Weft filesystem as a library: the namespace operations of the MDS
// and striped file I/O over the OSDs, for any frontend (the FUSE adapter, the
// CLI, tests). It never links libfuse and never chooses an errno: every error
// is an absl::Status carrying the errno POSIX needs (common/status), and only
// the frontend turns it into one.
//
// Caching: the client trusts the attributes of an inode while it holds the
// inode's attribute cap (the MDS grants it with replies, never beside
// another session's writer, and revokes it before any other session changes
// the inode; a directory's also before a change of a name in it); its own
// writes, truncates and setattrs refresh the entry at once, and so do the
// directories its own changes of names carry back. Cached entries live
// while a frontend holds references (Remember/Forget, the FUSE lookup
// count) or an open file. Directory
// leases (dir_leases.h) are the other cap: under one, Lookup answers absent
// names, and names of directories this client made, without the MDS.
//
// File data (file_cache.h): writes are buffered per file and written back in
// the background once `cache.flush_bytes` are pending, after `dirty_expire`,
// when the client is over `dirty_bytes_max`, and on Fsync, Release, truncate
// (all wait), and on close (which starts the write-back and returns).
// Size and mtime reach the MDS (WrittenOp) as each batch lands; until then
// this client's attributes show the buffered size and mtime. While this
// session holds a file open for writing (and until the release that follows
// the last close, i.e. until the write-back is done), the MDS recalls the
// buffered writes before it shows the file to any other session: the
// recall (a LeaseEvent with `flush`) flushes them and is acknowledged.
// A file this session created (MetaReply.attr_authority) also has its mode,
// owner and times changed here, with the MDS's permission rules, and
// reported with its writes, until the MDS recalls it (SetattrLocally).
// Sequential readers are read ahead. An open drops data read ahead by earlier
// opens (close-to-open consistency, as NFS); O_DIRECT and O_SYNC/O_DSYNC
// handles write through and O_DIRECT ones never read ahead.
//
// Every call takes the caller's credentials; the MDS checks permissions with
// them. Thread-safe.
//
// Lock order: FileSystemClient::mu_ (inode table, handles) may be taken
// alone, or before OpenFile::mu_; objects::StripedIo::mu_, OpenFile::data_mu
// and the session's DirLeases (caps) are leaves. No lock is held across an RPC.
#pragma once

#include <fcntl.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/executor/thread_pool.h"
#include "common/objects/object_client.h"
#include "common/objects/striped_io.h"
#include "common/posix/permission.h"
#include "common/fs/attr.h"
#include "fuse-client/lib/file_cache.h"
#include "fuse-client/lib/file_locks.h"
#include "fuse-client/lib/meta_client.h"

namespace weft::client {

// The values the MDS reports (common/fs/attr.h), as this library's API.
using fs::Attr;
using fs::DirEntry;
using fs::FileLayout;
using fs::FsStats;

struct FileSystemClientOptions {
  std::vector<std::string> mds_addrs;
  std::string fs;
  std::string client_name;                    // default client.<host>.<pid>
  uint64_t inflight_bytes_max = 256ull << 20; // data I/O in flight, all files together
  FileCacheOptions cache;                      // per file: write-back and readahead sizes
  uint64_t dirty_bytes_max = 256ull << 20;     // buffered writes, all files together
  // Copies of small files' inline bytes (up to 64 KiB each) kept by open
  // files, all together: past it a read fetches them from the MDS, so that
  // many small files open at once do not take the client's memory.
  uint64_t inline_copy_bytes = 64ull << 20;
  absl::Duration dirty_expire = absl::Seconds(5);  // buffered longer: written back
  // Background releases gather this long and go to the MDS in one call: a
  // file create through the mount was three calls (lookup, create,
  // release), now two and a fraction.
  absl::Duration release_batch = absl::Milliseconds(5);
  int io_threads = 8;                          // background flushes; as many for readahead
  // Files whose write-back waits for one of those threads, all files
  // together; a close or write that would queue one more waits instead.
  // Bounds what a close leaves to do to about a second of small-file writes
  // (an untar queued thousands, and the reads that followed waited for them).
  size_t writeback_queue = 256;
  // What reads do to atime (the kernel leaves it to FUSE file systems):
  // relatime (default), strictatime, or noatime; `diratime` false leaves
  // directories' atime alone (nodiratime). Reads are reported to the MDS
  // with the background releases (AtimeOp).
  enum class Atime { kRelatime, kStrict, kNone };
  Atime atime = Atime::kRelatime;
  bool diratime = true;
  // Reads gather this long (or until 1024 inodes) before they go: reading
  // a tree of small files cost one AtimeOp per release batch otherwise.
  absl::Duration atime_batch = absl::Seconds(1);
  int64_t op_timeout_ms = 120000;
  int64_t connect_timeout_ms = 15000;  // Connect gives up after this (mount time)
  // After an eviction (recover_session=clean, as CephFS): start over with a
  // new session and OSD identity; files open then fail with EIO, what was
  // buffered is dropped, new opens work. Without it (recover_session=no)
  // every call fails with EIO until the mount is mounted again.
  bool recover_session = false;

  absl::Status Validate() const;
};

// Who is asking: checked by the MDS.
struct Creds {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;
  uint32_t umask = 0;
};

// The caller and the inode as common/posix's permission rules take them
// (AccessOf: without an ACL; only for attributes with no_acl).
posix::Credentials CredentialsOf(const Creds& c);
posix::AccessAttrs AccessOf(const Attr& a);

// Which SetattrArgs fields apply: posix::SetMask bits (kSetMode, kSetSize, ...),
// which cross the wire as they are.
struct SetattrArgs {
  uint32_t valid = 0;
  uint32_t mode = 0, uid = 0, gid = 0;
  uint64_t size = 0;
  int64_t atime_ns = 0, mtime_ns = 0;
};

struct DirPage {
  std::vector<DirEntry> entries;  // cookie of each entry continues after it
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
  // One more reference to attr.ino, caching attr if it comes from the MDS.
  void Remember(const Attr& attr, bool from_mds = true);
  // n fewer; cached state dropped at 0 (then true: nobody holds it).
  bool Forget(uint64_t ino, uint64_t n);
  // Whether every caller may search `dir`, by its cached attributes: a
  // directory with all three x bits and no access ACL. Only then may a
  // frontend let the kernel keep names in it, as the kernel reaches a name
  // it keeps without asking anyone, whoever the caller. From the mode and
  // ACL flag last seen, also when the times are known stale; false when
  // nothing is cached.
  bool SearchableByAll(uint64_t dir);
  // How long a frontend may let the kernel keep names in `dir` without
  // asking: while this session holds the directory's lease, whose revoke
  // (SetDirRevoked) comes before any other session changes a name in it.
  // Zero without a lease.
  absl::Duration DirLeaseRemaining(uint64_t dir);
  // `handler` runs for every revoked directory lease before the revoke is
  // acknowledged (MetaClient::SetDirRevoked); nullptr removes it.
  void SetDirRevoked(std::function<void(uint64_t dir)> handler);
  // How long a frontend may let the kernel keep attributes `a` (this
  // client's newest of the inode) without asking: while this session holds
  // its attribute cap, whose revoke (SetAttrsRevoked) comes before any other
  // session changes the inode. Zero without a cap.
  absl::Duration AttrValid(const Attr& a);
  // `handler` runs for every revoked attribute cap before the revoke is
  // acknowledged (MetaClient::SetAttrsRevoked); nullptr removes it.
  void SetAttrsRevoked(std::function<void(uint64_t ino)> handler);
  // `handler` runs after a recall for memory with the inodes whose caps
  // were given back (MetaClient::SetCapsGivenBack); nullptr removes it.
  void SetCapsGivenBack(MetaClient::CapsGivenBack handler);
  // Of `inos`, the files no handle of this client has open: what a
  // frontend may let go for memory (a directory may be a process's working
  // directory, an open file is named in /proc/PID/fd).
  std::vector<uint64_t> Unpinned(const std::vector<uint64_t>& inos);
  // Called (off the lease thread) when another session changed the data or
  // size of a file this client has open, after the client dropped its own
  // cached data of it and before the change is acknowledged: the FUSE layer
  // drops the kernel's pages, and raises the kernel's size to `size` (the
  // file's after the change) by storing `tail`, the file's last byte
  // (empty: unknown, the kernel's size stays).
  // Set before the mount serves.
  using DataInvalidated =
      std::function<void(uint64_t ino, uint64_t size, const std::string& tail)>;
  void SetDataInvalidated(DataInvalidated handler);
  // The frontend gave the kernel `a` (a reply it sent): the version the
  // kernel's attributes of a.ino are at. KernelHas: whether they are at
  // a.version, so that an open finding that version need not make the
  // kernel ask again.
  void NoteKernelAttrs(const Attr& a);
  bool KernelHas(const Attr& a);

  // ---- namespace
  // How a lookup was answered.
  struct LookupInfo {
    absl::Duration attr_valid;  // how long the attributes may be cached still
    bool from_mds = true;       // else from this client's cache, under a directory lease
  };
  // Answered without the MDS when a directory lease allows (dir_leases.h).
  absl::StatusOr<Attr> Lookup(const Creds& c, uint64_t parent, const std::string& name,
                              LookupInfo* info = nullptr);
  // Cached attributes if fresh, else from the MDS.
  absl::StatusOr<Attr> Getattr(const Creds& c, uint64_t ino);
  // With kSetSize, trims the data objects past a smaller size after the MDS
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
  // A readdir entry's attributes as Readdir would give them now: a newer
  // version this client has cached, and its own buffered writes (an entry
  // kept between the kernel's READDIRs, DirStream).
  Attr Freshen(Attr attr) { return WithPending(std::move(attr)); }
  absl::StatusOr<std::string> Getxattr(const Creds& c, uint64_t ino, const std::string& name);
  // flags: XATTR_CREATE = 1, XATTR_REPLACE = 2.
  absl::Status Setxattr(const Creds& c, uint64_t ino, const std::string& name,
                        const std::string& value, uint32_t flags);
  absl::StatusOr<std::vector<std::string>> Listxattr(const Creds& c, uint64_t ino);
  absl::Status Removexattr(const Creds& c, uint64_t ino, const std::string& name);
  // The MDS's answer, kept for a second: it sums capacity the OSDs report
  // every few seconds anyway, and gateways ask before every write (Samba's
  // disk_free, dbench's QFSINFO).
  absl::StatusOr<FsStats> Statfs(const Creds& c);
  // R_OK/W_OK/X_OK (F_OK = 0), decided as an open or exec would be: mode
  // bits, ACLs, root passing except X_OK on a file no one may execute.
  // EACCES when refused. Decided here from trusted attributes when the inode
  // has no ACL (the MDS's rules, common/posix), else by the MDS.
  absl::Status Access(const Creds& c, uint64_t ino, int mask);
  // opendir: the caller may read directory `dir` (attributes just fetched).
  // Decided here from the mode bits when the directory has no ACL, else by
  // the MDS (Access).
  absl::Status MayReadDir(const Creds& c, const Attr& dir);

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
  // Exactly min(length, size - offset) bytes (empty past the end); holes are
  // zeros. This client's buffered writes are included.
  absl::StatusOr<std::string> Read(FileHandle fh, uint64_t offset, uint64_t length);
  // Takes all of `data` at `offset` (at the end of file with O_APPEND) into
  // the file's buffer (through to the OSDs and the MDS for O_DIRECT, O_SYNC
  // and O_DSYNC); returns the bytes taken. EFBIG past the maximum size; a
  // failed background flush of this file fails every later write.
  absl::StatusOr<uint64_t> Write(const Creds& c, FileHandle fh, uint64_t offset,
                                 absl::string_view data);
  // The kernel writing back pages of a mapping (the only pages it dirties:
  // the mount does not use the kernel's write-back cache). A mapping cannot
  // write past the end of the file, so bytes past the file's size are those
  // of a kernel whose size is stale (another mount cut the file; the page
  // was read back with zeros past the new end) and are not written: they
  // would grow the file again. Returns data.size().
  absl::StatusOr<uint64_t> WriteBackPages(const Creds& c, FileHandle fh, uint64_t offset,
                                          absl::string_view data);
  // fallocate(2), as far as a filesystem without space reservation can
  // honour it: mode 0 makes the size at least offset + length (the new bytes
  // read as zeros), KEEP_SIZE alone changes nothing, PUNCH_HOLE (with
  // KEEP_SIZE) and ZERO_RANGE write zeros over the range, within the size
  // when KEEP_SIZE is given. Space is not reserved and a punched range is
  // not freed. Other modes: EOPNOTSUPP.
  absl::Status Fallocate(const Creds& c, FileHandle fh, uint32_t mode, uint64_t offset,
                         uint64_t length);
  // Everything written to the file through this client is durable on the
  // OSDs, and its size and mtime (and every earlier namespace change of this
  // client) in the MDS's journal; or the first flush error.
  absl::Status Fsync(FileHandle fh);
  // lseek(2)'s SEEK_DATA (`hole` false) and SEEK_HOLE (true) from `offset`
  // (objects::StripedIo::Seek, after flushing what this client buffers for the
  // file). ENXIO at or past the end.
  absl::StatusOr<uint64_t> Seek(FileHandle fh, uint64_t offset, bool hole);
  // close(2): starts writing the file's buffered data back and returns the
  // first error of an earlier flush, if any (a read-only handle: nothing).
  // Decision: close does not wait (as CephFS, unlike NFS). Another client
  // still sees the data once it looks: the MDS recalls the buffered writes
  // of a file from the session holding it open for writing before it shows
  // the file to anyone else, and this session's release, which says it no
  // longer holds it, follows the write-back. An error of that write-back
  // reaches no application (fsync reports errors; close never promised
  // durability).
  absl::Status Flush(FileHandle fh);
  // fsyncdir(2), sync(2): every namespace change answered so far is durable.
  absl::Status SyncMetadata();
  // Everything this client buffered, for every file, open or closed, is on
  // the OSDs and reported, and SyncMetadata; or the first flush error. What
  // syncfs(2) would do: the kernel never sends FUSE_SYNCFS to a FUSE daemon
  // (only virtiofs gets it), so the mount runs this for an fsync of its root
  // directory (`sync MOUNTPOINT`).
  absl::Status SyncAll();
  // Release for the FUSE release (the kernel does not wait for it): a
  // handle with something to write back ends on a background thread, as a
  // flush must not hold a FUSE worker. The MDS hears of it within
  // release_batch, with other releases in one call.
  void ReleaseInBackground(FileHandle fh);
  // Flushes as Fsync, then ends the handle; the MDS learns this session no
  // longer holds the file.
  absl::Status Release(FileHandle fh);

  // ---- advisory locks: POSIX and flock locks held through the MDS, across
  // every client of the filesystem (file_locks.h).
  FileLocks& locks() { return locks_; }
  // This client's MDS session (compare with locks::Owner::session).
  uint64_t session() const { return meta_->session(); }

  // Lookups answered under a directory lease, without the MDS.
  uint64_t local_lookups() const { return local_lookups_.load(); }
  // Setattrs decided in this client under a file's attribute authority.
  uint64_t local_setattrs() const { return local_setattrs_.load(); }
  // Getxattrs answered from values read at the inode's current version.
  uint64_t local_xattrs() const { return local_xattrs_.load(); }
  // Access checks decided from trusted attributes without an ACL.
  uint64_t local_access() const { return local_access_.load(); }

 private:
  std::atomic<uint64_t> local_lookups_{0};
  std::atomic<uint64_t> local_setattrs_{0};
  std::atomic<uint64_t> local_xattrs_{0};
  std::atomic<uint64_t> local_access_{0};
  // One open(2) of a file by this client.
  struct OpenFile {
    uint64_t ino = 0;
    int flags = 0;
    Creds creds;     // of the open: its reads and its ReleaseOp run as the opener
    std::shared_ptr<FileCache> cache;  // regular files with a valid layout
    // False until a write through this handle made sure the file has no
    // capability (DropCapability); a setxattr of one through this client
    // sets it false again.
    std::atomic<bool> caps_dropped{false};
    bool writable() const { return (flags & O_ACCMODE) != O_RDONLY; }
    bool write_through() const { return (flags & (O_DIRECT | O_DSYNC)) != 0; }
    // Opened before the mount was evicted and recovered: every use fails.
    std::atomic<bool> stale{false};
  };
  // The data cache of a file open in this client, shared by its handles.
  struct OpenCache {
    std::shared_ptr<FileCache> cache;
    int handles = 0;
    Creds writer;  // of the latest write: the WrittenOp of a flush runs as them
    // Where this session created the file, while it holds the file's
    // attribute authority (FileCache::GrantAttrAuthority): an open of that
    // name by this client settles the changes first.
    uint64_t created_parent = 0;
    std::string created_name;
  };
  struct CachedInode {
    Attr attr;  // ino 0 until attributes arrive
    absl::Time fetched = absl::InfinitePast();  // InfinitePast: not trusted
    uint64_t refs = 0;
    uint64_t kernel_version = 0;  // of the attributes last given to the kernel (0: unknown)
    // Xattr values (none: absent) read while the attributes were at version
    // `xattrs_version`; good while they are trusted and still at it (every
    // change of an xattr, the mode or the owner makes a new version).
    uint64_t xattrs_version = 0;
    absl::flat_hash_map<std::string, std::optional<std::string>> xattrs;
    // The names listed, as root sees them [1] (trusted.* too) and as others do [0].
    std::optional<std::vector<std::string>> xattr_names[2];
    // Replies to requests numbered below this (MetaRequest.tid) may
    // predate a change this client made, and are not trusted (Invalidate).
    uint64_t stale_below = 0;
    // A directory this client removed (rmdir, or replaced by a rename):
    // the MDS no longer knows it, and `attr` (nlink 0) stands while it is
    // held (KeepGone).
    bool gone = false;
    // Keeps `a`, the answer to request `tid`, unless a newer version is
    // cached (the version grows with each change): `attr` is the newest
    // known. It is trusted if `tid` was sent after the last Invalidate, as
    // an older request may have been answered before the change. Returns
    // the newest attributes.
    const Attr& Offer(const Attr& a, uint64_t tid) {
      if (gone) return attr;
      const bool fresh = tid >= stale_below;
      if (a.version > attr.version || (a.version == attr.version && fresh)) {
        attr = a;
        fetched = fresh ? absl::Now() : absl::InfinitePast();
      }
      return attr;
    }
  };

  FileSystemClient(FileSystemClientOptions options, std::unique_ptr<MetaClient> meta,
                   std::unique_ptr<objects::ObjectClient> objects);
  absl::StatusOr<pb::MetaReply> Call(const Creds& c, pb::MetaRequest request);
  absl::StatusOr<Attr> CallAttr(const Creds& c, pb::MetaRequest request);
  // Calls for a change of a name in `dir`: keeps the directory's new
  // attributes the reply carries (MetaReply.changed), or drops the cached
  // ones when it has none (a failure, a retry's kept answer).
  absl::StatusOr<pb::MetaReply> CallInDir(const Creds& c, pb::MetaRequest request, uint64_t dir);
  absl::StatusOr<Attr> FetchAttr(const Creds& c, uint64_t ino);
  // Caches `attr`, the answer to request `tid`, unless it may be older
  // than what is known (CachedInode::Offer); returns the newer.
  Attr CacheAttr(const Attr& attr, uint64_t tid);
  Attr CacheAttr(const pb::MetaReply& reply);  // its attributes, converted once
  // `attr`, or the newer version cached, trusted or not (without caching
  // `attr`).
  Attr Newest(Attr attr);
  // The cached attributes of `ino` are known wrong after a change this
  // client made that the MDS answered without them (a name in the
  // directory `ino`): they are fetched again, and replies to requests sent
  // before this are not trusted, as the MDS may have answered them before
  // the change.
  void Invalidate(uint64_t ino);
  // `last` is how the directory last.ino ended (nlink 0): kept, if held,
  // as its attributes from now on (CachedInode::gone).
  void KeepGone(const Attr& last);
  // The MDS may have restarted, and numbers versions on from what it had
  // made durable: every cached inode is invalidated, its version forgotten.
  void ForgetVersions();
  // Returns once the object client has OSD map `epoch` (an eviction's
  // barrier: MetaReply.osd_epoch_barrier), or after 10 s with a warning.
  void WaitForMap(uint64_t epoch);
  // The cached, still trusted attributes of `ino` say it has no xattr
  // `name` (no xattrs at all, or no access ACL).
  bool KnownAbsent(uint64_t ino, const std::string& name);
  // Xattr `name` of `ino` as read at the trusted attributes' version, if
  // `c` may read it without asking the MDS (ENODATA when it is absent).
  std::optional<absl::StatusOr<std::string>> CachedXattr(const Creds& c, uint64_t ino,
                                                         const std::string& name);
  // Caches the attributes an xattr reply came with; returns their version
  // if they stand (0 if a newer version was cached meanwhile).
  uint64_t KeepAttrOf(const pb::MetaReply& reply);
  // The version of the trusted attributes of `ino` (0: none trusted).
  uint64_t TrustedVersion(uint64_t ino);
  // Asks the MDS, and keeps the answer if the inode was at `version` (0:
  // unknown, nothing kept).
  absl::StatusOr<std::string> FetchXattr(const Creds& c, uint64_t ino, const std::string& name,
                                         uint64_t version);
  // Keeps what the MDS answered for `name` if `ino` is still at `version`.
  void RememberXattr(uint64_t ino, uint64_t version, const std::string& name,
                     std::optional<std::string> value);
  // The entry of `ino` if its attributes are trusted (TrustLeftLocked), or
  // it is gone; else null.
  CachedInode* TrustedLocked(uint64_t ino) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // How much longer `ci`'s attributes are trusted at `now`: while its
  // attribute cap covers their version; zero when known stale.
  absl::Duration TrustLeftLocked(const CachedInode& ci, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::optional<Attr> TrustedAttr(uint64_t ino);
  // The xattrs of `ino` at `version`, for root or not: the entry to fill,
  // started afresh at a new version; null if `ino` is no longer at it.
  CachedInode* XattrsAt(uint64_t ino, uint64_t version) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The cached, trusted entry of `ino` whose xattrs are of its version.
  const CachedInode* TrustedXattrs(uint64_t ino) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<objects::FileData> DataOf(const Attr& attr);
  // After this client changed the layout of the empty file attr.ino (the
  // MDS refuses while another client has it open for writing): its open
  // handles write with the new layout from now on.
  void RefreshLayout(const Attr& attr);
  absl::StatusOr<std::shared_ptr<OpenFile>> Handle(FileHandle fh);
  // `fh` for a write by `c` (Write, Fallocate's zeros): EBADF unless open
  // for writing, EINVAL without a layout; `c` becomes the file's writer
  // (the WrittenOp of its flush runs as them).
  absl::StatusOr<std::shared_ptr<OpenFile>> WriteHandle(const Creds& c, FileHandle fh);
  // Removes security.capability from `ino` if it has one (a write's duty).
  absl::Status DropCapability(uint64_t ino);
  // For the reply to an open or a create (its attributes and tid).
  absl::StatusOr<Opened> AddHandle(const Creds& c, const pb::MetaReply& reply, int flags);
  // `inline_bytes`: the file's inline data at attr.version, if the reply had it.
  std::shared_ptr<FileCache> CacheFor(const Attr& attr, const std::string* inline_bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What a file with inline data asks the MDS (FileCache::InlineHooks).
  FileCache::InlineHooks InlineHooksFor(uint64_t ino);
  // Tells the MDS that `ino` now extends to `end`, written at `mtime_ns`,
  // and the attribute changes made on their own since the last report.
  absl::Status ReportWritten(uint64_t ino, uint64_t end, int64_t mtime_ns,
                             int64_t allocated_delta, const AttrChanges& attrs);
  // The WrittenOp, with the bytes of `inline_writes` if given (inline data).
  absl::StatusOr<pb::MetaReply> CallWritten(uint64_t ino, uint64_t end, int64_t mtime_ns,
                                            int64_t allocated_delta, const AttrChanges& attrs,
                                            const objects::ExtentMap* inline_writes);
  // `attr` with this client's buffered size, mtime and attribute changes.
  Attr WithPending(Attr attr);
  // A setattr decided and applied in this client, which holds the file's
  // attribute authority (a file it created that nobody else has seen since):
  // the same permission rules as the MDS (common/posix), the same errors.
  // nullopt when the MDS must do it (no authority; a size, setuid or setgid;
  // a file with xattrs).
  absl::StatusOr<std::optional<Attr>> SetattrLocally(const Creds& c, uint64_t ino,
                                                     const SetattrArgs& args, FileCache* cache);
  // Attribute changes made on their own reach the MDS before a request that
  // decides on them: of `ino` (with `drop`, the file's authority ends too),
  // and of the file this client created as `name` in `parent` (its
  // authority ends: an unlink, a rename or an open of the name follows).
  // Names stay exact: every change of a name of such a file ends its
  // authority (here, or through the recall when another session does it).
  absl::Status SettleAttrs(uint64_t ino, bool drop);
  absl::Status SettleCreated(uint64_t parent, const std::string& name);
  // The lease stream ended: the MDS cannot recall this client now, so no
  // file keeps its attribute authority.
  void DropAttrAuthorities();
  std::shared_ptr<FileCache> CacheOf(uint64_t ino);
  // Who wrote the file last through this client (its reports run as them);
  // root when nobody did.
  Creds WriterOf(uint64_t ino) ABSL_LOCKS_EXCLUDED(mu_);
  std::vector<std::shared_ptr<FileCache>> AllCaches() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes back buffered data older than dirty_expire, every second.
  void FlushLoop();
  // The MDS recalled the buffered writes of `ino` (MetaClient::FlushRecall),
  // and with `hold` holds them until ReleaseHold(ino) (0: every file).
  void FlushForRecall(const MetaClient::FlushRequest& recall, std::function<void()> ack);
  // recover_session=clean: after an eviction, the handles open then go
  // stale, buffered data is dropped, and a new session starts under a new
  // OSD identity (on the recall pool).
  void RecoverSession();
  // Another session changed a file's data (MetaClient::DataInval).
  void InvalidateData(const pb::LeaseEvent& inval, std::function<void()> ack);
  // A write of an O_APPEND handle to a file shared with other writers: the
  // MDS reserves the bytes at its end of the file (WrittenOp.append), then
  // they are written through.
  absl::Status AppendShared(const std::shared_ptr<OpenFile>& f, absl::string_view data);
  void ReleaseHold(uint64_t ino);
  // This client's open files, for the MDS after its restart.
  std::vector<pb::OpenRef> OpenFiles();
  // Applies O_TRUNC to a handle just opened (releasing it on failure).
  absl::StatusOr<Opened> TruncateOnOpen(const Creds& c, Opened opened, int flags);
  // What Release does before telling the MDS: the handle goes, its data is
  // flushed. Returns the handle, or EBADF.
  absl::StatusOr<std::shared_ptr<OpenFile>> EndHandle(FileHandle fh, absl::Status* flushed);
  // Tells the MDS that these handles are released, in one call, and lets
  // their inodes go from the cache.
  absl::Status SendReleases(const std::vector<std::shared_ptr<OpenFile>>& files);
  // Sends queued background releases every release_batch.
  void ReleaseLoop();
  // A read of `attr`'s data (or entries, for a directory) now: kept for the
  // MDS when it moves the atime (posix::AtimeDue), and shown by WithPending
  // until the MDS has it.
  void NoteRead(const Attr& attr);
  // Sends the reads noted so far (AtimeOp) and caches the attributes they
  // changed; a read noted meanwhile stays for the next call.
  void SendReads();

  const FileSystemClientOptions options_;
  std::unique_ptr<MetaClient> meta_;
  FileLocks locks_;  // on meta_
  std::unique_ptr<objects::ObjectClient> objects_;
  objects::StripedIo io_;
  DirtyBudget budget_;
  DirtyBudget inline_copies_;  // options_.inline_copy_bytes

  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, CachedInode> inodes_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<FileHandle, std::shared_ptr<OpenFile>> handles_ ABSL_GUARDED_BY(mu_);
  // Handles ended here whose release has not been answered yet (queued,
  // batched or on the wire), by inode: (handles, of them writable). A
  // restarted MDS must count them in this session's Reconnect, or their
  // release, arriving after it, closes a handle still open.
  absl::flat_hash_map<uint64_t, std::pair<int, int>> releasing_ ABSL_GUARDED_BY(mu_);
  FileHandle next_fh_ ABSL_GUARDED_BY(mu_) = 1;
  absl::flat_hash_map<uint64_t, OpenCache> caches_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // Declared last, so destroyed first: their tasks use everything above.
  // Write-back batches and readahead have pools of their own, so that a
  // reader never queues behind a backlog of batches (FileCache).
  std::unique_ptr<ThreadPool> pool_;       // write-back
  std::unique_ptr<ThreadPool> read_pool_;  // readahead
  // Background releases: they wait for flushes running in pool_, so they
  // have threads of their own (never the other way round).
  std::unique_ptr<ThreadPool> release_pool_;
  absl::Mutex statfs_mu_;
  std::optional<FsStats> statfs_ ABSL_GUARDED_BY(statfs_mu_);
  absl::Time statfs_at_ ABSL_GUARDED_BY(statfs_mu_);
  absl::Mutex release_mu_;  // after mu_ if both
  std::vector<std::shared_ptr<OpenFile>> releases_ ABSL_GUARDED_BY(release_mu_);
  bool releases_stop_ ABSL_GUARDED_BY(release_mu_) = false;
  // Reads not yet applied by the MDS: inode -> the latest read's time.
  absl::flat_hash_map<uint64_t, int64_t> reads_ ABSL_GUARDED_BY(release_mu_);
  absl::Time reads_since_ ABSL_GUARDED_BY(release_mu_);  // the oldest of them
  // Recalls of buffered writes: they wait for flushes too, and must not
  // queue behind releases.
  std::unique_ptr<ThreadPool> recall_pool_;
  // Data invalidations: they take the kernel's page locks, so they must not
  // queue behind a recall's flush that waits for another client's.
  std::unique_ptr<ThreadPool> inval_pool_;
  // The kernel's part of an invalidation, which may wait for a page a write
  // of this mount holds locked (mmap write-back): see InvalidateData.
  std::unique_ptr<ThreadPool> kernel_inval_pool_;
  absl::Mutex inval_mu_;
  DataInvalidated data_invalidated_ ABSL_GUARDED_BY(inval_mu_);
  // Writes of this client running, by inode.
  absl::flat_hash_map<uint64_t, int> writing_ ABSL_GUARDED_BY(inval_mu_);
  bool Writing(uint64_t ino) ABSL_LOCKS_EXCLUDED(inval_mu_);
  struct WritingGuard {
    FileSystemClient* fs;
    uint64_t ino;
    WritingGuard(FileSystemClient* f, uint64_t i);
    ~WritingGuard();
  };
  // Files whose writes the MDS holds for a truncate (LeaseEvent.hold) and
  // has not released yet. Taken before mu_.
  absl::Mutex holds_mu_;
  absl::flat_hash_set<uint64_t> holds_ ABSL_GUARDED_BY(holds_mu_);
  std::thread releaser_;
  std::thread flusher_;
};

}  // namespace weft::client
