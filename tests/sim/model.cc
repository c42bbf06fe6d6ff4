#include "tests/sim/model.h"

#include <sys/stat.h>

#include "common/log/log.h"

namespace weft::sim {

Model::Model(uint64_t root) {
  Node& r = nodes_[root];
  r.mode = S_IFDIR | 0755;
  r.parent = root;
  r.links = 1;
  entries_[root];
}

const Node* Model::Find(uint64_t ino) const {
  auto it = nodes_.find(ino);
  return it == nodes_.end() ? nullptr : &it->second;
}

std::optional<uint64_t> Model::Lookup(uint64_t dir, const std::string& name) const {
  auto d = entries_.find(dir);
  if (d == entries_.end()) return std::nullopt;
  auto e = d->second.find(name);
  if (e == d->second.end()) return std::nullopt;
  return e->second;
}

bool Model::Empty(uint64_t dir) const {
  auto d = entries_.find(dir);
  return d == entries_.end() || d->second.empty();
}

bool Model::Under(uint64_t dir, uint64_t ancestor) const {
  for (int depth = 0; depth < 4096; ++depth) {
    if (dir == ancestor) return true;
    const Node* n = Find(dir);
    if (n == nullptr || n->parent == dir) return false;
    dir = n->parent;
  }
  return false;
}

void Model::Make(uint64_t dir, const std::string& name, uint64_t ino, uint32_t mode,
                 const std::string& target) {
  CHECK(!Lookup(dir, name)) << "model: " << name << " exists in " << dir;
  CHECK(!nodes_.contains(ino)) << "model: inode " << ino << " made twice";
  Node& n = nodes_[ino];
  n.mode = mode;
  n.target = target;
  n.size = target.size();
  n.links = 1;
  n.parent = dir;
  entries_[dir][name] = ino;
  if (n.IsDir()) entries_[ino];
}

void Model::Link(uint64_t ino, uint64_t dir, const std::string& name) {
  CHECK(!Lookup(dir, name)) << "model: link over " << name;
  ++nodes_.at(ino).links;
  entries_[dir][name] = ino;
}

void Model::Unlink(uint64_t dir, const std::string& name) {
  auto& d = entries_.at(dir);
  auto it = d.find(name);
  CHECK(it != d.end()) << "model: unlink of missing " << name;
  const uint64_t ino = it->second;
  d.erase(it);
  Node& n = nodes_.at(ino);
  --n.links;
  if (n.IsDir()) entries_.erase(ino);
  MaybeRemove(ino);
}

void Model::Rename(uint64_t dir, const std::string& name, uint64_t new_dir,
                   const std::string& new_name, bool exchange) {
  const uint64_t src = entries_.at(dir).at(name);
  std::optional<uint64_t> dst = Lookup(new_dir, new_name);
  if (exchange) {
    entries_[dir][name] = *dst;
    entries_[new_dir][new_name] = src;
    Node& a = nodes_.at(src);
    Node& b = nodes_.at(*dst);
    if (a.IsDir()) a.parent = new_dir;
    if (b.IsDir()) b.parent = dir;
    return;
  }
  if (dst && *dst == src) return;  // two links of one file, or the same name
  if (dst) Unlink(new_dir, new_name);
  entries_.at(dir).erase(name);
  entries_[new_dir][new_name] = src;
  Node& n = nodes_.at(src);
  if (n.IsDir()) n.parent = new_dir;
}

void Model::SetMode(uint64_t ino, uint32_t perm) {
  Node& n = nodes_.at(ino);
  n.mode = (n.mode & 0170000) | (perm & 07777);
}

void Model::SetOwner(uint64_t ino, uint32_t uid, uint32_t gid) {
  Node& n = nodes_.at(ino);
  n.uid = uid;
  n.gid = gid;
}

bool Model::May(uint64_t ino, uint32_t uid, uint32_t gid, uint32_t want) const {
  if (uid == 0) return true;
  const Node& n = nodes_.at(ino);
  const uint32_t bits = uid == n.uid   ? (n.mode >> 6) & 7
                        : gid == n.gid ? (n.mode >> 3) & 7
                                       : n.mode & 7;
  return (bits & want) == want;
}

void Model::SetSize(uint64_t ino, uint64_t size) { nodes_.at(ino).size = size; }

void Model::Grow(uint64_t ino, uint64_t end) {
  // Gone: an unlinked file whose last opener was evicted while its write
  // was answered (applied before the eviction, purged after it).
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  if (end > it->second.size) it->second.size = end;
}

void Model::SetXattr(uint64_t ino, const std::string& name, const std::string& value) {
  nodes_.at(ino).xattrs[name] = value;
}

void Model::RemoveXattr(uint64_t ino, const std::string& name) {
  nodes_.at(ino).xattrs.erase(name);
}

void Model::Open(uint64_t ino) { ++nodes_.at(ino).open; }

void Model::Close(uint64_t ino) {
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  --it->second.open;
  MaybeRemove(ino);
}

void Model::DropOpens(const std::map<uint64_t, int>& handles) {
  for (const auto& [ino, count] : handles) {
    auto it = nodes_.find(ino);
    if (it == nodes_.end()) continue;
    it->second.open -= count;
    MaybeRemove(ino);
  }
}

void Model::MaybeRemove(uint64_t ino) {
  auto it = nodes_.find(ino);
  if (it == nodes_.end()) return;
  const Node& n = it->second;
  if (n.links > 0 || (n.open > 0 && !n.IsDir())) return;
  nodes_.erase(it);
}

}  // namespace weft::sim
