#include "common/kv/leveldb_store.h"

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace weft::common {
namespace {

leveldb::Slice ToSlice(absl::string_view s) { return leveldb::Slice(s.data(), s.size()); }
absl::string_view ToView(const leveldb::Slice& s) { return absl::string_view(s.data(), s.size()); }

class LevelDbIterator final : public KvIterator {
 public:
  explicit LevelDbIterator(leveldb::Iterator* it) : it_(it) {}

  void Seek(absl::string_view key) override { it_->Seek(ToSlice(key)); }
  bool Valid() const override { return it_->Valid(); }
  void Next() override { it_->Next(); }
  absl::string_view key() const override { return ToView(it_->key()); }
  absl::string_view value() const override { return ToView(it_->value()); }
  absl::Status status() const override {
    return FromLevelDbStatus(it_->status(), "leveldb iterate");
  }

 private:
  std::unique_ptr<leveldb::Iterator> it_;
};

}  // namespace

absl::Status FromLevelDbStatus(const leveldb::Status& status, absl::string_view what) {
  if (status.ok()) return absl::OkStatus();
  const std::string message = absl::StrCat(what, ": ", status.ToString());
  if (status.IsNotFound()) return absl::NotFoundError(message);
  if (status.IsCorruption()) return absl::DataLossError(message);
  if (status.IsNotSupportedError()) return absl::UnimplementedError(message);
  if (status.IsInvalidArgument()) return absl::InvalidArgumentError(message);
  if (status.IsIOError() && absl::StrContains(message, "No space left")) {
    return absl::ResourceExhaustedError(message);
  }
  return absl::InternalError(message);
}

absl::StatusOr<std::unique_ptr<LevelDbStore>> LevelDbStore::Open(const std::string& path,
                                                                 const Options& options) {
  leveldb::Options ldb_options;
  ldb_options.create_if_missing = options.create_if_missing;
  ldb_options.error_if_exists = options.error_if_exists;
  ldb_options.write_buffer_size = options.write_buffer_bytes;
  ldb_options.compression = options.compress ? leveldb::kSnappyCompression : leveldb::kNoCompression;
  leveldb::Cache* cache = leveldb::NewLRUCache(options.block_cache_bytes);
  ldb_options.block_cache = cache;
  leveldb::DB* db = nullptr;
  leveldb::Status status = leveldb::DB::Open(ldb_options, path, &db);
  if (!status.ok()) {
    delete cache;
    return FromLevelDbStatus(status, absl::StrCat("open leveldb ", path));
  }
  return std::unique_ptr<LevelDbStore>(new LevelDbStore(path, db, cache));
}

LevelDbStore::~LevelDbStore() {
  delete db_;
  delete cache_;
}

absl::StatusOr<std::string> LevelDbStore::Get(absl::string_view key) {
  std::string value;
  leveldb::Status status = db_->Get(leveldb::ReadOptions(), ToSlice(key), &value);
  if (!status.ok()) return FromLevelDbStatus(status, "leveldb get");
  return value;
}

absl::Status LevelDbStore::Write(const KvWriteBatch& batch, bool sync) {
  if (batch.empty()) return absl::OkStatus();
  leveldb::WriteBatch ldb_batch;
  for (const KvWriteBatch::Op& op : batch.ops()) {
    if (op.type == KvWriteBatch::OpType::kPut) {
      ldb_batch.Put(ToSlice(op.key), ToSlice(op.value));
    } else {
      ldb_batch.Delete(ToSlice(op.key));
    }
  }
  leveldb::WriteOptions write_options;
  write_options.sync = sync;
  return FromLevelDbStatus(db_->Write(write_options, &ldb_batch), "leveldb write");
}

std::unique_ptr<KvIterator> LevelDbStore::NewIterator() {
  return std::make_unique<LevelDbIterator>(db_->NewIterator(leveldb::ReadOptions()));
}

}  // namespace weft::common
