// Where the kernel keeps each inode weft-fuse gave it: its parent and name
// (MDS inode numbers), the last one given for an inode with several. Two
// uses need the place, as the kernel drops an inode only through its name
// (fuse_lowlevel_notify_inval_entry):
// - a directory that stops being searchable by every caller: the kernel
//   walks through the names it keeps without asking anyone, so the mount
//   lets it keep names only in directories every caller may search
//   (FileSystemClient::SearchableByAll), and dropping the directory's own
//   entry prunes what the kernel keeps under it (fuse_ops.cc, DropKeptNames);
// - a recall for memory: the files whose caps were given back are dropped
//   from the kernel, whose FORGETs then shrink the mount's inode table
//   (fuse_ops.cc, OnCapsGivenBack).
// No libfuse here, so unit tests link it.
//
//   KernelPlaces places;
//   places.Put(7, 1, "a", /*dir=*/true);       // the kernel got directory 7 as 1/a
//   places.Rename(1, "a", 9, "b", /*exchange=*/false);
//   places.Where(7);                           // {9, "b"}
//   places.Drop(7);                            // the kernel forgot it
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace weft::fuse {

class KernelPlaces {
 public:
  // `ino` (a directory if `dir`) is at (parent, name); whatever was there
  // before is not.
  void Put(uint64_t ino, uint64_t parent, const std::string& name, bool dir);
  void Drop(uint64_t ino);
  // A rename: the inode at (parent, name), if any, is now at
  // (new_parent, new_name), and the one there before is gone or, for an
  // exchange, moved the other way.
  void Rename(uint64_t parent, const std::string& name, uint64_t new_parent,
              const std::string& new_name, bool exchange);
  std::optional<std::pair<uint64_t, std::string>> Where(uint64_t ino);
  // The same, for a directory only.
  std::optional<std::pair<uint64_t, std::string>> WhereDir(uint64_t ino);
  size_t size();

 private:
  using Place = std::pair<uint64_t, std::string>;
  struct Entry {
    Place place;
    bool dir = false;
  };
  void PutLocked(uint64_t ino, Place place, bool dir) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropLocked(uint64_t ino) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Entry> where_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<Place, uint64_t> at_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::fuse
