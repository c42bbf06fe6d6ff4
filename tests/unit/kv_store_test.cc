// One suite, run against LevelDB (in a temporary directory) and MemKvStore.
#include <catch2/catch.hpp>
#include <stdlib.h>

#include <memory>
#include <string>
#include <thread>

#include "common/kv/kv_store.h"
#include "common/kv/leveldb_store.h"
#include "common/kv/mem_store.h"
#include "tests/harness/temp_dir.h"

namespace weft::common {
namespace {

using testing::TempDir;

// Runs `body` once per implementation, each in its own SECTION.
template <typename Body>
void ForEachStore(Body body) {
  SECTION("leveldb") {
    TempDir dir;
    LevelDbStore::Options options;
    options.create_if_missing = true;
    auto store = LevelDbStore::Open(dir.path + "/db", options);
    REQUIRE(store.ok());
    body(**store);
  }
  SECTION("memory") {
    MemKvStore store;
    body(store);
  }
}

absl::Status Put(KvStore& kv, const std::string& key, const std::string& value, bool sync = false) {
  KvWriteBatch batch;
  batch.Put(key, value);
  return kv.Write(batch, sync);
}

TEST_CASE("KvStore get - put - delete", "[kv]") {
  ForEachStore([](KvStore& kv) {
    CHECK(absl::IsNotFound(kv.Get("a").status()));
    REQUIRE(Put(kv, "a", "1").ok());
    CHECK(*kv.Get("a") == "1");
    REQUIRE(Put(kv, "a", "2", /*sync=*/true).ok());
    CHECK(*kv.Get("a") == "2");
    KvWriteBatch batch;
    batch.Delete("a");
    REQUIRE(kv.Write(batch, false).ok());
    CHECK(absl::IsNotFound(kv.Get("a").status()));
    CHECK(kv.Write(KvWriteBatch(), true).ok());  // empty batch
  });
}

TEST_CASE("KvStore batches apply in order", "[kv]") {
  ForEachStore([](KvStore& kv) {
    KvWriteBatch batch;
    batch.Put("x", "1");
    batch.Delete("x");
    batch.Put("y", "1");
    batch.Put("y", "2");
    CHECK(batch.count() == 4);
    REQUIRE(kv.Write(batch, true).ok());
    CHECK(absl::IsNotFound(kv.Get("x").status()));
    CHECK(*kv.Get("y") == "2");
  });
}

TEST_CASE("KvStore binary keys and values", "[kv]") {
  ForEachStore([](KvStore& kv) {
    const std::string key("k\0ey\xff", 5);
    const std::string value("\0\1\2", 3);
    REQUIRE(Put(kv, key, value).ok());
    CHECK(*kv.Get(key) == value);
    CHECK(absl::IsNotFound(kv.Get("k").status()));
  });
}

TEST_CASE("KvStore scans are ordered and bounded", "[kv]") {
  ForEachStore([](KvStore& kv) {
    KvWriteBatch batch;
    for (const char* key : {"b", "a", "ab", "b\xff", "c"}) batch.Put(key, std::string("v") + key);
    batch.Put(std::string("a\0", 2), "nul");
    REQUIRE(kv.Write(batch, false).ok());

    bool more = true;
    auto all = kv.Scan("", "", 100, &more);
    REQUIRE(all.ok());
    CHECK_FALSE(more);
    std::vector<std::string> keys;
    for (const auto& [k, v] : *all) keys.push_back(k);
    CHECK(keys == std::vector<std::string>{"a", std::string("a\0", 2), "ab", "b", "b\xff", "c"});

    auto range = kv.Scan("ab", "b\xff", 100, &more);  // [ab, b\xff)
    REQUIRE(range.ok());
    REQUIRE(range->size() == 2);
    CHECK((*range)[0].first == "ab");
    CHECK((*range)[1].first == "b");

    auto limited = kv.Scan("a", "", 2, &more);
    REQUIRE(limited.ok());
    CHECK(limited->size() == 2);
    CHECK(more);

    auto prefixed = kv.ScanPrefix("a", 100, &more);
    REQUIRE(prefixed.ok());
    CHECK(prefixed->size() == 3);
    CHECK_FALSE(more);
    auto ff = kv.ScanPrefix("b\xff", 100);
    REQUIRE(ff.ok());
    REQUIRE(ff->size() == 1);
    CHECK((*ff)[0].second == "vb\xff");
  });
}

TEST_CASE("KvStore iterator seeks and walks", "[kv]") {
  ForEachStore([](KvStore& kv) {
    KvWriteBatch batch;
    for (int i = 0; i < 50; ++i) batch.Put("k" + std::to_string(100 + i), std::to_string(i));
    REQUIRE(kv.Write(batch, false).ok());
    std::unique_ptr<KvIterator> it = kv.NewIterator();
    it->Seek("k125");
    REQUIRE(it->Valid());
    CHECK(it->key() == "k125");
    CHECK(it->value() == "25");
    it->Next();
    CHECK(it->key() == "k126");
    it->Seek("k1485");
    REQUIRE(it->Valid());
    CHECK(it->key() == "k149");
    it->Next();
    CHECK_FALSE(it->Valid());
    CHECK(it->status().ok());
    it->Seek("z");
    CHECK_FALSE(it->Valid());
  });
}

TEST_CASE("KvStore concurrent writers", "[kv]") {
  ForEachStore([](KvStore& kv) {
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&kv, t] {
        for (int i = 0; i < 50; ++i) {
          KvWriteBatch batch;
          batch.Put("t" + std::to_string(t) + "/" + std::to_string(i), "v");
          REQUIRE(kv.Write(batch, i % 10 == 0).ok());
        }
      });
    }
    for (auto& thread : threads) thread.join();
    auto all = kv.ScanPrefix("t", 1000);
    REQUIRE(all.ok());
    CHECK(all->size() == 200);
  });
}

TEST_CASE("PrefixSuccessor", "[kv]") {
  CHECK(PrefixSuccessor("abc") == "abd");
  CHECK(PrefixSuccessor("a\xff") == "b");
  CHECK(PrefixSuccessor("\xff\xff").empty());
  CHECK(PrefixSuccessor("").empty());
}

TEST_CASE("LevelDbStore survives reopen and refuses a missing db", "[kv]") {
  TempDir dir;
  LevelDbStore::Options create;
  create.create_if_missing = true;
  {
    auto store = LevelDbStore::Open(dir.path + "/db", create);
    REQUIRE(store.ok());
    REQUIRE(Put(**store, "k", "v", true).ok());
  }
  {
    auto store = LevelDbStore::Open(dir.path + "/db", LevelDbStore::Options());
    REQUIRE(store.ok());
    CHECK(*(*store)->Get("k") == "v");
    // Locked by the open instance.
    CHECK_FALSE(LevelDbStore::Open(dir.path + "/db", LevelDbStore::Options()).ok());
  }
  CHECK_FALSE(LevelDbStore::Open(dir.path + "/nope", LevelDbStore::Options()).ok());
  create.error_if_exists = true;
  CHECK_FALSE(LevelDbStore::Open(dir.path + "/db", create).ok());
}

TEST_CASE("MemKvStore crash keeps synced batches and a prefix of the rest", "[kv]") {
  MemKvStore kv;
  REQUIRE(Put(kv, "a", "1", /*sync=*/false).ok());
  REQUIRE(Put(kv, "b", "1", /*sync=*/true).ok());  // makes "a" durable too
  REQUIRE(Put(kv, "c", "1", false).ok());
  REQUIRE(Put(kv, "d", "1", false).ok());
  KvWriteBatch batch;
  batch.Put("e", "1");
  batch.Delete("a");
  REQUIRE(kv.Write(batch, false).ok());
  CHECK(kv.unsynced_batches() == 3);

  SECTION("everything unsynced is lost") {
    kv.SimulateCrash();
    CHECK(*kv.Get("a") == "1");
    CHECK(*kv.Get("b") == "1");
    CHECK(absl::IsNotFound(kv.Get("c").status()));
    CHECK(absl::IsNotFound(kv.Get("e").status()));
  }
  SECTION("a prefix survives, whole batches only") {
    kv.SimulateCrash(2);
    CHECK(*kv.Get("c") == "1");
    CHECK(*kv.Get("d") == "1");
    CHECK(absl::IsNotFound(kv.Get("e").status()));
    CHECK(*kv.Get("a") == "1");  // the third batch's delete is lost with its put
    kv.SimulateCrash();          // what was kept is now durable
    CHECK(*kv.Get("d") == "1");
  }
  SECTION("all survive") {
    kv.SimulateCrash(100);
    CHECK(*kv.Get("e") == "1");
    CHECK(absl::IsNotFound(kv.Get("a").status()));
  }
}

TEST_CASE("MemKvStore write hook fails writes without applying them", "[kv]") {
  MemKvStore kv;
  int calls = 0;
  kv.SetWriteHook([&calls](const KvWriteBatch&, bool) {
    return ++calls == 2 ? absl::UnavailableError("injected") : absl::OkStatus();
  });
  CHECK(Put(kv, "a", "1").ok());
  CHECK(absl::IsUnavailable(Put(kv, "b", "1")));
  CHECK(absl::IsNotFound(kv.Get("b").status()));
  kv.SetWriteHook(nullptr);
  CHECK(Put(kv, "b", "1").ok());
  CHECK(kv.key_count() == 2);
}

}  // namespace
}  // namespace weft::common
