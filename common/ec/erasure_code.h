// Reed-Solomon erasure coding over GF(2^8) through ISA-L.
//
// The code is systematic: of the k + m shards, shards 0..k-1 are the data and
// k..k+m-1 the parity. The generator is ISA-L's Cauchy matrix
// (gf_gen_cauchy1_matrix), whose every k x k submatrix is invertible for
// k + m <= 256, so any k shards recover all of them. Supported: 1 <= k <= 16,
// 1 <= m <= 4 (the pool limits; the code itself would allow more).
//
// Byte j of every shard depends only on byte j of the others, so any range
// [a, b) of shard offsets can be encoded or decoded on its own: callers encode
// whole stripes and decode just the byte ranges they need.
//
// Decoding inverts the k x k submatrix of the shards used; the resulting ISA-L
// tables are cached per erasure pattern (which shards are used, which are
// rebuilt), so a degraded cluster pays the inversion once per pattern.
//
// Thread-safe: Encode is const and lock-free; Decode takes a mutex only to look
// up or fill the cache (the inversion runs outside it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace weft::ec {

inline constexpr int kMaxDataShards = 16;
inline constexpr int kMaxParityShards = 4;

class ErasureCode {
 public:
  // InvalidArgument when k or m is out of range.
  static absl::StatusOr<std::unique_ptr<ErasureCode>> Create(int k, int m);

  int k() const { return k_; }
  int m() const { return m_; }

  // Computes the m parity shards of `len` bytes from the k data shards.
  // `data` holds k pointers, `parity` m pointers; buffers may not overlap.
  void Encode(size_t len, const uint8_t* const* data, uint8_t* const* parity) const;

  // `shards` holds k + m pointers to `len`-byte buffers. Bits of `present`
  // name the shards whose buffers hold valid bytes (at least k of them); bits
  // of `wanted` name the shards to rebuild in place (they must not be
  // present). Uses the lowest k present shards. InvalidArgument when fewer
  // than k are present or a wanted shard is present or out of range.
  absl::Status Decode(size_t len, uint8_t* const* shards, uint32_t present, uint32_t wanted);

  // The generator's coefficient for parity row p (0..m-1), data column d.
  uint8_t Coefficient(int p, int d) const { return matrix_[(k_ + p) * k_ + d]; }

  // Number of distinct erasure patterns whose tables are cached (for tests).
  size_t CachedPatterns();

 private:
  ErasureCode(int k, int m);
  // ISA-L tables rebuilding the shards of `wanted` from the k of `sources`.
  absl::StatusOr<std::shared_ptr<const std::vector<uint8_t>>> DecodeTables(uint32_t sources,
                                                                           uint32_t wanted);

  const int k_, m_;
  std::vector<uint8_t> matrix_;        // (k + m) x k generator, identity on top
  std::vector<uint8_t> encode_tables_; // ec_init_tables of the parity rows

  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<const std::vector<uint8_t>>> decode_cache_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::ec
