// Advisory file locks as POSIX (fcntl) and BSD (flock) define them, for one
// table of many owners: the MDS keeps every session's locks in one, and a
// client keeps its own granted locks in another (what it resends to a
// restarted MDS). No I/O, no threads: the caller serializes.
//
// An owner is a (session, owner) pair: the FUSE lock owner is per process
// (POSIX) or per open file description (flock) and only unique within one
// mount, so locks of two sessions never merge, and always may conflict.
//
// POSIX locks cover byte ranges [start, end] (end inclusive, kLockEnd = to
// the end of any file). An owner has at most one lock type on any byte: a
// new lock replaces what the owner held in its range (splitting a lock that
// reaches past it), and ranges of one type that touch or overlap merge.
// flock locks cover the whole file; a new one replaces the owner's. POSIX
// and flock locks never conflict with each other (as on Linux).
//
// Two locks conflict when their owners differ, they have the same kind, they
// overlap, and one of them is a write lock.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace weft::locks {

enum class Kind : uint8_t { kPosix = 0, kFlock = 1 };
enum class Type : uint8_t { kRead = 0, kWrite = 1, kUnlock = 2 };

// The largest end offset (the kernel's OFFSET_MAX): "to the end of the file".
inline constexpr uint64_t kLockEnd = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

struct Owner {
  uint64_t session = 0;
  uint64_t id = 0;  // the frontend's lock owner, unique within the session
  bool operator==(const Owner&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const Owner& o) {
    return H::combine(std::move(h), o.session, o.id);
  }
};

struct Lock {
  uint64_t ino = 0;
  Kind kind = Kind::kPosix;
  Type type = Type::kRead;
  uint64_t start = 0;
  uint64_t end = kLockEnd;  // inclusive; start <= end <= kLockEnd
  Owner owner;
  uint32_t pid = 0;  // of the process that asked, for F_GETLK's answer
  bool operator==(const Lock&) const = default;
};

// Whether `a` and `b` conflict (see above).
bool Conflicts(const Lock& a, const Lock& b);

class LockTable {
 public:
  // Every lock held that conflicts with `want` (a read or write lock).
  std::vector<Lock> ConflictsWith(const Lock& want) const;
  // The one that starts first, for F_GETLK.
  std::optional<Lock> FirstConflict(const Lock& want) const;

  // Sets `want` (read or write) or removes the range (kUnlock) for its owner,
  // as described above, without looking at other owners: the caller checked
  // ConflictsWith first. Returns whether any lock was removed or shrunk, or
  // a lock of the owner changed type (others waiting may go on).
  bool Apply(const Lock& want);

  // Removes every lock of `owner` of `kind` on `ino` (close, release).
  bool DropOwner(uint64_t ino, Kind kind, const Owner& owner);
  // Removes every lock of `session` on `ino` (its last open went).
  bool DropSessionIno(uint64_t session, uint64_t ino);
  // Removes every lock of `session` (it ended).
  bool DropSession(uint64_t session);
  void Clear() { by_ino_.clear(); }

  // Whether `owner` holds any lock of `kind` on `ino`.
  bool Holds(uint64_t ino, Kind kind, const Owner& owner) const;
  // The locks of `session` (all sessions if 0), in no particular order.
  std::vector<Lock> LocksOf(uint64_t session = 0) const;
  size_t size() const;

 private:
  // Removes the locks on `ino` that `drop` selects; whether there were any.
  bool EraseIf(uint64_t ino, const std::function<bool(const Lock&)>& drop);

  absl::flat_hash_map<uint64_t, std::vector<Lock>> by_ino_;
};

}  // namespace weft::locks
