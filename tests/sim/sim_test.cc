// The simulation of the metadata core, as ctest runs it (label `sim`).
//
//   ctest -L sim                          the default seeds, in four shards
//   WEFT_SIM_SEEDS=100000 ctest -L sim    more seeds (spread over the shards)
//   WEFT_SIM_SEED=1234 ctest -L sim       one seed, traced step by step
//
// A failing seed prints its number and what broke; WEFT_SIM_SEED replays it
// exactly. WEFT_SIM_DIGESTS=1 prints each seed's digest in the shards too
// (two runs of the same build print the same).
#include "tests/sim/sim.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "common/fault/fault.h"

namespace weft::sim {
namespace {


constexpr int kShards = 4;
constexpr uint64_t kDefaultSeeds = 2000;

uint64_t EnvNumber(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  uint64_t n = 0;
  return v != nullptr && absl::SimpleAtoi(v, &n) ? n : fallback;
}

// Runs this shard's seeds of [1, WEFT_SIM_SEEDS], or WEFT_SIM_SEED alone
// (in shard 0).
void RunShard(int shard) {
  const uint64_t one = EnvNumber("WEFT_SIM_SEED", 0);
  if (one != 0) {
    if (shard != 0) return;
    SimOptions options;
    options.seed = one;
    options.trace = true;
    const SimResult r = RunSeed(options);
    std::printf("seed %lu: %d steps, %d requests, %d crashes (%d taken over by standby-replay), "
                "%d freezes, %d evictions, digest %016lx%s%s\n",
                static_cast<unsigned long>(one), r.steps, r.requests, r.crashes,
                r.follower_takeovers, r.freezes, r.evictions, static_cast<unsigned long>(r.digest),
                r.failure.empty() ? "" : "\nFAILED: ", r.failure.c_str());
    CHECK(r.failure.empty());
    return;
  }
  const uint64_t seeds = EnvNumber("WEFT_SIM_SEEDS", kDefaultSeeds);
  const absl::Time start = absl::Now();
  uint64_t ran = 0, requests = 0, crashes = 0, replays = 0, freezes = 0, evictions = 0;
  uint64_t follower_takeovers = 0, follower_restarts = 0;
  std::string first_failure;
  for (uint64_t seed = 1 + shard; seed <= seeds; seed += kShards) {
    SimOptions options;
    options.seed = seed;
    const SimResult r = RunSeed(options);
    if (std::getenv("WEFT_SIM_DIGESTS") != nullptr) {
      std::printf("seed %lu: %d steps, %d requests, digest %016lx\n",
                  static_cast<unsigned long>(seed), r.steps, r.requests,
                  static_cast<unsigned long>(r.digest));
    }
    ++ran;
    requests += r.requests;
    crashes += r.crashes;
    replays += r.replays;
    freezes += r.freezes;
    evictions += r.evictions;
    follower_takeovers += r.follower_takeovers;
    follower_restarts += r.follower_restarts;
    if (!r.failure.empty()) {
      std::printf("FAILED %s\n  replay it: WEFT_SIM_SEED=%lu ctest -L sim\n", r.failure.c_str(),
                  static_cast<unsigned long>(seed));
      if (first_failure.empty()) first_failure = r.failure;
    }
  }
  std::printf(
      "%lu seeds (shard %d of %d) in %.1f s: %lu requests answered, %lu crashes "
      "(%lu taken over by a standby-replay; %lu followers started over, fallen behind), "
      "%lu unsafe requests resent, %lu clients frozen, %lu sessions evicted\n",
      static_cast<unsigned long>(ran), shard + 1, kShards,
      absl::ToDoubleSeconds(absl::Now() - start), static_cast<unsigned long>(requests),
      static_cast<unsigned long>(crashes), static_cast<unsigned long>(follower_takeovers),
      static_cast<unsigned long>(follower_restarts), static_cast<unsigned long>(replays),
      static_cast<unsigned long>(freezes), static_cast<unsigned long>(evictions));
  CHECK(first_failure.empty());
  // The default seeds freeze clients and evict some, and standby-replay
  // takes over after crashes (fewer seeds may not).
  if (seeds >= kDefaultSeeds) {
    CHECK(evictions > 0);
    CHECK(follower_takeovers > 0);
  }
}

TEST_CASE("sim: seeds - shard 1") { RunShard(0); }
TEST_CASE("sim: seeds - shard 2") { RunShard(1); }
TEST_CASE("sim: seeds - shard 3") { RunShard(2); }
TEST_CASE("sim: seeds - shard 4") { RunShard(3); }

// A seed is one exact run whatever ran before it in the process: the heap
// then differs, and with it the order absl's hash tables iterate in (they
// salt each table with its address). The MDS's behaviour must not follow that
// order. It did (LRU ticks given by a flush's walk over a hash set decided
// what the cache dropped: a seed of a shard ran differently alone) while this
// test looked at one seed; 24 seeds, forward then backward, caught it in 2 of
// 3 runs.
TEST_CASE("sim: a seed is one exact run - whatever ran before it") {
  constexpr uint64_t kSeeds = 24;
  std::map<uint64_t, SimResult> forward;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SimOptions options;
    options.seed = seed;
    forward[seed] = RunSeed(options);
  }
  std::vector<std::string> heap(1000, std::string(100, 'x'));  // another heap layout
  for (uint64_t seed = kSeeds; seed >= 1; --seed) {
    SimOptions options;
    options.seed = seed;
    const SimResult again = RunSeed(options);
    INFO("seed " << seed);
    CHECK(again.failure == forward[seed].failure);
    CHECK(again.steps == forward[seed].steps);
    CHECK(again.requests == forward[seed].requests);
    CHECK(again.digest == forward[seed].digest);
  }
  CHECK(forward[1].digest != forward[2].digest);
}

TEST_CASE("sim: a link that does not count itself is caught") {
  // A bug put in on purpose (fault point mds.bug_link_skips_nlink): the
  // invariants or the model must notice within a few seeds.
  uint64_t caught = 0;
  for (uint64_t seed = 1; seed <= 200 && caught == 0; ++seed) {
    fault::ScopedFault bug(fault::kMdsBugLinkSkipsNlink);
    SimOptions options;
    options.seed = seed;
    const SimResult r = RunSeed(options);
    if (!r.failure.empty()) {
      caught = seed;
      std::printf("the broken link is caught at seed %lu: %s\n", static_cast<unsigned long>(seed),
                  r.failure.c_str());
    }
  }
  CHECK(caught != 0);
}

}  // namespace
}  // namespace weft::sim
