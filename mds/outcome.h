// What a request needs next (mds/request_run.h): the outcome of one step of
// a RequestRun, which a driver acts on (MdsRank::Drive, the simulation).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "mds/rank_options.h"
#include "mds/store/records.pb.h"

namespace weft::mds {

// Metadata to read into the cache before an operation runs again.
struct Load {
  std::vector<uint64_t> inodes;
  std::vector<std::pair<uint64_t, uint32_t>> frags;  // (dir, Frag)
  std::vector<uint64_t> inline_data;
  bool empty() const { return inodes.empty() && frags.empty() && inline_data.empty(); }
};

struct RunWait {
  const char* what = "";        // "lease", "recall", "trim", "move", "lock", "cut-retry"
  std::function<bool()> ready;  // evaluated under the rank's lock
  absl::Time deadline = absl::InfiniteFuture();  // by the rank's clock
};
struct RunOutcome {
  enum class Kind { kDone, kLoad, kMove, kCut, kDurable, kWait };
  Kind kind = Kind::kDone;
  absl::Status status;  // kDone
  Load load;            // kLoad
  InlineMove move;      // kMove
  Cut cut;              // kCut
  uint64_t seq = 0;     // kDurable
  RunWait wait;         // kWait
};

}  // namespace weft::mds
