#include "common/fault/fault.h"

#include <catch2/catch.hpp>
#include <cstdlib>

namespace weft::fault {
namespace {

TEST_CASE("fault points: inert unless armed - then as armed") {
  DisarmAll();
  CHECK_FALSE(Fire(kMdsJournalWriteError));
  CHECK_FALSE(Value(kOsdSlowDiskMs).has_value());
  {
    ScopedFault slow(kOsdSlowDiskMs, Arming{150});
    CHECK(Value(kOsdSlowDiskMs) == 150);
    CHECK(Fired(kOsdSlowDiskMs) == 1);
  }
  CHECK_FALSE(Value(kOsdSlowDiskMs).has_value());
  Arming twice_after_one;
  twice_after_one.times = 2;
  twice_after_one.skip = 1;
  REQUIRE(Arm(kMdsJournalWriteError, twice_after_one).ok());
  CHECK_FALSE(Fire(kMdsJournalWriteError));  // skipped
  CHECK(Fire(kMdsJournalWriteError));
  CHECK(Fire(kMdsJournalWriteError));
  CHECK_FALSE(Fire(kMdsJournalWriteError));  // used up
  Disarm(kMdsJournalWriteError);
}

TEST_CASE("fault points: a seed replays the same draws") {
  DisarmAll();
  auto draws = [] {
    Seed(99);
    Arming half;
    half.probability = 0.5;
    REQUIRE(Arm(kMdsJournalWriteError, half).ok());
    std::string out;
    for (int i = 0; i < 64; ++i) out += Fire(kMdsJournalWriteError) ? '1' : '0';
    Disarm(kMdsJournalWriteError);
    return out;
  };
  const std::string first = draws();
  CHECK(first == draws());
  CHECK(first.find('1') != std::string::npos);
  CHECK(first.find('0') != std::string::npos);
}

TEST_CASE("fault points: WEFT_FAULTS lists are parsed - and typos refused") {
  DisarmAll();
  REQUIRE(ArmFromSpec("osd.slow_disk_ms=200, mds.journal_write_error@0*3+2").ok());
  CHECK(Value(kOsdSlowDiskMs) == 200);
  CHECK_FALSE(Fire(kMdsJournalWriteError));  // probability 0
  DisarmAll();
  CHECK(absl::IsInvalidArgument(ArmFromSpec("osd.slow_disk=200")));
  CHECK(absl::IsInvalidArgument(ArmFromSpec("osd.slow_disk_ms=fast")));
  CHECK(absl::IsInvalidArgument(ArmFromSpec("mds.journal_write_error@2")));
  CHECK_FALSE(Value(kOsdSlowDiskMs).has_value());  // nothing armed on error
  ::setenv("WEFT_FAULTS", "osd.ec_partial_write=0", 1);
  REQUIRE(ArmFromEnvironment().ok());
  ::unsetenv("WEFT_FAULTS");
  CHECK(Value(kOsdEcPartialWrite) == 0);
  DisarmAll();
  CHECK(absl::IsInvalidArgument(Arm("no.such.point")));
}

}  // namespace
}  // namespace weft::fault
