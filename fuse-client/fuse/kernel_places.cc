#include "fuse-client/fuse/kernel_places.h"

namespace weft::fuse {

void KernelPlaces::Put(uint64_t ino, uint64_t parent, const std::string& name, bool dir) {
  absl::MutexLock lock(&mu_);
  PutLocked(ino, Place(parent, name), dir);
}

void KernelPlaces::Drop(uint64_t ino) {
  absl::MutexLock lock(&mu_);
  DropLocked(ino);
}

void KernelPlaces::Rename(uint64_t parent, const std::string& name, uint64_t new_parent,
                          const std::string& new_name, bool exchange) {
  absl::MutexLock lock(&mu_);
  const Place from(parent, name), to(new_parent, new_name);
  // Takes what is at `p` out: (ino, is a directory).
  auto take = [this](const Place& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::optional<std::pair<uint64_t, bool>> taken;
    if (auto it = at_.find(p); it != at_.end()) {
      taken.emplace(it->second, where_.at(it->second).dir);
      DropLocked(taken->first);
    }
    return taken;
  };
  const auto a = take(from);
  const auto b = take(to);
  if (a.has_value()) PutLocked(a->first, to, a->second);
  if (b.has_value() && exchange) PutLocked(b->first, from, b->second);
}

std::optional<std::pair<uint64_t, std::string>> KernelPlaces::Where(uint64_t ino) {
  absl::MutexLock lock(&mu_);
  auto it = where_.find(ino);
  if (it == where_.end()) return std::nullopt;
  return it->second.place;
}

std::optional<std::pair<uint64_t, std::string>> KernelPlaces::WhereDir(uint64_t ino) {
  absl::MutexLock lock(&mu_);
  auto it = where_.find(ino);
  if (it == where_.end() || !it->second.dir) return std::nullopt;
  return it->second.place;
}

void KernelPlaces::PutLocked(uint64_t ino, Place place, bool dir) {
  DropLocked(ino);
  auto old = at_.find(place);
  if (old != at_.end()) where_.erase(old->second);  // that one is gone from there
  at_[place] = ino;
  where_[ino] = Entry{std::move(place), dir};
}

void KernelPlaces::DropLocked(uint64_t ino) {
  auto it = where_.find(ino);
  if (it == where_.end()) return;
  at_.erase(it->second.place);
  where_.erase(it);
}

size_t KernelPlaces::size() {
  absl::MutexLock lock(&mu_);
  return where_.size();
}

}  // namespace weft::fuse
