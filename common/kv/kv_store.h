// A small ordered key/value interface with a LevelDB implementation
// (leveldb_store.h) and an in-memory one for tests (mem_store.h).
//
// Contract shared by every implementation (tests/unit/kv_store_test.cc runs one
// suite against both):
//  - Keys and values are arbitrary bytes; keys are ordered bytewise (memcmp,
//    shorter first on a common prefix).
//  - Write() applies a batch atomically: after it returns, and after a crash,
//    either every operation of the batch is visible or none is. Operations of
//    one batch apply in order (a Put then a Delete of the same key deletes it).
//  - Write(batch, sync=true) is durable when it returns OK, and so is every
//    batch written before it (the batches form one ordered log).
//  - Iterators are snapshot-free: a key written while an iterator is open may
//    or may not be seen by it. Callers that need a consistent view of several
//    keys hold their own lock against writers.
//  - Errors from the underlying engine are converted to absl::Status here;
//    corruption is DataLoss.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::common {

using KvPair = std::pair<std::string, std::string>;

// An ordered list of puts and deletes applied atomically by KvStore::Write.
class KvWriteBatch {
 public:
  enum class OpType { kPut, kDelete };
  struct Op {
    OpType type;
    std::string key;
    std::string value;  // empty for kDelete
  };

  void Put(absl::string_view key, absl::string_view value) {
    bytes_ += key.size() + value.size();
    ops_.push_back(Op{OpType::kPut, std::string(key), std::string(value)});
  }
  void Delete(absl::string_view key) {
    bytes_ += key.size();
    ops_.push_back(Op{OpType::kDelete, std::string(key), std::string()});
  }
  void Clear() {
    ops_.clear();
    bytes_ = 0;
  }

  bool empty() const { return ops_.empty(); }
  size_t count() const { return ops_.size(); }
  // Sum of key and value sizes: what the batch costs in the log.
  uint64_t bytes() const { return bytes_; }
  const std::vector<Op>& ops() const { return ops_; }

 private:
  std::vector<Op> ops_;
  uint64_t bytes_ = 0;
};

// A forward cursor over the keys of a store in order.
class KvIterator {
 public:
  virtual ~KvIterator() = default;
  // Positions at the first key >= `key`.
  virtual void Seek(absl::string_view key) = 0;
  virtual bool Valid() const = 0;
  // Requires Valid().
  virtual void Next() = 0;
  // Require Valid(); the views stay valid until the iterator moves.
  virtual absl::string_view key() const = 0;
  virtual absl::string_view value() const = 0;
  // Not OK if iteration stopped on an error rather than at the end.
  virtual absl::Status status() const = 0;
};

// The smallest key greater than every key that starts with `prefix`, or "" if
// there is none (prefix empty or all 0xff). Used as the end of a prefix scan.
inline std::string PrefixSuccessor(absl::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last != 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return end;
}

class KvStore {
 public:
  virtual ~KvStore() = default;

  // The value of `key`, or NotFound.
  virtual absl::StatusOr<std::string> Get(absl::string_view key) = 0;

  // Applies `batch` atomically, in order. With `sync` the batch and everything
  // written before it are durable when this returns OK. An empty batch is OK.
  virtual absl::Status Write(const KvWriteBatch& batch, bool sync) = 0;

  // A new iterator, not positioned: call Seek first.
  virtual std::unique_ptr<KvIterator> NewIterator() = 0;

  // Keys in [start, end) in order, at most `max_entries` of them; an empty
  // `end` means no upper bound. `*more` (if given) says whether keys in the
  // range remain after the last one returned.
  absl::StatusOr<std::vector<KvPair>> Scan(absl::string_view start, absl::string_view end,
                                           size_t max_entries, bool* more = nullptr) {
    std::vector<KvPair> out;
    if (more != nullptr) *more = false;
    std::unique_ptr<KvIterator> it = NewIterator();
    for (it->Seek(start); it->Valid(); it->Next()) {
      if (!end.empty() && it->key() >= end) break;
      if (out.size() >= max_entries) {
        if (more != nullptr) *more = true;
        break;
      }
      out.emplace_back(std::string(it->key()), std::string(it->value()));
    }
    if (!it->status().ok()) return it->status();
    return out;
  }

  // Keys that start with `prefix`, in order; see Scan.
  absl::StatusOr<std::vector<KvPair>> ScanPrefix(absl::string_view prefix, size_t max_entries,
                                                 bool* more = nullptr) {
    const std::string end = PrefixSuccessor(prefix);
    return Scan(prefix, end, max_entries, more);
  }
};

}  // namespace weft::common
