#include "osd/store/lock_table.h"

#include <algorithm>

#include "common/log/log.h"

namespace weft::osd {

LockTable::Guard& LockTable::Guard::operator=(Guard&& other) noexcept {
  if (this != &other) {
    Release();
    table_ = other.table_;
    mode_ = other.mode_;
    keys_ = std::move(other.keys_);
    other.table_ = nullptr;
    other.keys_.clear();
  }
  return *this;
}

// The per-key mutexes are taken in Lock and given back here, a set the
// analysis cannot follow (it checks one function at a time): their order is
// the sorted keys, their lifetime the guard's.
void LockTable::Guard::Release() ABSL_NO_THREAD_SAFETY_ANALYSIS {
  if (table_ == nullptr) return;
  for (auto it = keys_.rbegin(); it != keys_.rend(); ++it) {
    absl::Mutex* mu;
    {
      absl::MutexLock lock(&table_->mu_);
      mu = &table_->entries_.at(*it)->mu;
    }
    if (mode_ == Mode::kShared) {
      mu->ReaderUnlock();
    } else {
      mu->Unlock();
    }
    table_->Unpin(*it);
  }
  keys_.clear();
  table_ = nullptr;
}

LockTable::~LockTable() {
  absl::MutexLock lock(&mu_);
  CHECK(entries_.empty()) << "LockTable destroyed with " << entries_.size() << " locks held";
}

absl::Mutex* LockTable::Pin(const std::string& key) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<Entry>& entry = entries_[key];
  if (entry == nullptr) entry = std::make_unique<Entry>();
  ++entry->pins;
  return &entry->mu;
}

void LockTable::Unpin(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(key);
  CHECK(it != entries_.end());
  if (--it->second->pins == 0) entries_.erase(it);
}

LockTable::Guard LockTable::Lock(std::vector<std::string> keys,
                                 Mode mode) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  Guard guard;
  guard.table_ = this;
  guard.mode_ = mode;
  for (std::string& key : keys) {
    absl::Mutex* mu = Pin(key);
    if (mode == Mode::kShared) {
      mu->ReaderLock();
    } else {
      mu->Lock();
    }
    guard.keys_.push_back(std::move(key));
  }
  return guard;
}

}  // namespace weft::osd
