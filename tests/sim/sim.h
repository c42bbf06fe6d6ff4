// A seeded, deterministic simulation of the metadata core (tests/sim): the
// real MDS rank — its operations, cache, sessions, leases, locks, journal and
// store — run single-threaded in this process on MemObjects and a manual
// clock, with several simulated client sessions sending random namespace
// requests (and bad ones), retrying as MetaClient does, taking unsafe
// replies and reconnecting after the MDS crashes at any step; now and then
// a client stops answering (no renewals, no acks, no requests: a frozen
// process) and is evicted, fenced first, then comes back in a new session.
// Faults: the object store refuses requests, delays them (the simulation
// decides when each I/O completes and interleaves others meanwhile), the
// journal breaks, the MDS crashes in the middle of a flush. In half the
// seeds a standby-replay rank follows the journal and takes over after a
// crash. After every
// step the invariants of tests/sim/view.h are checked; whenever every
// client is idle, the namespace must equal the model of tests/sim/model.h.
//
// One seed is one exact run: the same seed gives the same steps and the
// same digest of what happened.
#pragma once

#include <cstdint>
#include <string>

namespace weft::sim {

struct SimOptions {
  uint64_t seed = 1;
  int steps = 600;     // scheduler steps, then every request is let finish
  bool trace = false;  // print every step to stderr
};

struct SimResult {
  std::string failure;  // empty: every check held
  uint64_t digest = 0;  // of everything that happened, for determinism checks
  int steps = 0;
  int requests = 0;  // answered requests
  int crashes = 0;
  int replays = 0;  // unsafe requests resent after crashes
  int freezes = 0;    // clients that stopped answering for a while
  int evictions = 0;  // sessions the rank evicted (each fenced first)
  // Standby-replay: incarnations that began as a follower of the journal,
  // and followers that fell behind (trimmed past them) and started over.
  int follower_takeovers = 0;
  int follower_restarts = 0;
};

SimResult RunSeed(const SimOptions& options);

}  // namespace weft::sim
