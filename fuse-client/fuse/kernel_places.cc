#include "fuse-client/fuse/kernel_places.h"

namespace weft::fuse {

void KernelPlaces::Put(uint64_t ino, uint64_t parent, const std::string& name) {
  absl::MutexLock lock(&mu_);
  PutLocked(ino, Place(parent, name));
}

void KernelPlaces::Drop(uint64_t ino) {
  absl::MutexLock lock(&mu_);
  DropLocked(ino);
}

void KernelPlaces::Rename(uint64_t parent, const std::string& name, uint64_t new_parent,
                          const std::string& new_name, bool exchange) {
  absl::MutexLock lock(&mu_);
  const Place from(parent, name), to(new_parent, new_name);
  auto moved = at_.find(from);
  auto other = at_.find(to);
  const std::optional<uint64_t> a =
      moved != at_.end() ? std::optional<uint64_t>(moved->second) : std::nullopt;
  const std::optional<uint64_t> b =
      other != at_.end() ? std::optional<uint64_t>(other->second) : std::nullopt;
  if (a.has_value()) DropLocked(*a);
  if (b.has_value()) DropLocked(*b);
  if (a.has_value()) PutLocked(*a, to);
  if (b.has_value() && exchange) PutLocked(*b, from);
}

std::optional<std::pair<uint64_t, std::string>> KernelPlaces::Where(uint64_t ino) {
  absl::MutexLock lock(&mu_);
  auto it = where_.find(ino);
  if (it == where_.end()) return std::nullopt;
  return it->second;
}

void KernelPlaces::PutLocked(uint64_t ino, Place place) {
  DropLocked(ino);
  auto old = at_.find(place);
  if (old != at_.end()) where_.erase(old->second);  // that one is gone from there
  at_[place] = ino;
  where_[ino] = std::move(place);
}

void KernelPlaces::DropLocked(uint64_t ino) {
  auto it = where_.find(ino);
  if (it == where_.end()) return;
  at_.erase(it->second);
  where_.erase(it);
}

size_t KernelPlaces::size() {
  absl::MutexLock lock(&mu_);
  return where_.size();
}

}  // namespace weft::fuse
