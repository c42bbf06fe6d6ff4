// LockTable (common/locks) against a per-byte model of every owner's locks.
#include <catch2/catch.hpp>

#include <array>
#include <map>
#include <random>
#include <vector>

#include "common/locks/lock_table.h"

namespace weft::locks {
namespace {

constexpr uint64_t kIno = 7;

Lock Posix(Owner owner, Type type, uint64_t start, uint64_t end) {
  Lock l;
  l.ino = kIno;
  l.kind = Kind::kPosix;
  l.type = type;
  l.start = start;
  l.end = end;
  l.owner = owner;
  return l;
}

Lock Flock(Owner owner, Type type) {
  Lock l = Posix(owner, type, 0, kLockEnd);
  l.kind = Kind::kFlock;
  return l;
}

// What each owner holds on each of the first kBytes bytes (ranges in the
// random test stay inside them).
constexpr uint64_t kBytes = 48;
enum class Held : uint8_t { kNone, kRead, kWrite };
using Bytes = std::array<Held, kBytes>;

void ApplyToModel(std::map<uint64_t, Bytes>& model, const Lock& l) {
  Bytes& b = model.try_emplace(l.owner.id).first->second;
  for (uint64_t i = l.start; i <= l.end; ++i) {
    b[i] = l.type == Type::kUnlock ? Held::kNone
           : l.type == Type::kRead ? Held::kRead
                                   : Held::kWrite;
  }
}

bool ModelConflicts(const std::map<uint64_t, Bytes>& model, const Lock& want) {
  for (const auto& [id, bytes] : model) {
    if (id == want.owner.id) continue;
    for (uint64_t i = want.start; i <= want.end; ++i) {
      if (bytes[i] == Held::kWrite || (bytes[i] == Held::kRead && want.type == Type::kWrite)) {
        return true;
      }
    }
  }
  return false;
}

uint64_t Key(const Owner& o) { return o.session * 10 + o.id; }

// The table's locks of each owner: the model's bytes, disjoint, and merged
// (no two of one type touch).
void CheckAgainst(const LockTable& table, const std::map<uint64_t, Bytes>& model) {
  std::map<uint64_t, Bytes> seen;
  std::map<uint64_t, std::vector<Lock>> by_owner;
  for (const Lock& l : table.LocksOf()) {
    REQUIRE(l.start <= l.end);
    REQUIRE(l.end < kBytes);
    Bytes& b = seen.try_emplace(Key(l.owner)).first->second;
    for (uint64_t i = l.start; i <= l.end; ++i) {
      REQUIRE(b[i] == Held::kNone);  // disjoint
      b[i] = l.type == Type::kRead ? Held::kRead : Held::kWrite;
    }
    by_owner[Key(l.owner)].push_back(l);
  }
  for (const auto& [id, bytes] : model) {
    Bytes none{};
    auto it = seen.find(id);
    INFO("owner " << id);
    CHECK((it == seen.end() ? none : it->second) == bytes);
  }
  for (const auto& [id, locks] : by_owner) {
    for (const Lock& a : locks) {
      for (const Lock& b : locks) {
        if (&a == &b || a.type != b.type) continue;
        CHECK((a.end + 1 < b.start || b.end + 1 < a.start));  // would have merged
      }
    }
  }
}

TEST_CASE("posix locks split - merge and replace per owner like the byte model") {
  std::mt19937_64 rng(GENERATE(1, 2, 3, 4));
  LockTable table;
  std::map<uint64_t, Bytes> model;
  for (int step = 0; step < 4000; ++step) {
    const Owner owner{1 + rng() % 2, 1 + rng() % 3};
    const uint64_t start = rng() % kBytes;
    const uint64_t end = start + rng() % std::min<uint64_t>(12, kBytes - start);
    const Type type = static_cast<Type>(rng() % 3);
    // The model keys owners by Key(): the session folded in.
    Lock want = Posix(owner, type, start, end);
    Lock keyed = want;
    keyed.owner.id = Key(owner);
    if (type != Type::kUnlock) {
      const bool conflict = !table.ConflictsWith(want).empty();
      REQUIRE(conflict == ModelConflicts(model, keyed));
      REQUIRE(table.FirstConflict(want).has_value() == conflict);
      if (conflict) continue;
    }
    table.Apply(want);
    ApplyToModel(model, keyed);
    CheckAgainst(table, model);
  }
}

TEST_CASE("posix lock edge cases") {
  LockTable t;
  const Owner a{1, 1}, b{1, 2}, c{2, 1};
  SECTION("to the end of the file, and an unlock at offset zero") {
    t.Apply(Posix(a, Type::kWrite, 100, kLockEnd));
    CHECK(t.FirstConflict(Posix(b, Type::kRead, kLockEnd, kLockEnd)).has_value());
    CHECK_FALSE(t.FirstConflict(Posix(b, Type::kRead, 0, 99)).has_value());
    t.Apply(Posix(a, Type::kUnlock, 0, kLockEnd));
    CHECK(t.size() == 0);
  }
  SECTION("a downgrade lets readers in and reports a change") {
    t.Apply(Posix(a, Type::kWrite, 0, 9));
    CHECK(t.FirstConflict(Posix(c, Type::kRead, 5, 5)).has_value());
    CHECK(t.Apply(Posix(a, Type::kRead, 0, 9)));
    CHECK_FALSE(t.FirstConflict(Posix(c, Type::kRead, 5, 5)).has_value());
    CHECK(t.FirstConflict(Posix(c, Type::kWrite, 5, 5))->owner == a);
  }
  SECTION("the same owner in another session conflicts") {
    t.Apply(Posix(a, Type::kWrite, 0, 0));
    CHECK(t.FirstConflict(Posix(Owner{2, 1}, Type::kRead, 0, 0)).has_value());
    CHECK_FALSE(t.FirstConflict(Posix(a, Type::kWrite, 0, 0)).has_value());
  }
  SECTION("dropping an owner, a session's inode, a session") {
    t.Apply(Posix(a, Type::kRead, 0, 9));
    t.Apply(Posix(b, Type::kRead, 0, 9));
    Lock other = Posix(c, Type::kRead, 0, 9);
    t.Apply(other);
    other.ino = kIno + 1;
    t.Apply(other);
    CHECK(t.Holds(kIno, Kind::kPosix, a));
    CHECK(t.DropOwner(kIno, Kind::kPosix, a));
    CHECK_FALSE(t.Holds(kIno, Kind::kPosix, a));
    CHECK_FALSE(t.DropOwner(kIno, Kind::kPosix, a));
    CHECK(t.size() == 3);
    CHECK(t.DropSessionIno(2, kIno));
    CHECK(t.size() == 2);
    CHECK(t.LocksOf(2).size() == 1);
    CHECK(t.DropSession(2));
    CHECK(t.LocksOf(2).empty());
    CHECK(t.LocksOf(1).size() == 1);
  }
}

TEST_CASE("flock locks: whole file - one per owner - apart from posix locks") {
  LockTable t;
  const Owner a{1, 1}, b{2, 1};
  t.Apply(Flock(a, Type::kRead));
  CHECK_FALSE(t.FirstConflict(Flock(b, Type::kRead)).has_value());
  CHECK(t.FirstConflict(Flock(b, Type::kWrite)).has_value());
  // A posix lock of another owner is not in the way.
  CHECK_FALSE(t.FirstConflict(Posix(b, Type::kWrite, 0, 10)).has_value());
  // Conversion replaces; a range given with flock is ignored.
  Lock up = Flock(a, Type::kWrite);
  up.start = 5;
  up.end = 6;
  t.Apply(up);
  REQUIRE(t.LocksOf(1).size() == 1);
  CHECK(t.LocksOf(1)[0].type == Type::kWrite);
  CHECK(t.LocksOf(1)[0].start == 0);
  CHECK(t.FirstConflict(Flock(b, Type::kRead)).has_value());
  CHECK(t.Apply(Flock(a, Type::kUnlock)));
  CHECK(t.size() == 0);
}

}  // namespace
}  // namespace weft::locks
