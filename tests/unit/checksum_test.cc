#include "common/checksum/checksum.h"

#include <catch2/catch.hpp>

#include <string>

namespace weft::common {
namespace {

TEST_CASE("Checksum64 matches published xxHash3-64 vectors", "[checksum]") {
  // From the xxHash sanity tests (seed 0). The values are on disk: never change.
  CHECK(Checksum64("") == 0x2D06800538D394C2ull);
  CHECK(Checksum64("abc") == 0x78AF5F94892F3950ull);
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
