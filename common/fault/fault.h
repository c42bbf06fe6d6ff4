// Named fault points (as 3FS's FaultInjection): places in the production
// code where a test or the simulation makes something go wrong on purpose,
// compiled in everywhere and inert unless armed. An unarmed point costs one
// relaxed atomic load.
//
//   if (fault::Fire(fault::kMdsExitAfterInlineMove)) std::_Exit(137);
//   if (auto ms = fault::Value(fault::kOsdSlowDiskMs)) delay = *ms;
//
// Arming: in a process, Arm() (tests, tests/sim); for daemons a test starts,
// the WEFT_FAULTS environment variable, read once by ArmFromEnvironment() in
// each binary's main: a comma-separated list of
//
//   NAME[=VALUE][@PROBABILITY][*TIMES][+SKIP]
//
// (VALUE 1, probability 1, unlimited times, no skip when left out), e.g.
// "osd.slow_disk_ms=150" or "mds.journal_write_error@0.01". Only the names
// below are accepted, so a typo is an error, not a fault that never fires.
// Probabilities draw from one generator, seeded by Seed(): under the
// simulation's single thread a seed replays the same faults.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace weft::fault {

// ---- the points (name: where, and what its value means)
// weft-mds: exits (as kill -9) after writing a file's inline data to its
// first object, before the event that records the move.
inline constexpr absl::string_view kMdsExitAfterInlineMove = "mds.exit_after_inline_move";
// MDS journal: the next segment write fails (the journal breaks for good).
inline constexpr absl::string_view kMdsJournalWriteError = "mds.journal_write_error";
// MDS, link(2): the new link is not counted in the inode's nlink. A bug put
// in on purpose, to show that the simulation (tests/sim) catches one.
inline constexpr absl::string_view kMdsBugLinkSkipsNlink = "mds.bug_link_skips_nlink";
// weft-osd, EC primary: applies its next non-creating write on the first
// VALUE shards only (its own first), then exits as kill -9 would.
inline constexpr absl::string_view kOsdEcPartialWrite = "osd.ec_partial_write";
// weft-osd: every store commit takes VALUE ms longer (a slow disk).
inline constexpr absl::string_view kOsdSlowDiskMs = "osd.slow_disk_ms";
// weft-osd: each recovered object waits VALUE ms first (a primary serves
// meanwhile without what it lacks).
inline constexpr absl::string_view kOsdRecoveryDelayMs = "osd.recovery_delay_ms";

// Every name above.
const std::vector<absl::string_view>& KnownPoints();

struct Arming {
  int64_t value = 1;
  double probability = 1.0;  // each time it is reached
  int64_t times = -1;        // fires at most this often (-1: no limit)
  int64_t skip = 0;          // the first `skip` times it is reached it does not fire
};

// Whether `point` fires now: false unless armed; counts down `times`.
bool Fire(absl::string_view point);
// Fire(), and the value the point was armed with when it fires.
std::optional<int64_t> Value(absl::string_view point);

// InvalidArgument for a name not in KnownPoints().
absl::Status Arm(absl::string_view point, Arming arming = {});
void Disarm(absl::string_view point);
void DisarmAll();
void Seed(uint64_t seed);
// How often `point` fired since it was armed.
int64_t Fired(absl::string_view point);

// Parses a WEFT_FAULTS list (above) and arms it; nothing is armed on error.
absl::Status ArmFromSpec(absl::string_view spec);
// ArmFromSpec(getenv("WEFT_FAULTS")) when it is set.
absl::Status ArmFromEnvironment();

// Arms `point` for a scope (tests).
class ScopedFault {
 public:
  ScopedFault(absl::string_view point, Arming arming = {});
  ~ScopedFault();
  ScopedFault(const ScopedFault&) = delete;
  ScopedFault& operator=(const ScopedFault&) = delete;

 private:
  std::string point_;
};

}  // namespace weft::fault
