// Namespace requests for tests: typed wrappers over MetaClient::Call with a
// settable identity, so that a test reads like the POSIX calls it checks.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fuse-client/lib/meta_client.h"

namespace weft::testing {

class FsCaller {
 public:
  explicit FsCaller(client::MetaClient* meta) : meta_(meta) {}

  // The identity of the following requests (default root).
  FsCaller& As(uint32_t uid, uint32_t gid, std::vector<uint32_t> groups = {});
  FsCaller& Umask(uint32_t umask);
  uint64_t root() const { return meta_->root(); }

  absl::StatusOr<pb::Attr> Lookup(uint64_t parent, const std::string& name);
  absl::StatusOr<pb::Attr> Getattr(uint64_t ino);
  absl::StatusOr<pb::Attr> Create(uint64_t parent, const std::string& name, uint32_t mode = 0644,
                                  bool exclusive = true);
  absl::StatusOr<pb::Attr> Mknod(uint64_t parent, const std::string& name, uint32_t mode,
                                 uint64_t rdev = 0);
  absl::StatusOr<pb::Attr> Mkdir(uint64_t parent, const std::string& name, uint32_t mode = 0755);
  absl::StatusOr<pb::Attr> Symlink(uint64_t parent, const std::string& name, const std::string& target);
  absl::StatusOr<pb::Attr> Link(uint64_t ino, uint64_t parent, const std::string& name);
  absl::Status Unlink(uint64_t parent, const std::string& name);
  absl::Status Rmdir(uint64_t parent, const std::string& name);
  // The reply's `replaced`: what the new name pointed to, after the rename
  // (no ino when there was nothing, or a file that is gone).
  absl::StatusOr<pb::Attr> Rename(uint64_t parent, const std::string& name, uint64_t new_parent,
                                  const std::string& new_name, uint32_t flags = 0);
  absl::StatusOr<std::string> Readlink(uint64_t ino);
  absl::StatusOr<pb::Attr> Chmod(uint64_t ino, uint32_t mode);
  absl::StatusOr<pb::Attr> Chown(uint64_t ino, int64_t uid, int64_t gid);  // -1 = unchanged
  absl::StatusOr<pb::Attr> Truncate(uint64_t ino, uint64_t size);
  absl::StatusOr<pb::Attr> Setattr(const pb::SetattrOp& op);
  // Every entry (pages of `page` entries).
  absl::StatusOr<std::vector<pb::DirEntry>> Readdir(uint64_t ino, uint32_t page = 1000,
                                                    bool with_attrs = false);
  absl::StatusOr<pb::MetaReply> ReaddirPage(uint64_t ino, uint64_t cookie, uint32_t max);
  absl::StatusOr<std::string> Getxattr(uint64_t ino, const std::string& name);
  absl::Status Setxattr(uint64_t ino, const std::string& name, const std::string& value,
                        uint32_t flags = 0);
  absl::StatusOr<std::vector<std::string>> Listxattr(uint64_t ino);
  absl::Status Removexattr(uint64_t ino, const std::string& name);
  absl::StatusOr<pb::StatfsReply> Statfs();
  absl::StatusOr<pb::Attr> Open(uint64_t ino, uint32_t flags);
  absl::Status Release(uint64_t ino, bool write = false);
  // One request releasing several handles (ino, write), as clients batch them.
  absl::Status ReleaseBatch(const std::vector<std::pair<uint64_t, bool>>& handles);
  absl::StatusOr<pb::Attr> Written(uint64_t ino, uint64_t end, int64_t allocated_delta = 0);

  absl::StatusOr<pb::MetaReply> Call(pb::MetaRequest request);

 private:
  client::MetaClient* const meta_;
  pb::Creds creds_;
};

// The errno a status carries (0 for OK).
int Errno(const absl::Status& status);
template <typename T>
int Errno(const absl::StatusOr<T>& s) {
  return Errno(s.status());
}

}  // namespace weft::testing
