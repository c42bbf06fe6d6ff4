#include "common/kv/mem_store.h"

#include <algorithm>
#include <utility>

namespace weft::common {

// Snapshot-free: each move re-seeks in the live map under the store's lock, so
// concurrent writes never invalidate it (they may or may not be seen).
class MemKvIterator final : public KvIterator {
 public:
  explicit MemKvIterator(MemKvStore* store) : store_(store) {}

  void Seek(absl::string_view key) override {
    absl::MutexLock lock(&store_->mu_);
    Load(store_->live_.lower_bound(std::string(key)));
  }
  bool Valid() const override { return valid_; }
  void Next() override {
    absl::MutexLock lock(&store_->mu_);
    Load(store_->live_.upper_bound(key_));
  }
  absl::string_view key() const override { return key_; }
  absl::string_view value() const override { return value_; }
  absl::Status status() const override { return absl::OkStatus(); }

 private:
  void Load(MemKvStore::Map::const_iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(store_->mu_) {
    valid_ = it != store_->live_.end();
    if (valid_) {
      key_ = it->first;
      value_ = it->second;
    }
  }

  MemKvStore* store_;
  bool valid_ = false;
  std::string key_;
  std::string value_;
};

void MemKvStore::ApplyTo(const KvWriteBatch& batch, Map* map) {
  for (const KvWriteBatch::Op& op : batch.ops()) {
    if (op.type == KvWriteBatch::OpType::kPut) {
      (*map)[op.key] = op.value;
    } else {
      map->erase(op.key);
    }
  }
}

absl::StatusOr<std::string> MemKvStore::Get(absl::string_view key) {
  absl::MutexLock lock(&mu_);
  auto it = live_.find(std::string(key));
  if (it == live_.end()) return absl::NotFoundError("key not found");
  return it->second;
}

absl::Status MemKvStore::Write(const KvWriteBatch& batch, bool sync) {
  WriteHook hook;
  {
    absl::MutexLock lock(&mu_);
    hook = hook_;
  }
  if (hook) {
    absl::Status status = hook(batch, sync);
    if (!status.ok()) return status;
  }
  absl::MutexLock lock(&mu_);
  ApplyTo(batch, &live_);
  unsynced_.push_back(batch);
  if (sync) {
    for (const KvWriteBatch& pending : unsynced_) ApplyTo(pending, &durable_);
    unsynced_.clear();
  }
  return absl::OkStatus();
}

std::unique_ptr<KvIterator> MemKvStore::NewIterator() {
  return std::make_unique<MemKvIterator>(this);
}

void MemKvStore::SimulateCrash(size_t keep_unsynced) {
  absl::MutexLock lock(&mu_);
  keep_unsynced = std::min(keep_unsynced, unsynced_.size());
  for (size_t i = 0; i < keep_unsynced; ++i) ApplyTo(unsynced_[i], &durable_);
  unsynced_.clear();
  live_ = durable_;
}

size_t MemKvStore::unsynced_batches() const {
  absl::MutexLock lock(&mu_);
  return unsynced_.size();
}

void MemKvStore::SetWriteHook(WriteHook hook) {
  absl::MutexLock lock(&mu_);
  hook_ = std::move(hook);
}

size_t MemKvStore::key_count() const {
  absl::MutexLock lock(&mu_);
  return live_.size();
}

}  // namespace weft::common
