#include "common/checksum/checksum.h"

#include <xxhash.h>
#ifdef WEFT_HAVE_XXH3_DISPATCH
#include <xxh_x86dispatch.h>
#endif

#include <algorithm>

#include "common/log/log.h"

namespace weft::common {

uint64_t Checksum64(absl::string_view data) {
#ifdef WEFT_HAVE_XXH3_DISPATCH
  // The same function on the widest vector unit this CPU has (CMakeLists.txt).
  return XXH3_64bits_dispatch(data.data(), data.size());
#else
  return XXH3_64bits(data.data(), data.size());
#endif
}

uint64_t BlockCount(uint64_t bytes, uint32_t block_bytes) {
  CHECK(block_bytes > 0);
  return bytes / block_bytes + (bytes % block_bytes != 0 ? 1 : 0);
}

BlockSpan BlocksCovering(uint64_t offset, uint64_t length, uint32_t block_bytes) {
  CHECK(block_bytes > 0);
  if (length == 0) return BlockSpan{offset / block_bytes, 0};
  const uint64_t first = offset / block_bytes;
  const uint64_t last = (offset + length - 1) / block_bytes;
  return BlockSpan{first, last - first + 1};
}

std::vector<uint64_t> BlockChecksums(absl::string_view data, uint32_t block_bytes) {
  CHECK(block_bytes > 0);
  std::vector<uint64_t> sums;
  sums.reserve(BlockCount(data.size(), block_bytes));
  for (size_t pos = 0; pos < data.size(); pos += block_bytes) {
    sums.push_back(Checksum64(data.substr(pos, std::min<size_t>(block_bytes, data.size() - pos))));
  }
  return sums;
}

}  // namespace weft::common
