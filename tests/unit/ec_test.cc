// Erasure coding: ISA-L's encode checked against an independent, slow GF(2^8)
// computation, every pattern of up to m lost shards decoded bit-exact, and the
// stripe math and range reader used by clients and OSDs.
#include <bit>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "common/ec/ec_read.h"
#include "common/ec/erasure_code.h"
#include "common/striping/stripe_layout.h"

namespace weft::ec {
namespace {

// GF(2^8) with the polynomial x^8 + x^4 + x^3 + x^2 + 1 (0x11d), from log/exp
// tables built here, independent of ISA-L.
struct RefGf {
  uint8_t exp[512];
  uint8_t log[256];
  RefGf() {
    int x = 1;
    for (int i = 0; i < 255; ++i) {
      exp[i] = static_cast<uint8_t>(x);
      log[x] = static_cast<uint8_t>(i);
      x <<= 1;
      if (x & 0x100) x ^= 0x11d;
    }
    for (int i = 255; i < 512; ++i) exp[i] = exp[i - 255];
  }
  uint8_t Mul(uint8_t a, uint8_t b) const {
    if (a == 0 || b == 0) return 0;
    return exp[log[a] + log[b]];
  }
  uint8_t Inv(uint8_t a) const { return exp[255 - log[a]]; }
};
const RefGf& Gf() {
  static const RefGf gf;
  return gf;
}

// ISA-L's Cauchy generator, recomputed: parity row p, column d is
// 1 / ((k + p) xor d).
uint8_t RefCoefficient(int k, int p, int d) {
  return Gf().Inv(static_cast<uint8_t>((k + p) ^ d));
}

std::vector<std::string> RandomShards(int count, size_t len, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::string> out(count, std::string(len, '\0'));
  for (auto& s : out) {
    for (auto& c : s) c = static_cast<char>(rng());
  }
  return out;
}

std::vector<std::string> RefParity(int k, int m, const std::vector<std::string>& data) {
  const size_t len = data[0].size();
  std::vector<std::string> parity(m, std::string(len, '\0'));
  for (int p = 0; p < m; ++p) {
    for (int d = 0; d < k; ++d) {
      const uint8_t c = RefCoefficient(k, p, d);
      for (size_t j = 0; j < len; ++j) {
        parity[p][j] ^= Gf().Mul(c, static_cast<uint8_t>(data[d][j]));
      }
    }
  }
  return parity;
}

std::vector<std::string> EncodeAll(ErasureCode* code, const std::vector<std::string>& data) {
  const size_t len = data[0].size();
  std::vector<std::string> shards = data;
  shards.resize(code->k() + code->m(), std::string(len, '\0'));
  std::vector<const uint8_t*> in;
  std::vector<uint8_t*> out;
  for (int i = 0; i < code->k(); ++i) {
    in.push_back(reinterpret_cast<const uint8_t*>(shards[i].data()));
  }
  for (int p = 0; p < code->m(); ++p) {
    out.push_back(reinterpret_cast<uint8_t*>(shards[code->k() + p].data()));
  }
  code->Encode(len, in.data(), out.data());
  return shards;
}

// Calls `f(mask)` for every set of `lost` shards among `n`.
template <typename F>
void ForEachPattern(int n, int lost, F f) {
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (std::popcount(mask) == lost) f(mask);
  }
}

void CheckProfile(int k, int m, size_t len) {
  auto code = ErasureCode::Create(k, m);
  REQUIRE(code.ok());
  auto data = RandomShards(k, len, k * 131 + m * 7 + len);
  auto shards = EncodeAll(code->get(), data);
  auto ref = RefParity(k, m, data);
  for (int p = 0; p < m; ++p) {
    INFO("k=" << k << " m=" << m << " parity " << p);
    REQUIRE(shards[k + p] == ref[p]);
  }
  const int n = k + m;
  for (int lost = 1; lost <= m; ++lost) {
    ForEachPattern(n, lost, [&](uint32_t erased) {
      std::vector<std::string> work = shards;
      std::vector<uint8_t*> ptrs(n);
      for (int s = 0; s < n; ++s) {
        if (erased & (1u << s)) work[s].assign(len, '\x5a');
        ptrs[s] = reinterpret_cast<uint8_t*>(work[s].data());
      }
      const uint32_t all = (1u << n) - 1;
      REQUIRE((*code)->Decode(len, ptrs.data(), all & ~erased, erased).ok());
      for (int s = 0; s < n; ++s) {
        if (work[s] != shards[s]) FAIL("k=" << k << " m=" << m << " erased=" << erased
                                            << " shard " << s << " differs");
      }
    });
  }
}

TEST_CASE("ISA-L encode matches a table-driven GF(2^8) reference", "[ec]") {
  for (auto [k, m] : std::vector<std::pair<int, int>>{{4, 2}, {8, 2}, {16, 2}, {16, 4}, {3, 1}}) {
    auto code = ErasureCode::Create(k, m);
    REQUIRE(code.ok());
    for (int p = 0; p < m; ++p) {
      for (int d = 0; d < k; ++d) REQUIRE((*code)->Coefficient(p, d) == RefCoefficient(k, p, d));
    }
  }
}

TEST_CASE("every pattern of up to m lost shards decodes bit-exact", "[ec]") {
  // Sizes that are and are not multiples of the 4 KiB chunk (and of 16/32/64,
  // the widths of ISA-L's vector loops).
  for (size_t len : {4096ul, 1ul, 33ul, 4097ul, 12345ul}) {
    for (auto [k, m] : std::vector<std::pair<int, int>>{
             {4, 2}, {8, 2}, {16, 2}, {3, 1}, {5, 3}, {2, 4}, {6, 4}, {1, 1}, {16, 1}}) {
      CheckProfile(k, m, len);
    }
  }
}

TEST_CASE("decode tables are cached per erasure pattern", "[ec]") {
  auto code = ErasureCode::Create(4, 2);
  REQUIRE(code.ok());
  auto shards = EncodeAll(code->get(), RandomShards(4, 100, 1));
  for (int round = 0; round < 3; ++round) {
    std::vector<uint8_t*> ptrs(6);
    for (int s = 0; s < 6; ++s) ptrs[s] = reinterpret_cast<uint8_t*>(shards[s].data());
    REQUIRE((*code)->Decode(100, ptrs.data(), 0b111100, 0b000011).ok());
    REQUIRE((*code)->Decode(100, ptrs.data(), 0b111010, 0b000101).ok());
  }
  REQUIRE((*code)->CachedPatterns() == 2);
}

TEST_CASE("bad profiles and decode requests are refused", "[ec]") {
  REQUIRE(absl::IsInvalidArgument(ErasureCode::Create(0, 2).status()));
  REQUIRE(absl::IsInvalidArgument(ErasureCode::Create(17, 2).status()));
  REQUIRE(absl::IsInvalidArgument(ErasureCode::Create(4, 0).status()));
  REQUIRE(absl::IsInvalidArgument(ErasureCode::Create(4, 5).status()));
  auto code = ErasureCode::Create(4, 2);
  std::vector<std::string> bufs(6, std::string(8, '\0'));
  std::vector<uint8_t*> ptrs(6);
  for (int s = 0; s < 6; ++s) ptrs[s] = reinterpret_cast<uint8_t*>(bufs[s].data());
  REQUIRE(absl::IsInvalidArgument((*code)->Decode(8, ptrs.data(), 0b000111, 0b111000)));
  REQUIRE(absl::IsInvalidArgument((*code)->Decode(8, ptrs.data(), 0b001111, 0b000001)));
  REQUIRE(absl::IsInvalidArgument((*code)->Decode(8, ptrs.data(), 0b1001111, 0)));
}

// --- Stripe math and the range reader ---------------------------------------------

struct FakeObject {
  striping::StripeLayout layout;
  std::vector<std::string> shards;  // k + m shard objects
  std::string logical;
  std::vector<bool> broken;
  uint64_t fetched = 0;
};

FakeObject MakeObject(uint32_t k, uint32_t m, uint64_t chunk, size_t size, ErasureCode* code) {
  FakeObject o;
  o.layout = {k, m, chunk};
  o.logical = RandomShards(1, size, static_cast<uint32_t>(size))[0];
  const uint64_t stripes = o.layout.NumStripes(size);
  o.shards.assign(k + m, std::string(stripes * chunk, '\0'));
  for (uint64_t s = 0; s < stripes; ++s) {
    std::vector<std::string> data(k, std::string(chunk, '\0'));
    for (uint32_t i = 0; i < k; ++i) {
      uint64_t from = s * o.layout.stripe_width() + i * chunk;
      if (from < size) data[i].replace(0, std::min<uint64_t>(chunk, size - from), o.logical, from,
                                       std::min<uint64_t>(chunk, size - from));
    }
    auto all = EncodeAll(code, data);
    for (uint32_t i = 0; i < k + m; ++i) o.shards[i].replace(s * chunk, chunk, all[i]);
  }
  o.broken.assign(k + m, false);
  return o;
}

ShardFetch FetchFrom(FakeObject* o) {
  return [o](const std::vector<ShardRead>& reads) {
    std::vector<ShardReply> out;
    for (const ShardRead& r : reads) {
      ShardReply reply;
      if (o->broken[r.shard]) {
        reply.status = absl::UnavailableError("down");
      } else {
        const std::string& s = o->shards[r.shard];
        if (r.offset < s.size()) reply.data = s.substr(r.offset, r.length);
        reply.logical_size = o->logical.size();
        reply.version_epoch = 1;
        o->fetched += reply.data.size();
      }
      out.push_back(std::move(reply));
    }
    return out;
  };
}

TEST_CASE("range reads: healthy reads touch only the data chunks needed", "[ec]") {
  auto code = ErasureCode::Create(4, 2);
  const uint64_t chunk = 4096;
  FakeObject o = MakeObject(4, 2, chunk, 1000000, code->get());
  std::vector<bool> up(6, true);
  auto r = ReadRange(o.layout, code->get(), 123456, 123457, up, FetchFrom(&o));
  REQUIRE(r.ok());
  REQUIRE(r->data == o.logical.substr(123456, 1));
  REQUIRE(o.fetched == 1);
  REQUIRE(!r->decoded);
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    uint64_t a = rng() % 1100000, b = a + 1 + rng() % 70000;
    o.fetched = 0;
    auto rr = ReadRange(o.layout, code->get(), a, b, up, FetchFrom(&o));
    REQUIRE(rr.ok());
    REQUIRE(rr->data == (a < o.logical.size() ? o.logical.substr(a, b - a) : ""));
    REQUIRE(rr->logical_size == o.logical.size());
  }
}

TEST_CASE("range reads decode around every pattern of m lost shards", "[ec]") {
  for (auto [k, m] : std::vector<std::pair<uint32_t, uint32_t>>{{4, 2}, {8, 2}, {3, 1}}) {
    auto code = ErasureCode::Create(k, m);
    FakeObject o = MakeObject(k, m, 4096, 300001, code->get());
    std::mt19937 rng(k);
    ForEachPattern(k + m, m, [&](uint32_t erased) {
      std::vector<bool> up(k + m);
      for (uint32_t s = 0; s < k + m; ++s) {
        o.broken[s] = erased & (1u << s);
        up[s] = !o.broken[s] || (s % 2 == 0);  // some failures only show on the wire
      }
      for (int i = 0; i < 20; ++i) {
        uint64_t a = rng() % 300001, b = a + 1 + rng() % 50000;
        auto r = ReadRange(o.layout, code->get(), a, b, up, FetchFrom(&o));
        INFO(r.status().ToString() << " erased=" << erased << " a=" << a << " b=" << b);
        REQUIRE(r.ok());
        REQUIRE(r->data == o.logical.substr(a, b - a));
      }
    });
    std::fill(o.broken.begin(), o.broken.end(), false);
    for (uint32_t s = 0; s <= m; ++s) o.broken[s] = true;
    std::vector<bool> up(k + m, true);
    auto r = ReadRange(o.layout, code->get(), 0, 10, up, FetchFrom(&o));
    REQUIRE(absl::IsUnavailable(r.status()));
  }
}

TEST_CASE("range reads stop at a shard that answers Aborted - no decode attempt", "[ec]") {
  auto code = ErasureCode::Create(4, 2);
  FakeObject o = MakeObject(4, 2, 4096, 100000, code->get());
  std::vector<bool> up(6, true);
  int calls = 0;
  size_t asked = 0;
  // Shard 1 holds a write it does not know to be committed: only the primary
  // may serve it, so the reader must not go on to parity.
  ShardFetch fetch = [&](const std::vector<ShardRead>& reads) {
    ++calls;
    asked += reads.size();
    std::vector<ShardReply> out = FetchFrom(&o)(reads);
    for (size_t i = 0; i < reads.size(); ++i) {
      if (reads[i].shard == 1) out[i].status = absl::AbortedError("not committed");
    }
    return out;
  };
  auto r = ReadRange(o.layout, code->get(), 0, 20000, up, fetch);
  REQUIRE(absl::IsAborted(r.status()));
  CHECK(calls == 1);
  CHECK(asked == 4);
  // A shard that is merely down is still decoded around.
  o.broken[1] = true;
  auto d = ReadRange(o.layout, code->get(), 0, 20000, up, FetchFrom(&o));
  REQUIRE(d.ok());
  CHECK(d->data == o.logical.substr(0, 20000));
  CHECK(d->decoded);
}

TEST_CASE("stripe layout extents", "[ec]") {
  striping::StripeLayout l{4, 2, 4096};
  REQUIRE(l.stripe_width() == 16384);
  REQUIRE(l.ShardSize(1) == 4096);
  REQUIRE(l.ShardSize(16384) == 4096);
  REQUIRE(l.ShardSize(16385) == 8192);
  auto e = l.ShardExtent(1, 4096, 4097);
  REQUIRE((e.lo == 0 && e.hi == 1));
  REQUIRE(l.ShardExtent(0, 4096, 4097).empty());
  e = l.ShardExtent(0, 100, 16384 * 3);
  REQUIRE((e.lo == 100 && e.hi == 3 * 4096));
  e = l.ShardExtent(3, 0, 16384 + 12289);
  REQUIRE((e.lo == 0 && e.hi == 4096 + 1));
}

}  // namespace
}  // namespace weft::ec
