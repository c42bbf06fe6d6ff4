// The fsx exerciser (tests/harness/fsx.h) against local disk: its model of
// pwrite, ftruncate, mmap and holes agrees with Linux over many seeds, and a
// byte changed behind its back is reported with the offset and the history.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "tests/harness/fsx.h"
#include "tests/harness/temp_dir.h"

namespace weft::testing {
namespace {

FsxOptions SmallOptions(const std::string& dir, uint64_t seed) {
  FsxOptions o;
  o.dir = dir;
  o.seed = seed;
  o.ops = 2000;
  o.files = 2;
  o.max_file_bytes = 1 << 20;
  o.max_io_bytes = 128 << 10;
  o.boundaries = {4096, 16 << 10, 64 << 10};
  o.stream_bytes = 3 << 20;  // past max_file_bytes
  return o;
}

TEST_CASE("fsx agrees with local disk over many seeds", "[fsx]") {
  TempDir dir;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    FsxStats stats;
    absl::Status s = RunFsx(SmallOptions(dir.path, seed), &stats);
    INFO(s.message());
    REQUIRE(s.ok());
    CHECK(stats.ops == 2000);
    CHECK(stats.map_writes > 0);
    CHECK(stats.map_reads > 0);
    CHECK(stats.holes > 0);
    CHECK(stats.truncates > 0);
    CHECK(stats.reopens > 0);
    CHECK(stats.streams > 0);
  }
}

TEST_CASE("fsx reports a byte changed behind its back", "[fsx]") {
  TempDir dir;
  FsxOptions o = SmallOptions(dir.path, 7);
  o.files = 1;
  o.ops = 400;
  o.corrupt_before_op = 401;  // later ops could overwrite or truncate it away
  FsxStats stats;
  absl::Status s = RunFsx(o, &stats);
  REQUIRE(!s.ok());
  const std::string report(s.message());
  INFO(report);
  CHECK(report.find("seed=7") != std::string::npos);
  CHECK(report.find("first differing byte at file offset") != std::string::npos);
  CHECK(report.find("match no earlier write") != std::string::npos);
  CHECK(report.find("still wrong (it is stored wrong)") != std::string::npos);
  CHECK(report.find("flip byte") != std::string::npos);  // in the history
  CHECK(report.find("replay:") != std::string::npos);
}

TEST_CASE("fsx without mmap runs no mmap ops", "[fsx]") {
  TempDir dir;
  FsxOptions o = SmallOptions(dir.path, 3);
  o.mmap = false;
  FsxStats stats;
  REQUIRE(RunFsx(o, &stats).ok());
  // With mmap, seed 3 maps for writes and for reads (the test above).
  CHECK(stats.ops == 2000);
  CHECK(stats.map_writes == 0);
  CHECK(stats.map_reads == 0);
}

}  // namespace
}  // namespace weft::testing
