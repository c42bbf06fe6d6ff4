// FileSystemClient: open files and their data (the namespace half is in
// file_system_client.cc).
#include <fcntl.h>

#include "absl/strings/str_cat.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "fuse-client/lib/file_system_client.h"

namespace weft::client {
namespace {

int64_t NowNs() { return absl::ToUnixNanos(absl::Now()); }

}  // namespace

absl::StatusOr<FileData> FileSystemClient::DataOf(const Attr& attr) {
  FileData d;
  d.ino = attr.ino();
  d.layout.stripe_unit = attr.layout().stripe_unit();
  d.layout.stripe_count = attr.layout().stripe_count();
  d.layout.object_size = attr.layout().object_size();
  d.pool = PoolId(attr.layout().pool());
  absl::Status valid = d.layout.Validate();
  if (!valid.ok()) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL,
                      absl::StrCat("inode ", attr.ino(), ": ", valid.message()));
  }
  return d;
}

absl::StatusOr<std::shared_ptr<FileSystemClient::OpenFile>> FileSystemClient::Handle(
    FileHandle fh) {
  absl::MutexLock lock(&mu_);
  auto it = handles_.find(fh);
  if (it == handles_.end()) {
    return ErrnoError(absl::StatusCode::kFailedPrecondition, EBADF,
                      absl::StrCat("no open file handle ", fh));
  }
  return it->second;
}

absl::StatusOr<FileSystemClient::Opened> FileSystemClient::AddHandle(const Creds& c,
                                                                     const Attr& attr,
                                                                     int flags) {
  auto f = std::make_shared<OpenFile>();
  f->ino = attr.ino();
  f->flags = flags;
  f->creds = c;
  if ((attr.mode() & S_IFMT) == S_IFREG) {
    absl::StatusOr<FileData> data = DataOf(attr);
    if (!data.ok()) {
      // Still a handle: the MDS holds the open, and Release must end it.
      LOG(ERROR) << "op=open ino=" << attr.ino() << " bad_layout=" << data.status();
    } else {
      f->SetData(*data);
    }
  }
  Opened out;
  out.attr = attr;
  absl::MutexLock lock(&mu_);
  out.fh = next_fh_++;
  if (f->writable()) mds_opens_[attr.ino()].writers++;
  handles_[out.fh] = std::move(f);
  inodes_[attr.ino()].refs++;  // an open file keeps its inode cached
  inodes_[attr.ino()].attr = attr;
  inodes_[attr.ino()].fetched = absl::Now();
  return out;
}

absl::StatusOr<FileSystemClient::Opened> FileSystemClient::Open(const Creds& c, uint64_t ino,
                                                                int flags) {
  pb::MetaRequest r;
  r.mutable_open()->set_ino(ino);
  r.mutable_open()->set_flags(static_cast<uint32_t>(flags));
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(c, std::move(r)));
  ASSIGN_OR_RETURN(Opened opened, AddHandle(c, reply.attr(), flags));
  return TruncateOnOpen(c, std::move(opened), flags);
}

absl::StatusOr<FileSystemClient::Opened> FileSystemClient::TruncateOnOpen(const Creds& c,
                                                                          Opened opened,
                                                                          int flags) {
  // The MDS's OpenOp (and CreateOp of an existing name) ignore O_TRUNC.
  const Attr& attr = opened.attr;
  if ((flags & O_TRUNC) == 0 || (flags & O_ACCMODE) == O_RDONLY ||
      (attr.mode() & S_IFMT) != S_IFREG || attr.size() == 0) {
    return opened;
  }
  SetattrArgs args;
  args.valid = pb::SA_SIZE;
  args.size = 0;
  absl::StatusOr<Attr> after = Setattr(c, attr.ino(), args, opened.fh);
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
  Invalidate(parent);
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(c, std::move(r)));
  ASSIGN_OR_RETURN(Opened opened, AddHandle(c, reply.attr(), flags));
  return TruncateOnOpen(c, std::move(opened), flags);
}

absl::StatusOr<std::string> FileSystemClient::Read(FileHandle fh, uint64_t offset,
                                                   uint64_t length) {
  ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, Handle(fh));
  ASSIGN_OR_RETURN(Attr attr, Getattr(f->creds, f->ino));
  if (offset >= attr.size() || length == 0) return std::string();
  length = std::min(length, attr.size() - offset);
  // The layout of these attributes, not the handle's: a file with data has
  // its final layout, which another client may have set after this open.
  ASSIGN_OR_RETURN(FileData data, DataOf(attr));
  return io_.Read(data, offset, length);
}

absl::StatusOr<uint64_t> FileSystemClient::Write(const Creds& c, FileHandle fh, uint64_t offset,
                                                 absl::string_view data) {
  ASSIGN_OR_RETURN(std::shared_ptr<OpenFile> f, Handle(fh));
  if (!f->writable()) {
    return ErrnoError(absl::StatusCode::kFailedPrecondition, EBADF, "not open for writing");
  }
  if (!f->Data().layout.Validate().ok()) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL, "file has no valid layout");
  }
  if (data.empty()) return 0;
  if ((f->flags & O_APPEND) == 0) {
    RETURN_IF_ERROR(WriteAt(c, *f, offset, data));
    return data.size();
  }
  absl::MutexLock lock(&f->append_mu);
  ASSIGN_OR_RETURN(Attr attr, FetchAttr(c, f->ino));
  RETURN_IF_ERROR(WriteAt(c, *f, attr.size(), data));
  return data.size();
}

absl::Status FileSystemClient::WriteAt(const Creds& c, const OpenFile& f, uint64_t offset,
                                       absl::string_view data) {
  RETURN_IF_ERROR(io_.Write(f.Data(), offset, data));
  pb::MetaRequest r;
  pb::WrittenOp* op = r.mutable_written();
  op->set_ino(f.ino);
  op->set_end(offset + data.size());
  op->set_mtime_ns(NowNs());
  return CallAttr(c, std::move(r)).status();
}

absl::Status FileSystemClient::Fsync(FileHandle fh) {
  // Write-through: every acknowledged write is on the OSDs and its size and
  // mtime at the MDS (journaled before the reply).
  return Handle(fh).status();
}

absl::Status FileSystemClient::Release(FileHandle fh) {
  std::shared_ptr<OpenFile> f;
  int releases = 0;
  {
    absl::MutexLock lock(&mu_);
    auto it = handles_.find(fh);
    if (it == handles_.end()) {
      return ErrnoError(absl::StatusCode::kFailedPrecondition, EBADF, "release of unknown handle");
    }
    f = std::move(it->second);
    handles_.erase(it);
    releases = ReleasesToSend(*f);
  }
  absl::Status s;
  for (int i = 0; i < releases; ++i) {
    pb::MetaRequest r;
    r.mutable_release()->set_ino(f->ino);
    r.mutable_release()->set_write(i == 0 && f->writable());  // the rest were read-only
    absl::Status one = Call(f->creds, std::move(r)).status();
    if (s.ok()) s = one;
  }
  Forget(f->ino, 1);
  return s;
}

int FileSystemClient::ReleasesToSend(const OpenFile& f) {
  auto it = mds_opens_.find(f.ino);
  if (!f.writable()) {
    if (it == mds_opens_.end()) return 1;
    it->second.deferred_releases++;  // a writer is still open: see mds_opens_
    return 0;
  }
  if (it == mds_opens_.end()) return 1;  // not reached: writers are counted
  if (--it->second.writers > 0) return 1;
  const int n = 1 + it->second.deferred_releases;
  mds_opens_.erase(it);
  return n;
}

}  // namespace weft::client
