#include "fuse-client/lib/file_system_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/log/log.h"
#include "common/posix/permission.h"
#include "common/posix/xattr.h"
#include "common/status/status.h"
#include "common/fs/attr_wire.h"

namespace weft::client {

using fs::FromWire;

absl::Status FileSystemClientOptions::Validate() const {
  if (mds_addrs.empty()) return absl::InvalidArgumentError("no MDS address");
  if (fs.empty()) return absl::InvalidArgumentError("no filesystem name");
  if (inflight_bytes_max == 0) return absl::InvalidArgumentError("inflight_bytes_max is 0");
  if (io_threads < 1) return absl::InvalidArgumentError("io_threads must be at least 1");
  if (writeback_queue < 1) return absl::InvalidArgumentError("writeback_queue is 0");
  if (cache.flush_bytes == 0 || cache.dirty_bytes_max < cache.flush_bytes) {
    return absl::InvalidArgumentError("need 0 < cache.flush_bytes <= cache.dirty_bytes_max");
  }
  if (cache.readahead_chunk_bytes == 0) {
    return absl::InvalidArgumentError("cache.readahead_chunk_bytes is 0");
  }
  return absl::OkStatus();
}

namespace {

// Fails within connect_timeout_ms when no MDS answers or the filesystem does
// not exist, where MetaClient::Connect would keep retrying for op_timeout_ms.
absl::Status Probe(const FileSystemClientOptions& options) {
  const absl::Time deadline = absl::Now() + absl::Milliseconds(options.connect_timeout_ms);
  absl::Status last;
  do {
    FsAdmin admin(options.mds_addrs, std::min<int64_t>(options.connect_timeout_ms, 5000));
    absl::StatusOr<pb::FsMap> map = admin.FsList();
    if (map.ok()) {
      for (const pb::FsInfo& fs : map->filesystems()) {
        if (fs.name() == options.fs) return absl::OkStatus();
      }
      return ErrnoError(absl::StatusCode::kNotFound, ENOENT,
                        absl::StrCat("no filesystem named ", options.fs));
    }
    last = map.status();
    absl::SleepFor(absl::Milliseconds(200));
  } while (absl::Now() < deadline);
  return Annotate(last, absl::StrCat("no MDS answered at ", absl::StrJoin(options.mds_addrs, ",")));
}

}  // namespace

absl::StatusOr<std::unique_ptr<FileSystemClient>> FileSystemClient::Connect(
    FileSystemClientOptions options) {
  RETURN_IF_ERROR(options.Validate());
  RETURN_IF_ERROR(Probe(options));
  // The object client first: its name (the OSD identity) is bound to the
  // session, so that an eviction can fence exactly this mount.
  objects::ClientOptions co;
  co.mds_addrs = options.mds_addrs;
  co.op_timeout_ms = options.op_timeout_ms;
  ASSIGN_OR_RETURN(auto objects, objects::ObjectClient::Connect(co));
  MetaClientOptions mo;
  mo.mds_addrs = options.mds_addrs;
  mo.fs = options.fs;
  mo.client_name = options.client_name;
  mo.osd_client = objects->name();
  mo.op_timeout_ms = options.op_timeout_ms;
  ASSIGN_OR_RETURN(auto meta, MetaClient::Connect(mo));
  return std::unique_ptr<FileSystemClient>(
      new FileSystemClient(std::move(options), std::move(meta), std::move(objects)));
}

FileSystemClient::FileSystemClient(FileSystemClientOptions options,
                                   std::unique_ptr<MetaClient> meta,
                                   std::unique_ptr<objects::ObjectClient> objects)
    : options_(std::move(options)),
      meta_(std::move(meta)),
      locks_(meta_.get()),
      objects_(std::move(objects)),
      io_(objects_.get(), options_.inflight_bytes_max),
      budget_(options_.dirty_bytes_max),
      inline_copies_(options_.inline_copy_bytes),
      pool_(std::make_unique<ThreadPool>("client-io", options_.io_threads,
                                         options_.writeback_queue)),
      read_pool_(std::make_unique<ThreadPool>("client-read", options_.io_threads, 4096)),
      release_pool_(std::make_unique<ThreadPool>("client-release", 4, 65536)),
      recall_pool_(std::make_unique<ThreadPool>("client-recall", 2, 65536)),
      inval_pool_(std::make_unique<ThreadPool>("client-inval", 1, 65536)),
      kernel_inval_pool_(std::make_unique<ThreadPool>("client-kinval", 2, 65536)),
      releaser_([this] { ReleaseLoop(); }),
      flusher_([this] { FlushLoop(); }) {
  meta_->SetOpenFiles([this] { return OpenFiles(); });
  meta_->SetFlushRecall([this](const MetaClient::FlushRequest& recall, std::function<void()> ack) {
    FlushForRecall(recall, std::move(ack));
  });
  meta_->SetDataInval([this](const pb::LeaseEvent& inval, std::function<void()> ack) {
    InvalidateData(inval, std::move(ack));
  });
  if (options_.recover_session) {
    meta_->SetEvictedHandler([this] { recall_pool_->Submit([this] { RecoverSession(); }); });
  }
  meta_->SetHoldReleased([this](uint64_t ino) { ReleaseHold(ino); });
  meta_->SetEpochBarrier([this](uint64_t epoch) { WaitForMap(epoch); });
  meta_->SetStreamLost([this] {
    DropAttrAuthorities();
    ForgetVersions();
    ReleaseHold(0);  // no release could reach us now
  });
}

FileSystemClient::~FileSystemClient() {
  // Recalls are still answered while the releases below write back (after
  // an unmount another client may already be looking).
  release_pool_.reset();  // releases already asked for run to the end...
  {
    absl::MutexLock lock(&release_mu_);
    releases_stop_ = true;
  }
  releaser_.join();  // ...and reach the MDS
  std::vector<FileHandle> open;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [fh, f] : handles_) open.push_back(fh);
  }
  for (FileHandle fh : open) (void)Release(fh);
  meta_->SetEvictedHandler(nullptr);
  meta_->SetFlushRecall(nullptr);  // nothing is buffered any more: acknowledged at once
  meta_->SetDataInval(nullptr);
  meta_->SetHoldReleased(nullptr);
  meta_->SetStreamLost(nullptr);
  recall_pool_.reset();
  inval_pool_.reset();
  kernel_inval_pool_.reset();
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  flusher_.join();
  read_pool_.reset();  // waits for readahead still running
  pool_.reset();
  (void)meta_->Close();
}

uint64_t FileSystemClient::root() const { return meta_->root(); }

absl::StatusOr<Attr> FileSystemClient::ResolvePath(const std::string& path) {
  Creds root_creds;
  ASSIGN_OR_RETURN(Attr attr, FetchAttr(root_creds, root()));
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    ASSIGN_OR_RETURN(attr, Lookup(root_creds, attr.ino, std::string(part)));
  }
  return attr;
}

// ---- cache

void FileSystemClient::Remember(const Attr& attr, bool from_mds) {
  absl::MutexLock lock(&mu_);
  auto [it, added] = inodes_.try_emplace(attr.ino);
  it->second.refs++;
  meta_->NoteCachedInodes(inodes_.size());
  // An inode held already had the reply offered when it came (CacheAttr),
  // which may have refused it; attributes this client had cached are no
  // fresher for being handed out. A lookup answered from the cache finds
  // the inode gone when the kernel forgot it meanwhile: its attributes are
  // kept, not trusted (the next lookup asks the MDS). An entry without
  // them answered the next lookup with inode 0, which the kernel took for
  // "no such name" and cached.
  if (!added) return;
  if (from_mds) {
    it->second.Offer(attr, 0);
  } else {
    it->second.attr = attr;  // `fetched` stays InfinitePast: not trusted
  }
}

bool FileSystemClient::Forget(uint64_t ino, uint64_t n) {
  absl::MutexLock lock(&mu_);
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return true;
  it->second.refs = it->second.refs > n ? it->second.refs - n : 0;
  if (it->second.refs != 0) return false;
  inodes_.erase(it);
  meta_->NoteCachedInodes(inodes_.size());
  return true;
}

void FileSystemClient::NoteKernelAttrs(const Attr& a) {
  absl::MutexLock lock(&mu_);
  auto it = inodes_.find(a.ino);
  if (it != inodes_.end()) it->second.kernel_version = a.version;
}

bool FileSystemClient::KernelHas(const Attr& a) {
  absl::MutexLock lock(&mu_);
  auto it = inodes_.find(a.ino);
  return it != inodes_.end() && a.version != 0 && it->second.kernel_version == a.version;
}

bool FileSystemClient::SearchableByAll(uint64_t dir) {
  absl::MutexLock lock(&mu_);
  auto it = inodes_.find(dir);
  // Attributes known wrong still hold the mode: creates in the directory
  // invalidate it (its times changed), and this client's own chmod leaves
  // the new mode cached.
  if (it == inodes_.end() || it->second.attr.ino == 0) return false;
  const Attr& a = it->second.attr;
  // Without an ACL from the mode, which this client may have changed itself
  // (attribute authority); with one the MDS read it (Samba gives every
  // directory one, and a client with xattrs on an inode decides nothing).
  // Both are false for anything but a directory.
  if (a.no_acl || a.no_xattrs) return posix::SearchableByEveryone(a.mode, "");
  return a.searchable_by_all;
}

absl::Duration FileSystemClient::DirLeaseRemaining(uint64_t dir) {
  return meta_->leases().Remaining(dir, absl::Now());
}

void FileSystemClient::SetDirRevoked(std::function<void(uint64_t dir)> handler) {
  meta_->SetDirRevoked(std::move(handler));
}

absl::Duration FileSystemClient::AttrValid(const Attr& a) {
  return meta_->leases().AttrRemaining(a.ino, a.version, absl::Now());
}

void FileSystemClient::SetDataInvalidated(DataInvalidated handler) {
  absl::MutexLock lock(&inval_mu_);
  data_invalidated_ = std::move(handler);
}

void FileSystemClient::SetAttrsRevoked(std::function<void(uint64_t ino)> handler) {
  meta_->SetAttrsRevoked(std::move(handler));
}

void FileSystemClient::SetCapsGivenBack(MetaClient::CapsGivenBack handler) {
  meta_->SetCapsGivenBack(std::move(handler));
}

std::vector<uint64_t> FileSystemClient::Unpinned(const std::vector<uint64_t>& inos) {
  absl::MutexLock lock(&mu_);
  absl::flat_hash_set<uint64_t> open;
  for (const auto& [fh, f] : handles_) open.insert(f->ino);
  std::vector<uint64_t> out;
  for (uint64_t ino : inos) {
    auto it = inodes_.find(ino);
    if (it == inodes_.end() || open.contains(ino)) continue;
    const Attr& a = it->second.attr;
    if (a.ino != 0 && !S_ISDIR(a.mode)) out.push_back(ino);
  }
  return out;
}

Attr FileSystemClient::CacheAttr(const Attr& attr, uint64_t tid) {
  absl::MutexLock lock(&mu_);
  auto it = inodes_.find(attr.ino);
  // Only inodes someone holds are cached; the rest would never be dropped.
  if (it == inodes_.end()) return attr;
  // An older reply must not overwrite a newer one: e.g. a getattr answered
  // just before the size report of this client's own write-back, which
  // closed files still do.
  return it->second.Offer(attr, tid);
}

Attr FileSystemClient::CacheAttr(const pb::MetaReply& reply) {
  return CacheAttr(FromWire(reply.attr()), reply.tid());
}

Attr FileSystemClient::Newest(Attr attr) {
  absl::MutexLock lock(&mu_);
  auto it = inodes_.find(attr.ino);
  if (it == inodes_.end() || it->second.attr.version <= attr.version) return attr;
  return it->second.attr;
}

void FileSystemClient::Invalidate(uint64_t ino) {
  const uint64_t next = meta_->TidsIssued();
  absl::MutexLock lock(&mu_);
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return;
  it->second.fetched = absl::InfinitePast();
  it->second.stale_below = next;
}

void FileSystemClient::KeepGone(const Attr& last) {
  absl::MutexLock lock(&mu_);
  auto it = inodes_.find(last.ino);
  if (it == inodes_.end()) return;
  it->second.attr = last;
  it->second.fetched = absl::Now();
  it->second.gone = true;
}

void FileSystemClient::WaitForMap(uint64_t epoch) {
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  for (auto map = objects_->map(); map->epoch < epoch; map = objects_->map()) {
    if (absl::Now() >= deadline) {
      LOG(WARNING) << "event=epoch_barrier_late want=" << epoch << " have=" << map->epoch;
      return;
    }
    objects_->WaitNewer(map->epoch, absl::Seconds(1));
  }
}

void FileSystemClient::ForgetVersions() {
  const uint64_t next = meta_->TidsIssued();
  absl::MutexLock lock(&mu_);
  for (auto& [ino, ci] : inodes_) {
    ci.fetched = absl::InfinitePast();
    ci.stale_below = next;
    ci.attr.version = 0;  // the mode stays for SearchableByAll
  }
  // Inline bytes are kept by version too: fetched again.
  for (auto& [ino, oc] : caches_) {
    if (oc.cache != nullptr) oc.cache->DropInlineCopy();
  }
}

// ---- MDS calls

namespace {

void ToProto(const Creds& c, pb::Creds* out) {
  out->set_uid(c.uid);
  out->set_gid(c.gid);
  for (uint32_t g : c.groups) out->add_groups(g);
  out->set_umask(c.umask);
}

}  // namespace

absl::StatusOr<pb::MetaReply> FileSystemClient::Call(const Creds& c, pb::MetaRequest request) {
  if (!request.has_creds()) ToProto(c, request.mutable_creds());  // Lookup fills them first
  return meta_->Call(std::move(request));
}

absl::StatusOr<Attr> FileSystemClient::CallAttr(const Creds& c, pb::MetaRequest request) {
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(c, std::move(request)));
  return CacheAttr(reply);  // or the newer one this client has
}

absl::StatusOr<pb::MetaReply> FileSystemClient::CallInDir(const Creds& c,
                                                         pb::MetaRequest request, uint64_t dir) {
  absl::StatusOr<pb::MetaReply> reply = Call(c, std::move(request));
  bool known = false;
  if (reply.ok()) {
    for (const pb::Attr& a : reply->changed()) {
      CacheAttr(FromWire(a), reply->tid());
      known |= a.ino() == dir;
    }
  }
  // Also after a failure, which may come after the change; and after a
  // retry answered from the MDS's table, which does not keep them.
  if (!known) Invalidate(dir);
  return reply;
}

absl::StatusOr<Attr> FileSystemClient::FetchAttr(const Creds& c, uint64_t ino) {
  pb::MetaRequest r;
  r.mutable_getattr()->set_ino(ino);
  return CallAttr(c, std::move(r));
}

absl::StatusOr<Attr> FileSystemClient::Lookup(const Creds& c, uint64_t parent,
                                              const std::string& name, LookupInfo* info) {
  LookupInfo ignored;
  if (info == nullptr) info = &ignored;
  info->attr_valid = absl::ZeroDuration();
  info->from_mds = true;
  pb::MetaRequest r;
  ToProto(c, r.mutable_creds());
  // Every create starts with the kernel looking up the new name, and the
  // kernel looks names up again once its entry timeout passed: under a
  // directory lease both are answered here.
  const absl::Time now = absl::Now();
  if (std::optional<uint64_t> known = meta_->leases().Known(parent, name, r.creds(), now)) {
    if (*known == 0) {
      local_lookups_.fetch_add(1, std::memory_order_relaxed);
      return ErrnoError(absl::StatusCode::kNotFound, ENOENT, "no such entry (directory lease)");
    }
    std::optional<Attr> cached;
    {
      absl::MutexLock lock(&mu_);
      auto it = inodes_.find(*known);
      // The attributes as fresh as the kernel's own (every reply refreshes
      // them), valid for what is left of their time; not when known wrong.
      if (it != inodes_.end() && it->second.fetched != absl::InfinitePast()) {
        cached = it->second.attr;
        info->attr_valid = TrustLeftLocked(it->second, now);
      }
    }
    if (cached.has_value()) {
      local_lookups_.fetch_add(1, std::memory_order_relaxed);
      info->from_mds = false;
      return WithPending(*std::move(cached));
    }
  }
  r.mutable_lookup()->set_parent(parent);
  r.mutable_lookup()->set_name(name);
  ASSIGN_OR_RETURN(Attr attr, CallAttr(c, std::move(r)));
  info->attr_valid = AttrValid(attr);  // with the cap the reply brought
  return WithPending(std::move(attr));
}

absl::Duration FileSystemClient::TrustLeftLocked(const CachedInode& ci, absl::Time now) {
  if (ci.fetched == absl::InfinitePast()) return absl::ZeroDuration();  // known stale
  return meta_->leases().AttrRemaining(ci.attr.ino, ci.attr.version, now);
}

FileSystemClient::CachedInode* FileSystemClient::TrustedLocked(uint64_t ino) {
  auto it = inodes_.find(ino);
  if (it == inodes_.end()) return nullptr;
  CachedInode& ci = it->second;
  if (ci.gone) return &ci;
  return TrustLeftLocked(ci, absl::Now()) > absl::ZeroDuration() ? &ci : nullptr;
}

std::optional<Attr> FileSystemClient::TrustedAttr(uint64_t ino) {
  absl::MutexLock lock(&mu_);
  const CachedInode* ci = TrustedLocked(ino);
  if (ci == nullptr) return std::nullopt;
  return ci->attr;
}

absl::StatusOr<Attr> FileSystemClient::Getattr(const Creds& c, uint64_t ino) {
  std::optional<Attr> attr = TrustedAttr(ino);
  if (!attr.has_value()) {
    ASSIGN_OR_RETURN(attr, FetchAttr(c, ino));
  }
  return WithPending(*std::move(attr));
}

absl::StatusOr<Attr> FileSystemClient::Setattr(const Creds& c, uint64_t ino,
                                               const SetattrArgs& args, FileHandle fh) {
  pb::MetaRequest r;
  pb::SetattrOp* op = r.mutable_setattr();
  op->set_ino(ino);
  op->set_valid(args.valid);
  op->set_mode(args.mode);
  op->set_uid(args.uid);
  op->set_gid(args.gid);
  op->set_size(args.size);
  op->set_atime_ns(args.atime_ns);
  op->set_mtime_ns(args.mtime_ns);
  if (fh != 0) {
    ASSIGN_OR_RETURN(auto f, Handle(fh));
    op->set_by_handle(f->writable());
  }
  if (args.valid & (posix::kSetAtime | posix::kSetAtimeNow)) {
    // An atime set explicitly after a read stands: the read is not reported.
    absl::MutexLock lock(&release_mu_);
    reads_.erase(ino);
  }
  // Buffered writes stay buffered through a setattr, except before a
  // truncate (it trims the objects) and a mode with setuid or setgid (the
  // flush's WrittenOp would clear them, as a write before the chmod did).
  // Explicit times are kept: the flushes of earlier writes report no mtime
  // (tar writes, then futimens, then closes).
  // A file this client created and nobody else has seen since: mode, owner
  // and times change here and reach the MDS with the file's writes (tar's
  // futimens, fchown, fchmod were three MDS calls per file).
  std::shared_ptr<FileCache> cache = CacheOf(ino);
  if (cache != nullptr) {
    const bool suid = (args.valid & posix::kSetMode) && (args.mode & (S_ISUID | S_ISGID));
    if ((args.valid & posix::kSetSize) || suid) RETURN_IF_ERROR(cache->Flush());
    if (args.valid & (posix::kSetMtime | posix::kSetMtimeNow)) cache->TimesSet();
    if ((args.valid & posix::kSetSize) == 0) {
      ASSIGN_OR_RETURN(std::optional<Attr> local, SetattrLocally(c, ino, args, cache.get()));
      if (local.has_value()) return *std::move(local);
    }
    // Changes made here come first: the MDS decides on top of them.
    if (cache->attrs_pending()) RETURN_IF_ERROR(cache->Flush());
  }
  if ((args.valid & posix::kSetSize) == 0) {
    ASSIGN_OR_RETURN(Attr after, CallAttr(c, std::move(r)));
    return WithPending(std::move(after));
  }
  // A truncate: the MDS cuts the objects past the new size before it
  // answers (a truncate up cuts nothing; the hole reads as zeros).
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(c, std::move(r)));
  const Attr after = CacheAttr(reply);
  if (cache != nullptr) cache->Truncated(reply.attr().size());
  return after;
}

absl::StatusOr<std::optional<Attr>> FileSystemClient::SetattrLocally(const Creds& c,
                                                                     uint64_t ino,
                                                                     const SetattrArgs& args,
                                                                     FileCache* cache) {
  constexpr uint32_t kLocal = posix::kSetMode | posix::kSetUid | posix::kSetGid | posix::kSetAtime |
                              posix::kSetMtime | posix::kSetAtimeNow | posix::kSetMtimeNow;
  constexpr uint32_t kPrivileged = S_ISUID | S_ISGID;
  if (args.valid == 0 || (args.valid & ~kLocal) != 0 || !cache->attr_authority()) {
    return std::nullopt;
  }
  std::optional<Attr> cached;
  {
    absl::MutexLock lock(&mu_);
    auto it = inodes_.find(ino);
    if (it != inodes_.end()) cached = it->second.attr;
  }
  if (!cached.has_value()) return std::nullopt;
  // Exact while the authority holds: nobody else changed the file, and
  // this client's own changes are in the cache or pending.
  const Attr before = WithPending(*cached);
  if ((before.mode & S_IFMT) != S_IFREG || (before.mode & kPrivileged) != 0 || !before.no_xattrs ||
      ((args.valid & posix::kSetMode) && (args.mode & kPrivileged) != 0)) {
    return std::nullopt;
  }
  // The MDS's own decision (DoSetattr calls the same), with its errors; no
  // ACL: the file has no xattrs.
  const posix::SetattrAsk ask = posix::SetattrAskOf(args.valid, args.uid, args.gid, args.mode);
  ASSIGN_OR_RETURN(posix::SetattrResult decided,
                   posix::DecideSetattr(AccessOf(before), CredentialsOf(c), ask));
  const int64_t t = std::max(absl::ToUnixNanos(absl::Now()), before.ctime_ns);
  AttrChanges change;
  if (ask.uid) change.valid |= posix::kSetUid;
  if (ask.gid) change.valid |= posix::kSetGid;
  if (ask.mode) change.valid |= posix::kSetMode;
  change.uid = decided.uid;
  change.gid = decided.gid;
  change.mode = decided.mode & 07777;
  if (args.valid & (posix::kSetAtime | posix::kSetAtimeNow)) {
    change.valid |= posix::kSetAtime;
    change.atime_ns = (args.valid & posix::kSetAtime) ? args.atime_ns : t;
  }
  if (args.valid & (posix::kSetMtime | posix::kSetMtimeNow)) {
    change.valid |= posix::kSetMtime;
    change.mtime_ns = (args.valid & posix::kSetMtime) ? args.mtime_ns : t;
  }
  change.ctime_ns = t;
  if (!cache->ChangeAttrs(change)) return std::nullopt;  // recalled meanwhile
  local_setattrs_++;
  return WithPending(*std::move(cached));
}

absl::Status FileSystemClient::SettleAttrs(uint64_t ino, bool drop) {
  std::shared_ptr<FileCache> cache = CacheOf(ino);
  if (cache == nullptr) return absl::OkStatus();
  if (drop) cache->DropAttrAuthority();
  return cache->attrs_pending() ? cache->Flush() : absl::OkStatus();
}

absl::Status FileSystemClient::SettleCreated(uint64_t parent, const std::string& name) {
  std::shared_ptr<FileCache> cache;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [ino, oc] : caches_) {
      if (oc.created_parent != parent || oc.created_name != name) continue;
      cache = oc.cache;
      oc.created_parent = 0;  // the name may change: no more decisions by it
      oc.created_name.clear();
    }
  }
  if (cache == nullptr) return absl::OkStatus();
  cache->DropAttrAuthority();
  return cache->attrs_pending() ? cache->Flush() : absl::OkStatus();
}

void FileSystemClient::DropAttrAuthorities() {
  for (const auto& cache : AllCaches()) {
    cache->DropAttrAuthority();
    if (cache->attrs_pending()) (void)cache->FlushInBackground(absl::InfiniteFuture(), true);
  }
}

absl::StatusOr<Attr> FileSystemClient::Mknod(const Creds& c, uint64_t parent,
                                             const std::string& name, uint32_t mode,
                                             uint64_t rdev) {
  pb::MetaRequest r;
  pb::CreateOp* op = r.mutable_create();
  op->set_parent(parent);
  op->set_name(name);
  op->set_mode(mode);
  op->set_rdev(rdev);
  op->set_exclusive(true);
  ASSIGN_OR_RETURN(pb::MetaReply reply, CallInDir(c, std::move(r), parent));
  return CacheAttr(reply);
}

absl::StatusOr<Attr> FileSystemClient::Mkdir(const Creds& c, uint64_t parent,
                                             const std::string& name, uint32_t mode) {
  pb::MetaRequest r;
  r.mutable_mkdir()->set_parent(parent);
  r.mutable_mkdir()->set_name(name);
  r.mutable_mkdir()->set_mode(mode);
  ASSIGN_OR_RETURN(pb::MetaReply reply, CallInDir(c, std::move(r), parent));
  return CacheAttr(reply);
}

absl::StatusOr<Attr> FileSystemClient::Symlink(const Creds& c, uint64_t parent,
                                               const std::string& name,
                                               const std::string& target) {
  pb::MetaRequest r;
  r.mutable_symlink()->set_parent(parent);
  r.mutable_symlink()->set_name(name);
  r.mutable_symlink()->set_target(target);
  ASSIGN_OR_RETURN(pb::MetaReply reply, CallInDir(c, std::move(r), parent));
  return CacheAttr(reply);
}

absl::StatusOr<Attr> FileSystemClient::Link(const Creds& c, uint64_t ino, uint64_t new_parent,
                                            const std::string& new_name) {
  pb::MetaRequest r;
  r.mutable_link()->set_ino(ino);
  r.mutable_link()->set_new_parent(new_parent);
  r.mutable_link()->set_new_name(new_name);
  RETURN_IF_ERROR(SettleAttrs(ino, /*drop=*/true));  // a second name: decided by the MDS from now on
  ASSIGN_OR_RETURN(pb::MetaReply reply, CallInDir(c, std::move(r), new_parent));
  // The kernel takes these for the inode: with this client's buffered writes.
  return WithPending(CacheAttr(reply));
}

absl::Status FileSystemClient::Unlink(const Creds& c, uint64_t parent, const std::string& name) {
  pb::MetaRequest r;
  r.mutable_unlink()->set_parent(parent);
  r.mutable_unlink()->set_name(name);
  RETURN_IF_ERROR(SettleCreated(parent, name));  // a sticky directory checks the owner
  ASSIGN_OR_RETURN(pb::MetaReply reply, CallInDir(c, std::move(r), parent));
  // The target's nlink and ctime changed: the reply carries them unless the
  // inode is gone (then nothing can ask for its attributes again).
  if (reply.attr().ino() != 0) CacheAttr(reply);
  return absl::OkStatus();
}

absl::Status FileSystemClient::Rmdir(const Creds& c, uint64_t parent, const std::string& name) {
  pb::MetaRequest r;
  r.mutable_rmdir()->set_parent(parent);
  r.mutable_rmdir()->set_name(name);
  ASSIGN_OR_RETURN(pb::MetaReply reply, CallInDir(c, std::move(r), parent));
  if (reply.attr().ino() != 0) KeepGone(FromWire(reply.attr()));
  return absl::OkStatus();
}

absl::Status FileSystemClient::Rename(const Creds& c, uint64_t parent, const std::string& name,
                                      uint64_t new_parent, const std::string& new_name,
                                      uint32_t flags) {
  // A sticky directory checks the owners of both names, and both move.
  RETURN_IF_ERROR(SettleCreated(parent, name));
  RETURN_IF_ERROR(SettleCreated(new_parent, new_name));
  pb::MetaRequest r;
  pb::RenameOp* op = r.mutable_rename();
  op->set_parent(parent);
  op->set_name(name);
  op->set_new_parent(new_parent);
  op->set_new_name(new_name);
  op->set_flags(flags);
  absl::StatusOr<pb::MetaReply> reply = Call(c, std::move(r));
  if (!reply.ok()) {
    Invalidate(parent);
    if (new_parent != parent) Invalidate(new_parent);
    return reply.status();
  }
  // The directories at their new versions (both parents, a moved
  // directory), or, from a retry's kept answer, dropped.
  absl::flat_hash_set<uint64_t> known;
  for (const pb::Attr& a : reply->changed()) {
    CacheAttr(FromWire(a), reply->tid());
    known.insert(a.ino());
  }
  if (!known.contains(parent)) Invalidate(parent);
  if (!known.contains(new_parent)) Invalidate(new_parent);
  // The moved inode's ctime changed, and the replaced one's link count: the
  // reply carries both at their new versions, newer than any write-back
  // report of the replaced file answered before the rename.
  if (reply->attr().ino() != 0) CacheAttr(*reply);
  const Attr replaced = FromWire(reply->replaced());
  if (S_ISDIR(replaced.mode) && replaced.nlink == 0) {
    KeepGone(replaced);  // an empty directory, removed
  } else if (replaced.ino != 0) {
    CacheAttr(replaced, reply->tid());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> FileSystemClient::Readlink(const Creds& c, uint64_t ino) {
  pb::MetaRequest r;
  r.mutable_readlink()->set_ino(ino);
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(c, std::move(r)));
  return reply.value();
}

absl::StatusOr<DirPage> FileSystemClient::Readdir(const Creds& c, uint64_t ino, uint64_t cookie,
                                                  uint32_t max_entries, bool with_attrs) {
  {
    absl::MutexLock lock(&mu_);
    auto it = inodes_.find(ino);
    if (it != inodes_.end() && it->second.gone) return DirPage{.entries = {}, .eof = true};
  }
  pb::MetaRequest r;
  pb::ReaddirOp* op = r.mutable_readdir();
  op->set_ino(ino);
  op->set_cookie(cookie);
  op->set_max_entries(max_entries);
  op->set_with_attrs(with_attrs);
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(c, std::move(r)));
  if (cookie == 0) {  // a listing from its start reads the directory (atime)
    std::optional<Attr> dir;
    {
      absl::MutexLock lock(&mu_);
      auto it = inodes_.find(ino);
      if (it != inodes_.end()) dir = it->second.attr;
    }
    if (dir.has_value()) NoteRead(WithPending(*std::move(dir)));
  }
  DirPage page;
  page.eof = reply.eof();
  page.entries.reserve(reply.entries_size());
  // As Getattr would answer: newer cached versions and this client's
  // buffered or in-flight writes (closed files still write back).
  for (const pb::DirEntry& wire : reply.entries()) {
    DirEntry& e = page.entries.emplace_back(FromWire(wire));
    if (e.has_attr()) e.attr = WithPending(CacheAttr(e.attr, reply.tid()));
  }
  return page;
}

bool FileSystemClient::KnownAbsent(uint64_t ino, const std::string& name) {
  absl::MutexLock lock(&mu_);
  const CachedInode* ci = TrustedLocked(ino);
  if (ci == nullptr) return false;
  return ci->attr.no_xattrs || (ci->attr.no_acl && name == posix::kXattrPosixAclAccess);
}

namespace {

// Values up to this size are kept by the client, up to kCachedXattrs names
// per inode (Samba reads user.DOSATTRIB, about 60 bytes, at every open).
constexpr size_t kCachedXattrBytes = 4096;
constexpr size_t kCachedXattrs = 32;

// The names whose answers are kept: virtual weft.* values change without
// the inode's version, and invalid names are the MDS's to refuse.
bool KeptXattr(const std::string& name) {
  const posix::XattrNs ns = posix::XattrNamespace(name);
  return posix::XattrNameValid(name) && ns != posix::XattrNs::kWeft &&
         ns != posix::XattrNs::kUnsupported;
}

absl::Status NoData() {
  return ErrnoError(absl::StatusCode::kNotFound, ENODATA, "no such attribute");
}

// Whether `c` may read xattr `name` of an inode with `attr` for sure, as the
// MDS decides (mds/ops/xattr.cc): anyone reads security.* and the ACLs, root
// everything, and the owner user.* while the owner class may read (which an
// ACL never changes). Other callers ask the MDS.
bool SurelyReadable(const Creds& c, const Attr& attr, posix::XattrNs ns) {
  switch (ns) {
    case posix::XattrNs::kSecurity:
    case posix::XattrNs::kAcl:
      return true;
    case posix::XattrNs::kTrusted:
      return c.uid == 0;
    case posix::XattrNs::kUser:
      return c.uid == 0 || (c.uid == attr.uid && (attr.mode & S_IRUSR) != 0);
    default:
      return false;  // weft.* are virtual: counted on the MDS, no version of their own
  }
}

}  // namespace

const FileSystemClient::CachedInode* FileSystemClient::TrustedXattrs(uint64_t ino) {
  const CachedInode* ci = TrustedLocked(ino);
  return ci != nullptr && ci->attr.version == ci->xattrs_version ? ci : nullptr;
}

FileSystemClient::CachedInode* FileSystemClient::XattrsAt(uint64_t ino, uint64_t version) {
  auto it = inodes_.find(ino);
  if (version == 0 || it == inodes_.end()) return nullptr;
  CachedInode& ci = it->second;
  if (ci.attr.version != version) return nullptr;  // changed meanwhile: the answer may be older
  if (ci.xattrs_version != version) {
    ci.xattrs.clear();
    ci.xattr_names[0].reset();
    ci.xattr_names[1].reset();
    ci.xattrs_version = version;
  }
  return &ci;
}

std::optional<absl::StatusOr<std::string>> FileSystemClient::CachedXattr(
    const Creds& c, uint64_t ino, const std::string& name) {
  absl::MutexLock lock(&mu_);
  const CachedInode* ci = TrustedXattrs(ino);
  const posix::XattrNs ns = posix::XattrNamespace(name);
  if (ci == nullptr || !SurelyReadable(c, ci->attr, ns)) return std::nullopt;
  auto x = ci->xattrs.find(name);
  if (x != ci->xattrs.end()) {
    if (!x->second.has_value()) return absl::StatusOr<std::string>(NoData());
    return absl::StatusOr<std::string>(*x->second);
  }
  // Not in the list of names this caller would be given: absent.
  const auto& names = ci->xattr_names[c.uid == 0 ? 1 : 0];
  if (names && std::find(names->begin(), names->end(), name) == names->end() &&
      (c.uid == 0 || ns != posix::XattrNs::kTrusted)) {
    return absl::StatusOr<std::string>(NoData());
  }
  return std::nullopt;
}

uint64_t FileSystemClient::KeepAttrOf(const pb::MetaReply& reply) {
  const uint64_t version = reply.attr().version();
  // A newer version cached meanwhile: the answer may be older than it.
  return CacheAttr(reply).version == version ? version : 0;
}

uint64_t FileSystemClient::TrustedVersion(uint64_t ino) {
  absl::MutexLock lock(&mu_);
  const CachedInode* ci = TrustedLocked(ino);  // no copy of the attributes for a number
  return ci != nullptr ? ci->attr.version : 0;
}

void FileSystemClient::RememberXattr(uint64_t ino, uint64_t version, const std::string& name,
                                     std::optional<std::string> value) {
  if (!KeptXattr(name) || (value && value->size() > kCachedXattrBytes)) return;
  absl::MutexLock lock(&mu_);
  CachedInode* ci = XattrsAt(ino, version);
  if (ci == nullptr) return;
  if (ci->xattrs.size() >= kCachedXattrs && !ci->xattrs.contains(name)) return;
  ci->xattrs[name] = std::move(value);
}

absl::StatusOr<std::string> FileSystemClient::Getxattr(const Creds& c, uint64_t ino,
                                                       const std::string& name) {
  // The kernel asks for security.capability before every write and chown
  // (file_remove_privs), and for the access ACL of every inode it checks
  // permissions on: an MDS round trip each, unless the attributes this
  // client trusts say the inode has no xattrs at all (or no ACL).
  if (posix::XattrNameValid(name) && posix::AbsentReadsAsNoData(posix::XattrNamespace(name)) &&
      KnownAbsent(ino, name)) {
    return NoData();
  }
  RETURN_IF_ERROR(SettleAttrs(ino, /*drop=*/false));  // reading user.* checks the mode
  // Gateways read the same few xattrs at every open (Samba's DOS attributes
  // and ACLs): answered here while the inode's version stands.
  if (auto cached = CachedXattr(c, ino, name)) {
    local_xattrs_.fetch_add(1, std::memory_order_relaxed);
    return *std::move(cached);
  }
  return FetchXattr(c, ino, name, TrustedVersion(ino));
}

absl::StatusOr<std::string> FileSystemClient::FetchXattr(const Creds& c, uint64_t ino,
                                                         const std::string& name,
                                                         uint64_t version) {
  pb::MetaRequest r;
  r.mutable_getxattr()->set_ino(ino);
  r.mutable_getxattr()->set_name(name);
  absl::StatusOr<pb::MetaReply> reply = Call(c, std::move(r));
  if (!reply.ok()) {
    if (KeptXattr(name) && IsNoData(reply.status())) {
      RememberXattr(ino, version, name, std::nullopt);
    }
    return reply.status();
  }
  if (!KeptXattr(name)) return reply->value();
  // The value comes with the attributes it belongs to (an MDS from before
  // that sends none: kept at the version known before the call, if any).
  if (reply->attr().ino() == ino) version = KeepAttrOf(*reply);
  RememberXattr(ino, version, name, reply->value());
  return reply->value();
}

absl::Status FileSystemClient::Setxattr(const Creds& c, uint64_t ino, const std::string& name,
                                        const std::string& value, uint32_t flags) {
  pb::MetaRequest r;
  pb::SetxattrOp* op = r.mutable_setxattr();
  op->set_ino(ino);
  op->set_name(name);
  op->set_value(value);
  op->set_flags(flags);
  // The file gets xattrs (an ACL changes its mode): the MDS decides from now on.
  RETURN_IF_ERROR(SettleAttrs(ino, /*drop=*/true));
  Invalidate(ino);  // ctime, and the mode for a POSIX ACL
  const bool layout = absl::StartsWith(name, "weft.file.layout");
  if (layout) {
    // Buffered writes first: the MDS refuses a new layout once the file has
    // data, and must see it.
    if (std::shared_ptr<FileCache> cache = CacheOf(ino)) RETURN_IF_ERROR(cache->Flush());
  }
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(c, std::move(r)));
  // Newer than anything fetched meanwhile: a getxattr after this one
  // returns must not be answered from attributes that predate it.
  const Attr attr = FromWire(reply.attr());
  if (attr.ino != 0) CacheAttr(attr, reply.tid());
  if (layout) RefreshLayout(attr);
  if (name == "security.capability") {  // the next write through any handle drops it
    absl::MutexLock lock(&mu_);
    for (auto& [fh, f] : handles_) {
      if (f->ino == ino) f->caps_dropped.store(false);
    }
  }
  return absl::OkStatus();
}

void FileSystemClient::RefreshLayout(const Attr& attr) {
  absl::StatusOr<objects::FileData> data = DataOf(attr);
  if (!data.ok()) return;  // not a file with a layout: nothing to refresh
  std::shared_ptr<FileCache> cache = CacheOf(attr.ino);
  if (cache != nullptr) cache->SetData(*data);
}

absl::StatusOr<std::vector<std::string>> FileSystemClient::Listxattr(const Creds& c,
                                                                     uint64_t ino) {
  RETURN_IF_ERROR(SettleAttrs(ino, /*drop=*/false));
  // Anyone may list; only trusted.* is left out for callers other than root
  // (mds/ops/xattr.cc), so two lists per inode version answer everyone.
  const int as_root = c.uid == 0 ? 1 : 0;
  {
    absl::MutexLock lock(&mu_);
    const CachedInode* ci = TrustedXattrs(ino);
    if (ci != nullptr && ci->xattr_names[as_root]) {
      local_xattrs_.fetch_add(1, std::memory_order_relaxed);
      return *ci->xattr_names[as_root];
    }
  }
  const uint64_t version = TrustedVersion(ino);
  pb::MetaRequest r;
  r.mutable_listxattr()->set_ino(ino);
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(c, std::move(r)));
  std::vector<std::string> names(reply.names().begin(), reply.names().end());
  const uint64_t at = reply.attr().ino() == ino ? KeepAttrOf(reply) : version;
  absl::MutexLock lock(&mu_);
  if (CachedInode* ci = XattrsAt(ino, at)) ci->xattr_names[as_root] = names;
  return names;
}

absl::Status FileSystemClient::Removexattr(const Creds& c, uint64_t ino,
                                           const std::string& name) {
  pb::MetaRequest r;
  r.mutable_removexattr()->set_ino(ino);
  r.mutable_removexattr()->set_name(name);
  RETURN_IF_ERROR(SettleAttrs(ino, /*drop=*/true));
  Invalidate(ino);
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(c, std::move(r)));
  if (reply.attr().ino() != 0) CacheAttr(reply);
  return absl::OkStatus();
}

absl::StatusOr<FsStats> FileSystemClient::Statfs(const Creds& c) {
  constexpr absl::Duration kStatfsKept = absl::Seconds(1);
  {
    absl::MutexLock lock(&statfs_mu_);
    if (statfs_.has_value() && absl::Now() - statfs_at_ < kStatfsKept) return *statfs_;
  }
  const absl::Time asked = absl::Now();
  pb::MetaRequest r;
  r.mutable_statfs();
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(c, std::move(r)));
  const FsStats stats = FromWire(reply.statfs());
  absl::MutexLock lock(&statfs_mu_);
  if (!statfs_.has_value() || asked > statfs_at_) {
    statfs_ = stats;
    statfs_at_ = asked;
  }
  return stats;
}

posix::Credentials CredentialsOf(const Creds& c) {
  posix::Credentials cred;
  cred.uid = c.uid;
  cred.gid = c.gid;
  cred.groups = c.groups;
  return cred;
}

posix::AccessAttrs AccessOf(const Attr& a) {
  posix::AccessAttrs out;
  out.mode = a.mode;
  out.uid = a.uid;
  out.gid = a.gid;
  return out;
}

absl::Status FileSystemClient::MayReadDir(const Creds& c, const Attr& dir) {
  if (!dir.no_acl && !dir.no_xattrs) return Access(c, dir.ino, R_OK);
  return posix::CheckAccess(AccessOf(dir), CredentialsOf(c), posix::kMayRead);
}

absl::Status FileSystemClient::Access(const Creds& c, uint64_t ino, int mask) {
  RETURN_IF_ERROR(SettleAttrs(ino, /*drop=*/false));
  // Without an ACL the mode bits decide, by the rules the MDS applies
  // (posix::CheckAccess): answered here from trusted attributes, like
  // getattr. (Samba calls access(2) before most operations.)
  std::optional<Attr> attr = TrustedAttr(ino);
  if (attr && (attr->no_acl || attr->no_xattrs)) {
    local_access_.fetch_add(1, std::memory_order_relaxed);
    return posix::CheckAccess(AccessOf(*attr), CredentialsOf(c), mask & (R_OK | W_OK | X_OK));
  }
  pb::MetaRequest r;
  r.mutable_access()->set_ino(ino);
  r.mutable_access()->set_mask(static_cast<uint32_t>(mask) & (R_OK | W_OK | X_OK));
  return CallAttr(c, std::move(r)).status();
}

}  // namespace weft::client
