// Checksums for data at rest: xxHash3, 64-bit, seed 0.
//
// The values are written to disk (per-block checksums of OSD objects), so the
// algorithm and seed are part of the on-disk format and must never change.
// A "block" is a fixed-size slice of an object starting at a multiple of the
// block size; the last block of an object is short when the object size is not
// a multiple of it, and its checksum covers only the bytes that exist.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace weft::common {

// xxHash3-64 of `data` with seed 0.
uint64_t Checksum64(absl::string_view data);

// The number of blocks needed to hold `bytes` bytes (0 for 0 bytes).
// `block_bytes` must be > 0.
uint64_t BlockCount(uint64_t bytes, uint32_t block_bytes);

// The blocks [first, first + count) that overlap the byte range
// [offset, offset + length). count is 0 when length is 0.
struct BlockSpan {
  uint64_t first = 0;
  uint64_t count = 0;
};
BlockSpan BlocksCovering(uint64_t offset, uint64_t length, uint32_t block_bytes);

// Checksums of the consecutive blocks of `data`, which must start at a block
// boundary; the last block may be short. Empty data gives no checksums.
std::vector<uint64_t> BlockChecksums(absl::string_view data, uint32_t block_bytes);

}  // namespace weft::common
