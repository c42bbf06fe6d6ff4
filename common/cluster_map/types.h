// Identifiers of the cluster map. Ids are strong types so that an OSD id can
// never be passed where a pool id or a PG seed is expected: construction is
// explicit, there is no conversion back to an integer except through .value().
#pragma once

#include <compare>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft {

// CRTP base of the id types. `Derived` is the id type itself so that distinct id
// types never compare with each other; `kDefault` is what a default-constructed
// id holds (an OSD id defaults to "no OSD" rather than to osd.0).
template <typename Derived, typename Rep, Rep kDefault = Rep{}>
class StrongId {
 public:
  using rep_type = Rep;

  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep value) : value_(value) {}

  constexpr Rep value() const { return value_; }

  friend constexpr bool operator==(const Derived& a, const Derived& b) {
    return a.value_ == b.value_;
  }
  friend constexpr std::strong_ordering operator<=>(const Derived& a, const Derived& b) {
    return a.value_ <=> b.value_;
  }
  template <typename H>
  friend H AbslHashValue(H h, const Derived& id) {
    return H::combine(std::move(h), id.value_);
  }
  // Prints the bare number, so that log lines read "osd=3 pool=2".
  friend std::ostream& operator<<(std::ostream& os, const Derived& id) {
    return os << id.value_;
  }

 private:
  Rep value_ = kDefault;
};

// An OSD. Ids are allocated by the map manager from OsdMap::next_osd_id and are
// never reused. -1 (kNoOsd) marks a hole: an erasure-coded shard without an OSD.
class OsdId : public StrongId<OsdId, int32_t, -1> {
 public:
  using StrongId::StrongId;
};
inline constexpr OsdId kNoOsd{-1};

// A pool. Ids start at 1 (OsdMap::next_pool_id) and are never reused.
class PoolId : public StrongId<PoolId, uint32_t> {
 public:
  using StrongId::StrongId;
};

// Map epochs are plain integers: they are compared and incremented everywhere,
// and a newer map always has a larger epoch.
using Epoch = uint64_t;

// A placement group: objects of `pool` whose name maps to `seed` (see
// placement::ObjectToPgSeed). Written like Ceph, pool in decimal and seed in
// hex: "3.1f". (Defined in osd_map.cc; this header has no .cc of its own.)
struct PgId {
  PoolId pool;
  uint32_t seed = 0;

  // "3.1f": decimal pool, '.', lowercase hex seed without leading zeros.
  std::string ToString() const;
  // Accepts what ToString writes (hex digits in either case). Rejects empty
  // parts, signs, spaces, "0x", and numbers that overflow 32 bits.
  static absl::StatusOr<PgId> Parse(absl::string_view text);

  friend bool operator==(const PgId&, const PgId&) = default;
  friend auto operator<=>(const PgId&, const PgId&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const PgId& pg) {
    return H::combine(std::move(h), pg.pool, pg.seed);
  }
  friend std::ostream& operator<<(std::ostream& os, const PgId& pg) {
    return os << pg.ToString();
  }
};

}  // namespace weft
