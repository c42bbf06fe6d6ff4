#include "common/ec/erasure_code.h"

#include <isa-l/erasure_code.h>

#include <bit>

#include "absl/strings/str_cat.h"

namespace weft::ec {

absl::StatusOr<std::unique_ptr<ErasureCode>> ErasureCode::Create(int k, int m) {
  if (k < 1 || k > kMaxDataShards) {
    return absl::InvalidArgumentError(
        absl::StrCat("k=", k, " is outside [1, ", kMaxDataShards, "]"));
  }
  if (m < 1 || m > kMaxParityShards) {
    return absl::InvalidArgumentError(
        absl::StrCat("m=", m, " is outside [1, ", kMaxParityShards, "]"));
  }
  return std::unique_ptr<ErasureCode>(new ErasureCode(k, m));
}

ErasureCode::ErasureCode(int k, int m) : k_(k), m_(m), matrix_((k + m) * k) {
  gf_gen_cauchy1_matrix(matrix_.data(), k + m, k);
  encode_tables_.resize(32 * k * m);
  ec_init_tables(k, m, matrix_.data() + k * k, encode_tables_.data());
}

void ErasureCode::Encode(size_t len, const uint8_t* const* data, uint8_t* const* parity) const {
  if (len == 0) return;
  // ISA-L's signature is not const-correct; it only reads `data`.
  ec_encode_data(static_cast<int>(len), k_, m_, const_cast<uint8_t*>(encode_tables_.data()),
                 const_cast<uint8_t**>(data), const_cast<uint8_t**>(parity));
}

size_t ErasureCode::CachedPatterns() {
  absl::MutexLock lock(&mu_);
  return decode_cache_.size();
}

absl::StatusOr<std::shared_ptr<const std::vector<uint8_t>>> ErasureCode::DecodeTables(
    uint32_t sources, uint32_t wanted) {
  const uint64_t key = (uint64_t{sources} << 32) | wanted;
  {
    absl::MutexLock lock(&mu_);
    auto it = decode_cache_.find(key);
    if (it != decode_cache_.end()) return it->second;
  }
  // The k x k submatrix of the source rows, inverted: it maps source bytes to
  // data bytes.
  std::vector<uint8_t> sub(k_ * k_), inv(k_ * k_);
  int row = 0;
  for (int s = 0; s < k_ + m_; ++s) {
    if (!(sources & (1u << s))) continue;
    for (int c = 0; c < k_; ++c) sub[row * k_ + c] = matrix_[s * k_ + c];
    ++row;
  }
  if (gf_invert_matrix(sub.data(), inv.data(), k_) != 0) {
    return absl::InternalError("erasure code submatrix is singular");
  }
  // One row per wanted shard: a data shard is its row of the inverse; a parity
  // shard is its generator row times the inverse.
  const int rows = std::popcount(wanted);
  std::vector<uint8_t> coeffs(rows * k_);
  row = 0;
  for (int w = 0; w < k_ + m_; ++w) {
    if (!(wanted & (1u << w))) continue;
    for (int c = 0; c < k_; ++c) {
      uint8_t v = 0;
      if (w < k_) {
        v = inv[w * k_ + c];
      } else {
        for (int j = 0; j < k_; ++j) v ^= gf_mul(matrix_[w * k_ + j], inv[j * k_ + c]);
      }
      coeffs[row * k_ + c] = v;
    }
    ++row;
  }
  auto tables = std::make_shared<std::vector<uint8_t>>(32 * k_ * rows);
  ec_init_tables(k_, rows, coeffs.data(), tables->data());
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = decode_cache_.emplace(key, std::move(tables));
  return it->second;
}

absl::Status ErasureCode::Decode(size_t len, uint8_t* const* shards, uint32_t present,
                                 uint32_t wanted) {
  const uint32_t all = (k_ + m_ >= 32) ? ~0u : ((1u << (k_ + m_)) - 1);
  if ((present & ~all) || (wanted & ~all)) {
    return absl::InvalidArgumentError("shard index out of range");
  }
  if (present & wanted) return absl::InvalidArgumentError("a wanted shard is present");
  if (std::popcount(present) < k_) {
    return absl::InvalidArgumentError(absl::StrCat("decode needs ", k_, " shards, ",
                                                   std::popcount(present), " present"));
  }
  if (wanted == 0 || len == 0) return absl::OkStatus();
  uint32_t sources = 0;
  std::vector<uint8_t*> in, out;
  for (int s = 0; s < k_ + m_ && static_cast<int>(in.size()) < k_; ++s) {
    if (present & (1u << s)) {
      sources |= 1u << s;
      in.push_back(shards[s]);
    }
  }
  for (int w = 0; w < k_ + m_; ++w) {
    if (wanted & (1u << w)) out.push_back(shards[w]);
  }
  auto tables = DecodeTables(sources, wanted);
  if (!tables.ok()) return tables.status();
  ec_encode_data(static_cast<int>(len), k_, static_cast<int>(out.size()),
                 const_cast<uint8_t*>((*tables)->data()), in.data(), out.data());
  return absl::OkStatus();
}

}  // namespace weft::ec
