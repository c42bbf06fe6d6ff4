// The client's file cache (fuse-client/lib/file_cache.*) against real OSDs:
// what a caller waits for never queues behind the background pools. Both
// pools get one thread, held busy by a task of the test, as after an untar
// thousands of queued write-back batches hold them; a Flush() and a Read()
// must still finish, with the right bytes on the OSDs and in the reply. And
// the write-back queue is bounded: a close that would queue past it waits.
#include <catch2/catch.hpp>

#include <future>
#include <mutex>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "fuse-client/lib/file_cache.h"
#include "tests/harness/cluster.h"

namespace weft::testing {
namespace {

// A one-thread pool whose thread is busy until Free(), with room for
// `max_queued` tasks behind it.
class HeldPool {
 public:
  explicit HeldPool(const std::string& name, size_t max_queued = 64)
      : pool_(name, 1, max_queued) {
    pool_.Submit([this] { free_.WaitForNotification(); });
    while (pool_.queued() > 0) absl::SleepFor(absl::Milliseconds(1));  // the thread took it
  }
  ~HeldPool() { Free(); }
  void Free() {
    std::call_once(once_, [this] { free_.Notify(); });
  }
  ThreadPool* get() { return &pool_; }

 private:
  absl::Notification free_;
  std::once_flag once_;
  ThreadPool pool_;  // last: joined first, while free_ lives
};

// Waits up to a minute for `f`; a call still waiting then is a failure, and
// the pools are freed so that it can end (the future's destructor joins it).
template <typename T>
T Within(std::future<T>& f, HeldPool& a, HeldPool& b) {
  if (f.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    a.Free();
    b.Free();
    FAIL("the call waited for a busy background pool");
  }
  return f.get();
}

// A cluster with a 3x pool "data" and an object client.
struct DataPool {
  DataPool() {
    auto started = Cluster::Start();
    REQUIRE(started.ok());
    cluster = std::move(*started);
    objects = cluster->Client();
    REQUIRE(objects != nullptr);
    auto created = cluster->CreatePool(*objects, "data", 3, 16);
    INFO(created.status());
    REQUIRE(created.ok());
    pool = *created;
  }
  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<objects::ObjectClient> objects;
  PoolId pool{};
};

}  // namespace

TEST_CASE("file cache: flush and read finish while the background pools are busy",
          "[cluster]") {
  DataPool d;
  objects::StripedIo io(d.objects.get(), 64u << 20);
  client::DirtyBudget budget(256u << 20);
  objects::FileData data;
  data.ino = 0x1234;
  data.layout = {.stripe_unit = 1u << 20, .stripe_count = 1, .object_size = 1u << 20};
  data.pool = d.pool;

  HeldPool flush_pool("test-flush");
  HeldPool read_pool("test-read");
  std::mutex reports_mu;
  std::vector<uint64_t> reports;  // the end of each batch reported
  auto cache = client::FileCache::Create(
      data, &io, flush_pool.get(), read_pool.get(), &budget, {},
      [&](uint64_t end, int64_t, int64_t, const client::AttrChanges&) {
        std::lock_guard<std::mutex> lock(reports_mu);
        reports.push_back(end);
        return absl::OkStatus();
      });

  // 3 MiB over three objects, queued for the busy flush pool as a close does.
  const std::string bytes = RandomBytes(3u << 20, 77);
  REQUIRE(cache->Write(0, bytes, 1).ok());
  REQUIRE(cache->FlushInBackground(absl::InfiniteFuture(), /*force=*/true).ok());
  REQUIRE(cache->pending().bytes == bytes.size());

  // fsync: writes the queued batch itself.
  auto flushed = std::async(std::launch::async, [&] { return cache->Flush(); });
  absl::Status s = Within(flushed, flush_pool, read_pool);
  INFO(s);
  REQUIRE(s.ok());
  REQUIRE(cache->pending().bytes == 0);
  {
    std::lock_guard<std::mutex> lock(reports_mu);
    REQUIRE(reports == std::vector<uint64_t>{bytes.size()});
  }
  auto stored = io.Read(data, 0, bytes.size());
  REQUIRE(stored.ok());
  REQUIRE(*stored == bytes);

  // A sequential reader's first read starts a readahead stream: its chunk is
  // queued on the busy read pool, and the reader fetches it itself.
  auto read = std::async(std::launch::async,
                         [&] { return cache->Read(0, 128u << 10, bytes.size(), true); });
  absl::StatusOr<std::string> got = Within(read, flush_pool, read_pool);
  REQUIRE(got.ok());
  REQUIRE(*got == bytes.substr(0, 128u << 10));
  // The next read follows on: served from the chunk (nothing buffered since).
  auto next = std::async(std::launch::async, [&] {
    return cache->Read(128u << 10, 1u << 20, bytes.size(), true);
  });
  got = Within(next, flush_pool, read_pool);
  REQUIRE(got.ok());
  REQUIRE(*got == bytes.substr(128u << 10, 1u << 20));

  // The pools' queued tasks now run: the batch written by Flush() is not
  // written or reported again, and new writes flush as before.
  flush_pool.Free();
  read_pool.Free();
  REQUIRE(cache->Write(10, "later", 2).ok());
  REQUIRE(cache->Flush().ok());
  {
    std::lock_guard<std::mutex> lock(reports_mu);
    REQUIRE(reports == std::vector<uint64_t>{bytes.size(), 15});
  }
  stored = io.Read(data, 0, 16);
  REQUIRE(stored.ok());
  std::string want = bytes.substr(0, 16);
  want.replace(10, 5, "later");
  REQUIRE(*stored == want);
}

// What FileSystemClient's `writeback_queue` bounds: closes queue one batch
// per file, and once the queue is full the next close waits for room rather
// than leaving ever more to write after it returns. Every file still reaches
// the OSDs intact and is reported once.
TEST_CASE("file cache: a full write-back queue makes the next close wait - and loses nothing",
          "[cluster]") {
  DataPool d;
  objects::StripedIo io(d.objects.get(), 64u << 20);
  client::DirtyBudget budget(256u << 20);
  HeldPool flush_pool("test-flush", /*max_queued=*/2);
  HeldPool read_pool("test-read");
  constexpr int kFiles = 12;
  std::mutex reports_mu;
  std::vector<int> reports(kFiles, 0);
  std::vector<std::shared_ptr<client::FileCache>> caches;
  std::vector<objects::FileData> files;
  std::vector<std::string> contents;
  for (int i = 0; i < kFiles; ++i) {
    objects::FileData data;
    data.ino = 0x5000 + i;
    data.layout = {.stripe_unit = 1u << 20, .stripe_count = 1, .object_size = 1u << 20};
    data.pool = d.pool;
    files.push_back(data);
    contents.push_back(RandomBytes(4096 + 1000 * i, 100 + i));
    caches.push_back(client::FileCache::Create(
        data, &io, flush_pool.get(), read_pool.get(), &budget, {},
        [&, i](uint64_t, int64_t, int64_t, const client::AttrChanges&) {
          std::lock_guard<std::mutex> lock(reports_mu);
          ++reports[i];
          return absl::OkStatus();
        }));
  }
  auto close = [&](int i) {
    absl::Status s = caches[i]->Write(0, contents[i], 1);
    if (s.ok()) s = caches[i]->FlushInBackground(absl::InfiniteFuture(), /*force=*/true);
    return s;
  };
  // Two closes fill the queue behind the busy thread; the third waits.
  REQUIRE(close(0).ok());
  REQUIRE(close(1).ok());
  auto third = std::async(std::launch::async, [&] { return close(2); });
  CHECK(third.wait_for(std::chrono::milliseconds(500)) == std::future_status::timeout);
  // Room again: the waiting close returns, and the rest go through the
  // two-deep queue one after another.
  flush_pool.Free();
  REQUIRE(third.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
  REQUIRE(third.get().ok());
  for (int i = 3; i < kFiles; ++i) REQUIRE(close(i).ok());
  for (int i = 0; i < kFiles; ++i) {
    INFO("file " << i);
    REQUIRE(caches[i]->Flush().ok());
    REQUIRE(caches[i]->pending().bytes == 0);
    auto stored = io.Read(files[i], 0, contents[i].size());
    REQUIRE(stored.ok());
    REQUIRE(*stored == contents[i]);
  }
  std::lock_guard<std::mutex> lock(reports_mu);
  CHECK(reports == std::vector<int>(kFiles, 1));
}

// A streaming writer's background batches end on object-set boundaries, so
// each object reaches the OSDs whole, in one request, rather than a part in
// one batch and the rest appended by the next (which the OSDs write through
// the page cache, and an EC pool stripe by stripe). Writes of 384 KiB end on
// a 2 MiB set boundary only every 16th write, so a batch taken once 4 MiB
// are buffered would end wherever the last write did; a Flush() writes the rest.
TEST_CASE("file cache: a streaming writer's batches end on object-set boundaries", "[cluster]") {
  DataPool d;
  objects::StripedIo io(d.objects.get(), 64u << 20);
  client::DirtyBudget budget(256u << 20);
  ThreadPool flush_pool("test-flush", 2, 64);
  ThreadPool read_pool("test-read", 1, 64);
  objects::FileData data;
  data.ino = 0x7777;
  const uint64_t set_bytes = 2u << 20;  // stripe_count 2 x 1 MiB objects
  data.layout = {.stripe_unit = 256u << 10, .stripe_count = 2, .object_size = 1u << 20};
  data.pool = d.pool;
  client::FileCacheOptions options;
  options.flush_bytes = 4u << 20;
  options.dirty_bytes_max = 8u << 20;
  std::mutex reports_mu;
  std::vector<uint64_t> reports;
  auto cache = client::FileCache::Create(
      data, &io, &flush_pool, &read_pool, &budget, options,
      [&](uint64_t end, int64_t, int64_t, const client::AttrChanges&) {
        std::lock_guard<std::mutex> lock(reports_mu);
        reports.push_back(end);
        return absl::OkStatus();
      });
  const uint64_t piece = 384u << 10;
  const std::string bytes = RandomBytes(64 * piece + 1000, 91);  // 24 MiB and a bit
  for (uint64_t at = 0; at < bytes.size(); at += piece) {
    REQUIRE(cache->Write(at, absl::string_view(bytes).substr(at, piece), 1).ok());
  }
  REQUIRE(cache->Flush().ok());
  REQUIRE(cache->pending().bytes == 0);
  std::lock_guard<std::mutex> lock(reports_mu);
  INFO("batches reported: " << reports.size());
  REQUIRE(reports.size() >= 3);  // several went in the background
  REQUIRE(reports.back() == bytes.size());
  for (size_t i = 0; i + 1 < reports.size(); ++i) {
    INFO("batch " << i << " ended at " << reports[i]);
    CHECK(reports[i] % set_bytes == 0);
    CHECK(reports[i] < reports[i + 1]);
  }
  auto stored = io.Read(data, 0, bytes.size());
  REQUIRE(stored.ok());
  REQUIRE(*stored == bytes);
}

}  // namespace weft::testing
