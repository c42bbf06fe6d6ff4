// KvStore on LevelDB (Debian libleveldb). LevelDB's own writer queue groups
// concurrent Write(sync=true) calls into one log append and one fsync, so
// callers get group commit without doing anything.
#pragma once

#include <memory>
#include <string>

#include "common/kv/kv_store.h"

namespace leveldb {
class Cache;
class DB;
class Status;
}  // namespace leveldb

namespace weft::common {

// Converts a LevelDB status where it enters Weft: NotFound -> NotFound,
// Corruption -> DataLoss, NotSupported -> Unimplemented, InvalidArgument ->
// InvalidArgument, IOError -> ResourceExhausted for a full disk, else Internal.
// `what` says what was being done.
absl::Status FromLevelDbStatus(const leveldb::Status& status, absl::string_view what);

class LevelDbStore final : public KvStore {
 public:
  struct Options {
    bool create_if_missing = false;
    bool error_if_exists = false;
    size_t block_cache_bytes = 8 << 20;
    size_t write_buffer_bytes = 4 << 20;
    bool compress = true;  // snappy, per block
  };

  // Opens (or creates, per options) the database in directory `path`.
  static absl::StatusOr<std::unique_ptr<LevelDbStore>> Open(const std::string& path,
                                                            const Options& options);
  ~LevelDbStore() override;
  LevelDbStore(const LevelDbStore&) = delete;
  LevelDbStore& operator=(const LevelDbStore&) = delete;

  absl::StatusOr<std::string> Get(absl::string_view key) override;
  absl::Status Write(const KvWriteBatch& batch, bool sync) override;
  std::unique_ptr<KvIterator> NewIterator() override;

  const std::string& path() const { return path_; }

 private:
  LevelDbStore(std::string path, leveldb::DB* db, leveldb::Cache* cache)
      : path_(std::move(path)), db_(db), cache_(cache) {}

  const std::string path_;
  leveldb::DB* const db_;        // owned; deleted before cache_
  leveldb::Cache* const cache_;  // owned
};

}  // namespace weft::common
