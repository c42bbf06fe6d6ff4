#include "common/striping/stripe_layout.h"

#include <algorithm>
#include <cstring>

namespace weft::striping {

Extent StripeLayout::ShardExtent(uint32_t shard, uint64_t a, uint64_t b) const {
  Extent out;
  if (b <= a || shard >= k) return out;
  const uint64_t w = stripe_width();
  // First shard byte at or after logical a.
  const uint64_t s0 = a / w;
  const uint64_t x0 = s0 * w + shard * chunk;
  if (a <= x0) {
    out.lo = s0 * chunk;
  } else if (a < x0 + chunk) {
    out.lo = s0 * chunk + (a - x0);
  } else {
    out.lo = (s0 + 1) * chunk;
  }
  // One past the last shard byte before logical b.
  const uint64_t s1 = (b - 1) / w;
  const uint64_t x1 = s1 * w + shard * chunk;
  if (b >= x1 + chunk) {
    out.hi = (s1 + 1) * chunk;
  } else if (b > x1) {
    out.hi = s1 * chunk + (b - x1);
  } else {
    out.hi = s1 * chunk;
  }
  if (out.hi < out.lo) out.hi = out.lo;
  return out;
}

void StripeLayout::Gather(uint64_t a, uint64_t b, const std::vector<const char*>& bufs,
                          const std::vector<uint64_t>& base, std::string* out) const {
  const uint64_t w = stripe_width();
  out->reserve(out->size() + (b > a ? b - a : 0));
  uint64_t x = a;
  while (x < b) {
    const uint64_t s = x / w;
    const uint32_t i = static_cast<uint32_t>((x % w) / chunk);
    const uint64_t off = x % chunk;
    const uint64_t n = std::min(chunk - off, b - x);
    out->append(bufs[i] + (s * chunk + off - base[i]), n);
    x += n;
  }
}

}  // namespace weft::striping
