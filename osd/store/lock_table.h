// Named reader/writer locks created on demand and freed when unused, so that
// each object (or collection) has its own lock without a map that grows.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace weft::osd {

class LockTable {
 public:
  enum class Mode { kShared, kExclusive };

  // Holds locks until destroyed; movable.
  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& other) noexcept { *this = std::move(other); }
    Guard& operator=(Guard&& other) noexcept;
    ~Guard() { Release(); }
    void Release();

   private:
    friend class LockTable;
    LockTable* table_ = nullptr;
    Mode mode_ = Mode::kShared;
    std::vector<std::string> keys_;  // ascending: the acquisition order
  };

  LockTable() = default;
  LockTable(const LockTable&) = delete;
  LockTable& operator=(const LockTable&) = delete;
  ~LockTable();

  // Locks every key in `keys` in `mode`. Keys are deduplicated and taken in
  // ascending order, so callers that lock several keys cannot deadlock.
  Guard Lock(std::vector<std::string> keys, Mode mode);

 private:
  struct Entry {
    absl::Mutex mu;
    int pins = 0;  // guarded by LockTable::mu_
  };
  absl::Mutex* Pin(const std::string& key);
  void Unpin(const std::string& key);

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::osd
