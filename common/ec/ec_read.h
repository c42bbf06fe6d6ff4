// Reading a byte range of an erasure-coded object from its shards, used by the
// client (straight from the shard OSDs) and by the primary (its fallback read
// path and recovery).
//
// Healthy: only the data shards holding [a, b) are read, each over one
// contiguous shard range. Degraded (a needed shard unavailable or failing):
// the union of those ranges is read from k other shards (data first, then
// parity) and the missing data shards are decoded. Every shard answers with its
// object version; answers that disagree mean a write is in flight or was cut
// short, and the read fails with Aborted (the caller asks the primary), as it
// does at once when a shard answers Aborted (the object's newest write is not
// known to be committed there yet).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/ec/erasure_code.h"
#include "common/striping/stripe_layout.h"

namespace weft::ec {

struct ShardRead {
  uint32_t shard = 0;
  uint64_t offset = 0, length = 0;  // shard offsets
};

struct ShardReply {
  absl::Status status;  // NotFound = the object does not exist
  std::string data;     // shorter than asked at the end of the shard object
  uint64_t logical_size = 0;
  uint64_t version_epoch = 0, version_seq = 0;
  int64_t mtime_ns = 0;
};

// Runs the reads (in parallel, ideally) and returns one reply per read, in order.
using ShardFetch = std::function<std::vector<ShardReply>(const std::vector<ShardRead>&)>;

struct RangeRead {
  std::string data;  // logical [a, min(b, logical_size))
  uint64_t logical_size = 0;
  uint64_t version_epoch = 0, version_seq = 0;
  int64_t mtime_ns = 0;
  uint64_t shard_bytes = 0;  // bytes the shards sent
  bool decoded = false;
};

// Reads logical [a, b) (b > a). `available[s]` says whether shard s may be
// asked at all (its OSD is up). NotFound when the object does not exist;
// Unavailable when fewer than k shards answer; Aborted when they disagree or one
// answers Aborted.
absl::StatusOr<RangeRead> ReadRange(const striping::StripeLayout& layout, ErasureCode* code,
                                    uint64_t a, uint64_t b, const std::vector<bool>& available,
                                    const ShardFetch& fetch);

}  // namespace weft::ec
