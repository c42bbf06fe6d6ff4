#include "common/locks/lock_table.h"

#include <algorithm>

namespace weft::locks {
namespace {

// flock locks cover the whole file, whatever range the caller gave.
Lock Normalized(const Lock& l) {
  Lock n = l;
  if (n.kind == Kind::kFlock) {
    n.start = 0;
    n.end = kLockEnd;
  }
  return n;
}

}  // namespace

bool Conflicts(const Lock& a, const Lock& b) {
  if (a.owner == b.owner || a.kind != b.kind || a.ino != b.ino) return false;
  if (a.type != Type::kWrite && b.type != Type::kWrite) return false;
  return a.start <= b.end && b.start <= a.end;
}

std::vector<Lock> LockTable::ConflictsWith(const Lock& asked) const {
  const Lock want = Normalized(asked);
  std::vector<Lock> out;
  auto it = by_ino_.find(want.ino);
  if (it == by_ino_.end()) return out;
  for (const Lock& l : it->second) {
    if (Conflicts(l, want)) out.push_back(l);
  }
  return out;
}

std::optional<Lock> LockTable::FirstConflict(const Lock& want) const {
  const std::vector<Lock> all = ConflictsWith(want);
  if (all.empty()) return std::nullopt;
  return *std::min_element(all.begin(), all.end(),
                           [](const Lock& a, const Lock& b) { return a.start < b.start; });
}

bool LockTable::Apply(const Lock& asked) {
  const Lock want = Normalized(asked);
  auto it = by_ino_.find(want.ino);
  if (it == by_ino_.end()) {
    if (want.type == Type::kUnlock) return false;
    by_ino_[want.ino].push_back(want);
    return false;
  }
  std::vector<Lock>& held = it->second;
  bool changed = false;
  // The new lock grows over the owner's locks of its type that it touches.
  uint64_t start = want.start, end = want.end;
  const uint64_t touch_from = want.start == 0 ? 0 : want.start - 1;
  const uint64_t touch_to = want.end >= kLockEnd ? kLockEnd : want.end + 1;
  std::vector<Lock> kept;
  kept.reserve(held.size() + 2);
  for (const Lock& l : held) {
    if (l.owner != want.owner || l.kind != want.kind) {
      kept.push_back(l);
      continue;
    }
    if (want.kind == Kind::kFlock) {  // one per owner: replaced
      changed |= l.type != want.type;
      continue;
    }
    const bool overlaps = l.end >= want.start && l.start <= want.end;
    const bool touches = l.end >= touch_from && l.start <= touch_to;
    if (touches && want.type != Type::kUnlock && l.type == want.type) {
      start = std::min(start, l.start);
      end = std::max(end, l.end);
      continue;
    }
    if (!overlaps) {
      kept.push_back(l);
      continue;
    }
    // Another type (or an unlock) over part of it: the rest stays.
    changed = true;
    if (l.start < want.start) {
      Lock before = l;
      before.end = want.start - 1;
      kept.push_back(before);
    }
    if (l.end > want.end) {
      Lock after = l;
      after.start = want.end + 1;
      kept.push_back(after);
    }
  }
  if (want.type != Type::kUnlock) {
    Lock merged = want;
    merged.start = start;
    merged.end = end;
    kept.push_back(merged);
  }
  if (kept.empty()) {
    by_ino_.erase(it);
  } else {
    held = std::move(kept);
  }
  return changed;
}

bool LockTable::EraseIf(uint64_t ino, const std::function<bool(const Lock&)>& drop) {
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return false;
  std::vector<Lock>& held = it->second;
  const size_t before = held.size();
  held.erase(std::remove_if(held.begin(), held.end(), drop), held.end());
  const bool dropped = held.size() != before;
  if (held.empty()) by_ino_.erase(it);
  return dropped;
}

bool LockTable::DropOwner(uint64_t ino, Kind kind, const Owner& owner) {
  return EraseIf(ino, [&](const Lock& l) { return l.kind == kind && l.owner == owner; });
}

bool LockTable::DropSessionIno(uint64_t session, uint64_t ino) {
  return EraseIf(ino, [&](const Lock& l) { return l.owner.session == session; });
}

bool LockTable::DropSession(uint64_t session) {
  std::vector<uint64_t> inos;
  for (const auto& [ino, held] : by_ino_) inos.push_back(ino);
  bool dropped = false;
  for (uint64_t ino : inos) dropped |= DropSessionIno(session, ino);
  return dropped;
}

bool LockTable::Holds(uint64_t ino, Kind kind, const Owner& owner) const {
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return false;
  return std::any_of(it->second.begin(), it->second.end(),
                     [&](const Lock& l) { return l.kind == kind && l.owner == owner; });
}

std::vector<Lock> LockTable::LocksOf(uint64_t session) const {
  std::vector<Lock> out;
  for (const auto& [ino, held] : by_ino_) {
    for (const Lock& l : held) {
      if (session == 0 || l.owner.session == session) out.push_back(l);
    }
  }
  return out;
}

size_t LockTable::size() const {
  size_t n = 0;
  for (const auto& [ino, held] : by_ino_) n += held.size();
  return n;
}

}  // namespace weft::locks
