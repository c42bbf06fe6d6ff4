// An in-memory KvStore for tests, with a crash model.
//
// Crash model (what SimulateCrash() keeps), chosen to match LevelDB, whose
// batches are records of one append-only, checksummed log:
//  - A batch is applied to the live map at once; readers never see half of it,
//    and a crash never keeps half of it.
//  - Write(sync=true) makes that batch and every earlier batch durable (a
//    synced log append flushes what precedes it).
//  - Batches written with sync=false since the last synced one are "unsynced".
//    A crash keeps a prefix of them, never a later one without an earlier one:
//    SimulateCrash(k) keeps the first k (default 0: all are lost).
// A write hook lets tests fail writes (an injected crash or I/O error); a write
// the hook fails is not applied at all.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/kv/kv_store.h"

namespace weft::common {

class MemKvStore final : public KvStore {
 public:
  using WriteHook = std::function<absl::Status(const KvWriteBatch& batch, bool sync)>;

  MemKvStore() = default;
  MemKvStore(const MemKvStore&) = delete;
  MemKvStore& operator=(const MemKvStore&) = delete;

  absl::StatusOr<std::string> Get(absl::string_view key) override;
  absl::Status Write(const KvWriteBatch& batch, bool sync) override;
  std::unique_ptr<KvIterator> NewIterator() override;

  // Rolls the live contents back to the durable state plus the first
  // `keep_unsynced` unsynced batches (clamped to how many there are); the kept
  // ones become durable.
  void SimulateCrash(size_t keep_unsynced = 0);
  // How many batches a crash could lose right now.
  size_t unsynced_batches() const;
  // Called before each Write with the store unlocked; a non-OK status is
  // returned by Write and the batch is not applied. nullptr removes the hook.
  void SetWriteHook(WriteHook hook);
  size_t key_count() const;

 private:
  friend class MemKvIterator;
  using Map = std::map<std::string, std::string>;
  static void ApplyTo(const KvWriteBatch& batch, Map* map);

  mutable absl::Mutex mu_;
  Map live_ ABSL_GUARDED_BY(mu_);
  Map durable_ ABSL_GUARDED_BY(mu_);
  // Batches applied to live_ but not yet to durable_, oldest first.
  std::vector<KvWriteBatch> unsynced_ ABSL_GUARDED_BY(mu_);
  WriteHook hook_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::common
