#include "fuse-client/fuse/fuse_ops.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/log/log.h"
#include "common/posix/acl.h"
#include "common/status/status.h"
#include "fuse-client/fuse/dev_io.h"

namespace weft::fuse {
namespace {

using client::Attr;
using client::Creds;

MountContext& Ctx(fuse_req_t req) { return *static_cast<MountContext*>(fuse_req_userdata(req)); }
client::FileSystemClient& Fs(fuse_req_t req) { return *Ctx(req).fs; }

// FUSE inode numbers <-> MDS inode numbers (see the header).
uint64_t ToMds(fuse_req_t req, fuse_ino_t ino) {
  return ino == FUSE_ROOT_ID ? Ctx(req).base_ino : ino;
}
fuse_ino_t ToFuse(fuse_req_t req, uint64_t ino) {
  return ino == Ctx(req).base_ino ? FUSE_ROOT_ID : ino;
}

// The one place an errno is chosen.
void ReplyError(fuse_req_t req, const absl::Status& status, const char* op) {
  int err = StatusToErrno(status);
  // An evicted mount: what it had not written is lost to it (refused at
  // the OSDs), which applications know as EIO, never a success.
  if (err == ESHUTDOWN) err = EIO;
  // What callers get wrong (a missing name, a denied permission) is
  // expected: debug. The rest is loud.
  if (err == ENOENT || err == EEXIST || err == ENODATA || err == ENOTEMPTY || err == EACCES ||
      err == EPERM || err == ENOTDIR || err == EISDIR || err == ENAMETOOLONG || err == ELOOP ||
      err == EOPNOTSUPP || err == ENXIO) {
    VLOG(1) << "op=" << op << " errno=" << err << " status=" << status;
  } else {
    LOG(WARNING) << "op=" << op << " errno=" << err << " status=" << status;
  }
  fuse_reply_err(req, err == 0 ? EIO : err);
}

std::vector<uint32_t> FetchGroups(fuse_req_t req) {
  std::vector<uint32_t> out;
  gid_t groups[64];
  int n = fuse_req_getgroups(req, 64, groups);
  if (n > 64) {  // rare: fetch them all
    std::vector<gid_t> all(n);
    n = fuse_req_getgroups(req, n, all.data());
    for (int i = 0; i < n && i < static_cast<int>(all.size()); ++i) out.push_back(all[i]);
  } else {
    for (int i = 0; i < n; ++i) out.push_back(groups[i]);
  }
  return out;
}

Creds CredsOf(fuse_req_t req) {
  const fuse_ctx* ctx = fuse_req_ctx(req);
  Creds c;
  c.uid = ctx->uid;
  c.gid = ctx->gid;
  c.umask = ctx->umask;
  c.groups = Ctx(req).groups.Get(ctx->pid, ctx->uid, ctx->gid, absl::Now(),
                                 [req] { return FetchGroups(req); });
  return c;
}

timespec Ts(int64_t ns) {
  timespec t;
  t.tv_sec = ns / 1000000000;
  t.tv_nsec = ns % 1000000000;
  if (t.tv_nsec < 0) {
    t.tv_nsec += 1000000000;
    t.tv_sec -= 1;
  }
  return t;
}

// A time as nanoseconds since the epoch, the MDS's unit. Times it cannot
// hold (before 1677-09-21, after 2262-04-11) are clamped to its ends, as the
// kernel clamps times to the range a local filesystem stores, instead of
// wrapping around to another century.
int64_t Nanos(const timespec& t) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  if (t.tv_sec > kMax / 1000000000 - 1) return kMax;
  if (t.tv_sec < kMin / 1000000000 + 1) return kMin;
  return t.tv_sec * 1000000000ll + t.tv_nsec;
}

struct stat ToStat(fuse_req_t req, const Attr& a) {
  struct stat st = {};
  st.st_ino = ToFuse(req, a.ino);
  st.st_mode = a.mode;
  st.st_nlink = a.nlink;
  st.st_uid = a.uid;
  st.st_gid = a.gid;
  st.st_rdev = a.rdev;
  st.st_size = static_cast<off_t>(a.size);
  // Holes cost nothing, each data object counts up to its end (InodeRec).
  st.st_blocks = static_cast<blkcnt_t>((a.allocated + 511) / 512);
  st.st_blksize = a.layout.stripe.stripe_unit != 0 ? a.layout.stripe.stripe_unit : 4096;
  st.st_atim = Ts(a.atime_ns);
  st.st_mtim = Ts(a.mtime_ns);
  st.st_ctim = Ts(a.ctime_ns);
  return st;
}

// How long the kernel may keep the names in `parent` (MDS inode): only
// while this mount holds the directory's lease, whose revoke expires them
// (OnDirRevoked). The kernel reaches a name it keeps without asking the
// mount: unless it checks search permission itself (kernel_permissions),
// only in a directory every caller may search.
double EntryTimeout(fuse_req_t req, uint64_t parent) {
  client::FileSystemClient& fs = Fs(req);
  if (!Ctx(req).kernel_permissions && !fs.SearchableByAll(parent)) return 0.0;
  return std::min(kAttrTimeoutS, absl::ToDoubleSeconds(fs.DirLeaseRemaining(parent)));
}

// A name about to be given to the kernel: its timeout, decided under a
// ticket so that a revoke between the decision and the reply is noticed.
struct NameGrant {
  KernelNames::Ticket ticket = 0;
  double timeout = 0.0;
};

NameGrant GrantName(fuse_req_t req, uint64_t parent) {
  NameGrant g;
  g.ticket = Ctx(req).names.Begin();
  g.timeout = EntryTimeout(req, parent);
  return g;
}

// The kernel's entry for `name` in `parent` (MDS inode) runs out now: its
// next use asks. The entry itself stays (a process inside a directory keeps
// its path), unlike DropName's. Not while a request on `parent` runs.
void ExpireName(MountContext& ctx, uint64_t parent, const std::string& name) {
  if (ctx.se == nullptr) return;
  const fuse_ino_t kernel_parent = parent == ctx.base_ino ? FUSE_ROOT_ID : parent;
  // Kernels before 6.2 ignore the flag and drop the entry.
  const int err = fuse_lowlevel_notify_expire_entry(ctx.se, kernel_parent, name.c_str(),
                                                    name.size(), FUSE_LL_EXPIRE_ONLY);
  if (err != 0 && err != -ENOENT) VLOG(1) << "op=expire_entry parent=" << parent << " err=" << err;
}

// The kernel got `name` in `parent` under `grant` (call after replying, with
// the context taken before): recorded for the lease's revoke, or expired at
// once if the revoke came first.
void NoteGiven(MountContext& ctx, const NameGrant& grant, uint64_t parent,
               const std::string& name) {
  if (grant.timeout <= 0.0 || name == "." || name == "..") return;
  const absl::Time expires = absl::Now() + absl::Seconds(grant.timeout);
  if (!ctx.names.Given(grant.ticket, parent, name, expires)) ExpireName(ctx, parent, name);
}

// Marks a request that the kernel runs holding directory `dir` (MDS inode)
// locked — a change in it, or of it — for as long as it runs here: a revoke
// of the directory's lease then does not wait for the kernel's names in it
// to expire, as the MDS may hold this very request for that revoke. Its
// change is counted when it starts and when it ends: a READDIR page fetched
// meanwhile is not kept past it (client::DirStream).
class BusyDir {
 public:
  BusyDir(fuse_req_t req, uint64_t dir) : ctx_(Ctx(req)), dir_(dir) {
    ctx_.names.Enter(dir_);
    ctx_.dir_changes.Bump(dir_);
  }
  ~BusyDir() {
    ctx_.dir_changes.Bump(dir_);
    ctx_.names.Leave(dir_);
  }
  BusyDir(const BusyDir&) = delete;
  BusyDir& operator=(const BusyDir&) = delete;

 private:
  MountContext& ctx_;
  const uint64_t dir_;
};

// The kernel gets an entry for `a` as `name` in `parent`: where it keeps
// it, for DropKeptNames and OnCapsGivenBack.
void NoteEntry(fuse_req_t req, uint64_t parent, const std::string& name, const Attr& a) {
  if (name != "." && name != "..") Ctx(req).places.Put(a.ino, parent, name, S_ISDIR(a.mode));
}

// The kernel forgets `name` in `parent` (MDS inode) and what it keeps
// under it. Call after replying (the kernel locks the parent for this).
void DropName(MountContext& ctx, uint64_t parent, const std::string& name) {
  const fuse_ino_t kernel_parent = parent == ctx.base_ino ? FUSE_ROOT_ID : parent;
  const int err =
      fuse_lowlevel_notify_inval_entry(ctx.se, kernel_parent, name.c_str(), name.size());
  if (err != 0 && err != -ENOENT) VLOG(1) << "op=inval_entry parent=" << parent << " err=" << err;
}

// After a change to directory `ino` (MDS inode) that may have made it
// unsearchable by some callers: unless every caller may still search it,
// the kernel drops its entry and so the names it keeps under it. Call after
// replying (the kernel locks the parent for this), with the context taken
// before: a request is gone once answered.
void DropKeptNames(MountContext& ctx, uint64_t ino) {
  if (ctx.se == nullptr || ctx.kernel_permissions || ctx.fs->SearchableByAll(ino)) return;
  std::optional<std::pair<uint64_t, std::string>> where = ctx.places.WhereDir(ino);
  if (!where.has_value()) return;  // a file, the mount's root, or never given to the kernel
  DropName(ctx, where->first, where->second);
}

// After a rename (replied to): the kernel moved its entry to `name` in
// `parent` with the timeout it had where it came from. It keeps it only as a
// name given now would be kept (`grant`): without kernel_permissions, in a
// directory not every caller may search it goes, or a walk through it would
// skip the MDS's search check; without a lease on `parent` covering its
// timeout it runs out now.
void SettleMovedName(MountContext& ctx, const NameGrant& grant, uint64_t parent,
                     const std::string& name) {
  if (ctx.se == nullptr) return;
  if (!ctx.kernel_permissions && !ctx.fs->SearchableByAll(parent)) {
    return DropName(ctx, parent, name);
  }
  if (grant.timeout < kAttrTimeoutS) return ExpireName(ctx, parent, name);
  NoteGiven(ctx, grant, parent, name);
}

// How long the kernel may keep `a`: while this mount holds the inode's
// attribute cap, whose revoke invalidates them in the kernel first
// (OnAttrsRevoked). A reply the kernel asked for before such an
// invalidation is dropped by the kernel itself (its attribute versions).
double AttrTimeout(fuse_req_t req, const Attr& a) {
  return absl::ToDoubleSeconds(Fs(req).AttrValid(a));
}

// Replies with an entry for `name` in `parent`; the kernel now holds one
// more lookup reference. `attr_timeout` below 0: AttrTimeout's.
void ReplyEntry(fuse_req_t req, uint64_t parent, const std::string& name, const Attr& a,
                double attr_timeout = -1.0, bool from_mds = true) {
  MountContext& ctx = Ctx(req);
  if (attr_timeout < 0.0) attr_timeout = AttrTimeout(req, a);
  const NameGrant grant = GrantName(req, parent);
  fuse_entry_param e = {};
  e.ino = ToFuse(req, a.ino);
  e.generation = a.generation;
  e.attr = ToStat(req, a);
  e.attr_timeout = attr_timeout;
  e.entry_timeout = grant.timeout;
  NoteEntry(req, parent, name, a);
  client::FileSystemClient& fs = *ctx.fs;
  fs.Remember(a, from_mds);
  if (fuse_reply_entry(req, &e) != 0) {
    fs.Forget(a.ino, 1);  // request interrupted
    return;
  }
  fs.NoteKernelAttrs(a);
  NoteGiven(ctx, grant, parent, name);
}

void ReplyEntryOr(fuse_req_t req, uint64_t parent, const std::string& name,
                  const absl::StatusOr<Attr>& a, const char* op) {
  if (!a.ok()) return ReplyError(req, a.status(), op);
  ReplyEntry(req, parent, name, *a);
}

void ReplyOk(fuse_req_t req, const absl::Status& s, const char* op) {
  if (!s.ok()) return ReplyError(req, s, op);
  fuse_reply_err(req, 0);
}

// ---- operations

// FOPEN_DIRECT_IO for an open with these flags: asked for, or a writer
// when the mount bypasses the page cache for writers. A write through the
// page cache is copied twice in the kernel (into a page-cache page, then to
// this daemon) and leaves pages to reclaim; direct, once, from the writer's
// own pages. `dd` of 1 GiB onto the quickstart mount: 446-499 MB/s against
// 393-422 through the page cache; fio's four 512 MiB streams: 374-401
// against 324-361 MiB/s (alternating mounts, three rounds each).
bool DirectIo(const MountContext& ctx, int flags) {
  return (flags & O_DIRECT) != 0 || (ctx.direct_writes && (flags & O_ACCMODE) != O_RDONLY);
}

void Init(void* userdata, fuse_conn_info* conn) {
  auto* ctx = static_cast<MountContext*>(userdata);
  ctx->direct_writes = ctx->want_direct_writes && RequestDirectIoMmap(conn->proto_minor);
  LOG(INFO) << "event=fuse_init proto=" << conn->proto_major << "." << conn->proto_minor
            << " direct_writes=" << ctx->direct_writes;
  conn->max_write = kMaxWriteBytes;  // libfuse asks the kernel for max_pages to match
  conn->max_readahead = kMaxWriteBytes;
  if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC) conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
  if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
  if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
  // File handles (name_to_handle_at, an NFS re-export) survive the kernel
  // forgetting the inode: inode numbers are the MDS's, stable, and Lookup
  // answers "." and "..".
  if (conn->capable & FUSE_CAP_EXPORT_SUPPORT) conn->want |= FUSE_CAP_EXPORT_SUPPORT;
  // The MDS clears setuid/setgid on write, truncate and chown with the
  // caller's identity (ModeAfterWrite, ModeForChown). Without this the
  // kernel sends a chmod of its own first, as the writer. libfuse 3.14
  // never passes this flag on to the kernel, so the MDS also accepts that
  // chmod from a writer (mds/ops/setattr.cc).
  if (conn->capable & FUSE_CAP_HANDLE_KILLPRIV) conn->want |= FUSE_CAP_HANDLE_KILLPRIV;
  // The MDS applies the umask, except under a default ACL (the create mode
  // then masks the ACL instead); the kernel must pass the mode unmasked.
  if (conn->capable & FUSE_CAP_DONT_MASK) conn->want |= FUSE_CAP_DONT_MASK;
  // Permissions are checked by the kernel too (POSIX ACLs turn on
  // default_permissions): it opens FIFOs, sockets and device nodes without
  // asking the filesystem, so only its own check can refuse them. It checks
  // with the attributes and ACLs it holds, which are coherent: kept only
  // under the mount's attribute caps, and invalidated (ACLs too) by their
  // revoke. The MDS still checks every request.
  if (conn->capable & FUSE_CAP_POSIX_ACL) conn->want |= FUSE_CAP_POSIX_ACL;
  ctx->kernel_permissions = (conn->want & FUSE_CAP_POSIX_ACL) != 0;
  LOG(INFO) << "event=fuse_permissions kernel=" << ctx->kernel_permissions;
  // The client library buffers writes; the kernel's writeback cache would
  // own size and mtime, which only caps can make safe.
  conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  // Locks: the MDS's (Getlk, Setlk, Flock) or the kernel's.
  constexpr unsigned kLockCaps = FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS;
  if (ctx->want_cluster_locks) {
    conn->want |= conn->capable & kLockCaps;
  } else {
    conn->want &= ~kLockCaps;
  }
  ctx->remote_posix_locks = (conn->want & FUSE_CAP_POSIX_LOCKS) != 0;
  LOG(INFO) << "event=fuse_locks posix=" << (ctx->remote_posix_locks ? "cluster" : "local")
            << " flock=" << ((conn->want & FUSE_CAP_FLOCK_LOCKS) != 0 ? "cluster" : "local");
}

void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  // Path walks never ask for "." or "..": the kernel's export code does, to
  // turn an NFS file handle (name_to_handle_at) back into an inode it no
  // longer caches: "." of any inode, ".." of a directory. The mount's root
  // is its own parent (a subdir mount must not lead above it).
  const bool dot = strcmp(name, ".") == 0;
  if (dot || (strcmp(name, "..") == 0 && parent == FUSE_ROOT_ID)) {
    auto a = Fs(req).Getattr(CredsOf(req), ToMds(req, parent));
    if (!a.ok()) return ReplyError(req, a.status(), "lookup");
    // Removed (its purge may not have run yet): the handle is stale. An
    // open file is still in the kernel, which asks nothing.
    if (a->nlink == 0) return fuse_reply_err(req, ESTALE), void();
    return ReplyEntry(req, ToMds(req, parent), name, *a, 0.0);
  }
  client::FileSystemClient::LookupInfo info;
  auto a = Fs(req).Lookup(CredsOf(req), ToMds(req, parent), name, &info);
  if (!a.ok()) return ReplyError(req, a.status(), "lookup");
  ReplyEntry(req, ToMds(req, parent), name, *a, absl::ToDoubleSeconds(info.attr_valid),
             info.from_mds);
}

void ForgetOne(fuse_req_t req, uint64_t ino, uint64_t nlookup) {
  if (Fs(req).Forget(ino, nlookup)) Ctx(req).places.Drop(ino);
}

void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  ForgetOne(req, ToMds(req, ino), nlookup);
  fuse_reply_none(req);
}

void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) ForgetOne(req, ToMds(req, forgets[i].ino), forgets[i].nlookup);
  fuse_reply_none(req);
}

void Getattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info*) {
  client::FileSystemClient& fs = Fs(req);
  auto a = fs.Getattr(CredsOf(req), ToMds(req, ino));
  if (!a.ok()) return ReplyError(req, a.status(), "getattr");
  struct stat st = ToStat(req, *a);
  if (fuse_reply_attr(req, &st, AttrTimeout(req, *a)) == 0) fs.NoteKernelAttrs(*a);
}

void Setattr(fuse_req_t req, fuse_ino_t ino, struct stat* attr, int to_set, fuse_file_info* fi) {
  client::SetattrArgs args;
  if (to_set & FUSE_SET_ATTR_MODE) {
    args.valid |= posix::kSetMode;
    args.mode = attr->st_mode & 07777;
  }
  if (to_set & FUSE_SET_ATTR_UID) {
    args.valid |= posix::kSetUid;
    args.uid = attr->st_uid;
  }
  if (to_set & FUSE_SET_ATTR_GID) {
    args.valid |= posix::kSetGid;
    args.gid = attr->st_gid;
  }
  if (to_set & FUSE_SET_ATTR_SIZE) {
    args.valid |= posix::kSetSize;
    args.size = attr->st_size;
  }
  if (to_set & FUSE_SET_ATTR_ATIME_NOW) {
    args.valid |= posix::kSetAtimeNow;
  } else if (to_set & FUSE_SET_ATTR_ATIME) {
    args.valid |= posix::kSetAtime;
    args.atime_ns = Nanos(attr->st_atim);
  }
  if (to_set & FUSE_SET_ATTR_MTIME_NOW) {
    args.valid |= posix::kSetMtimeNow;
  } else if (to_set & FUSE_SET_ATTR_MTIME) {
    args.valid |= posix::kSetMtime;
    args.mtime_ns = Nanos(attr->st_mtim);
  }
  // The kernel sends a setattr without fields for chown(path, -1, -1),
  // which still sets the change time.
  if (args.valid == 0) args.valid = posix::kSetCtimeNow;
  BusyDir busy(req, ToMds(req, ino));  // a no-op for files
  auto a = Fs(req).Setattr(CredsOf(req), ToMds(req, ino), args, fi != nullptr ? fi->fh : 0);
  if (!a.ok()) return ReplyError(req, a.status(), "setattr");
  struct stat st = ToStat(req, *a);
  MountContext& ctx = Ctx(req);
  if (fuse_reply_attr(req, &st, AttrTimeout(req, *a)) == 0) ctx.fs->NoteKernelAttrs(*a);
  if ((args.valid & posix::kSetMode) && S_ISDIR(a->mode)) DropKeptNames(ctx, a->ino);
}

void Mknod(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode, dev_t rdev) {
  BusyDir busy(req, ToMds(req, parent));
  ReplyEntryOr(req, ToMds(req, parent), name,
               Fs(req).Mknod(CredsOf(req), ToMds(req, parent), name, mode, rdev), "mknod");
}

void Mkdir(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode) {
  BusyDir busy(req, ToMds(req, parent));
  ReplyEntryOr(req, ToMds(req, parent), name,
               Fs(req).Mkdir(CredsOf(req), ToMds(req, parent), name, mode), "mkdir");
}

void Symlink(fuse_req_t req, const char* link, fuse_ino_t parent, const char* name) {
  BusyDir busy(req, ToMds(req, parent));
  ReplyEntryOr(req, ToMds(req, parent), name,
               Fs(req).Symlink(CredsOf(req), ToMds(req, parent), name, link), "symlink");
}

void Link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t new_parent, const char* new_name) {
  BusyDir busy(req, ToMds(req, new_parent));
  ReplyEntryOr(req, ToMds(req, new_parent), new_name,
               Fs(req).Link(CredsOf(req), ToMds(req, ino), ToMds(req, new_parent), new_name),
               "link");
}

void Unlink(fuse_req_t req, fuse_ino_t parent, const char* name) {
  BusyDir busy(req, ToMds(req, parent));
  ReplyOk(req, Fs(req).Unlink(CredsOf(req), ToMds(req, parent), name), "unlink");
}

void Rmdir(fuse_req_t req, fuse_ino_t parent, const char* name) {
  BusyDir busy(req, ToMds(req, parent));
  ReplyOk(req, Fs(req).Rmdir(CredsOf(req), ToMds(req, parent), name), "rmdir");
}

void Rename(fuse_req_t req, fuse_ino_t parent, const char* name, fuse_ino_t new_parent,
            const char* new_name, unsigned int flags) {
  MountContext& ctx = Ctx(req);
  const uint64_t from = ToMds(req, parent), to = ToMds(req, new_parent);
  BusyDir busy_from(req, from), busy_to(req, to);
  const absl::Status s = ctx.fs->Rename(CredsOf(req), from, name, to, new_name, flags);
  const bool exchange = (flags & RENAME_EXCHANGE) != 0;
  if (s.ok()) ctx.places.Rename(from, name, to, new_name, exchange);
  const NameGrant to_grant = GrantName(req, to), from_grant = GrantName(req, from);
  ReplyOk(req, s, "rename");
  if (!s.ok()) return;
  SettleMovedName(ctx, to_grant, to, new_name);
  if (exchange) SettleMovedName(ctx, from_grant, from, name);
}

void Readlink(fuse_req_t req, fuse_ino_t ino) {
  auto target = Fs(req).Readlink(CredsOf(req), ToMds(req, ino));
  if (!target.ok()) return ReplyError(req, target.status(), "readlink");
  fuse_reply_readlink(req, target->c_str());
}

void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto opened = Fs(req).Open(CredsOf(req), ToMds(req, ino), fi->flags);
  if (!opened.ok()) return ReplyError(req, opened.status(), "open");
  fi->fh = opened->fh;
  fi->keep_cache = 0;  // close-to-open: another client may have written
  fi->direct_io = DirectIo(Ctx(req), fi->flags) ? 1 : 0;
  // A reader's close has nothing to flush: no FLUSH round trip for it,
  // unless the close must release the POSIX locks the MDS holds for the
  // process (any descriptor's close releases them all: it may have locked
  // the file through this one).
  fi->noflush = !Ctx(req).remote_posix_locks && (fi->flags & O_ACCMODE) == O_RDONLY ? 1 : 0;
  // The kernel may hold this inode's attributes from before another
  // client's last close, and it clamps reads to the size it holds: unless
  // the open found the version this mount last gave the kernel, it asks
  // again (the client answers from the open's fresh attributes). Only the
  // attributes (offset -1); no lock an open holds is taken.
  if (Ctx(req).se != nullptr && !Fs(req).KernelHas(opened->attr)) {
    (void)fuse_lowlevel_notify_inval_inode(Ctx(req).se, ino, -1, 0);
  }
  if (fuse_reply_open(req, fi) != 0) (void)Fs(req).Release(opened->fh);
}

void Create(fuse_req_t req, fuse_ino_t parent, const char* name, mode_t mode,
            fuse_file_info* fi) {
  MountContext& ctx = Ctx(req);
  const uint64_t dir = ToMds(req, parent);
  BusyDir busy(req, dir);
  auto opened = ctx.fs->Create(CredsOf(req), dir, name, mode, fi->flags);
  if (!opened.ok()) return ReplyError(req, opened.status(), "create");
  fi->fh = opened->fh;
  fi->keep_cache = 0;
  fi->direct_io = DirectIo(ctx, fi->flags) ? 1 : 0;
  const NameGrant grant = GrantName(req, dir);
  fuse_entry_param e = {};
  e.ino = ToFuse(req, opened->attr.ino);
  e.generation = opened->attr.generation;
  e.attr = ToStat(req, opened->attr);
  e.attr_timeout = AttrTimeout(req, opened->attr);
  e.entry_timeout = grant.timeout;
  NoteEntry(req, dir, name, opened->attr);
  client::FileSystemClient& fs = *ctx.fs;
  fs.Remember(opened->attr);
  if (fuse_reply_create(req, &e, fi) != 0) {
    fs.Forget(opened->attr.ino, 1);
    (void)fs.Release(opened->fh);
    return;
  }
  fs.NoteKernelAttrs(opened->attr);
  NoteGiven(ctx, grant, dir, name);
}

void Read(fuse_req_t req, fuse_ino_t, size_t size, off_t off, fuse_file_info* fi) {
  auto data = Fs(req).Read(fi->fh, static_cast<uint64_t>(off), size);
  if (!data.ok()) return ReplyError(req, data.status(), "read");
  fuse_reply_buf(req, data->data(), data->size());
}

void Write(fuse_req_t req, fuse_ino_t, const char* buf, size_t size, off_t off,
           fuse_file_info* fi) {
  // writepage: the kernel writing back a mapping's dirty pages.
  auto n = fi->writepage ? Fs(req).WriteBackPages(CredsOf(req), fi->fh, static_cast<uint64_t>(off),
                                                  absl::string_view(buf, size))
                         : Fs(req).Write(CredsOf(req), fi->fh, static_cast<uint64_t>(off),
                                         absl::string_view(buf, size));
  if (!n.ok()) return ReplyError(req, n.status(), "write");
  fuse_reply_write(req, *n);
}

void Fallocate(fuse_req_t req, fuse_ino_t, int mode, off_t offset, off_t length,
               fuse_file_info* fi) {
  if (offset < 0 || length <= 0) return fuse_reply_err(req, EINVAL), void();
  ReplyOk(req,
          Fs(req).Fallocate(CredsOf(req), fi->fh, static_cast<uint32_t>(mode),
                            static_cast<uint64_t>(offset), static_cast<uint64_t>(length)),
          "fallocate");
}

// close(2): buffered writes reach the OSDs (close-to-open), and their errors the application.
// Also every close(2) of the process's descriptors of the file: its POSIX
// locks on the file go (fi->lock_owner is the process's).
void Flush(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  if (Ctx(req).remote_posix_locks) {
    absl::Status dropped =
        Fs(req).locks().DropOwner(ToMds(req, ino), locks::Kind::kPosix, fi->lock_owner);
    if (!dropped.ok()) LOG(WARNING) << "op=flush ino=" << ino << " unlock=\"" << dropped << "\"";
  }
  ReplyOk(req, Fs(req).Flush(fi->fh), "flush");
}

// The last close of an open file description: its flock lock and its OFD
// locks (F_OFD_SETLK) go with it (FileLocks::ReleaseHandle).
void Release(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  client::FileLocks& locks = Fs(req).locks();
  if (fi->flock_release) {
    absl::Status dropped = locks.DropOwner(ToMds(req, ino), locks::Kind::kFlock, fi->lock_owner);
    if (!dropped.ok()) LOG(WARNING) << "op=release ino=" << ino << " unlock=\"" << dropped << "\"";
  }
  if (Ctx(req).remote_posix_locks) {
    absl::Status dropped = locks.ReleaseHandle(ToMds(req, ino), fi->fh);
    if (!dropped.ok()) {
      LOG(WARNING) << "op=release ino=" << ino << " ofd_unlock=\"" << dropped << "\"";
    }
  }
  Fs(req).ReleaseInBackground(fi->fh);
  fuse_reply_err(req, 0);
}

// ---- advisory locks (the MDS's; see client::FileLocks)

// struct flock as libfuse gives it (whence SEEK_SET, l_len 0: to the end).
absl::StatusOr<locks::Lock> LockOf(fuse_req_t req, fuse_ino_t ino, const fuse_file_info* fi,
                                   const struct flock& fl) {
  locks::Lock l;
  l.ino = ToMds(req, ino);
  l.owner.id = fi->lock_owner;
  l.pid = static_cast<uint32_t>(fl.l_pid > 0 ? fl.l_pid : fuse_req_ctx(req)->pid);
  switch (fl.l_type) {
    case F_RDLCK: l.type = locks::Type::kRead; break;
    case F_WRLCK: l.type = locks::Type::kWrite; break;
    case F_UNLCK: l.type = locks::Type::kUnlock; break;
    default: return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL, "bad lock type");
  }
  if (fl.l_start < 0 || fl.l_len < 0) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL, "bad lock range");
  }
  l.start = static_cast<uint64_t>(fl.l_start);
  l.end = fl.l_len == 0 ? locks::kLockEnd : l.start + static_cast<uint64_t>(fl.l_len) - 1;
  return l;
}

// Takes the lock now, or (`wait`) on a thread of ctx.lock_waits.
void SetLockAndReply(fuse_req_t req, const locks::Lock& want, uint64_t fh, bool wait,
                     const char* op) {
  MountContext& ctx = Ctx(req);
  if (!wait || want.type == locks::Type::kUnlock || ctx.lock_waits == nullptr) {
    return ReplyOk(req, ctx.fs->locks().Set(want, fh, /*wait=*/false, nullptr), op);
  }
  client::FileSystemClient* fs = ctx.fs;
  const bool started = ctx.lock_waits->Start(
      req, [fs, want, fh](const std::function<bool()>& cancelled) {
        return fs->locks().Set(want, fh, /*wait=*/true, cancelled);
      },
      [op](fuse_req_t waiting, const absl::Status& status) { ReplyOk(waiting, status, op); });
  if (!started) fuse_reply_err(req, ENOLCK);
}

void Getlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock) {
  auto want = LockOf(req, ino, fi, *lock);
  if (!want.ok()) return ReplyError(req, want.status(), "getlk");
  auto held = Fs(req).locks().Test(*want);
  if (!held.ok()) return ReplyError(req, held.status(), "getlk");
  struct flock out = {};
  out.l_whence = SEEK_SET;
  if (held->type == locks::Type::kUnlock) {
    out.l_type = F_UNLCK;
  } else {
    out.l_type = held->type == locks::Type::kRead ? F_RDLCK : F_WRLCK;
    out.l_start = static_cast<off_t>(held->start);
    out.l_len = held->end == locks::kLockEnd ? 0 : static_cast<off_t>(held->end - held->start + 1);
    // A process id means something only on this host: another mount's
    // holder shows as pid 0 (the kernel does the same with ids it cannot map).
    out.l_pid = held->owner.session == Fs(req).session() ? static_cast<pid_t>(held->pid) : 0;
  }
  fuse_reply_lock(req, &out);
}

void Setlk(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, struct flock* lock, int sleep) {
  auto want = LockOf(req, ino, fi, *lock);
  if (!want.ok()) return ReplyError(req, want.status(), "setlk");
  SetLockAndReply(req, *want, fi->fh, sleep != 0, "setlk");
}

void Flock(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi, int op) {
  locks::Lock want;  // the whole file
  want.ino = ToMds(req, ino);
  want.kind = locks::Kind::kFlock;
  want.owner.id = fi->lock_owner;
  want.pid = static_cast<uint32_t>(fuse_req_ctx(req)->pid);
  switch (op & ~LOCK_NB) {
    case LOCK_SH: want.type = locks::Type::kRead; break;
    case LOCK_EX: want.type = locks::Type::kWrite; break;
    case LOCK_UN: want.type = locks::Type::kUnlock; break;
    default: return fuse_reply_err(req, EINVAL), void();
  }
  // The owner is the open file description: released with it (Release).
  SetLockAndReply(req, want, /*fh=*/0, (op & LOCK_NB) == 0, "flock");
}

// Only SEEK_DATA and SEEK_HOLE come here (the kernel does the others).
void Lseek(fuse_req_t req, fuse_ino_t, off_t off, int whence, fuse_file_info* fi) {
  if (whence != SEEK_DATA && whence != SEEK_HOLE) return fuse_reply_err(req, EINVAL), void();
  if (off < 0) return fuse_reply_err(req, ENXIO), void();
  auto r = Fs(req).Seek(fi->fh, static_cast<uint64_t>(off), whence == SEEK_HOLE);
  if (!r.ok()) return ReplyError(req, r.status(), "lseek");
  fuse_reply_lseek(req, static_cast<off_t>(*r));
}

void Fsync(fuse_req_t req, fuse_ino_t, int, fuse_file_info* fi) {
  ReplyOk(req, Fs(req).Fsync(fi->fh), "fsync");
}

void Opendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  auto a = Fs(req).Getattr(CredsOf(req), ToMds(req, ino));
  if (!a.ok()) return ReplyError(req, a.status(), "opendir");
  if (!S_ISDIR(a->mode)) return fuse_reply_err(req, ENOTDIR), void();
  // Every open of a directory reads it (the kernel refuses a write open).
  const absl::Status may = Fs(req).MayReadDir(CredsOf(req), *a);
  if (!may.ok()) return ReplyError(req, may, "opendir");
  // What its READDIRs read from the MDS and the kernel did not take yet,
  // kept as long as attributes are (they go to the kernel with the entries).
  auto stream = std::make_unique<client::DirStream>(absl::Seconds(kAttrTimeoutS));
  fi->fh = reinterpret_cast<uint64_t>(stream.get());
  if (fuse_reply_open(req, fi) == 0) stream.release();  // Releasedir deletes it
}

client::DirStream* StreamOf(const fuse_file_info* fi) {
  return fi == nullptr ? nullptr : reinterpret_cast<client::DirStream*>(fi->fh);
}

void Releasedir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) {
  delete StreamOf(fi);
  fuse_reply_err(req, 0);
}

// fsync of a directory: its entries (and every change before) are durable.
// Of the mount's root: everything the mount buffered too, as syncfs(2) would
// (the kernel does not pass syncfs or sync to a FUSE daemon).
void Fsyncdir(fuse_req_t req, fuse_ino_t ino, int, fuse_file_info*) {
  const absl::Status s = ino == FUSE_ROOT_ID ? Fs(req).SyncAll() : Fs(req).SyncMetadata();
  ReplyOk(req, s, "fsyncdir");
}

void Statfs(fuse_req_t req, fuse_ino_t) {
  auto s = Fs(req).Statfs(CredsOf(req));
  if (!s.ok()) return ReplyError(req, s.status(), "statfs");
  constexpr uint64_t kBlock = 4096;
  struct statvfs st = {};
  st.f_bsize = kBlock;
  st.f_frsize = kBlock;
  st.f_blocks = s->bytes_total / kBlock;
  st.f_bfree = s->bytes_avail / kBlock;
  st.f_bavail = s->bytes_avail / kBlock;
  st.f_files = s->files + s->files_free;
  st.f_ffree = s->files_free;
  st.f_favail = s->files_free;
  st.f_namemax = s->name_max;
  fuse_reply_statfs(req, &st);
}

void Setxattr(fuse_req_t req, fuse_ino_t ino, const char* name, const char* value, size_t size,
              int flags) {
  MountContext& ctx = Ctx(req);
  const uint64_t target = ToMds(req, ino);
  BusyDir busy(req, target);  // a no-op for files
  ReplyOk(req,
          ctx.fs->Setxattr(CredsOf(req), target, name, std::string(value, size),
                           static_cast<uint32_t>(flags)),
          "setxattr");
  // An ACL may deny some callers the search of a directory (a no-op for files).
  if (posix::kXattrPosixAclAccess == name) DropKeptNames(ctx, target);
}

// getxattr/listxattr: size 0 asks for the length; a too-small buffer is ERANGE.
void ReplySized(fuse_req_t req, const std::string& value, size_t size) {
  if (size == 0) return fuse_reply_xattr(req, value.size()), void();
  if (value.size() > size) return fuse_reply_err(req, ERANGE), void();
  fuse_reply_buf(req, value.data(), value.size());
}

void Getxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  auto value = Fs(req).Getxattr(CredsOf(req), ToMds(req, ino), name);
  if (!value.ok()) return ReplyError(req, value.status(), "getxattr");
  ReplySized(req, *value, size);
}

void Listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  auto names = Fs(req).Listxattr(CredsOf(req), ToMds(req, ino));
  if (!names.ok()) return ReplyError(req, names.status(), "listxattr");
  std::string packed;
  for (const std::string& n : *names) packed.append(n).push_back('\0');
  ReplySized(req, packed, size);
}

void Removexattr(fuse_req_t req, fuse_ino_t ino, const char* name) {
  MountContext& ctx = Ctx(req);
  const uint64_t target = ToMds(req, ino);
  BusyDir busy(req, target);  // a no-op for files
  ReplyOk(req, ctx.fs->Removexattr(CredsOf(req), target, name), "removexattr");
  // The mode that the ACL stood for may leave some callers without search.
  if (posix::kXattrPosixAclAccess == name) DropKeptNames(ctx, target);
}

void Access(fuse_req_t req, fuse_ino_t ino, int mask) {
  ReplyOk(req, Fs(req).Access(CredsOf(req), ToMds(req, ino), mask), "access");
}

// readdir offsets: 1 and 2 follow "." and ".."; every other offset is the
// MDS cookie of the entry just emitted (never 0, 1 or 2), so a later call
// continues after it however the directory changed meanwhile.
class DirFiller {
 public:
  // The kernel may keep the entries' attributes for AttrTimeout, and no
  // longer than `kept_max` (a page kept from an earlier READDIR: the
  // attributes it has may be older than the cap held now).
  DirFiller(fuse_req_t req, uint64_t dir, size_t size, bool plus, double kept_max)
      : req_(req), ctx_(Ctx(req)), dir_(dir), grant_(GrantName(req, dir)), buf_(size, '\0'),
        plus_(plus), kept_max_(kept_max) {}
  ~DirFiller() {
    // Entries the kernel never received hold no lookup reference.
    for (uint64_t ino : remembered_) Fs(req_).Forget(ino, 1);
  }

  // False when the buffer is full (the entry was not added).
  bool AddDot(const char* name, uint64_t ino, off_t next) {
    fuse_entry_param e = {};  // e.ino 0: no lookup reference for "." and ".."
    e.attr.st_ino = ToFuse(req_, ino);
    e.attr.st_mode = S_IFDIR;
    return Add(name, e, next);
  }

  bool AddEntry(const client::DirEntry& d) {
    fuse_entry_param e = {};
    if (plus_ && d.has_attr()) {
      e.ino = ToFuse(req_, d.ino);
      e.generation = d.attr.generation;
      e.attr = ToStat(req_, d.attr);
      e.attr_timeout = std::min(kept_max_, AttrTimeout(req_, d.attr));
      e.entry_timeout = grant_.timeout;
      NoteEntry(req_, dir_, d.name, d.attr);
    } else {
      e.attr.st_ino = ToFuse(req_, d.ino);
      e.attr.st_mode = d.type << 12;
    }
    if (!Add(d.name.c_str(), e, static_cast<off_t>(d.cookie))) return false;
    if (e.ino != 0) {
      Fs(req_).Remember(d.attr);
      remembered_.push_back(d.ino);
      if (grant_.timeout > 0.0) given_.push_back(d.name);
    }
    return true;
  }

  // The kernel offset after the last entry added (0: none added).
  off_t next() const { return next_; }

  void Reply() {
    if (fuse_reply_buf(req_, buf_.data(), used_) != 0) return;
    remembered_.clear();
    for (const std::string& name : given_) NoteGiven(ctx_, grant_, dir_, name);
  }

 private:
  bool Add(const char* name, const fuse_entry_param& e, off_t next) {
    char* p = buf_.data() + used_;
    const size_t room = buf_.size() - used_;
    const size_t n = plus_ ? fuse_add_direntry_plus(req_, p, room, name, &e, next)
                           : fuse_add_direntry(req_, p, room, name, &e.attr, next);
    if (n > room) return false;
    used_ += n;
    next_ = next;
    return true;
  }

  fuse_req_t req_;
  MountContext& ctx_;
  uint64_t dir_;      // MDS inode
  NameGrant grant_;   // of every name in it: one look at its mode and lease per reply
  std::string buf_;
  size_t used_ = 0;
  off_t next_ = 0;
  bool plus_;
  double kept_max_;
  std::vector<uint64_t> remembered_;
  std::vector<std::string> given_;  // names with a timeout
};

void DoReaddir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus,
               client::DirStream* stream) {
  const uint64_t dir = ToMds(req, ino);
  const Creds creds = CredsOf(req);
  // Read the first page before emitting ".": a directory we may not read
  // fails whole. What the last READDIR left over, if this one continues it.
  client::DirChanges& changes = Ctx(req).dir_changes;
  std::optional<client::DirStream::Kept> kept;
  if (stream != nullptr && off > 0) {
    kept = stream->Take(static_cast<uint64_t>(off), absl::Now(), changes.Of(dir));
  }
  absl::Time fetched = kept.has_value() ? kept->fetched : absl::Now();
  uint64_t count = kept.has_value() ? kept->changes : 0;  // the directory's, before the fetch
  auto fetch = [&](uint64_t cookie) {
    fetched = absl::Now();
    count = changes.Of(dir);
    return Fs(req).Readdir(creds, dir, cookie, 256, plus);
  };
  absl::StatusOr<client::DirPage> page = kept.has_value()
                                             ? std::move(kept->page)
                                             : fetch(off <= 2 ? 0 : static_cast<uint64_t>(off));
  if (!page.ok()) return ReplyError(req, page.status(), "readdir");
  // Kept attributes: as this client knows them now, and kept by the kernel
  // no longer than if they had come with the last READDIR's reply.
  double kept_max = std::numeric_limits<double>::infinity();
  if (kept.has_value()) {
    for (client::DirEntry& e : page->entries) {
      if (e.has_attr()) e.attr = Fs(req).Freshen(std::move(e.attr));
    }
    kept_max = std::max(0.0, kAttrTimeoutS - absl::ToDoubleSeconds(absl::Now() - fetched));
  }
  // After the first page: its reply may have brought the lease the names'
  // timeout comes from (a directory listed for the first time).
  DirFiller filler(req, dir, size, plus, kept_max);
  if (off < 1 && !filler.AddDot(".", dir, 1)) return filler.Reply();
  if (off < 2) {
    auto parent = Fs(req).Lookup(creds, dir, "..");
    uint64_t parent_ino = ino == FUSE_ROOT_ID || !parent.ok() ? dir : parent->ino;
    if (!filler.AddDot("..", parent_ino, 2)) return filler.Reply();
  }
  // The rest of the page from entry `i` on, for the READDIR that continues
  // after the last entry this reply holds.
  auto keep_rest = [&](size_t i) {
    if (stream == nullptr || filler.next() == 0) return;
    client::DirPage rest;
    rest.eof = page->eof;
    rest.entries.assign(std::make_move_iterator(page->entries.begin() + i),
                        std::make_move_iterator(page->entries.end()));
    stream->Keep(static_cast<uint64_t>(filler.next()), std::move(rest), fetched, count);
  };
  for (;;) {
    for (size_t i = 0; i < page->entries.size(); ++i) {
      if (!filler.AddEntry(page->entries[i])) {
        keep_rest(i);
        return filler.Reply();
      }
    }
    if (page->eof || page->entries.empty()) {
      keep_rest(page->entries.size());
      return filler.Reply();
    }
    page = fetch(page->entries.back().cookie);
    if (!page.ok()) return ReplyError(req, page.status(), "readdir");
  }
}

void Readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  DoReaddir(req, ino, size, off, false, StreamOf(fi));
}

void Readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
  DoReaddir(req, ino, size, off, true, StreamOf(fi));
}

}  // namespace

void OnDirRevoked(MountContext& ctx, uint64_t dir) {
  // Longer only when the MDS holds a request of this mount that the kernel
  // runs holding the directory, one that started after the Busy check below.
  constexpr absl::Duration kExpireWait = absl::Seconds(1);
  ctx.dir_changes.Bump(dir);  // another mount changes it: no kept READDIR page
  std::vector<std::string> names = ctx.names.Revoke(dir, absl::Now());
  if (names.empty()) return;
  auto done = std::make_shared<absl::Notification>();
  ctx.expirer->Submit([&ctx, dir, names = std::move(names), done] {
    for (const std::string& name : names) ExpireName(ctx, dir, name);
    done->Notify();
  });
  // The kernel lets go of the directory once that request is answered, and
  // the names expire then; the MDS may be holding the request for this very
  // revoke (this mount's own chmod of the directory, or a change racing
  // another mount's).
  if (ctx.names.Busy(dir)) return;
  if (!done->WaitForNotificationWithTimeout(kExpireWait)) {
    LOG(WARNING) << "op=lease_revoke dir=" << dir
                 << " names kept by the kernel not expired within 1 s; acknowledged anyway";
  }
}

void OnAttrsRevoked(MountContext& ctx, uint64_t ino) {
  if (ctx.se == nullptr) return;
  const fuse_ino_t kernel_ino = ino == ctx.base_ino ? FUSE_ROOT_ID : ino;
  // Offset -1: the attributes only (no page of the file, so no lock of it).
  const int err = fuse_lowlevel_notify_inval_inode(ctx.se, kernel_ino, -1, 0);
  if (err != 0 && err != -ENOENT) VLOG(1) << "op=inval_attrs ino=" << ino << " err=" << err;
}

void OnCapsGivenBack(MountContext& ctx, std::vector<uint64_t> inos) {
  if (ctx.se == nullptr || ctx.trimmer == nullptr) return;
  ctx.trimmer->Submit([&ctx, inos = std::move(inos)] {
    for (uint64_t ino : ctx.fs->Unpinned(inos)) {
      std::optional<std::pair<uint64_t, std::string>> where = ctx.places.Where(ino);
      if (where.has_value()) DropName(ctx, where->first, where->second);
    }
  });
}

void OnDataInvalidated(MountContext& ctx, uint64_t ino, uint64_t size, const std::string& tail) {
  if (ctx.se == nullptr) return;
  const fuse_ino_t kernel_ino = ino == ctx.base_ino ? FUSE_ROOT_ID : ino;
  // Offset 0, length 0: every page of the file (unmapped from any mmap)
  // and its attributes. Waits for a page a read of this mount has locked.
  int err = fuse_lowlevel_notify_inval_inode(ctx.se, kernel_ino, 0, 0);
  if (err != 0) {
    if (err != -ENOENT) VLOG(1) << "op=inval_data ino=" << ino << " err=" << err;
    return;
  }
  if (size == 0 || tail.size() != 1) return;
  // The kernel keeps its size until it next asks for the attributes, and a
  // mapping faults SIGBUS past it without asking. A store of the file's
  // last byte raises it to `size` (a store of no bytes does not; never
  // lowers it: a shrunk file's mapping reads zeros past the new end until
  // the kernel's next getattr).
  fuse_bufvec last = FUSE_BUFVEC_INIT(1);
  last.buf[0].mem = const_cast<char*>(tail.data());
  err = fuse_lowlevel_notify_store(ctx.se, kernel_ino, static_cast<off_t>(size - 1), &last,
                                   static_cast<fuse_buf_copy_flags>(0));
  if (err != 0 && err != -ENOENT) VLOG(1) << "op=store_size ino=" << ino << " err=" << err;
}

const fuse_lowlevel_ops& Operations() {
  static const fuse_lowlevel_ops ops = [] {
    fuse_lowlevel_ops o = {};
    o.init = Init;
    o.lookup = Lookup;
    o.forget = Forget;
    o.forget_multi = ForgetMulti;
    o.getattr = Getattr;
    o.setattr = Setattr;
    o.readlink = Readlink;
    o.mknod = Mknod;
    o.mkdir = Mkdir;
    o.unlink = Unlink;
    o.rmdir = Rmdir;
    o.symlink = Symlink;
    o.rename = Rename;
    o.link = Link;
    o.open = Open;
    o.read = Read;
    o.write = Write;
    o.flush = Flush;
    o.lseek = Lseek;
    o.release = Release;
    o.fsync = Fsync;
    o.fallocate = Fallocate;
    o.opendir = Opendir;
    o.readdir = Readdir;
    o.readdirplus = Readdirplus;
    o.releasedir = Releasedir;
    o.fsyncdir = Fsyncdir;
    o.statfs = Statfs;
    o.setxattr = Setxattr;
    o.getxattr = Getxattr;
    o.listxattr = Listxattr;
    o.removexattr = Removexattr;
    o.access = Access;
    o.create = Create;
    o.getlk = Getlk;
    o.setlk = Setlk;
    o.flock = Flock;
    return o;
  }();
  return ops;
}

}  // namespace weft::fuse
