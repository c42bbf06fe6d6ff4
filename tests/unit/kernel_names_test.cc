// Which names weft-fuse believes the kernel keeps, per directory: what a
// revoke expires, what has run out, a reply racing a revoke, and requests
// marked as holding a directory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "fuse-client/fuse/kernel_names.h"

namespace weft::fuse {
namespace {

std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST_CASE("kernel names: a revoke returns the names not run out - once", "[unit][fuse]") {
  KernelNames names;
  const absl::Time now = absl::Now();
  const KernelNames::Ticket t = names.Begin();
  CHECK(names.Given(t, 7, "a", now + absl::Seconds(1)));
  CHECK(names.Given(t, 7, "b", now + absl::Seconds(1)));
  CHECK(names.Given(t, 7, "old", now - absl::Milliseconds(1)));  // already run out
  CHECK(names.Given(t, 8, "c", now + absl::Seconds(1)));
  CHECK(names.size() == 4);

  CHECK(Sorted(names.Revoke(7, now)) == std::vector<std::string>{"a", "b"});
  CHECK(names.Revoke(7, now).empty());  // forgotten with the first revoke
  CHECK(names.Revoke(8, now) == std::vector<std::string>{"c"});
  CHECK(names.Revoke(9, now).empty());  // never given anything
}

TEST_CASE("kernel names: a name given again keeps the later end", "[unit][fuse]") {
  KernelNames names;
  const absl::Time now = absl::Now();
  const KernelNames::Ticket t = names.Begin();
  CHECK(names.Given(t, 7, "a", now + absl::Seconds(1)));
  CHECK(names.Given(t, 7, "a", now + absl::Milliseconds(10)));
  CHECK(names.size() == 1);
  // At +500 ms the earlier end has passed, the later one has not.
  CHECK(names.Revoke(7, now + absl::Milliseconds(500)) == std::vector<std::string>{"a"});
}

TEST_CASE("kernel names: a reply whose lease was revoked meanwhile is refused", "[unit][fuse]") {
  KernelNames names;
  const absl::Time now = absl::Now();
  // The timeout was decided under the lease, then the revoke came before the
  // name was recorded: the caller must expire it itself.
  const KernelNames::Ticket before = names.Begin();
  CHECK(names.Revoke(7, now).empty());
  CHECK_FALSE(names.Given(before, 7, "a", now + absl::Seconds(1)));
  CHECK(names.size() == 0);
  // Another directory's revoke does not concern it.
  CHECK(names.Given(before, 8, "b", now + absl::Seconds(1)));
  // A ticket taken after the revoke is good.
  const KernelNames::Ticket after = names.Begin();
  CHECK(names.Given(after, 7, "a", now + absl::Seconds(1)));
  CHECK(names.Revoke(7, now) == std::vector<std::string>{"a"});
}

TEST_CASE("kernel names: requests holding a directory nest", "[unit][fuse]") {
  KernelNames names;
  CHECK_FALSE(names.Busy(7));
  names.Enter(7);
  names.Enter(7);
  names.Enter(8);
  CHECK(names.Busy(7));
  names.Leave(7);
  CHECK(names.Busy(7));
  names.Leave(7);
  CHECK_FALSE(names.Busy(7));
  CHECK(names.Busy(8));
  names.Leave(8);
  CHECK_FALSE(names.Busy(8));
}

}  // namespace
}  // namespace weft::fuse
