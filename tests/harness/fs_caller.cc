#include "tests/harness/fs_caller.h"

#include "common/status/status.h"

namespace weft::testing {

int Errno(const absl::Status& status) { return StatusToErrno(status); }

FsCaller& FsCaller::As(uint32_t uid, uint32_t gid, std::vector<uint32_t> groups) {
  creds_.set_uid(uid);
  creds_.set_gid(gid);
  creds_.clear_groups();
  for (uint32_t g : groups) creds_.add_groups(g);
  return *this;
}

FsCaller& FsCaller::Umask(uint32_t umask) {
  creds_.set_umask(umask);
  return *this;
}

absl::StatusOr<pb::MetaReply> FsCaller::Call(pb::MetaRequest request) {
  *request.mutable_creds() = creds_;
  return meta_->Call(std::move(request));
}

namespace {

absl::StatusOr<pb::Attr> AttrOf(absl::StatusOr<pb::MetaReply> reply) {
  if (!reply.ok()) return reply.status();
  return reply->attr();
}

absl::StatusOr<std::string> ValueOf(absl::StatusOr<pb::MetaReply> reply) {
  if (!reply.ok()) return reply.status();
  return reply->value();
}

// A setattr of `ino` changing the fields in `valid` (the caller sets them).
pb::SetattrOp SetattrOf(uint64_t ino, uint32_t valid) {
  pb::SetattrOp op;
  op.set_ino(ino);
  op.set_valid(valid);
  return op;
}

// The create of any inode but a directory or a symlink (`mode` has the type).
pb::MetaRequest CreateRequest(uint64_t parent, const std::string& name, uint32_t mode) {
  pb::MetaRequest r;
  r.mutable_create()->set_parent(parent);
  r.mutable_create()->set_name(name);
  r.mutable_create()->set_mode(mode);
  return r;
}

pb::MetaRequest ReaddirRequest(uint64_t ino, uint64_t cookie, uint32_t max, bool with_attrs) {
  pb::MetaRequest r;
  r.mutable_readdir()->set_ino(ino);
  r.mutable_readdir()->set_cookie(cookie);
  r.mutable_readdir()->set_max_entries(max);
  r.mutable_readdir()->set_with_attrs(with_attrs);
  return r;
}

}  // namespace

absl::StatusOr<pb::Attr> FsCaller::Lookup(uint64_t parent, const std::string& name) {
  pb::MetaRequest r;
  r.mutable_lookup()->set_parent(parent);
  r.mutable_lookup()->set_name(name);
  return AttrOf(Call(r));
}

absl::StatusOr<pb::Attr> FsCaller::Getattr(uint64_t ino) {
  pb::MetaRequest r;
  r.mutable_getattr()->set_ino(ino);
  return AttrOf(Call(r));
}

absl::StatusOr<pb::Attr> FsCaller::Create(uint64_t parent, const std::string& name, uint32_t mode,
                                          bool exclusive) {
  pb::MetaRequest r = CreateRequest(parent, name, S_IFREG | mode);
  r.mutable_create()->set_exclusive(exclusive);
  r.mutable_create()->set_open(!exclusive);
  r.mutable_create()->set_open_flags(O_CREAT | O_RDWR);
  return AttrOf(Call(r));
}

absl::StatusOr<pb::Attr> FsCaller::Mknod(uint64_t parent, const std::string& name, uint32_t mode,
                                         uint64_t rdev) {
  pb::MetaRequest r = CreateRequest(parent, name, mode);
  r.mutable_create()->set_rdev(rdev);
  r.mutable_create()->set_exclusive(true);
  return AttrOf(Call(r));
}

absl::StatusOr<pb::Attr> FsCaller::Mkdir(uint64_t parent, const std::string& name, uint32_t mode) {
  pb::MetaRequest r;
  r.mutable_mkdir()->set_parent(parent);
  r.mutable_mkdir()->set_name(name);
  r.mutable_mkdir()->set_mode(mode);
  return AttrOf(Call(r));
}

absl::StatusOr<pb::Attr> FsCaller::Symlink(uint64_t parent, const std::string& name,
                                           const std::string& target) {
  pb::MetaRequest r;
  r.mutable_symlink()->set_parent(parent);
  r.mutable_symlink()->set_name(name);
  r.mutable_symlink()->set_target(target);
  return AttrOf(Call(r));
}

absl::StatusOr<pb::Attr> FsCaller::Link(uint64_t ino, uint64_t parent, const std::string& name) {
  pb::MetaRequest r;
  r.mutable_link()->set_ino(ino);
  r.mutable_link()->set_new_parent(parent);
  r.mutable_link()->set_new_name(name);
  return AttrOf(Call(r));
}

absl::Status FsCaller::Unlink(uint64_t parent, const std::string& name) {
  pb::MetaRequest r;
  r.mutable_unlink()->set_parent(parent);
  r.mutable_unlink()->set_name(name);
  return Call(r).status();
}

absl::Status FsCaller::Rmdir(uint64_t parent, const std::string& name) {
  pb::MetaRequest r;
  r.mutable_rmdir()->set_parent(parent);
  r.mutable_rmdir()->set_name(name);
  return Call(r).status();
}

absl::StatusOr<pb::Attr> FsCaller::Rename(uint64_t parent, const std::string& name,
                                          uint64_t new_parent, const std::string& new_name,
                                          uint32_t flags) {
  pb::MetaRequest r;
  auto* op = r.mutable_rename();
  op->set_parent(parent);
  op->set_name(name);
  op->set_new_parent(new_parent);
  op->set_new_name(new_name);
  op->set_flags(flags);
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(r));
  return reply.replaced();
}

absl::StatusOr<std::string> FsCaller::Readlink(uint64_t ino) {
  pb::MetaRequest r;
  r.mutable_readlink()->set_ino(ino);
  return ValueOf(Call(r));
}

absl::StatusOr<pb::Attr> FsCaller::Setattr(const pb::SetattrOp& op) {
  pb::MetaRequest r;
  *r.mutable_setattr() = op;
  return AttrOf(Call(r));
}

absl::StatusOr<pb::Attr> FsCaller::Chmod(uint64_t ino, uint32_t mode) {
  pb::SetattrOp op = SetattrOf(ino, pb::SA_MODE);
  op.set_mode(mode);
  return Setattr(op);
}

absl::StatusOr<pb::Attr> FsCaller::Chown(uint64_t ino, int64_t uid, int64_t gid) {
  pb::SetattrOp op = SetattrOf(ino, (uid >= 0 ? pb::SA_UID : 0) | (gid >= 0 ? pb::SA_GID : 0));
  if (uid >= 0) op.set_uid(static_cast<uint32_t>(uid));
  if (gid >= 0) op.set_gid(static_cast<uint32_t>(gid));
  return Setattr(op);
}

absl::StatusOr<pb::Attr> FsCaller::Truncate(uint64_t ino, uint64_t size) {
  pb::SetattrOp op = SetattrOf(ino, pb::SA_SIZE);
  op.set_size(size);
  return Setattr(op);
}

absl::StatusOr<pb::MetaReply> FsCaller::ReaddirPage(uint64_t ino, uint64_t cookie, uint32_t max) {
  return Call(ReaddirRequest(ino, cookie, max, /*with_attrs=*/false));
}

absl::StatusOr<std::vector<pb::DirEntry>> FsCaller::Readdir(uint64_t ino, uint32_t page,
                                                            bool with_attrs) {
  std::vector<pb::DirEntry> out;
  uint64_t cookie = 0;
  for (;;) {
    auto reply = Call(ReaddirRequest(ino, cookie, page, with_attrs));
    if (!reply.ok()) return reply.status();
    for (const auto& e : reply->entries()) {
      out.push_back(e);
      cookie = e.cookie();
    }
    if (reply->eof() || reply->entries().empty()) return out;
  }
}

absl::StatusOr<std::string> FsCaller::Getxattr(uint64_t ino, const std::string& name) {
  pb::MetaRequest r;
  r.mutable_getxattr()->set_ino(ino);
  r.mutable_getxattr()->set_name(name);
  return ValueOf(Call(r));
}

absl::Status FsCaller::Setxattr(uint64_t ino, const std::string& name, const std::string& value,
                                uint32_t flags) {
  pb::MetaRequest r;
  auto* op = r.mutable_setxattr();
  op->set_ino(ino);
  op->set_name(name);
  op->set_value(value);
  op->set_flags(flags);
  return Call(r).status();
}

absl::StatusOr<std::vector<std::string>> FsCaller::Listxattr(uint64_t ino) {
  pb::MetaRequest r;
  r.mutable_listxattr()->set_ino(ino);
  auto reply = Call(r);
  if (!reply.ok()) return reply.status();
  return std::vector<std::string>(reply->names().begin(), reply->names().end());
}

absl::Status FsCaller::Removexattr(uint64_t ino, const std::string& name) {
  pb::MetaRequest r;
  r.mutable_removexattr()->set_ino(ino);
  r.mutable_removexattr()->set_name(name);
  return Call(r).status();
}

absl::StatusOr<pb::StatfsReply> FsCaller::Statfs() {
  pb::MetaRequest r;
  r.mutable_statfs();
  auto reply = Call(r);
  if (!reply.ok()) return reply.status();
  return reply->statfs();
}

absl::StatusOr<pb::Attr> FsCaller::Open(uint64_t ino, uint32_t flags) {
  pb::MetaRequest r;
  r.mutable_open()->set_ino(ino);
  r.mutable_open()->set_flags(flags);
  return AttrOf(Call(r));
}

absl::Status FsCaller::Release(uint64_t ino, bool write) {
  pb::MetaRequest r;
  r.mutable_release()->set_ino(ino);
  r.mutable_release()->set_write(write);
  return Call(r).status();
}

absl::Status FsCaller::ReleaseBatch(const std::vector<std::pair<uint64_t, bool>>& handles) {
  pb::MetaRequest r;
  pb::ReleaseOp* op = r.mutable_release();
  op->set_ino(handles.at(0).first);
  op->set_write(handles.at(0).second);
  for (size_t i = 1; i < handles.size(); ++i) {
    pb::ReleaseRef* more = op->add_more();
    more->set_ino(handles[i].first);
    more->set_write(handles[i].second);
  }
  return Call(r).status();
}

absl::StatusOr<pb::Attr> FsCaller::Written(uint64_t ino, uint64_t end, int64_t allocated_delta) {
  pb::MetaRequest r;
  r.mutable_written()->set_ino(ino);
  r.mutable_written()->set_end(end);
  r.mutable_written()->set_allocated_delta(allocated_delta);
  return AttrOf(Call(r));
}

}  // namespace weft::testing
