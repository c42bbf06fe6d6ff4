// GroupsCache: weft-fuse's short-lived memory of callers' supplementary groups.
#include <catch2/catch.hpp>

#include <vector>

#include "fuse-client/lib/groups_cache.h"

namespace weft::client {
namespace {

struct Fetcher {
  std::vector<uint32_t> groups;
  int calls = 0;
  std::function<std::vector<uint32_t>()> fn() {
    return [this] {
      ++calls;
      return groups;
    };
  }
};

TEST_CASE("groups cache: a hit within the TTL - a fetch after it", "[unit][client]") {
  GroupsCache cache(absl::Seconds(1));
  Fetcher f{{10, 20}};
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  CHECK(cache.Get(7, 100, 100, t0, f.fn()) == std::vector<uint32_t>{10, 20});
  f.groups = {30};
  CHECK(cache.Get(7, 100, 100, t0 + absl::Milliseconds(999), f.fn()) ==
        std::vector<uint32_t>{10, 20});
  CHECK(f.calls == 1);
  CHECK(cache.Get(7, 100, 100, t0 + absl::Seconds(1), f.fn()) == std::vector<uint32_t>{30});
  CHECK(f.calls == 2);
}

TEST_CASE("groups cache: another uid - gid or thread never sees the cached groups",
          "[unit][client]") {
  GroupsCache cache;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  Fetcher root{{0, 1, 2}};
  CHECK(cache.Get(7, 0, 0, t0, root.fn()).size() == 3);
  // su/sudo/newgrp on the same thread id: uid or gid changed, a fetch.
  Fetcher user{{100}};
  CHECK(cache.Get(7, 1000, 0, t0, user.fn()) == std::vector<uint32_t>{100});
  CHECK(cache.Get(7, 0, 1000, t0, user.fn()) == std::vector<uint32_t>{100});
  CHECK(cache.Get(8, 0, 0, t0, user.fn()) == std::vector<uint32_t>{100});
  CHECK(user.calls == 3);
  CHECK(cache.Get(7, 0, 0, t0, user.fn()).size() == 3);  // still the first entry
}

TEST_CASE("groups cache: bounded - old entries go first when full", "[unit][client]") {
  GroupsCache cache(absl::Seconds(1), 4);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  Fetcher f{{1}};
  for (pid_t tid = 1; tid <= 4; ++tid) cache.Get(tid, 0, 0, t0, f.fn());
  // Full: a fifth entry after the TTL drops the four expired ones.
  cache.Get(5, 0, 0, t0 + absl::Seconds(2), f.fn());
  CHECK(f.calls == 5);
  cache.Get(5, 0, 0, t0 + absl::Seconds(2), f.fn());
  CHECK(f.calls == 5);  // kept
  // Full of fresh entries: cleared rather than grown.
  for (pid_t tid = 6; tid <= 9; ++tid) cache.Get(tid, 0, 0, t0 + absl::Seconds(2), f.fn());
  CHECK(f.calls == 9);
  cache.Get(6, 0, 0, t0 + absl::Seconds(2), f.fn());
  CHECK(f.calls == 10);  // 6 was dropped when 9 arrived
}

}  // namespace
}  // namespace weft::client
