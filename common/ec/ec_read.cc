#include "common/ec/ec_read.h"

#include <algorithm>
#include <bit>
#include <optional>

#include "absl/strings/str_cat.h"

namespace weft::ec {
namespace {

bool SameVersion(const ShardReply& x, const ShardReply& y) {
  return x.version_epoch == y.version_epoch && x.version_seq == y.version_seq &&
         x.logical_size == y.logical_size;
}

void Fill(const ShardReply& r, RangeRead* out) {
  out->logical_size = r.logical_size;
  out->version_epoch = r.version_epoch;
  out->version_seq = r.version_seq;
  out->mtime_ns = r.mtime_ns;
}

// Assembles logical [a, min(b, size)) from data shard buffers at `base`.
void Assemble(const striping::StripeLayout& layout, uint64_t a, uint64_t b,
              std::vector<std::string>& bufs, const std::vector<uint64_t>& base,
              const std::vector<striping::Extent>& need, RangeRead* out) {
  const uint64_t end = std::min(b, out->logical_size);
  if (end <= a) return;
  std::vector<const char*> ptrs(layout.k);
  for (uint32_t i = 0; i < layout.k; ++i) {
    // Short replies (reading past the shard end) are zeros by the layout.
    if (!need[i].empty() && bufs[i].size() < need[i].hi - base[i]) {
      bufs[i].resize(need[i].hi - base[i], '\0');
    }
    ptrs[i] = bufs[i].data();
  }
  out->data.clear();
  layout.Gather(a, end, ptrs, base, &out->data);
}

// Degraded path: reads `u` from k shards other than `failed` and decodes.
absl::StatusOr<RangeRead> ReadDecoded(const striping::StripeLayout& layout, ErasureCode* code,
                                      uint64_t a, uint64_t b, striping::Extent u,
                                      std::vector<bool> usable, const ShardFetch& fetch) {
  const uint32_t n = layout.k + layout.m;
  std::vector<std::string> bufs(n);
  uint32_t present = 0;
  RangeRead out;
  std::optional<ShardReply> first;
  for (;;) {
    std::vector<ShardRead> reads;
    uint32_t have = std::popcount(present);
    for (uint32_t s = 0; s < n && have + reads.size() < layout.k; ++s) {
      if (usable[s] && !(present & (1u << s))) reads.push_back({s, u.lo, u.size()});
    }
    if (have + reads.size() < layout.k) {
      return absl::UnavailableError(
          absl::StrCat("only ", have + reads.size(), " of the k=", layout.k,
                       " shards needed to decode are reachable"));
    }
    std::vector<ShardReply> replies = fetch(reads);
    for (size_t r = 0; r < reads.size(); ++r) {
      const uint32_t s = reads[r].shard;
      ShardReply& reply = replies[r];
      if (!reply.status.ok()) {
        if (absl::IsNotFound(reply.status) && !first) return reply.status;
        if (absl::IsAborted(reply.status)) return reply.status;  // only the primary can serve it
        usable[s] = false;
        continue;
      }
      if (!first) {
        first = reply;
      } else if (!SameVersion(*first, reply)) {
        return absl::AbortedError("shards disagree on the object version");
      }
      out.shard_bytes += reply.data.size();
      bufs[s] = std::move(reply.data);
      bufs[s].resize(u.size(), '\0');
      present |= 1u << s;
    }
    if (std::popcount(present) >= static_cast<int>(layout.k)) break;
  }
  Fill(*first, &out);
  uint32_t wanted = 0;
  std::vector<uint8_t*> ptrs(n);
  for (uint32_t s = 0; s < n; ++s) {
    if (!(present & (1u << s)) && s < layout.k) {
      wanted |= 1u << s;
      bufs[s].assign(u.size(), '\0');
    }
    ptrs[s] = reinterpret_cast<uint8_t*>(bufs[s].data());
  }
  // Only the k lowest present shards are used; the others are ignored.
  uint32_t sources = 0;
  for (uint32_t s = 0, c = 0; s < n && c < layout.k; ++s) {
    if (present & (1u << s)) sources |= 1u << s, ++c;
  }
  if (absl::Status st = code->Decode(u.size(), ptrs.data(), sources, wanted); !st.ok()) return st;
  out.decoded = wanted != 0;
  std::vector<uint64_t> base(layout.k, u.lo);
  std::vector<striping::Extent> need(layout.k, u);
  bufs.resize(layout.k);
  Assemble(layout, a, b, bufs, base, need, &out);
  return out;
}

}  // namespace

absl::StatusOr<RangeRead> ReadRange(const striping::StripeLayout& layout, ErasureCode* code,
                                    uint64_t a, uint64_t b, const std::vector<bool>& available,
                                    const ShardFetch& fetch) {
  if (b <= a) return absl::InvalidArgumentError("empty range");
  std::vector<striping::Extent> need(layout.k);
  std::vector<ShardRead> reads;
  striping::Extent u{~0ull, 0};
  bool all_available = true;
  for (uint32_t i = 0; i < layout.k; ++i) {
    need[i] = layout.ShardExtent(i, a, b);
    if (need[i].empty()) continue;
    u.lo = std::min(u.lo, need[i].lo);
    u.hi = std::max(u.hi, need[i].hi);
    all_available &= static_cast<bool>(available[i]);
    reads.push_back({i, need[i].lo, need[i].size()});
  }
  std::vector<bool> usable = available;
  if (all_available) {
    std::vector<ShardReply> replies = fetch(reads);
    RangeRead out;
    bool ok = true;
    const ShardReply* first = nullptr;
    for (size_t r = 0; r < reads.size(); ++r) {
      if (!replies[r].status.ok()) {
        if (absl::IsNotFound(replies[r].status)) return replies[r].status;
        if (absl::IsAborted(replies[r].status)) return replies[r].status;
        usable[reads[r].shard] = false;
        ok = false;
      } else if (first == nullptr) {
        first = &replies[r];
      } else if (!SameVersion(*first, replies[r])) {
        return absl::AbortedError("shards disagree on the object version");
      }
    }
    if (ok) {
      Fill(replies[0], &out);
      std::vector<std::string> bufs(layout.k);
      std::vector<uint64_t> base(layout.k, 0);
      for (size_t r = 0; r < reads.size(); ++r) {
        out.shard_bytes += replies[r].data.size();
        base[reads[r].shard] = reads[r].offset;
        bufs[reads[r].shard] = std::move(replies[r].data);
      }
      Assemble(layout, a, b, bufs, base, need, &out);
      return out;
    }
  }
  return ReadDecoded(layout, code, a, b, u, std::move(usable), fetch);
}

}  // namespace weft::ec
