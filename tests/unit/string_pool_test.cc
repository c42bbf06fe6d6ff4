// common/bytes/string_pool.h: large strings come back for reuse, within the
// pool's limits, at the size asked for.
#include "common/bytes/string_pool.h"

#include <catch2/catch.hpp>

#include <string>

namespace weft {

TEST_CASE("StringPool hands kept strings out again at the size asked - within its limits",
          "[bytes]") {
  StringPool pool(1000, 10000, 20000);
  std::string big(8000, 'x');
  const char* buffer = big.data();
  pool.Give(std::move(big));
  CHECK(pool.kept_bytes() >= 8000);

  // Reused without a new allocation; the old bytes are there (the caller
  // overwrites or cuts them) and it grows with zeros.
  std::string a = pool.Take(5000);
  CHECK(a.data() == buffer);
  CHECK(a == std::string(5000, 'x'));
  CHECK(pool.kept_bytes() == 0);
  a.resize(100);
  pool.Give(std::move(a));
  std::string b = pool.Take(7000);
  CHECK(b.data() == buffer);
  CHECK(b.substr(0, 100) == std::string(100, 'x'));
  CHECK(b.substr(100) == std::string(6900, '\0'));

  // Too large for any kept string: a new one, zero-filled.
  pool.Give(std::move(b));
  std::string c = pool.Take(9500);
  CHECK(c.data() != buffer);
  CHECK(c == std::string(9500, '\0'));
  CHECK(pool.kept_bytes() >= 8000);

  // Not kept: too small, too large, or past the pool's bytes.
  const size_t before = pool.kept_bytes();
  pool.Give(std::string(999, 'y'));
  pool.Give(std::string(10001, 'y'));
  CHECK(pool.kept_bytes() == before);
  pool.Give(std::move(c));
  pool.Give(std::string(9000, 'z'));  // 8000 + 9500 + 9000 > 20000
  CHECK(pool.kept_bytes() <= 20000);
  const size_t kept = pool.kept_bytes();
  CHECK(pool.Take(0).empty());
  CHECK(pool.Take(999) == std::string(999, '\0'));  // small: not from the pool
  CHECK(pool.kept_bytes() == kept);
}

}  // namespace weft
