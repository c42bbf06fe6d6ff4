// FileSystemClient: open files and their data (the namespace half is in
// file_system_client.cc).
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/log/log.h"
#include "common/memory/memory.h"
#include "common/posix/atime.h"
#include "common/status/status.h"
#include "common/fs/attr_wire.h"
#include "fuse-client/lib/file_system_client.h"

namespace weft::client {

using fs::FromWire;
namespace {

int64_t NowNs() { return absl::ToUnixNanos(absl::Now()); }

// Free heap kept resident for reuse (the OSD's threshold, for the same
// buffers of a few MiB: docs/ARCHITECTURE.md, OSD memory).
constexpr uint64_t kHeapFreeBytesKept = 256ull << 20;

}  // namespace

absl::StatusOr<objects::FileData> FileSystemClient::DataOf(const Attr& attr) {
  return objects::FileDataOf(attr.ino, attr.layout.stripe, attr.layout.pool);
}

absl::StatusOr<std::shared_ptr<FileSystemClient::OpenFile>> FileSystemClient::Handle(
    FileHandle fh) {
  absl::MutexLock lock(&mu_);
  auto it = handles_.find(fh);
  if (it == handles_.end()) {
    return ErrnoError(absl::StatusCode::kFailedPrecondition, EBADF,
                      absl::StrCat("no open file handle ", fh));
  }
  if (it->second->stale.load()) {
    return ErrnoError(absl::StatusCode::kAborted, EIO,
                      "the file was open when this mount was evicted: open it again");
  }
  return it->second;
}

void FileSystemClient::RecoverSession() {
  const absl::Status why = ErrnoError(
      absl::StatusCode::kAborted, EIO,
      absl::StrCat("this mount was evicted (", meta_->evicted().message(),
                   "); what it had buffered is lost"));
  std::vector<std::shared_ptr<FileCache>> abandoned;
  size_t stale = 0;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [fh, f] : handles_) {
      f->stale.store(true);
      ++stale;
    }
    for (auto& [ino, oc] : caches_) {
      if (oc.cache != nullptr) abandoned.push_back(oc.cache);
    }
    caches_.clear();
    releasing_.clear();
  }
  for (const auto& cache : abandoned) cache->Abandon(why);
  DropAttrAuthorities();
  ForgetVersions();
  ReleaseHold(0);
  // A new identity at the OSDs: the old one is blocklisted.
  const std::string name = objects::ObjectClient::NewName();
  objects_->Rename(name);
  for (int attempt = 0;; ++attempt) {
    absl::Status recovered = meta_->Recover(name);
    if (recovered.ok()) break;
    LOG(ERROR) << "event=session_recover_failed attempt=" << attempt << " status=" << recovered;
    if (attempt >= 10) return;
    absl::SleepFor(absl::Seconds(1));
  }
  LOG(WARNING) << "event=mount_recovered stale_handles=" << stale
               << " dropped_files=" << abandoned.size();
}

absl::StatusOr<FileSystemClient::Opened> FileSystemClient::AddHandle(const Creds& c,
                                                                     const pb::MetaReply& reply,
                                                                     int flags) {
  const Attr attr = FromWire(reply.attr());
  auto f = std::make_shared<OpenFile>();
  f->ino = attr.ino;
  f->flags = flags;
  f->creds = c;
  Opened out;
  Attr freshest = attr;
  {
    absl::MutexLock lock(&mu_);
    if ((attr.mode & S_IFMT) == S_IFREG) {
      f->cache = CacheFor(attr, reply.has_inline_data() ? &reply.inline_data() : nullptr);
      if (f->cache != nullptr) f->cache->SetWriteThrough(reply.write_through(), reply.buffer_seq());
    }
    out.fh = next_fh_++;
    handles_[out.fh] = std::move(f);
    CachedInode& cached = inodes_[attr.ino];
    cached.refs++;  // an open file keeps its inode cached
    meta_->NoteCachedInodes(inodes_.size());
    // The open's reply may predate the size report of this client's own
    // write-back after an earlier close (WrittenOp's reply, cached first).
    freshest = cached.Offer(attr, reply.tid());
  }
  out.attr = WithPending(freshest);  // another handle's writes may be buffered
  return out;
}

Creds FileSystemClient::WriterOf(uint64_t ino) {
  absl::MutexLock lock(&mu_);
  auto it = caches_.find(ino);
  return it != caches_.end() ? it->second.writer : Creds();
}

std::shared_ptr<FileCache> FileSystemClient::CacheFor(const Attr& attr,
                                                      const std::string* inline_bytes) {
  auto it = caches_.find(attr.ino);
  if (it != caches_.end()) {
    it->second.handles++;
    // Close-to-open: what was read ahead before this open may be stale.
    it->second.cache->DropReadahead();
    it->second.cache->NoteInline(attr.data_inline, attr.version, inline_bytes);
    return it->second.cache;
  }
  absl::StatusOr<objects::FileData> data = DataOf(attr);
  if (!data.ok()) {
    // Still a handle: the MDS holds the open, and Release must end it.
    LOG(ERROR) << "op=open ino=" << attr.ino << " bad_layout=" << data.status();
    return nullptr;
  }
  const uint64_t ino = attr.ino;
  OpenCache& oc = caches_[ino];
  oc.handles = 1;
  oc.cache = FileCache::Create(*data, &io_, pool_.get(), read_pool_.get(), &budget_,
                               options_.cache,
                               [this, ino](uint64_t end, int64_t mtime_ns,
                                           int64_t allocated_delta, const AttrChanges& attrs) {
                                 return ReportWritten(ino, end, mtime_ns, allocated_delta, attrs);
                               });
  if (attr.data_inline) {
    const uint64_t limit = std::min<uint64_t>(meta_->inline_max_bytes(), data->layout.stripe_unit);
    oc.cache->EnableInline(InlineHooksFor(ino), limit, &inline_copies_, attr.version, inline_bytes);
  }
  return oc.cache;
}

FileCache::InlineHooks FileSystemClient::InlineHooksFor(uint64_t ino) {
  FileCache::InlineHooks hooks;
  hooks.write = [this, ino](uint64_t end, int64_t mtime_ns, const AttrChanges& attrs,
                            const objects::ExtentMap& extents) -> absl::StatusOr<FileCache::InlineWritten> {
    ASSIGN_OR_RETURN(pb::MetaReply reply, CallWritten(ino, end, mtime_ns, 0, attrs, &extents));
    FileCache::InlineWritten w;
    w.applied = !reply.inline_refused();
    w.version = reply.attr().version();
    return w;
  };
  auto inline_op = [this, ino](bool uninline) -> absl::StatusOr<pb::MetaReply> {
    const Creds writer = WriterOf(ino);
    pb::MetaRequest r;
    r.mutable_inline_data()->set_ino(ino);
    r.mutable_inline_data()->set_uninline(uninline);
    ASSIGN_OR_RETURN(pb::MetaReply reply, Call(writer, std::move(r)));
    CacheAttr(reply);
    return reply;
  };
  hooks.move = [inline_op]() { return inline_op(true).status(); };
  hooks.fetch = [inline_op]() -> absl::StatusOr<FileCache::InlineFetched> {
    ASSIGN_OR_RETURN(pb::MetaReply reply, inline_op(false));
    FileCache::InlineFetched f;
    f.on = reply.attr().data_inline() && reply.has_inline_data();
    f.bytes = reply.inline_data();
    f.version = reply.attr().version();
    return f;
  };
  return hooks;
}

std::shared_ptr<FileCache> FileSystemClient::CacheOf(uint64_t ino) {
  absl::MutexLock lock(&mu_);
  auto it = caches_.find(ino);
  return it == caches_.end() ? nullptr : it->second.cache;
}

std::vector<std::shared_ptr<FileCache>> FileSystemClient::AllCaches() {
  std::vector<std::shared_ptr<FileCache>> caches;
  absl::MutexLock lock(&mu_);
  for (const auto& [ino, oc] : caches_) caches.push_back(oc.cache);
  return caches;
}

absl::Status FileSystemClient::ReportWritten(uint64_t ino, uint64_t end, int64_t mtime_ns,
                                             int64_t allocated_delta, const AttrChanges& attrs) {
  return CallWritten(ino, end, mtime_ns, allocated_delta, attrs, nullptr).status();
}

absl::StatusOr<pb::MetaReply> FileSystemClient::CallWritten(uint64_t ino, uint64_t end,
                                                            int64_t mtime_ns,
                                                            int64_t allocated_delta,
                                                            const AttrChanges& attrs,
                                                            const objects::ExtentMap* inline_writes) {
  const Creds writer = WriterOf(ino);
  pb::MetaRequest r;
  pb::WrittenOp* op = r.mutable_written();
  op->set_ino(ino);
  op->set_end(end);
  op->set_mtime_ns(mtime_ns);
  op->set_keep_times(mtime_ns == 0);  // FileCache: the times were set after the writes
  op->set_allocated_delta(allocated_delta);
  if (!attrs.empty()) {
    pb::SetattrOp* a = op->mutable_attrs();
    a->set_ino(ino);
    a->set_valid(attrs.valid | posix::kSetCtime);
    a->set_mode(attrs.mode);
    a->set_uid(attrs.uid);
    a->set_gid(attrs.gid);
    a->set_atime_ns(attrs.atime_ns);
    a->set_mtime_ns(attrs.mtime_ns);
    a->set_ctime_ns(attrs.ctime_ns);
  }
  if (inline_writes != nullptr) {
    op->set_inline_report(true);
    for (const auto& [at, bytes] : inline_writes->extents()) {
      pb::InlineExtent* e = op->add_inline_writes();
      e->set_offset(at);
      e->set_data(bytes);
    }
  }
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(writer, std::move(r)));
  CacheAttr(reply);  // or the newer one this client has
  if (reply.buffer_seq() != 0) {
    // The other openers may have closed the file: buffering again.
    if (std::shared_ptr<FileCache> cache = CacheOf(ino)) {
      cache->SetWriteThrough(reply.write_through(), reply.buffer_seq());
    }
  }
  return reply;
}

void FileSystemClient::NoteRead(const Attr& attr) {
  using Atime = FileSystemClientOptions::Atime;
  if (options_.atime == Atime::kNone || (S_ISDIR(attr.mode) && !options_.diratime)) return;
  const int64_t now = NowNs();
  if (!posix::AtimeDue(attr.atime_ns, attr.mtime_ns, attr.ctime_ns, now,
                       options_.atime == Atime::kStrict)) {
    return;
  }
  absl::MutexLock lock(&release_mu_);
  if (reads_.empty()) reads_since_ = absl::Now();
  int64_t& read = reads_[attr.ino];
  read = std::max(read, now);
}

namespace {
constexpr size_t kReadsBatch = 1024;  // sent without waiting for atime_batch
}  // namespace

void FileSystemClient::SendReads() {
  std::vector<std::pair<uint64_t, int64_t>> sent;
  {
    absl::MutexLock lock(&release_mu_);
    for (const auto& [ino, t] : reads_) {
      if (sent.size() == static_cast<size_t>(posix::kMaxAtimeReads)) break;
      sent.emplace_back(ino, t);
    }
  }
  if (sent.empty()) return;
  pb::MetaRequest r;
  pb::AtimeOp* op = r.mutable_atime();
  op->set_strict(options_.atime == FileSystemClientOptions::Atime::kStrict);
  for (const auto& [ino, t] : sent) {
    pb::AtimeRef* read = op->add_reads();
    read->set_ino(ino);
    read->set_atime_ns(t);
  }
  // As the MDS: root's credentials (a read needs no right to change times).
  absl::StatusOr<pb::MetaReply> reply = Call(Creds(), std::move(r));
  if (reply.ok()) {
    for (const pb::Attr& a : reply->changed()) CacheAttr(FromWire(a), reply->tid());
  } else {
    // Best effort, like a lazy atime: dropped rather than sent again and again.
    LOG(WARNING) << "op=atime inodes=" << sent.size() << " status=" << reply.status();
  }
  absl::MutexLock lock(&release_mu_);
  for (const auto& [ino, t] : sent) {
    auto it = reads_.find(ino);
    if (it != reads_.end() && it->second <= t) reads_.erase(it);
  }
  reads_since_ = absl::Now();  // what is left (noted meanwhile) waits its turn
}

Attr FileSystemClient::WithPending(Attr attr) {
  {
    // A read's atime until the MDS has it.
    absl::MutexLock lock(&release_mu_);
    auto read = reads_.find(attr.ino);
    if (read != reads_.end() && read->second > attr.atime_ns) attr.atime_ns = read->second;
  }
  // The buffered state first, then the attributes: a batch that finishes
  // in between has had its report's reply cached (ReportWritten, before the
  // batch leaves `pending`), so it is in one or the other. The other order
  // lost it: a read that took the size from before the report and the
  // pending bytes from after it was cut short (a reopened file read 0 bytes).
  std::shared_ptr<FileCache> cache = CacheOf(attr.ino);
  FileCache::Pending p;
  if (cache != nullptr) p = cache->pending();
  attr = Newest(std::move(attr));
  if (cache == nullptr) return attr;
  const AttrChanges& a = p.attrs;
  if (a.valid & posix::kSetMode) attr.mode = (attr.mode & S_IFMT) | a.mode;
  if (a.valid & posix::kSetUid) attr.uid = a.uid;
  if (a.valid & posix::kSetGid) attr.gid = a.gid;
  if (a.valid & posix::kSetAtime) attr.atime_ns = a.atime_ns;
  if (a.valid & posix::kSetMtime) attr.mtime_ns = a.mtime_ns;
  if (!a.empty()) attr.ctime_ns = std::max(attr.ctime_ns, a.ctime_ns);
  // The report of buffered writes drops setuid/setgid as the MDS decides
  // for the writer (ModeAfterWrite); show that now. (The kernel sends a
  // chmod of its own only for setuid, and setgid with group exec.)
  if (p.bytes > 0 && (attr.mode & (S_ISUID | S_ISGID)) != 0) {
    const Creds writer = WriterOf(attr.ino);
    attr.mode = posix::ModeAfterWrite(AccessOf(attr), CredentialsOf(writer));
  }
  if (p.end > attr.size) attr.size = p.end;
  // Buffered bytes count as allocated until their flush reports what the
  // objects really grew by (an overwrite: nothing), like a local file
  // system's delayed allocation.
  attr.allocated = std::min(attr.size, attr.allocated + p.bytes);
  // 0: nothing buffered (not 1970: an mtime set before 1970 stays).
  if (p.mtime_ns != 0 && p.mtime_ns > attr.mtime_ns) {
    attr.mtime_ns = p.mtime_ns;
    attr.ctime_ns = std::max(attr.ctime_ns, p.mtime_ns);
  }
  return attr;
}

void FileSystemClient::FlushLoop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&stop), absl::Seconds(1))) return;
    }
    // Over half the budget, everything goes; else what is older than dirty_expire.
    const bool force = budget_.bytes() > options_.dirty_bytes_max / 2;
    const absl::Time before = absl::Now() - options_.dirty_expire;
    for (const auto& cache : AllCaches()) (void)cache->FlushInBackground(before, force);
    // Buffers of written and read-ahead data freed: past this much free
    // heap, back to the kernel (weft-fuse runs on tcmalloc, which keeps it).
    memory::ReleaseFreeHeapOver(kHeapFreeBytesKept);
  }
}

absl::StatusOr<FileSystemClient::Opened> FileSystemClient::Open(const Creds& c, uint64_t ino,
                                                                int flags) {
  RETURN_IF_ERROR(SettleAttrs(ino, /*drop=*/false));  // the MDS checks the mode
  pb::MetaRequest r;
  r.mutable_open()->set_ino(ino);
  r.mutable_open()->set_flags(static_cast<uint32_t>(flags));
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(c, std::move(r)));
  ASSIGN_OR_RETURN(Opened opened, AddHandle(c, reply, flags));
  return TruncateOnOpen(c, std::move(opened), flags);
}

absl::StatusOr<FileSystemClient::Opened> FileSystemClient::TruncateOnOpen(const Creds& c,
                                                                          Opened opened,
                                                                          int flags) {
  // The MDS's OpenOp (and CreateOp of an existing name) ignore O_TRUNC. As
  // on Linux, O_TRUNC truncates also through O_RDONLY (write permission is
  // checked by the setattr), and sets mtime and ctime also of an empty file.
  const Attr& attr = opened.attr;
  if ((flags & O_TRUNC) == 0 || (attr.mode & S_IFMT) != S_IFREG) return opened;
  SetattrArgs args;
  args.valid = posix::kSetSize;
  args.size = 0;
  absl::StatusOr<Attr> after = Setattr(c, attr.ino, args, opened.fh);
  if (!after.ok()) {
    (void)Release(opened.fh);
    return after.status();
  }
  opened.attr = *after;
  return opened;
}

absl::StatusOr<FileSystemClient::Opened> FileSystemClient::Create(const Creds& c,
                                                                  uint64_t parent,
                                                                  const std::string& name,
                                                                  uint32_t mode, int flags) {
  pb::MetaRequest r;
  pb::CreateOp* op = r.mutable_create();
  op->set_parent(parent);
  op->set_name(name);
  op->set_mode(S_IFREG | (mode & 07777));
  op->set_exclusive((flags & O_EXCL) != 0);
  op->set_open(true);
  op->set_open_flags(static_cast<uint32_t>(flags));
  // Without O_EXCL an existing file is opened: the MDS checks its mode.
  if ((flags & O_EXCL) == 0) RETURN_IF_ERROR(SettleCreated(parent, name));
  ASSIGN_OR_RETURN(pb::MetaReply reply, CallInDir(c, std::move(r), parent));
  ASSIGN_OR_RETURN(Opened opened, AddHandle(c, reply, flags));
  if (reply.attr_authority()) {
    absl::MutexLock lock(&mu_);
    auto it = caches_.find(opened.attr.ino);
    if (it != caches_.end() && it->second.cache != nullptr) {
      it->second.created_parent = parent;
      it->second.created_name = name;
      it->second.cache->GrantAttrAuthority();
    }
  }
  if (reply.created()) return opened;  // new and empty: nothing to truncate
  return TruncateOnOpen(c, std::move(opened), flags);
}

absl::StatusOr<std::string> FileSystemClient::Read(FileHandle fh, uint64_t offset,
                                                   uint64_t length) {
  ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, Handle(fh));
  if (f->cache == nullptr) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL, "file has no valid layout");
  }
  ASSIGN_OR_RETURN(Attr attr, Getattr(f->creds, f->ino));
  NoteRead(attr);  // also at the end of the file, as Linux's file_accessed
  const uint64_t size = attr.size;  // Getattr includes buffered writes
  // A newer version may have other bytes (another client's); moved: for good.
  f->cache->NoteInline(attr.data_inline, attr.version, nullptr);
  if (offset >= size || length == 0) return std::string();
  length = std::min(length, size - offset);
  return f->cache->Read(offset, length, size, (f->flags & O_DIRECT) == 0);
}

absl::StatusOr<std::shared_ptr<FileSystemClient::OpenFile>> FileSystemClient::WriteHandle(
    const Creds& c, FileHandle fh) {
  ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, Handle(fh));
  if (!f->writable()) {
    return ErrnoError(absl::StatusCode::kFailedPrecondition, EBADF, "not open for writing");
  }
  if (f->cache == nullptr) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL, "file has no valid layout");
  }
  absl::MutexLock lock(&mu_);
  auto it = caches_.find(f->ino);
  if (it != caches_.end()) it->second.writer = c;
  return f;
}

// A write drops the file's capability (security.capability), whoever
// writes, as Linux's file_remove_privs does. The kernel does so itself
// before a write through its page cache, but not before a direct one
// (FOPEN_DIRECT_IO): done here, as root, since the writer need not be
// allowed to remove security.* itself. Setuid and setgid are the MDS's to
// drop when the write is reported (ModeAfterWrite).
absl::Status FileSystemClient::DropCapability(uint64_t ino) {
  static const std::string kCapability = "security.capability";
  const Creds root;
  absl::StatusOr<std::string> cap = Getxattr(root, ino, kCapability);
  if (!cap.ok()) return IsNoData(cap.status()) ? absl::OkStatus() : cap.status();
  absl::Status removed = Removexattr(root, ino, kCapability);
  // Another writer's drop may have come first.
  return IsNoData(removed) ? absl::OkStatus() : removed;
}

absl::StatusOr<uint64_t> FileSystemClient::WriteBackPages(const Creds& c, FileHandle fh,
                                                          uint64_t offset,
                                                          absl::string_view data) {
  ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, WriteHandle(c, fh));
  ASSIGN_OR_RETURN(Attr attr, Getattr(f->creds, f->ino));  // with this client's buffered writes
  if (offset + data.size() > attr.size) {
    VLOG(1) << "op=write_back_pages ino=" << f->ino << " end=" << offset + data.size()
            << " size=" << attr.size << " (the kernel's size is stale)";
    if (offset >= attr.size) return data.size();
    ASSIGN_OR_RETURN(uint64_t n, Write(c, fh, offset, data.substr(0, attr.size - offset)));
    (void)n;
    return data.size();
  }
  return Write(c, fh, offset, data);
}

absl::StatusOr<uint64_t> FileSystemClient::Write(const Creds& c, FileHandle fh, uint64_t offset,
                                                 absl::string_view data) {
  ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, WriteHandle(c, fh));
  const WritingGuard writing(this, f->ino);
  if (data.empty()) return 0;
  if (!f->caps_dropped.exchange(true)) {
    absl::Status dropped = DropCapability(f->ino);
    if (!dropped.ok()) {
      f->caps_dropped.store(false);
      return dropped;
    }
  }
  const bool shared = f->cache->write_through();
  if ((f->flags & O_APPEND) && shared) {
    RETURN_IF_ERROR(AppendShared(f, data));
    return data.size();
  }
  if (f->flags & O_APPEND) {
    ASSIGN_OR_RETURN(Attr attr, Getattr(c, f->ino));
    RETURN_IF_ERROR(f->cache->Append(attr.size, data, NowNs()).status());
  } else {
    RETURN_IF_ERROR(f->cache->Write(offset, data, NowNs()));
  }
  // Shared with another session: on the OSDs and reported before the write
  // returns (the report drops every other opener's cached pages).
  if (f->write_through() || shared) RETURN_IF_ERROR(f->cache->Flush());
  return data.size();
}

absl::Status FileSystemClient::AppendShared(const std::shared_ptr<OpenFile>& f,
                                            absl::string_view data) {
  // What this handle buffered before the file became shared goes first.
  RETURN_IF_ERROR(f->cache->Flush());
  for (int attempt = 0;; ++attempt) {
    // A small file takes the bytes in the reservation itself (one request);
    // once they no longer fit inline, the data moves to objects.
    const bool inline_bytes = f->cache->inline_on() && attempt == 0;
    if (!inline_bytes && f->cache->inline_on()) RETURN_IF_ERROR(f->cache->MoveToObjects());
    const Creds writer = WriterOf(f->ino);
    pb::MetaRequest r;
    pb::WrittenOp* op = r.mutable_written();
    op->set_ino(f->ino);
    op->set_append(data.size());
    if (inline_bytes) {
      op->set_inline_report(true);
      op->set_mtime_ns(NowNs());
      pb::InlineExtent* e = op->add_inline_writes();
      e->set_data(data.data(), data.size());
    } else {
      op->set_keep_times(true);
    }
    ASSIGN_OR_RETURN(pb::MetaReply reply, Call(writer, std::move(r)));
    if (inline_bytes && !reply.inline_refused()) {
      // Appended: the copy this client keeps of the inline bytes is older.
      const Attr attr = FromWire(reply.attr());
      f->cache->NoteInline(attr.data_inline, attr.version, nullptr);
      f->cache->DropInlineCopy();
      CacheAttr(reply);
      return absl::OkStatus();
    }
    if (reply.inline_refused()) {
      // The MDS keeps the data inline: move it (this cache may not know yet).
      if (attempt >= 3) {
        return ErrnoError(absl::StatusCode::kAborted, EIO,
                          "append: the file's inline data did not move to objects");
      }
      continue;
    }
    CacheAttr(reply);
    RETURN_IF_ERROR(f->cache->Write(reply.append_offset(), data, NowNs()));
    return f->cache->Flush();
  }
}

absl::Status FileSystemClient::Fallocate(const Creds& c, FileHandle fh, uint32_t mode,
                                         uint64_t offset, uint64_t length) {
  constexpr uint32_t kKeepSize = 0x01, kPunchHole = 0x02, kZeroRange = 0x10;  // linux/falloc.h
  const bool zeros = (mode & (kPunchHole | kZeroRange)) != 0;
  if ((mode & ~(kKeepSize | kPunchHole | kZeroRange)) != 0 ||
      (mode & (kPunchHole | kZeroRange)) == (kPunchHole | kZeroRange) ||
      ((mode & kPunchHole) && !(mode & kKeepSize))) {
    return ErrnoError(absl::StatusCode::kUnimplemented, EOPNOTSUPP,
                      absl::StrCat("fallocate mode 0x", absl::Hex(mode), " is not supported"));
  }
  if (length == 0) return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL, "length 0");
  if (length > std::numeric_limits<uint64_t>::max() - offset) {
    return ErrnoError(absl::StatusCode::kOutOfRange, EFBIG, "past the maximum file size");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, WriteHandle(c, fh));
  const uint64_t end = offset + length;
  if (!(mode & kKeepSize) && end > f->cache->max_file_bytes()) {  // before changing anything
    return ErrnoError(absl::StatusCode::kOutOfRange, EFBIG, "past the maximum file size");
  }
  ASSIGN_OR_RETURN(Attr attr, Getattr(c, f->ino));  // buffered writes included
  const uint64_t size = attr.size;
  if (zeros) {
    // Past the size the file reads as zeros already: a range beyond it only
    // grows the size (below), whatever its length. Within it, a punched or
    // zeroed range costs nothing: the objects it covers whole go, and only
    // its ragged edges are written as zeros. Buffered writes land first, so
    // none lands later over a removed object.
    const uint64_t zero_end = std::min(end, size);
    std::pair<uint64_t, uint64_t> removed(offset, offset);
    // Inline data within its limit takes the zeros as bytes (below).
    if (zero_end > offset && !f->cache->InlineCovers(zero_end)) {
      RETURN_IF_ERROR(f->cache->Flush());
      RETURN_IF_ERROR(f->cache->MoveToObjects());  // whole sets go from the objects
      int64_t allocated_delta = 0;
      absl::StatusOr<std::pair<uint64_t, uint64_t>> gone =
          io_.RemoveWholeSets(f->cache->data(), offset, zero_end, &allocated_delta);
      f->cache->DropReadahead();
      if (allocated_delta != 0 || gone.ok()) {
        // Stamps mtime and ctime like a write; size unchanged (end 0).
        RETURN_IF_ERROR(ReportWritten(f->ino, 0, NowNs(), allocated_delta, AttrChanges()));
      }
      RETURN_IF_ERROR(gone.status());
      removed = *gone;
    }
    const std::string chunk(std::min<uint64_t>(zero_end > offset ? zero_end - offset : 0, 1 << 20),
                            '\0');
    auto write_zeros = [&](uint64_t from, uint64_t to) -> absl::Status {
      for (uint64_t at = from; at < to; at += chunk.size()) {
        const uint64_t n = std::min<uint64_t>(chunk.size(), to - at);
        RETURN_IF_ERROR(f->cache->Write(at, absl::string_view(chunk.data(), n), NowNs()));
      }
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(write_zeros(offset, removed.first));  // before the removed sets
    RETURN_IF_ERROR(write_zeros(removed.second, zero_end));
    if (f->write_through() || f->cache->write_through()) RETURN_IF_ERROR(f->cache->Flush());
  }
  if ((mode & kKeepSize) || end <= size) return absl::OkStatus();
  SetattrArgs grow;
  grow.valid = posix::kSetSize;
  grow.size = end;
  return Setattr(c, f->ino, grow, fh).status();
}

absl::Status FileSystemClient::Fsync(FileHandle fh) {
  ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, Handle(fh));
  if (f->cache != nullptr) RETURN_IF_ERROR(f->cache->Flush());
  return meta_->Sync();  // the size and mtime just reported, and what came before
}

absl::StatusOr<uint64_t> FileSystemClient::Seek(FileHandle fh, uint64_t offset, bool hole) {
  ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, Handle(fh));
  if (f->cache == nullptr) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL, "file has no valid layout");
  }
  RETURN_IF_ERROR(f->cache->Flush());  // what it buffers is data too: on the OSDs first
  ASSIGN_OR_RETURN(Attr attr, Getattr(f->creds, f->ino));
  if (offset >= attr.size) {
    return ErrnoError(absl::StatusCode::kOutOfRange, ENXIO, "offset at or past the end of the file");
  }
  f->cache->NoteInline(attr.data_inline, attr.version, nullptr);
  if (f->cache->inline_on()) return hole ? attr.size : offset;  // all data, no holes
  return io_.Seek(f->cache->data(), attr.size, offset, hole);
}

absl::Status FileSystemClient::Flush(FileHandle fh) {
  ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, Handle(fh));
  // A reader's close starts nothing and reports nothing (it wrote nothing).
  if (f->cache == nullptr || !f->writable()) return absl::OkStatus();
  return f->cache->FlushInBackground(absl::InfiniteFuture(), /*force=*/true);
}

void FileSystemClient::FlushForRecall(const MetaClient::FlushRequest& recall,
                                      std::function<void()> ack) {
  const uint64_t ino = recall.ino;
  const bool hold = recall.hold;
  if (recall.write_through) {
    // Before the flush: a write buffered after it would stay unseen.
    if (std::shared_ptr<FileCache> cache = CacheOf(ino)) cache->SetWriteThrough(true, recall.seq);
  }
  if (hold) {
    // Noted at once, on the lease thread: a release (the MDS gave up
    // waiting for this flush) may come before the flush ends.
    absl::MutexLock lock(&holds_mu_);
    holds_.insert(ino);
  }
  recall_pool_->Submit([this, ino, hold, ack = std::move(ack)] {
    std::shared_ptr<FileCache> cache = CacheOf(ino);
    if (cache != nullptr) {
      // Another session is about to look: from now on the MDS decides.
      cache->DropAttrAuthority();
      absl::Status flushed = cache->Flush();
      // The ack goes anyway: the other session sees what the MDS has.
      if (!flushed.ok()) LOG(WARNING) << "op=recall ino=" << ino << " status=" << flushed;
      if (hold) {
        {
          absl::MutexLock lock(&holds_mu_);
          if (holds_.contains(ino)) cache->HoldWrites();
        }
        cache->AwaitWritesHeld();  // a batch begun after the flush
      }
    }
    ack();
  });
}

FileSystemClient::WritingGuard::WritingGuard(FileSystemClient* f, uint64_t i) : fs(f), ino(i) {
  absl::MutexLock lock(&fs->inval_mu_);
  ++fs->writing_[ino];
}

FileSystemClient::WritingGuard::~WritingGuard() {
  absl::MutexLock lock(&fs->inval_mu_);
  auto it = fs->writing_.find(ino);
  if (it != fs->writing_.end() && --it->second <= 0) fs->writing_.erase(it);
}

bool FileSystemClient::Writing(uint64_t ino) {
  absl::MutexLock lock(&inval_mu_);
  return writing_.contains(ino);
}

void FileSystemClient::InvalidateData(const pb::LeaseEvent& inval, std::function<void()> ack) {
  inval_pool_->Submit([this, inval, ack = std::move(ack)] {
    const uint64_t ino = inval.ino();
    const uint64_t size = inval.size();
    std::string tail = inval.tail();
    std::shared_ptr<FileCache> cache = CacheOf(ino);
    if (cache != nullptr) {
      cache->DropReadahead();
      cache->DropInlineCopy();
      if (inval.in_objects()) cache->NoteInline(false, 0, nullptr);  // moved: for good
    }
    // The last byte raises the kernel's size (a mapping of this mount
    // faults past the size its kernel knows). Read from the objects when
    // the MDS did not say it; never from the MDS, which waits for this
    // ack; nothing to raise for a file not open here (no mapping).
    if (tail.empty() && size > 0 && cache != nullptr && !cache->inline_on()) {
      absl::StatusOr<std::string> last = cache->Read(size - 1, 1, size, /*sequential_ok=*/false);
      if (last.ok() && last->size() == 1) {
        tail = *std::move(last);
      } else {
        VLOG(1) << "op=inval_tail ino=" << ino << " status=" << last.status();
      }
    }
    DataInvalidated hook;
    {
      absl::MutexLock lock(&inval_mu_);
      hook = data_invalidated_;
    }
    if (hook) {
      // The kernel's invalidation waits for pages locked by a write of this
      // mount (mmap write-back), whose report may wait at the MDS for another
      // mount's invalidation: while this mount writes the file, it is
      // acknowledged without waiting (the writes are concurrent with the
      // change anyway), and the pages go as soon as the kernel lets them.
      auto done = std::make_shared<absl::Notification>();
      kernel_inval_pool_->Submit([hook, ino, size, tail, done] {
        hook(ino, size, tail);
        done->Notify();
      });
      while (!done->WaitForNotificationWithTimeout(absl::Milliseconds(10))) {
        if (Writing(ino)) break;
      }
    }
    ack();
  });
}

void FileSystemClient::ReleaseHold(uint64_t ino) {
  std::vector<std::shared_ptr<FileCache>> caches;
  {
    absl::MutexLock lock(&holds_mu_);
    if (ino == 0) {
      holds_.clear();
      caches = AllCaches();
    } else {
      holds_.erase(ino);
      if (std::shared_ptr<FileCache> cache = CacheOf(ino)) caches.push_back(std::move(cache));
    }
    for (const auto& cache : caches) cache->ReleaseWrites();
  }
}

void FileSystemClient::ReleaseInBackground(FileHandle fh) {
  auto end = [this, fh] {
    absl::Status flushed;
    absl::StatusOr<std::shared_ptr<OpenFile>> f = EndHandle(fh, &flushed);
    if (!f.ok() || !flushed.ok()) {
      LOG(WARNING) << "op=release fh=" << fh << " status=" << (f.ok() ? flushed : f.status());
    }
    if (!f.ok()) return;
    absl::MutexLock lock(&release_mu_);
    releases_.push_back(*std::move(f));
  };
  // A handle with nothing to write back ends here: handing it to the pool
  // cost a thread wakeup per closed file (a reader's, an empty create's).
  // Only a flush, which may wait for the OSDs, goes to the pool.
  absl::StatusOr<std::shared_ptr<OpenFile>> f = Handle(fh);
  if (f.ok() && ((*f)->cache == nullptr || (*f)->cache->clean())) return end();
  release_pool_->Submit(std::move(end));
}

void FileSystemClient::ReleaseLoop() {
  for (;;) {
    std::vector<std::shared_ptr<OpenFile>> batch;
    bool send_reads = false;
    {
      absl::MutexLock lock(&release_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(release_mu_) {
        return !releases_.empty() || !reads_.empty() || releases_stop_;
      };
      release_mu_.Await(absl::Condition(&ready));
      if (releases_.empty() && !releases_stop_) {
        // Only reads: they wait for their batch to fill or to age, or for a release.
        auto more = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(release_mu_) {
          return !releases_.empty() || releases_stop_ || reads_.size() >= kReadsBatch;
        };
        release_mu_.AwaitWithDeadline(absl::Condition(&more), reads_since_ + options_.atime_batch);
      }
      if (!releases_.empty()) {  // the releases of the next few milliseconds go with them
        auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(release_mu_) { return releases_stop_; };
        release_mu_.AwaitWithTimeout(absl::Condition(&stop), options_.release_batch);
      }
      batch.swap(releases_);
      if (batch.empty() && reads_.empty() && releases_stop_) return;
      send_reads = !reads_.empty() &&
                   (releases_stop_ || reads_.size() >= kReadsBatch ||
                    absl::Now() >= reads_since_ + options_.atime_batch);
    }
    if (send_reads) SendReads();
    absl::Status s = SendReleases(batch);
    if (!s.ok()) LOG(WARNING) << "op=release handles=" << batch.size() << " status=" << s;
  }
}

absl::Status FileSystemClient::SyncMetadata() { return meta_->Sync(); }

absl::Status FileSystemClient::SyncAll() {
  const std::vector<std::shared_ptr<FileCache>> caches = AllCaches();
  // All files start writing back, then each is waited for (a batch still
  // queued is written by the waiting Flush itself).
  for (const auto& cache : caches) (void)cache->FlushInBackground(absl::InfiniteFuture(), true);
  absl::Status first;
  for (const auto& cache : caches) {
    absl::Status s = cache->Flush();
    if (first.ok()) first = std::move(s);
  }
  absl::Status synced = meta_->Sync();
  return first.ok() ? synced : first;
}

std::vector<pb::OpenRef> FileSystemClient::OpenFiles() {
  absl::flat_hash_map<uint64_t, pb::OpenRef> by_ino;
  absl::MutexLock lock(&mu_);
  for (const auto& [fh, f] : handles_) {
    pb::OpenRef& o = by_ino[f->ino];
    o.set_ino(f->ino);
    o.set_handles(o.handles() + 1);
    if (f->writable()) o.set_writers(o.writers() + 1);
  }
  // And those whose release is on its way: it comes after the Reconnect.
  for (const auto& [ino, counts] : releasing_) {
    pb::OpenRef& o = by_ino[ino];
    o.set_ino(ino);
    o.set_handles(o.handles() + counts.first);
    o.set_writers(o.writers() + counts.second);
  }
  std::vector<pb::OpenRef> out;
  for (auto& [ino, o] : by_ino) out.push_back(std::move(o));
  return out;
}

absl::StatusOr<std::shared_ptr<FileSystemClient::OpenFile>> FileSystemClient::EndHandle(
    FileHandle fh, absl::Status* flushed) {
  std::shared_ptr<OpenFile> f;
  {
    absl::MutexLock lock(&mu_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) {
      return ErrnoError(absl::StatusCode::kFailedPrecondition, EBADF, "release of unknown handle");
    }
    f = std::move(it->second);
    handles_.erase(it);
    // Open before an eviction: nothing of it is the new session's.
    if (f->stale.load()) return f;
    std::pair<int, int>& r = releasing_[f->ino];
    ++r.first;
    if (f->writable()) ++r.second;
  }
  // A handle without a cache (its layout was bad) was never counted in caches_.
  if (f->cache == nullptr) return f;
  // The MDS must still see this session's write open while the flush reports.
  *flushed = f->cache->Flush();
  bool last = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = caches_.find(f->ino);
    last = it != caches_.end() && --it->second.handles == 0;
  }
  if (!last) return f;
  // A setattr may have changed the attributes here since the flush above:
  // no more of those, and they go too. The cache stays findable until they
  // have: a setattr that missed it would reach the MDS first and be
  // overwritten by the older change (an utimensat lost after a close).
  f->cache->DropAttrAuthority();
  if (f->cache->attrs_pending()) {
    absl::Status s = f->cache->Flush();
    if (flushed->ok()) *flushed = s;
  }
  absl::MutexLock lock(&mu_);
  auto it = caches_.find(f->ino);
  // Unless an open meanwhile took the cache over.
  if (it != caches_.end() && it->second.handles == 0 && it->second.cache == f->cache) {
    caches_.erase(it);
  }
  return f;
}

absl::Status FileSystemClient::SendReleases(
    const std::vector<std::shared_ptr<OpenFile>>& all) {
  std::vector<std::shared_ptr<OpenFile>> files;
  files.reserve(all.size());
  for (const auto& f : all) {
    if (f->stale.load()) {
      Forget(f->ino, 1);  // the inode's ref the open took; the MDS knows no such open
    } else {
      files.push_back(f);
    }
  }
  if (files.empty()) return absl::OkStatus();
  pb::MetaRequest r;
  pb::ReleaseOp* op = r.mutable_release();
  op->set_ino(files[0]->ino);
  op->set_write(files[0]->writable());
  for (size_t i = 1; i < files.size(); ++i) {
    pb::ReleaseRef* more = op->add_more();
    more->set_ino(files[i]->ino);
    more->set_write(files[i]->writable());
  }
  // One caller's credentials for all: the MDS releases what the session
  // holds and checks no permission on a release.
  absl::Status released = Call(files[0]->creds, std::move(r)).status();
  {
    absl::MutexLock lock(&mu_);
    for (const auto& f : files) {
      auto it = releasing_.find(f->ino);
      if (it == releasing_.end()) continue;
      --it->second.first;
      if (f->writable()) --it->second.second;
      if (it->second.first <= 0) releasing_.erase(it);
    }
  }
  for (const auto& f : files) Forget(f->ino, 1);
  return released;
}

absl::Status FileSystemClient::Release(FileHandle fh) {
  absl::Status flushed;
  ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, EndHandle(fh, &flushed));
  absl::Status released = SendReleases({f});
  return flushed.ok() ? released : flushed;
}

}  // namespace weft::client
