// Files whose inline data a request is moving to their first object (mds/ops/
// inline.cc): one request at a time per file, so that no late write of old
// bytes lands after the move was recorded and clients wrote objects.
//
// A move is first unrecorded (its object write may be under way), then
// recorded (its event is applied and queued, not durable yet); the mover's
// request ends it once the event is durable. While a move is recorded no
// other request answers about the file: the mover's client writes objects
// only once the move is durable, and so must every other client.
//
// Not thread-safe: the rank's mutex guards it (MdsRank::mu_).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace weft::mds {

class InlineMoves {
 public:
  bool Moving(uint64_t ino) const { return moving_.contains(ino); }
  // `ino` must not be moving.
  void Begin(uint64_t ino) { moving_[ino] = false; }
  void Recorded(uint64_t ino) { moving_[ino] = true; }
  void End(uint64_t ino) { moving_.erase(ino); }
  // A file of `touched` whose move is recorded by another request than the
  // one moving `mine` (0: none).
  uint64_t RecordedElsewhere(const std::vector<uint64_t>& touched, uint64_t mine) const {
    if (moving_.empty()) return 0;
    for (uint64_t ino : touched) {
      auto it = moving_.find(ino);
      if (ino != mine && it != moving_.end() && it->second) return ino;
    }
    return 0;
  }
  bool empty() const { return moving_.empty(); }

 private:
  absl::flat_hash_map<uint64_t, bool> moving_;  // ino -> recorded
};

}  // namespace weft::mds
