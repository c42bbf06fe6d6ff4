// common/bytes/zeros.h against a byte-by-byte reference.
#include "common/bytes/zeros.h"

#include <catch2/catch.hpp>

#include <string>

namespace weft {

TEST_CASE("zeros: IsZero and WithoutTrailingZeros match a byte loop", "[bytes]") {
  for (size_t size : {0, 1, 2, 4095, 4096, 4097, 8192, 12345}) {
    for (size_t nonzero : {size_t{0}, size_t{1}, size / 2, size - 1, size_t{4096}, size}) {
      std::string data(size, '\0');
      const bool set = nonzero >= 1 && nonzero <= size;
      if (set) data[nonzero - 1] = 'x';  // the last non-zero byte, if any
      INFO("size " << size << " nonzero at " << nonzero);
      CHECK(IsZero(data) == !set);
      CHECK(WithoutTrailingZeros(data) == (set ? nonzero : 0));
    }
  }
  CHECK(WithoutTrailingZeros(std::string("ab\0\0", 4)) == 2);
  CHECK_FALSE(IsZero(std::string("\0\0a", 3)));
}

}  // namespace weft
