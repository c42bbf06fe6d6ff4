// weft::ParseSize (common/config): the one parser of sizes people type, used
// by the CLI (--block-size) and by file layouts.
#include <catch2/catch.hpp>

#include <cerrno>
#include <limits>

#include "common/config/config.h"
#include "common/status/status.h"

namespace weft {
namespace {

constexpr uint64_t kAny = std::numeric_limits<uint64_t>::max();

// ParseSize(text, kAny), REQUIREd to succeed.
uint64_t Size(const char* text) {
  absl::StatusOr<uint64_t> size = ParseSize(text, kAny);
  INFO(text << ": " << size.status());
  REQUIRE(size.ok());
  return *size;
}

TEST_CASE("sizes: digits with K M G and KiB style suffixes", "[config]") {
  CHECK(Size("0") == 0);
  CHECK(Size("4096") == 4096);
  CHECK(Size("4k") == 4096);
  CHECK(Size("4K") == 4096);
  CHECK(Size("4KiB") == 4096);
  CHECK(Size("3m") == 3ull << 20);
  CHECK(Size("3MiB") == 3ull << 20);
  CHECK(Size("2G") == 2ull << 30);
  CHECK(Size("18446744073709551615") == kAny);
}

TEST_CASE("sizes: anything else is EINVAL - also past the limit", "[config]") {
  for (const char* bad : {"", "K", "iB", "4iB", "1.5M", "-1", "+1", " 1", "1 M", "1MB", "0x10",
                          "1T", "4b", "99999999999999999999"}) {
    INFO(bad);
    CHECK(StatusToErrno(ParseSize(bad, kAny).status()) == EINVAL);
  }
  CHECK(ParseSize("1024", 1024).value_or(0) == 1024);
  CHECK(StatusToErrno(ParseSize("1025", 1024).status()) == EINVAL);
  CHECK(StatusToErrno(ParseSize("2K", 1024).status()) == EINVAL);
  // Near the top a suffix must not wrap around.
  CHECK(StatusToErrno(ParseSize("17179869184G", kAny).status()) == EINVAL);
}

}  // namespace
}  // namespace weft
