// Where the kernel keeps each directory weft-fuse gave it: its parent and
// name (MDS inode numbers). The kernel walks through the names it keeps
// without asking anyone, so the mount lets it keep names only in directories
// every caller may search (FileSystemClient::SearchableByAll); when a
// directory stops being one, dropping its own entry in the kernel (which
// prunes what the kernel keeps under it) needs to know where it is
// (fuse_ops.cc, DropKeptNames). No libfuse here, so unit tests link it.
//
//   KernelDirs dirs;
//   dirs.Put(7, 1, "a");                       // the kernel got directory 7 as 1/a
//   dirs.Rename(1, "a", 9, "b", /*exchange=*/false);
//   dirs.Where(7);                             // {9, "b"}
//   dirs.Drop(7);                              // the kernel forgot it
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace weft::fuse {

class KernelDirs {
 public:
  // `dir` is at (parent, name); whatever was there before is not.
  void Put(uint64_t dir, uint64_t parent, const std::string& name);
  void Drop(uint64_t dir);
  // A rename: the directory at (parent, name), if any, is now at
  // (new_parent, new_name), and the one there before is gone or, for an
  // exchange, moved the other way.
  void Rename(uint64_t parent, const std::string& name, uint64_t new_parent,
              const std::string& new_name, bool exchange);
  std::optional<std::pair<uint64_t, std::string>> Where(uint64_t dir);
  size_t size();

 private:
  using Place = std::pair<uint64_t, std::string>;
  void PutLocked(uint64_t dir, Place place) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropLocked(uint64_t dir) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Place> where_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<Place, uint64_t> at_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::fuse
