// Truncates' cuts of data objects: the MDS cuts a file's objects past its new
// size itself, before it answers, while every other writer of the file holds
// its writes (Leases' holds).
//
// A client that trimmed after the MDS's answer (as Weft did first) left a
// window in which another client's fresh write landed in an object the late
// trim then cut, and a client dying in between left old bytes past the size,
// which a later extension showed instead of zeros. Now the size change and a
// TrimRec go into one journal event (the cache's trims() then holds it);
// once that is durable the request cuts the objects, records trim_done, and
// only when that is durable does anyone see or write the file again
// (Blocked). A restart finds unfinished trims in the journal or the "trims"
// table and cuts them again before serving; the janitor retries those whose
// cut failed (OSDs down).
//
// Contract: at most one cut of a file runs at a time (Begin/End); a file is
// blocked from its TrimRec's event until its trim_done is durable.
//
// Not thread-safe: the rank's mutex guards it (MdsRank::mu_). The cut itself
// (MdsRank::CutObjects, StripedIo::Trim) runs without that lock.
#pragma once

#include <cstdint>

#include "absl/container/flat_hash_set.h"
#include "mds/cache/meta_cache.h"

namespace weft::mds {

class Trims {
 public:
  // Nobody may see or write `ino` now: a cut is pending or running.
  bool Blocked(const MetaCache& cache, uint64_t ino) const {
    return cache.trims().contains(ino) || running_.contains(ino);
  }
  // Any cut pending or running at all (nearly always false: a cheap test).
  bool Any(const MetaCache& cache) const { return !cache.trims().empty() || !running_.empty(); }
  bool Running(uint64_t ino) const { return running_.contains(ino); }
  void Begin(uint64_t ino) { running_.insert(ino); }
  void End(uint64_t ino) { running_.erase(ino); }
  size_t running() const { return running_.size(); }

 private:
  absl::flat_hash_set<uint64_t> running_;  // files whose objects a request or the janitor cuts
};

}  // namespace weft::mds
