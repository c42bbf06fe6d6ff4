#include "common/checksum/checksum.h"

#include <catch2/catch.hpp>
#include <xxhash.h>

#include <random>
#include <string>

namespace weft::common {
namespace {

TEST_CASE("Checksum64 matches published xxHash3-64 vectors", "[checksum]") {
  // From the xxHash sanity tests (seed 0). The values are on disk: never change.
  CHECK(Checksum64("") == 0x2D06800538D394C2ull);
  CHECK(Checksum64("abc") == 0x78AF5F94892F3950ull);
}

TEST_CASE("Checksum64 equals the library's portable XXH3 at every length and alignment",
          "[checksum]") {
  // Checksum64 may run a vectorised build of XXH3 (AVX2/AVX-512, picked at run
  // time); every length class of the algorithm (0-16, 17-128, 129-240, then
  // whole and partial 1 KiB stripes) must give what the SSE2 build gives.
  std::mt19937_64 rng(42);
  std::string data(1 << 20 | 64, '\0');
  for (char& c : data) c = static_cast<char>(rng());
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 300; ++n) lengths.push_back(n);
  for (size_t n : {1023, 1024, 1025, 4095, 4096, 16384, 16385, 65536 + 7, 1 << 20}) {
    lengths.push_back(n);
  }
  for (size_t start : {0, 1, 3, 8, 63}) {
    for (size_t n : lengths) {
      const absl::string_view piece(data.data() + start, n);
      INFO("start " << start << " length " << n);
      REQUIRE(Checksum64(piece) == XXH3_64bits(piece.data(), piece.size()));
    }
  }
}

TEST_CASE("Checksum64 tells different data apart", "[checksum]") {
  std::string data(4096, 'x');
  const uint64_t base = Checksum64(data);
  CHECK(Checksum64(data) == base);  // deterministic
  for (size_t pos : {size_t{0}, size_t{1}, size_t{2047}, size_t{4095}}) {
    std::string flipped = data;
    flipped[pos] ^= 0x01;
    CHECK(Checksum64(flipped) != base);
  }
  CHECK(Checksum64(data.substr(0, 4095)) != base);  // length matters
  CHECK(Checksum64(std::string(4096, '\0')) != Checksum64(std::string(4097, '\0')));
}

TEST_CASE("BlockCount and BlocksCovering", "[checksum]") {
  CHECK(BlockCount(0, 4096) == 0);
  CHECK(BlockCount(1, 4096) == 1);
  CHECK(BlockCount(4096, 4096) == 1);
  CHECK(BlockCount(4097, 4096) == 2);

  BlockSpan span = BlocksCovering(0, 0, 4096);
  CHECK(span.count == 0);
  span = BlocksCovering(0, 1, 4096);
  CHECK((span.first == 0 && span.count == 1));
  span = BlocksCovering(4095, 2, 4096);
  CHECK((span.first == 0 && span.count == 2));
  span = BlocksCovering(4096, 4096, 4096);
  CHECK((span.first == 1 && span.count == 1));
  span = BlocksCovering(5000, 10000, 4096);  // bytes 5000..14999: blocks 1..3
  CHECK((span.first == 1 && span.count == 3));
}

TEST_CASE("BlockChecksums splits into blocks with a short tail", "[checksum]") {
  std::string data;
  for (int i = 0; i < 10000; ++i) data.push_back(static_cast<char>(i * 7));
  const std::vector<uint64_t> sums = BlockChecksums(data, 4096);
  REQUIRE(sums.size() == 3);
  CHECK(sums[0] == Checksum64(data.substr(0, 4096)));
  CHECK(sums[1] == Checksum64(data.substr(4096, 4096)));
  CHECK(sums[2] == Checksum64(data.substr(8192)));  // 1808 bytes
  CHECK(BlockChecksums("", 4096).empty());
  CHECK(BlockChecksums(data.substr(0, 4096), 4096).size() == 1);
}

}  // namespace
}  // namespace weft::common
