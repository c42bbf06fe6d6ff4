// What an open directory keeps between the kernel's READDIRs: the rest of a
// page, used only at the offset it continues from, once, and while young.
#include <catch2/catch.hpp>

#include <optional>

#include "absl/time/clock.h"
#include "fuse-client/lib/dir_stream.h"

namespace weft::client {
namespace {

DirPage PageOf(std::initializer_list<uint64_t> cookies, bool eof) {
  DirPage page;
  page.eof = eof;
  for (uint64_t c : cookies) {
    DirEntry& e = page.entries.emplace_back();
    e.name = "n" + std::to_string(c);
    e.cookie = c;
  }
  return page;
}

TEST_CASE("dir stream: the rest of a page continues at its offset - once", "[unit][fuse]") {
  DirStream s(absl::Seconds(1));
  const absl::Time now = absl::Now();
  s.Keep(17, PageOf({20, 23}, /*eof=*/true), now, 5);
  std::optional<DirStream::Kept> kept = s.Take(17, now, 5);
  REQUIRE(kept.has_value());
  CHECK(kept->page.eof);
  REQUIRE(kept->page.entries.size() == 2);
  CHECK(kept->page.entries[0].cookie == 20);
  CHECK(kept->fetched == now);
  CHECK_FALSE(s.Take(17, now, 5).has_value());  // taken
}

TEST_CASE("dir stream: another offset or an old page asks the MDS again", "[unit][fuse]") {
  DirStream s(absl::Seconds(1));
  const absl::Time now = absl::Now();
  s.Keep(17, PageOf({20}, false), now, 0);
  CHECK_FALSE(s.Take(16, now, 0).has_value());  // a seekdir elsewhere
  CHECK_FALSE(s.Take(17, now, 0).has_value());  // and the page is gone with it

  s.Keep(17, PageOf({20}, false), now, 0);
  CHECK_FALSE(s.Take(17, now + absl::Seconds(1), 0).has_value());  // as old as attributes last
  s.Keep(17, PageOf({20}, false), now, 0);
  CHECK(s.Take(17, now + absl::Milliseconds(999), 0).has_value());
}

TEST_CASE("dir stream: the end of the directory is kept like entries", "[unit][fuse]") {
  DirStream s(absl::Seconds(1));
  const absl::Time now = absl::Now();
  s.Keep(2, PageOf({}, /*eof=*/true), now, 0);  // an empty directory: "." and ".." given
  std::optional<DirStream::Kept> kept = s.Take(2, now, 0);
  REQUIRE(kept.has_value());
  CHECK(kept->page.entries.empty());
  CHECK(kept->page.eof);

  s.Keep(40, PageOf({41}, false), now, 0);
  s.Keep(41, PageOf({}, true), now, 0);  // replaces what was kept
  CHECK_FALSE(s.Take(40, now, 0).has_value());
}

TEST_CASE("dir stream: a page is not used once its directory changed", "[unit][fuse]") {
  DirChanges changes;
  DirStream s(absl::Seconds(1));
  const absl::Time now = absl::Now();
  const uint64_t dir = 1234;
  s.Keep(17, PageOf({20}, true), now, changes.Of(dir));
  changes.Bump(dir + 1);  // another directory
  const uint64_t other_before = changes.Of(dir + 1);
  CHECK(changes.Of(dir) == 0);  // its own count (these two do not share one)
  CHECK(s.Take(17, now, changes.Of(dir)).has_value());
  s.Keep(17, PageOf({20}, true), now, changes.Of(dir));
  changes.Bump(dir);  // a create in it, or a revoke of its lease
  CHECK_FALSE(s.Take(17, now, changes.Of(dir)).has_value());
  CHECK(changes.Of(dir + 1) == other_before);
}

}  // namespace
}  // namespace weft::client
