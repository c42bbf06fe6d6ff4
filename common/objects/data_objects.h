// Which of a file's data objects may exist in a range of object numbers.
//
// A sparse file's size says nothing about how many objects it has: 1 TiB
// written at its last byte is one object among 262,144 possible 4 MiB ones.
// Truncating, punching or purging such a file one remove per possible object
// would take hours (at the maximum size, 2^38 of them). Past a small range
// the objects are listed instead: one request per placement group of the
// pool, whatever the file's size.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/objects/objects.h"

namespace weft::objects {

// Ranges of at most this many objects are taken whole, without a listing.
inline constexpr uint64_t kListDataObjectsAbove = 1024;

// The numbers in [first, last) of `ino`'s data objects in `pool` that may
// exist, ascending: all of them for a small range, else those the pool lists.
absl::StatusOr<std::vector<uint64_t>> DataObjectsIn(Objects* objects, PoolId pool,
                                                    uint64_t ino, uint64_t first, uint64_t last);

}  // namespace weft::objects
