// Stripe math of an erasure-coded object.
//
// A logical object is cut into stripes of `stripe_width() = k * chunk` bytes;
// stripe s holds logical bytes [s * W, (s + 1) * W), and its chunk i (bytes
// [s * W + i * C, s * W + (i + 1) * C)) lives on data shard i at shard offset
// [s * C, (s + 1) * C). Parity shard k + p holds the parity of every stripe at
// the same shard offsets. Every shard object therefore has the same size,
// NumStripes(logical size) * C: the last stripe is padded with zeros, and
// bytes past the logical size are always zero (so parity stays consistent
// when an object is extended).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft::striping {

struct Extent {
  uint64_t lo = 0, hi = 0;  // [lo, hi)
  bool empty() const { return hi <= lo; }
  uint64_t size() const { return empty() ? 0 : hi - lo; }
};

struct StripeLayout {
  uint32_t k = 0, m = 0;
  uint64_t chunk = 0;

  uint64_t stripe_width() const { return uint64_t{k} * chunk; }
  uint64_t NumStripes(uint64_t logical_size) const {
    return (logical_size + stripe_width() - 1) / stripe_width();
  }
  uint64_t ShardSize(uint64_t logical_size) const { return NumStripes(logical_size) * chunk; }

  // The shard offsets of data shard `shard` (< k) that hold logical bytes of
  // [a, b); empty when none do. Every byte in between is needed too (the range
  // of one shard is contiguous).
  Extent ShardExtent(uint32_t shard, uint64_t a, uint64_t b) const;

  // Appends logical [a, b) (b - a bytes) to `out` from data shard buffers:
  // `bufs[i]` holds shard i's bytes starting at shard offset `base[i]`, and
  // must cover ShardExtent(i, a, b). Appending, not writing into a sized
  // buffer: sizing a std::string zero-fills it first, 4 MiB per object read.
  void Gather(uint64_t a, uint64_t b, const std::vector<const char*>& bufs,
              const std::vector<uint64_t>& base, std::string* out) const;
};

}  // namespace weft::striping
