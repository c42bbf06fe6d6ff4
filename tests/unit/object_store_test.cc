// ObjectStore on the real file system and LevelDB, in a temporary directory.
#include "osd/store/object_store.h"

#include <catch2/catch.hpp>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/escaping.h"
#include "common/kv/leveldb_store.h"
#include "osd/store/file_io.h"
#include "osd/store/store_format.h"
#include "tests/harness/temp_dir.h"

namespace weft::osd {
namespace {

using testing::TempDir;

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

class StoreFixture {
 public:
  StoreFixture() {
    options_.dir = dir_.path + "/osd";
    options_.sync = false;  // fsync is exercised by the concurrency test
    options_.csum_block_bytes = 4096;
  }
  StoreOptions& options() { return options_; }

  ObjectStore& Open() {
    if (!made_) {
      REQUIRE(ObjectStore::Mkfs(options_, "fsid-1", 3).ok());
      made_ = true;
    }
    store_.reset();
    auto store = ObjectStore::Open(options_);
    REQUIRE(store.ok());
    store_ = std::move(store).value();
    return *store_;
  }
  void Close() { store_.reset(); }
  ObjectStore& store() { return *store_; }

  void Apply(Transaction txn, const std::string& coll = "1.0") {
    absl::Status status = store_->Apply(coll, std::move(txn));
    INFO(status.ToString());
    REQUIRE(status.ok());
  }
  std::string ReadAll(const std::string& oid, const std::string& coll = "1.0") {
    auto data = store_->Read(coll, oid, 0, UINT64_MAX);
    INFO(data.status().ToString());
    REQUIRE(data.ok());
    return *data;
  }
  // The only data file in the store.
  std::string OnlyDataFile() {
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(options_.dir + "/data")) {
      files.push_back(entry.path());
    }
    REQUIRE(files.size() == 1);
    return files[0];
  }

 private:
  TempDir dir_;
  StoreOptions options_;
  bool made_ = false;
  std::unique_ptr<ObjectStore> store_;
};

Transaction WriteTxn(const std::string& oid, uint64_t offset, std::string data) {
  Transaction txn;
  txn.Write(oid, offset, std::move(data));
  return txn;
}

TEST_CASE("Mkfs and Open report clear errors", "[store]") {
  TempDir dir;
  StoreOptions options;
  options.dir = dir.path + "/osd";
  options.sync = false;

  auto missing = ObjectStore::Open(options);
  CHECK(absl::IsNotFound(missing.status()));
  CHECK(missing.status().message().find("does not exist") != absl::string_view::npos);

  std::filesystem::create_directory(options.dir);
  auto not_store = ObjectStore::Open(options);
  CHECK(absl::IsFailedPrecondition(not_store.status()));
  CHECK(not_store.status().message().find("not a weft OSD store") != absl::string_view::npos);

  REQUIRE(ObjectStore::Mkfs(options, "fsid-x", 7).ok());
  CHECK(absl::IsAlreadyExists(ObjectStore::Mkfs(options, "fsid-x", 7)));
  {
    auto store = ObjectStore::Open(options);
    REQUIRE(store.ok());
    CHECK((*store)->superblock().fsid == "fsid-x");
    CHECK((*store)->superblock().osd_id == 7);
    CHECK((*store)->superblock().csum_block_bytes == 16 * 1024);
    CHECK((*store)->superblock().csum_group_blocks == 64);
    CHECK((*store)->superblock().created_ms > 0);
  }
  // Groups of one block are the format before groups existed (format 1),
  // which such a store still writes and reads.
  {
    StoreOptions one = options;
    one.dir = options.dir + "-one";
    one.csum_group_blocks = 1;
    REQUIRE(ObjectStore::Mkfs(one, "fsid-y", 8).ok());
    auto kv = common::LevelDbStore::Open(one.dir + "/meta", common::LevelDbStore::Options());
    REQUIRE(kv.ok());
    const std::string value = *(*kv)->Get(format::SuperblockKey());
    CHECK(value.substr(8, 4) == std::string("\x01\0\0\0", 4));
    kv->reset();
    auto store = ObjectStore::Open(one);
    REQUIRE(store.ok());
    CHECK((*store)->superblock().csum_group_blocks == 1);
  }
  // Corrupt the superblock value with LevelDB directly.
  {
    auto kv = common::LevelDbStore::Open(options.dir + "/meta", common::LevelDbStore::Options());
    REQUIRE(kv.ok());
    std::string value = *(*kv)->Get(format::SuperblockKey());
    value[value.size() / 2] ^= 0x20;
    common::KvWriteBatch batch;
    batch.Put(format::SuperblockKey(), value);
    REQUIRE((*kv)->Write(batch, true).ok());
  }
  auto corrupt = ObjectStore::Open(options);
  CHECK(absl::IsDataLoss(corrupt.status()));
  CHECK(corrupt.status().message().find("corrupt superblock") != absl::string_view::npos);

  StoreOptions bad = options;
  bad.csum_block_bytes = 1000;
  CHECK(absl::IsInvalidArgument(ObjectStore::Open(bad).status()));
  bad = options;
  bad.csum_group_blocks = 0;
  CHECK(absl::IsInvalidArgument(ObjectStore::Mkfs(bad, "fsid-z", 9)));
}

TEST_CASE("Objects of many sizes read back exactly", "[store]") {
  StoreFixture f;
  f.Open();
  const std::vector<size_t> sizes = {0, 1, 4095, 4096, 4097, (4u << 20) + 1};
  for (size_t i = 0; i < sizes.size(); ++i) {
    Transaction txn;
    txn.WriteFull("obj" + std::to_string(i), Pattern(sizes[i], i));
    f.Apply(std::move(txn));
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      const std::string oid = "obj" + std::to_string(i);
      const std::string expect = Pattern(sizes[i], i);
      CHECK(f.ReadAll(oid) == expect);
      CHECK(f.store().Stat("1.0", oid)->size == sizes[i]);
      if (sizes[i] > 10) {
        auto part = f.store().Read("1.0", oid, 3, 7);
        REQUIRE(part.ok());
        CHECK(*part == expect.substr(3, 7));
      }
      auto past_end = f.store().Read("1.0", oid, sizes[i], 10);
      REQUIRE(past_end.ok());
      CHECK(past_end->empty());
      auto short_read = f.store().Read("1.0", oid, sizes[i] / 2, sizes[i]);
      REQUIRE(short_read.ok());
      CHECK(*short_read == expect.substr(sizes[i] / 2));
    }
    f.Open();  // the second pass runs after a reopen
  }
  CHECK(absl::IsNotFound(f.store().Read("1.0", "nope", 0, 1).status()));
  CHECK(absl::IsNotFound(f.store().Stat("1.0", "nope").status()));
  CHECK(f.store().Fsck(/*deep=*/true).ok());
}

// New files are written with O_DIRECT where the file system allows it: from
// the caller's memory when it is aligned (weft-osd's large buffers are), else
// through an aligned copy. Both must store exactly the bytes given, with the
// unaligned tail and at every size around the 4 KiB block.
TEST_CASE("New files hold exactly what was written - from aligned and unaligned memory",
          "[store]") {
  TempDir dir;
  FileIo* io = PosixFileIo();
  constexpr size_t kMax = (1 << 20) + 4096;
  void* raw = nullptr;
  REQUIRE(posix_memalign(&raw, 4096, kMax + 1) == 0);
  std::unique_ptr<char, decltype(&std::free)> mem(static_cast<char*>(raw), &std::free);
  const std::vector<size_t> sizes = {1, 100, 4095, 4096, 4097, 12288, 12289, 1 << 20, kMax};
  int n = 0;
  for (size_t size : sizes) {
    for (size_t shift : {size_t{0}, size_t{1}}) {  // aligned, then one byte off
      const std::string want = Pattern(size, static_cast<uint32_t>(size + shift));
      std::memcpy(mem.get() + shift, want.data(), size);
      const std::string path = dir.path + "/f" + std::to_string(n++);
      auto file = io->OpenFile(path, OpenMode::kCreate);
      REQUIRE(file.ok());
      INFO("size " << size << " shift " << shift);
      REQUIRE((*file)->Write(0, absl::string_view(mem.get() + shift, size)).ok());
      REQUIRE((*file)->Truncate(size).ok());
      // A second piece after the first, as an object written in chunks.
      const std::string more = Pattern(8192, 7);
      std::memcpy(mem.get(), more.data(), more.size());
      const uint64_t at = (size + 4095) / 4096 * 4096;
      REQUIRE((*file)->Write(at, absl::string_view(mem.get(), more.size())).ok());
      file->reset();
      auto back = io->OpenFile(path, OpenMode::kRead);
      REQUIRE(back.ok());
      std::string got;
      REQUIRE((*back)->Read(0, at + more.size(), &got).ok());
      REQUIRE(got.size() == at + more.size());
      CHECK(got.substr(0, size) == want);
      CHECK(got.substr(size, at - size) == std::string(at - size, '\0'));
      CHECK(got.substr(at) == more);
    }
  }
}

// Bytes the file system holds for a file (st_blocks), and its size.
std::pair<uint64_t, uint64_t> Allocated(const std::string& path) {
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return {static_cast<uint64_t>(st.st_blocks) * 512, static_cast<uint64_t>(st.st_size)};
}

TEST_CASE("Preallocate reserves space past the end - without changing the size or the bytes",
          "[store]") {
  TempDir dir;
  const std::string path = dir.path + "/f";
  auto file = PosixFileIo()->OpenFile(path, OpenMode::kCreate);
  REQUIRE(file.ok());
  const std::string head = Pattern(8192, 1);
  REQUIRE((*file)->Write(0, head).ok());
  (*file)->Preallocate(head.size(), 4 << 20);
  CHECK(Allocated(path).first >= head.size() + (4 << 20));
  CHECK(*(*file)->Size() == head.size());
  std::string got;
  REQUIRE((*file)->Read(0, 1 << 20, &got).ok());
  CHECK(got == head);
  // Cutting the file at its size gives back what was reserved past it: the
  // store truncates every file it writes to the object's size.
  REQUIRE((*file)->Truncate(head.size()).ok());
  CHECK(Allocated(path).first <= head.size() + 4096);
  (*file)->Preallocate(0, 0);  // nothing to do
  CHECK(*(*file)->Size() == head.size());
}

// A large new object asks for its space in one piece, unless a chunk of it
// is zeros: those stay holes, and space reserved for them would be lost.
TEST_CASE("Large new objects reserve exactly their space - and holes stay holes", "[store]") {
  constexpr size_t kMiB = 1 << 20;
  StoreFixture f;
  f.Open();
  std::string data = Pattern(4 * kMiB + 100, 5);
  SECTION("dense") {}
  SECTION("its second MiB zeros") { std::fill_n(data.begin() + kMiB, kMiB, '\0'); }
  const bool holed = data[kMiB] == '\0' && data[2 * kMiB - 1] == '\0';
  f.Apply(WriteTxn("big", 0, data));
  CHECK(f.ReadAll("big") == data);
  const auto [allocated, size] = Allocated(f.OnlyDataFile());
  CHECK(size == data.size());
  const uint64_t whole = (data.size() + 4095) / 4096 * 4096;
  if (holed) {
    CHECK(allocated <= whole - kMiB);
  } else {
    CHECK(allocated >= data.size());
    CHECK(allocated <= whole);  // nothing left reserved past the end
  }
  f.Open();
  CHECK(f.ReadAll("big") == data);
  CHECK(f.store().Fsck(true).ok());
}

TEST_CASE("Growing an object reserves space only for bytes it writes", "[store]") {
  constexpr size_t kMiB = 1 << 20;
  StoreFixture f;
  f.Open();
  std::string expect = Pattern(kMiB, 8);
  f.Apply(WriteTxn("o", 0, expect));
  SECTION("appended all through") {
    const std::string more = Pattern(4 * kMiB, 9);
    f.Apply(WriteTxn("o", kMiB, more));
    expect += more;
    const auto [allocated, size] = Allocated(f.OnlyDataFile());
    CHECK(size == expect.size());
    CHECK(allocated >= expect.size());
    CHECK(allocated <= expect.size() + 4096);
  }
  SECTION("a few bytes far past the end") {
    f.Apply(WriteTxn("o", 100 * kMiB, "tail"));
    expect.resize(100 * kMiB, '\0');
    expect += "tail";
    const auto [allocated, size] = Allocated(f.OnlyDataFile());
    CHECK(size == expect.size());
    CHECK(allocated <= kMiB + 2 * 4096);  // the hole holds nothing
  }
  CHECK(f.ReadAll("o") == expect);
  f.Open();
  CHECK(f.ReadAll("o") == expect);
  CHECK(f.store().Fsck(true).ok());
}

TEST_CASE("Large file reads return exactly the file's bytes - at any offset and past the end",
          "[store][direct]") {
  // Reads of 128 KiB or more go around the page cache, into a pooled string
  // when its buffer is aligned and through a bounce buffer otherwise. On
  // glibc's malloc large buffers are never page-aligned, so this binary
  // takes the bounce buffer; store_aligned_test runs this case again with
  // weft-osd's operator new (osd/aligned_new.cc), which takes the pool.
  TempDir dir;
  FileIo* io = PosixFileIo();
  const std::string want = Pattern((4 << 20) + 777, 5);
  const std::string path = dir.path + "/f";
  {
    auto file = io->OpenFile(path, OpenMode::kCreate);
    REQUIRE(file.ok());
    REQUIRE((*file)->Write(0, want).ok());
    REQUIRE((*file)->Truncate(want.size()).ok());
  }
  auto file = io->OpenFile(path, OpenMode::kRead);
  REQUIRE(file.ok());
  const std::vector<uint64_t> offsets = {0, 4096, 16384, 1, 4097, (4 << 20) - 4096, 4 << 20};
  const std::vector<size_t> lengths = {128 << 10, (128 << 10) + 1, (1 << 20) - 1, 4 << 20,
                                       (4 << 20) + 777, 8 << 20};
  // Twice: the second time the reads reuse buffers that held other bytes
  // (ReadBuffers(), as weft-osd gives its replies' buffers back), longer
  // than what they read, none of which may show.
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      for (size_t n : {1 << 20, 4 << 20, (8 << 20) + 8192, 16 << 20}) {
        ReadBuffers().Give(std::string(n, '\xab'));
      }
      CHECK(ReadBuffers().kept_bytes() > 0);
    }
    for (uint64_t offset : offsets) {
      for (size_t length : lengths) {
        INFO("pass " << pass << " offset " << offset << " length " << length);
        std::string got = "stale bytes the read must replace";
        REQUIRE((*file)->Read(offset, length, &got).ok());
        CHECK(got == want.substr(offset, length));
        if (pass == 1) ReadBuffers().Give(std::move(got));
      }
    }
  }
#ifdef WEFT_TEST_ALIGNED_NEW
  // With aligned buffers a read lands in a kept string: the one given here,
  // once the pool holds nothing else.
  while (ReadBuffers().kept_bytes() > 0) ReadBuffers().Take(1 << 20);
  std::string stale((8 << 20) + 8192, '\xab');
  const char* kept = stale.data();
  ReadBuffers().Give(std::move(stale));
  std::string got;
  REQUIRE((*file)->Read(0, 4 << 20, &got).ok());
  CHECK(got.data() == kept);
  CHECK(got == want.substr(0, 4 << 20));
#endif
}

TEST_CASE("Borrowed write data is stored exactly and let go when Apply returns", "[store]") {
  // A primary applies a write from the buffer it sends to its replicas: the
  // store must read it in place, never change it, and keep no reference.
  StoreFixture f;
  ObjectStore& store = f.Open();
  const std::string original = Pattern((1 << 20) + 4097, 11);
  auto owner = std::make_shared<std::string>(original);
  const SharedBytes all(owner, *owner);
  const long held = owner.use_count();  // this test's two
  {
    Transaction txn;
    txn.WriteFull("whole", all);
    f.Apply(std::move(txn));
  }
  CHECK(owner.use_count() == held);
  CHECK(f.ReadAll("whole") == original);

  // Overlapping borrowed pieces in one transaction cut each other; then an
  // extension of a committed object, and an overwrite inside it.
  std::string want(300000, '\0');
  auto put = [&](uint64_t at, size_t from, size_t n) {
    want.resize(std::max<size_t>(want.size(), at + n), '\0');
    want.replace(at, n, original.substr(from, n));
    return all.Sub(from, n);
  };
  {
    Transaction txn;
    txn.Write("pieces", 0, put(0, 0, 300000));
    txn.Write("pieces", 1000, put(1000, 5000, 4096));
    txn.Write("pieces", 299000, put(299000, 7, 9000));
    f.Apply(std::move(txn));
  }
  CHECK(owner.use_count() == held);
  CHECK(f.ReadAll("pieces") == want);
  {
    Transaction txn;
    const uint64_t end = want.size();
    txn.Write("pieces", end, put(end, 100, 200000));
    txn.Write("pieces", 12345, put(12345, 999, 777));
    f.Apply(std::move(txn));
  }
  CHECK(owner.use_count() == held);
  CHECK(f.ReadAll("pieces") == want);
  REQUIRE(store.Flush().ok());  // the overwrite was deferred: now in the file
  CHECK(f.ReadAll("pieces") == want);
  CHECK(*owner == original);
}

TEST_CASE("Small objects keep their data inline and move to a file when they grow", "[store]") {
  StoreFixture f;
  f.options().inline_max_bytes = 64 << 10;
  f.Open();
  const std::string data_dir = f.options().dir + "/data";
  auto files = [&data_dir] {
    return std::distance(std::filesystem::directory_iterator(data_dir),
                         std::filesystem::directory_iterator());
  };
  // 5000 bytes of data and 60000 zeros: inline, without the zeros.
  std::string expect = Pattern(5000, 1) + std::string(60000, '\0');
  f.Apply(WriteTxn("a", 0, expect));
  f.Apply(WriteTxn("b", 0, Pattern(100, 2)), "1.1");
  CHECK(files() == 0);
  CHECK(f.ReadAll("a") == expect);
  CHECK(*f.store().Read("1.0", "a", 4990, 20) == expect.substr(4990, 20));
  CHECK(f.store().Stat("1.0", "a")->size == expect.size());
  // A small overwrite and an extension stay inline.
  f.Apply(WriteTxn("a", 100, "overwrite"));
  expect.replace(100, 9, "overwrite");
  f.Apply(WriteTxn("a", expect.size(), "tail"));
  expect += "tail";
  CHECK(files() == 0);
  CHECK(f.ReadAll("a") == expect);
  // Growing past the limit moves the data to a file.
  f.Apply(WriteTxn("a", 70000, Pattern(3000, 3)));
  expect.resize(70000, '\0');
  expect += Pattern(3000, 3);
  CHECK(files() == 1);
  CHECK(f.ReadAll("a") == expect);
  REQUIRE(f.store().Fsck(true).ok());
  // Shrinking below it brings the data back and retires the file (a spare).
  Transaction shrink;
  shrink.Truncate("a", 3000);
  f.Apply(std::move(shrink));
  expect.resize(3000);
  CHECK(files() == 1);
  CHECK(f.store().spare_files() == 1);
  CHECK(f.ReadAll("a") == expect);
  REQUIRE(f.store().Fsck(true).ok());
  f.Close();
  {
    auto kv = common::LevelDbStore::Open(f.options().dir + "/meta", {});
    REQUIRE(kv.ok());
    auto value = (*kv)->Get(format::InlineKey("1.0", "a"));
    REQUIRE(value.ok());
    CHECK(*value == expect);
  }
  f.Open();
  f.Apply(WriteTxn("zeros", 0, std::string(4096, '\0')));  // stores an empty value
  CHECK(f.ReadAll("zeros") == std::string(4096, '\0'));
  CHECK(f.ReadAll("a") == expect);
  // Remove and RemoveCollection leave no inline keys behind (Fsck checks).
  Transaction remove;
  remove.Remove("a");
  f.Apply(std::move(remove));
  CHECK(absl::IsNotFound(f.store().Read("1.0", "a", 0, 1).status()));
  REQUIRE(f.store().RemoveCollection("1.1").ok());
  REQUIRE(f.store().Fsck(true).ok());
  f.Open();
  CHECK(f.ReadAll("zeros") == std::string(4096, '\0'));
  CHECK(f.store().GetStats().objects == 1);
}

TEST_CASE("Overwrites - extensions - holes and truncates", "[store]") {
  StoreFixture f;
  f.Open();
  std::string expect = Pattern(20000, 1);
  f.Apply(WriteTxn("o", 0, expect));

  SECTION("small overwrite in the middle (deferred)") {
    f.Apply(WriteTxn("o", 5000, "hello"));
    expect.replace(5000, 5, "hello");
    CHECK(f.ReadAll("o") == expect);
  }
  SECTION("overwrite crossing the end extends") {
    const std::string tail = Pattern(9000, 2);
    f.Apply(WriteTxn("o", 15000, tail));
    expect = expect.substr(0, 15000) + tail;
    CHECK(f.ReadAll("o") == expect);
  }
  SECTION("write past the end leaves a zero hole") {
    f.Apply(WriteTxn("o", 50000, "end"));
    expect += std::string(30000, '\0') + "end";
    CHECK(f.ReadAll("o") == expect);
  }
  SECTION("truncate down then up reads zeros, not old bytes") {
    Transaction txn;
    txn.Truncate("o", 100);
    f.Apply(std::move(txn));
    CHECK(f.ReadAll("o") == expect.substr(0, 100));
    Transaction grow;
    grow.Truncate("o", 30000);
    f.Apply(std::move(grow));
    expect = expect.substr(0, 100) + std::string(29900, '\0');
    CHECK(f.ReadAll("o") == expect);
    f.Apply(WriteTxn("o", 10000, "x"));
    expect[10000] = 'x';
    CHECK(f.ReadAll("o") == expect);
  }
  SECTION("truncate and rewrite in one transaction") {
    Transaction txn;
    txn.Truncate("o", 10);
    txn.Write("o", 5000, "abc");
    f.Apply(std::move(txn));
    expect = expect.substr(0, 10) + std::string(4990, '\0') + "abc";
    CHECK(f.ReadAll("o") == expect);
  }
  SECTION("overwrite bigger than deferred_max_bytes rewrites the object") {
    f.Close();
    f.options().deferred_max_bytes = 4096;
    f.Open();
    const std::string big = Pattern(10000, 3);
    f.Apply(WriteTxn("o", 3000, big));
    expect.replace(3000, big.size(), big);
    CHECK(f.ReadAll("o") == expect);
  }
  SECTION("write from zero covering the object replaces it") {
    const std::string whole = Pattern(25000, 4);
    f.Apply(WriteTxn("o", 0, whole));
    expect = whole;
    CHECK(f.ReadAll("o") == expect);
  }
  CHECK(f.store().Fsck(true).ok());
  f.Open();
  CHECK(f.ReadAll("o") == expect);
  CHECK(f.store().Fsck(true).ok());
}

TEST_CASE("Remove deletes data - xattrs and omap and is idempotent", "[store]") {
  StoreFixture f;
  f.Open();
  Transaction txn;
  txn.WriteFull("o", "data");
  txn.SetXattr("o", "a", "1");
  txn.OmapSet("o", {{"k", "v"}});
  f.Apply(std::move(txn));
  Transaction rm;
  rm.Remove("o");
  rm.Remove("never-existed");
  f.Apply(std::move(rm));
  CHECK(absl::IsNotFound(f.store().Stat("1.0", "o").status()));
  CHECK(absl::IsNotFound(f.store().GetXattr("1.0", "o", "a").status()));
  Transaction again;
  again.Remove("o");
  f.Apply(std::move(again));
  // Recreated: no old attributes come back.
  Transaction touch;
  touch.Touch("o");
  f.Apply(std::move(touch));
  CHECK(f.store().GetXattrs("1.0", "o")->empty());
  CHECK(f.store().OmapList("1.0", "o", "", "", 10, nullptr)->empty());
  CHECK(f.ReadAll("o").empty());
  CHECK(f.store().Fsck(true).ok());
}

TEST_CASE("Xattrs", "[store]") {
  StoreFixture f;
  f.Open();
  Transaction txn;
  txn.SetXattr("o", "user.a", "1");
  txn.SetXattr("o", "user.b", std::string("\0\1", 2));
  f.Apply(std::move(txn));
  CHECK(*f.store().GetXattr("1.0", "o", "user.a") == "1");
  CHECK(f.store().Stat("1.0", "o")->size == 0);  // SetXattr creates the object
  Transaction full;
  full.WriteFull("o", "new data");
  full.RmXattr("o", "user.a");
  full.RmXattr("o", "absent");
  f.Apply(std::move(full));
  auto all = f.store().GetXattrs("1.0", "o");
  REQUIRE(all.ok());
  CHECK(*all == std::map<std::string, std::string>{{"user.b", std::string("\0\1", 2)}});
  CHECK(absl::IsNotFound(f.store().GetXattr("1.0", "o", "user.a").status()));
  CHECK(absl::IsNotFound(f.store().GetXattr("1.0", "nope", "user.b").status()));
}

TEST_CASE("Omap set - get - list with prefix and pagination - rm - clear", "[store]") {
  StoreFixture f;
  f.Open();
  std::vector<std::pair<std::string, std::string>> kvs;
  for (int i = 0; i < 25; ++i) {
    kvs.emplace_back("a" + std::to_string(100 + i), "v" + std::to_string(i));
  }
  kvs.emplace_back("b1", "x");
  kvs.emplace_back("b2", "y");
  Transaction txn;
  txn.OmapSet("o", kvs);
  f.Apply(std::move(txn));

  auto got = f.store().OmapGet("1.0", "o", {"a100", "b2", "zz"});
  REQUIRE(got.ok());
  CHECK(*got == std::map<std::string, std::string>{{"a100", "v0"}, {"b2", "y"}});

  std::vector<std::string> seen;
  std::string after;
  bool more = true;
  while (more) {
    auto page = f.store().OmapList("1.0", "o", after, "a", 10, &more);
    REQUIRE(page.ok());
    for (const auto& [k, v] : *page) seen.push_back(k);
    if (!page->empty()) after = page->back().first;
  }
  REQUIRE(seen.size() == 25);
  CHECK(seen.front() == "a100");
  CHECK(seen.back() == "a124");
  CHECK(std::is_sorted(seen.begin(), seen.end()));

  auto b = f.store().OmapList("1.0", "o", "b1", "b", 10, &more);
  REQUIRE(b.ok());
  REQUIRE(b->size() == 1);
  CHECK((*b)[0].first == "b2");
  CHECK_FALSE(more);

  Transaction rm;
  rm.OmapRm("o", {"a100", "b1"});
  f.Apply(std::move(rm));
  CHECK(f.store().OmapList("1.0", "o", "", "", 100, &more)->size() == 25);
  Transaction clear;
  clear.OmapClear("o");
  clear.OmapSet("o", {{"after-clear", "1"}});
  f.Apply(std::move(clear));
  auto rest = f.store().OmapList("1.0", "o", "", "", 100, &more);
  REQUIRE(rest.ok());
  REQUIRE(rest->size() == 1);
  CHECK((*rest)[0].first == "after-clear");
  CHECK(f.store().Fsck(false).ok());
}

TEST_CASE("ListObjects pages through names in byte order", "[store]") {
  StoreFixture f;
  f.Open();
  std::vector<std::string> names = {"a", "a/b", "a/b/c", std::string("a\0b", 3), "b", "z/../x"};
  for (int i = 0; i < 20; ++i) names.push_back("obj" + std::to_string(1000 + i));
  for (const std::string& name : names) {
    Transaction txn;
    txn.WriteFull(name, name);
    f.Apply(std::move(txn));
  }
  Transaction other;
  other.Touch("in-other-collection");
  f.Apply(std::move(other), "1.1");
  std::sort(names.begin(), names.end());

  std::vector<std::string> seen;
  std::string after;
  bool more = true;
  while (more) {
    auto page = f.store().ListObjects("1.0", after, 7, &more);
    REQUIRE(page.ok());
    for (const auto& [name, meta] : *page) {
      seen.push_back(name);
      CHECK(meta.size == name.size());
    }
    if (!page->empty()) after = page->back().first;
  }
  CHECK(seen == names);
  for (const std::string& name : names) CHECK(f.ReadAll(name) == name);
  CHECK(f.store().ListObjects("9.9", "", 10, &more)->empty());
}

TEST_CASE("ListObjects with a name prefix pages through exactly the names that begin with it",
          "[store]") {
  StoreFixture f;
  f.Open();
  const std::vector<std::string> names = {
      "1a", "1a.", "1a.00000000", "1a.00000001", "1a.ffffffffff", "1a0.00000000", "1a/",
      "1b.00000000", "1.00000000", std::string("1a.\0", 4), std::string("1a\0.", 4), "",
      "a"};
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].empty()) continue;
    Transaction txn;
    txn.WriteFull(names[i], "x");
    f.Apply(std::move(txn));
  }
  Transaction other;
  other.Touch("1a.00000002");
  f.Apply(std::move(other), "1.1");
  for (const std::string& prefix : {std::string("1a."), std::string("1a"), std::string("1a\0", 3),
                                   std::string("2"), std::string()}) {
    std::vector<std::string> expect;
    for (const std::string& name : names) {
      if (!name.empty() && name.compare(0, prefix.size(), prefix) == 0) expect.push_back(name);
    }
    std::sort(expect.begin(), expect.end());
    for (uint32_t page_size : {1u, 2u, 100u}) {
      INFO("prefix \"" << absl::CHexEscape(prefix) << "\" page " << page_size);
      std::vector<std::string> seen;
      std::string after;
      bool more = true;
      while (more) {
        auto page = f.store().ListObjects("1.0", after, page_size, &more, prefix);
        REQUIRE(page.ok());
        for (const auto& [name, meta] : *page) seen.push_back(name);
        if (!page->empty()) after = page->back().first;
      }
      CHECK(seen == expect);
    }
  }
  // A start_after before the prefix's names starts at the first of them.
  bool more = false;
  auto from_before = f.store().ListObjects("1.0", "0", 100, &more, "1a.");
  REQUIRE(from_before.ok());
  REQUIRE(!from_before->empty());
  CHECK(from_before->front().first == "1a.");
}

TEST_CASE("Collections - metadata keys and RemoveCollection", "[store]") {
  StoreFixture f;
  f.Open();
  for (const std::string coll : {"1.2a", "1.2", "2.0"}) {
    Transaction txn;
    txn.WriteFull("o", Pattern(5000, 1));
    txn.SetXattr("o", "x", "1");
    txn.PutMeta("info", "pg " + coll);
    txn.PutMeta("log.0001", "e1");
    txn.PutMeta("log.0002", "e2");
    f.Apply(std::move(txn), coll);
  }
  CHECK(*f.store().ListCollections() == std::vector<std::string>{"1.2", "1.2a", "2.0"});
  CHECK(*f.store().GetMeta("1.2", "info") == "pg 1.2");
  CHECK(absl::IsNotFound(f.store().GetMeta("1.2", "nope").status()));
  auto log = f.store().ListMeta("1.2a", "log.");
  REQUIRE(log.ok());
  REQUIRE(log->size() == 2);
  CHECK((*log)[0] == std::make_pair(std::string("log.0001"), std::string("e1")));
  Transaction del;
  del.DeleteMeta("log.0001");
  f.Apply(std::move(del), "1.2a");
  CHECK(f.store().ListMeta("1.2a", "log.")->size() == 1);
  CHECK(f.store().ListMeta("1.2a", "")->size() == 2);

  REQUIRE(f.store().RemoveCollection("1.2").ok());
  REQUIRE(f.store().RemoveCollection("1.2").ok());  // idempotent
  CHECK(*f.store().ListCollections() == std::vector<std::string>{"1.2a", "2.0"});
  CHECK(absl::IsNotFound(f.store().Stat("1.2", "o").status()));
  CHECK(f.store().ListMeta("1.2", "")->empty());
  CHECK(f.ReadAll("o", "1.2a") == Pattern(5000, 1));  // "1.2" is a prefix of "1.2a"
  CHECK(f.store().GetStats().objects == 2);
  CHECK(f.store().Fsck(true).ok());
  f.Open();
  CHECK(f.store().GetStats().objects == 2);
  CHECK(f.store().GetStats().bytes_used == 10000);
  CHECK(f.store().GetStats().fs_total_bytes > 0);
}

// Files in the data directory and how many bytes they hold.
std::pair<size_t, uint64_t> DataFiles(const std::string& dir) {
  size_t files = 0;
  uint64_t bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir + "/data")) {
    ++files;
    bytes += entry.file_size();
  }
  return {files, bytes};
}

TEST_CASE("Data files of removed and rewritten objects are emptied and reused", "[store]") {
  StoreFixture f;
  f.options().spare_keep_bytes = 0;  // spares keep no blocks
  f.Open();
  const std::string dir = f.options().dir;
  for (int i = 0; i < 3; ++i) {
    f.Apply([&] {
      Transaction txn;
      txn.WriteFull("a" + std::to_string(i), Pattern(200 << 10, i));
      return txn;
    }());
  }
  CHECK(DataFiles(dir) == std::make_pair(size_t{3}, uint64_t{600} << 10));
  CHECK(f.store().spare_files() == 0);

  // A removed object's file stays, empty, as a spare.
  Transaction rm;
  rm.Remove("a0");
  f.Apply(std::move(rm));
  CHECK(f.store().spare_files() == 1);
  CHECK(DataFiles(dir) == std::make_pair(size_t{3}, uint64_t{400} << 10));
  CHECK(f.store().Fsck(true).ok());

  // The next new object takes it: no new file, and the old bytes never show
  // through the new object's hole.
  f.Apply(WriteTxn("b", 150 << 10, "tail"));
  CHECK(f.store().spare_files() == 0);
  CHECK(DataFiles(dir).first == 3);
  CHECK(f.ReadAll("b") == std::string(150 << 10, '\0') + "tail");

  // A rewrite takes a fresh file and its old one becomes the spare.
  Transaction rewrite;
  rewrite.WriteFull("a1", Pattern(100 << 10, 7));
  f.Apply(std::move(rewrite));
  CHECK(f.store().spare_files() == 1);
  CHECK(DataFiles(dir).first == 4);
  Transaction again;
  again.WriteFull("a2", Pattern(50 << 10, 8));
  f.Apply(std::move(again));  // takes the spare, leaves its old file as one
  CHECK(f.store().spare_files() == 1);
  CHECK(DataFiles(dir).first == 4);
  CHECK(f.store().Fsck(true).ok());

  // Reopen: unreferenced files are adopted as spares, emptied, even one with
  // bytes in it (left by a crash in the middle of a write).
  f.Close();
  {
    std::ofstream orphan(dir + "/data/" + format::DataFileName(999), std::ios::binary);
    orphan << Pattern(10000, 9);
  }
  f.Open();
  CHECK(f.store().spare_files() == 2);
  CHECK(DataFiles(dir) == std::make_pair(size_t{5}, uint64_t{(100 + 50 + 150) << 10} + 4));
  CHECK(f.store().Fsck(true).ok());
  CHECK(f.ReadAll("a1") == Pattern(100 << 10, 7));
  CHECK(f.ReadAll("a2") == Pattern(50 << 10, 8));
  CHECK(f.ReadAll("b") == std::string(150 << 10, '\0') + "tail");

  // Removing a collection retires its files the same way.
  REQUIRE(f.store().RemoveCollection("1.0").ok());
  CHECK(f.store().spare_files() == 5);
  CHECK(DataFiles(dir) == std::make_pair(size_t{5}, uint64_t{0}));
  CHECK(f.store().Fsck(true).ok());
  for (int i = 0; i < 7; ++i) {
    f.Apply([&] {
      Transaction txn;
      txn.WriteFull("c" + std::to_string(i), Pattern(5000, 20 + i));
      return txn;
    }());
  }
  CHECK(f.store().spare_files() == 0);
  CHECK(DataFiles(dir).first == 7);
  for (int i = 0; i < 7; ++i) CHECK(f.ReadAll("c" + std::to_string(i)) == Pattern(5000, 20 + i));
  CHECK(f.store().Fsck(true).ok());
}

TEST_CASE("Spare files keep no blocks when too little of the file system is available",
          "[store]") {
  StoreFixture f;
  f.options().spare_keep_bytes = 3 << 20;      // the budget would allow it
  f.options().spare_keep_min_avail_pct = 100;  // no file system has that much free
  f.Open();
  f.Apply(WriteTxn("a", 0, Pattern(500 << 10, 1)));
  Transaction rm;
  rm.Remove("a");
  f.Apply(std::move(rm));
  CHECK(f.store().spare_files() == 1);
  CHECK(f.store().spare_bytes() == 0);
  CHECK(DataFiles(f.options().dir) == std::make_pair(size_t{1}, uint64_t{0}));
}

TEST_CASE("Spare files keep their blocks within spare_keep_bytes and never show them", "[store]") {
  StoreFixture f;
  f.options().spare_keep_bytes = 3 << 20;
  // Spares keep blocks only while 20% of the file system is available (by
  // default); this test runs on whatever disk holds the temp dir.
  f.options().spare_keep_min_avail_pct = 0;
  f.Open();
  const std::string dir = f.options().dir;
  for (int i = 0; i < 3; ++i) {
    f.Apply([&] {
      Transaction txn;
      txn.WriteFull("a" + std::to_string(i), Pattern(2200 << 10, i));
      return txn;
    }());
  }
  // The first removed file keeps its 2200 KiB; the second would pass the
  // 3 MiB budget and is emptied.
  for (int i = 0; i < 2; ++i) {
    Transaction rm;
    rm.Remove("a" + std::to_string(i));
    f.Apply(std::move(rm));
  }
  CHECK(f.store().spare_files() == 2);
  CHECK(f.store().spare_bytes() == uint64_t{2200} << 10);
  CHECK(DataFiles(dir) ==
        std::make_pair(size_t{3}, uint64_t{4400} << 10));
  CHECK(f.store().Fsck(true).ok());

  // A new object takes the most recent spare no longer than itself: "c"
  // (250 KiB) the emptied one, not the kept 2200 KiB, which it would have
  // to cut; "b" (2400 KiB, its first MiB zeros: a copy chunk the store
  // leaves as a hole in a new file) the kept one, over the old object's
  // bytes. Neither shows an old byte.
  f.Apply(WriteTxn("c", 250 << 10, "end"));
  CHECK(f.store().spare_files() == 1);
  CHECK(f.store().spare_bytes() == uint64_t{2200} << 10);
  Transaction big;
  big.Write("b", 1100 << 10, "tail");
  big.Truncate("b", 2400 << 10);
  f.Apply(std::move(big));
  CHECK(f.store().spare_files() == 0);
  CHECK(f.store().spare_bytes() == 0);
  CHECK(DataFiles(dir).first == 3);
  const std::string b =
      std::string(1100 << 10, '\0') + "tail" + std::string((1300 << 10) - 4, '\0');
  CHECK(f.ReadAll("b") == b);
  CHECK(f.ReadAll("c") == std::string(250 << 10, '\0') + "end");
  CHECK(f.store().Fsck(true).ok());

  // With no spare short enough, a new object takes the most recent one and
  // cuts it: "d" (1500 KiB, first MiB zeros) into "b"'s file (2400 KiB kept).
  Transaction rm_b;
  rm_b.Remove("b");
  f.Apply(std::move(rm_b));
  CHECK(f.store().spare_bytes() == uint64_t{2400} << 10);
  Transaction shorter;
  shorter.Write("d", 1400 << 10, "mid");
  shorter.Truncate("d", 1500 << 10);
  f.Apply(std::move(shorter));
  CHECK(f.store().spare_files() == 0);
  CHECK(f.store().spare_bytes() == 0);
  CHECK(DataFiles(dir).first == 3);
  CHECK(f.ReadAll("d") ==
        std::string(1400 << 10, '\0') + "mid" + std::string((100 << 10) - 3, '\0'));
  CHECK(f.store().Fsck(true).ok());

  // Reopen: whatever the spares held, Open empties the unreferenced files.
  Transaction rm;
  rm.Remove("a2");
  f.Apply(std::move(rm));
  f.Close();
  f.Open();
  CHECK(f.store().spare_files() == 1);
  CHECK(f.store().spare_bytes() == 0);
  CHECK(f.store().Fsck(true).ok());
  CHECK(f.ReadAll("c") == std::string(250 << 10, '\0') + "end");
}

TEST_CASE("A reserve of empty data files is made ahead and topped up in the background",
          "[store]") {
  StoreFixture f;
  f.options().spare_reserve_files = 8;
  f.options().spare_keep_min_avail_pct = 0;  // removed objects' spares keep their blocks
  f.Open();
  const std::string dir = f.options().dir;
  // Open made the reserve: empty files, which Fsck accepts.
  CHECK(f.store().spare_files() == 8);
  CHECK(DataFiles(dir) == std::make_pair(size_t{8}, uint64_t{0}));
  CHECK(f.store().Fsck(true).ok());

  // New objects take them, and no file is created while half remain.
  auto write = [&](const std::string& oid, size_t bytes, uint32_t seed) {
    Transaction txn;
    txn.WriteFull(oid, Pattern(bytes, seed));
    f.Apply(std::move(txn));
  };
  for (int i = 0; i < 4; ++i) write("a" + std::to_string(i), 64 << 10, i);
  CHECK(f.store().spare_files() == 4);
  CHECK(DataFiles(dir) == std::make_pair(size_t{8}, uint64_t{256} << 10));

  // Below half, the background thread makes the reserve whole again.
  write("a4", 64 << 10, 4);
  for (int i = 0; i < 500 && f.store().spare_files() < 8; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(f.store().spare_files() == 8);
  CHECK(DataFiles(dir) == std::make_pair(size_t{13}, uint64_t{320} << 10));
  CHECK(f.store().Fsck(true).ok());

  // A removed object's file keeps its blocks; a smaller new object takes an
  // empty file from the reserve rather than cut those blocks, a larger one
  // takes the kept file.
  Transaction rm;
  rm.Remove("a0");
  f.Apply(std::move(rm));
  CHECK(f.store().spare_bytes() == uint64_t{64} << 10);
  write("b", 32 << 10, 10);
  CHECK(f.store().spare_bytes() == uint64_t{64} << 10);
  write("c", 100 << 10, 11);
  CHECK(f.store().spare_bytes() == 0);

  // Reopened, the store adopts its spares and reads back every object.
  f.Close();
  f.Open();
  CHECK(f.store().spare_files() >= 8);
  for (int i = 1; i < 5; ++i) CHECK(f.ReadAll("a" + std::to_string(i)) == Pattern(64 << 10, i));
  CHECK(f.ReadAll("b") == Pattern(32 << 10, 10));
  CHECK(f.ReadAll("c") == Pattern(100 << 10, 11));
  CHECK(f.store().Fsck(true).ok());
  f.Close();

  f.options().spare_reserve_files = ObjectStore::kMaxSpareFiles + 1;
  auto refused = ObjectStore::Open(f.options());
  REQUIRE_FALSE(refused.ok());
  CHECK(absl::IsInvalidArgument(refused.status()));
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("spare_reserve_files"));
}

TEST_CASE("Objects of zeros keep no data file until they get data", "[store]") {
  StoreFixture f;
  f.Open();
  const std::string dir = f.options().dir;
  f.Apply(WriteTxn("z", 0, std::string(1 << 20, '\0')));
  Transaction sparse;
  sparse.Truncate("t", 300000);
  f.Apply(std::move(sparse));
  CHECK(DataFiles(dir).first == 0);
  CHECK(f.ReadAll("z") == std::string(1 << 20, '\0'));
  CHECK(f.ReadAll("t") == std::string(300000, '\0'));
  CHECK(f.store().Fsck(true).ok());
  // A write into one moves it to a file, zeros around the new bytes.
  f.Apply(WriteTxn("z", 500000, "data"));
  CHECK(DataFiles(dir).first == 1);
  std::string expect(1 << 20, '\0');
  expect.replace(500000, 4, "data");
  CHECK(f.ReadAll("z") == expect);
  f.Open();
  CHECK(f.ReadAll("z") == expect);
  CHECK(f.ReadAll("t") == std::string(300000, '\0'));
  CHECK(f.store().Fsck(true).ok());
}

TEST_CASE("Limits are rejected and change nothing", "[store]") {
  StoreFixture f;
  f.options().max_object_bytes = 1 << 20;
  f.Open();
  f.Apply(WriteTxn("o", 0, "original"));
  auto expect_rejected = [&](Transaction txn, absl::StatusCode code) {
    txn.Touch("created-by-rejected-txn");
    absl::Status status = f.store().Apply("1.0", std::move(txn));
    INFO(status.ToString());
    CHECK(status.code() == code);
    CHECK(f.ReadAll("o") == "original");
    CHECK(absl::IsNotFound(f.store().Stat("1.0", "created-by-rejected-txn").status()));
  };
  // The valid ops come first: they must not be applied either.
  auto with_valid_prefix = [](auto add_bad) {
    Transaction txn;
    txn.WriteFull("o", "changed");
    txn.SetXattr("o", "ok", "1");
    add_bad(txn);
    return txn;
  };
  expect_rejected(with_valid_prefix([](Transaction& t) { t.Write("o", (1 << 20) - 1, "ab"); }),
                  absl::StatusCode::kOutOfRange);
  expect_rejected(with_valid_prefix([](Transaction& t) { t.Write("o", UINT64_MAX, "ab"); }),
                  absl::StatusCode::kOutOfRange);
  expect_rejected(with_valid_prefix([](Transaction& t) { t.Truncate("o", (1 << 20) + 1); }),
                  absl::StatusCode::kOutOfRange);
  expect_rejected(with_valid_prefix([](Transaction& t) { t.Touch(std::string(4097, 'o')); }),
                  absl::StatusCode::kInvalidArgument);
  expect_rejected(with_valid_prefix([](Transaction& t) { t.Touch(""); }),
                  absl::StatusCode::kInvalidArgument);
  expect_rejected(
      with_valid_prefix([](Transaction& t) { t.SetXattr("o", std::string(256, 'n'), "v"); }),
      absl::StatusCode::kInvalidArgument);
  expect_rejected(
      with_valid_prefix([](Transaction& t) { t.SetXattr("o", "n", std::string(65537, 'v')); }),
      absl::StatusCode::kInvalidArgument);
  expect_rejected(
      with_valid_prefix([](Transaction& t) { t.OmapSet("o", {{std::string(4097, 'k'), "v"}}); }),
      absl::StatusCode::kInvalidArgument);
  expect_rejected(with_valid_prefix([](Transaction& t) {
                    t.OmapSet("o", {{"k", std::string((1 << 20) + 1, 'v')}});
                  }),
                  absl::StatusCode::kInvalidArgument);
  CHECK(absl::IsInvalidArgument(f.store().Apply(std::string(300, 'c'), Transaction())));
  // At the limit is fine.
  Transaction max;
  max.Write("o", (1 << 20) - 2, "ab");
  max.SetXattr("o", std::string(255, 'n'), std::string(65536, 'v'));
  f.Apply(std::move(max));
  CHECK(f.store().Stat("1.0", "o")->size == 1 << 20);
}

TEST_CASE("A flipped byte on disk is DataLoss - never bad data", "[store]") {
  StoreFixture f;
  const bool in_file = GENERATE(true, false);
  INFO((in_file ? "data in a file" : "data inline in the KV"));
  f.options().inline_max_bytes = in_file ? 0 : 64 << 10;
  f.Open();
  const std::string data = Pattern(3 * 4096 + 100, 9);
  f.Apply(WriteTxn("dir/obj", 0, data));
  f.Close();
  if (in_file) {
    std::fstream file(f.OnlyDataFile(), std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(4096 + 17);
    char c;
    file.get(c);
    file.seekp(4096 + 17);
    file.put(static_cast<char>(c ^ 0x01));
  } else {
    REQUIRE(std::filesystem::is_empty(f.options().dir + "/data"));
    auto kv = common::LevelDbStore::Open(f.options().dir + "/meta", {});
    REQUIRE(kv.ok());
    const std::string key = format::InlineKey("1.0", "dir/obj");
    auto value = (*kv)->Get(key);
    REQUIRE(value.ok());
    REQUIRE(*value == data);
    (*value)[4096 + 17] ^= 0x01;
    common::KvWriteBatch batch;
    batch.Put(key, *value);
    REQUIRE((*kv)->Write(batch, true).ok());
  }
  f.Open();
  for (auto [offset, length] : {std::pair<uint64_t, uint64_t>{0, UINT64_MAX}, {4096 + 17, 1},
                                {4000, 200}, {8000, 1000}}) {
    auto read = f.store().Read("1.0", "dir/obj", offset, length);
    INFO(offset << " " << length);
    REQUIRE(absl::IsDataLoss(read.status()));
    const std::string message(read.status().message());
    CHECK(message.find("1.0/dir/obj") != std::string::npos);
    CHECK(message.find("block 1") != std::string::npos);
  }
  // Other blocks still read.
  CHECK(*f.store().Read("1.0", "dir/obj", 0, 4096) == data.substr(0, 4096));
  CHECK(*f.store().Read("1.0", "dir/obj", 8192, 5000) == data.substr(8192));
  CHECK(absl::IsDataLoss(f.store().Fsck(/*deep=*/true)));
  // A small overwrite of the damaged block must not launder it.
  absl::Status status = f.store().Apply("1.0", WriteTxn("dir/obj", 4096, "x"));
  CHECK(absl::IsDataLoss(status));
  // Replacing the object whole repairs it.
  f.Apply(WriteTxn("dir/obj", 0, data));
  CHECK(f.ReadAll("dir/obj") == data);
}

TEST_CASE("A missing block checksum is DataLoss - read by lookups or by a scan", "[store]") {
  StoreFixture f;
  // Checksums one per key (the format before groups), and two blocks per key.
  const uint64_t group = GENERATE(1, 2);
  INFO("csum_group_blocks " << group);
  f.options().csum_group_blocks = static_cast<uint32_t>(group);
  f.Open();
  constexpr uint64_t kB = 4096;  // the fixture's checksum block
  const std::string data = Pattern(8 * kB, 4);  // 8 checksum blocks
  f.Apply(WriteTxn("obj", 0, data));
  // Replaces (or deletes, if `value` is empty) the checksum group holding
  // block b, with the store closed.
  auto set_group = [&f, group](uint64_t b, const std::string& value) {
    f.Close();
    auto kv = common::LevelDbStore::Open(f.options().dir + "/meta", {});
    REQUIRE(kv.ok());
    common::KvWriteBatch batch;
    if (value.empty()) {
      batch.Delete(format::ChecksumKey("1.0", "obj", b / group));
    } else {
      batch.Put(format::ChecksumKey("1.0", "obj", b / group), value);
    }
    REQUIRE((*kv)->Write(batch, true).ok());
    kv->reset();
    f.Open();
  };
  set_group(5, "");
  const uint64_t lost = 5 / group * group;  // the first block without a checksum
  // Up to ObjectStore::kPointLookupGroups groups by lookups, more by a scan.
  for (auto [offset, length] : {std::pair<uint64_t, uint64_t>{5 * kB + 3, 1},
                                {4 * kB, 2 * kB}, {0, UINT64_MAX}, {kB, 6 * kB}}) {
    INFO(offset << " " << length);
    auto read = f.store().Read("1.0", "obj", offset, length);
    REQUIRE(absl::IsDataLoss(read.status()));
    const uint64_t first = std::max(offset / kB, lost);
    CHECK(std::string(read.status().message())
              .find("checksum of block " + std::to_string(first) + " is missing") !=
          std::string::npos);
  }
  CHECK(*f.store().Read("1.0", "obj", 0, lost * kB) == data.substr(0, lost * kB));
  CHECK(*f.store().Read("1.0", "obj", 6 * kB, 100) == data.substr(6 * kB, 100));
  CHECK(!f.store().Fsck(false).ok());
  // An append whose last block lacks its checksum is refused, not blessed.
  set_group(7, "");
  CHECK(absl::IsDataLoss(f.store().Apply("1.0", WriteTxn("obj", 8 * kB - 10, "tail-bytes-x"))));
  CHECK(*f.store().Read("1.0", "obj", 0, kB) == data.substr(0, kB));
  // A group shorter than its blocks lacks the last ones; a value that is not
  // whole checksums is malformed. Either is DataLoss, never unverified bytes.
  if (group == 2) {
    set_group(0, std::string(8, 'x'));  // block 0's only
    CHECK(std::string(f.store().Read("1.0", "obj", kB, 1).status().message())
              .find("checksum of block 1 is missing") != std::string::npos);
    set_group(0, std::string(12, 'x'));
    CHECK(absl::IsDataLoss(f.store().Read("1.0", "obj", 0, 1).status()));
  }
}

TEST_CASE("Many small overwrites trigger deferred flushes", "[store]") {
  StoreFixture f;
  f.options().inline_max_bytes = 0;  // deferred records are for data files
  f.Open();
  std::string expect = Pattern(64 << 10, 5);
  f.Apply(WriteTxn("o", 0, expect));
  // More records than kDeferredTrimRecords: Apply flushes them on the way.
  for (size_t i = 0; i < ObjectStore::kDeferredTrimRecords + 50; ++i) {
    const uint64_t offset = (i * 7919) % (expect.size() - 8);
    const std::string data = "w" + std::to_string(i % 10) + "abcdef";
    f.Apply(WriteTxn("o", offset, data));
    expect.replace(offset, data.size(), data);
  }
  CHECK(f.ReadAll("o") == expect);
  REQUIRE(f.store().Flush().ok());
  f.Open();
  CHECK(f.ReadAll("o") == expect);
  CHECK(f.store().Fsck(true).ok());
}

// Random transactions against a simple model, with reopen and fsck.
TEST_CASE("Random transactions match a model", "[store]") {
  struct Model {
    std::string data;
    std::map<std::string, std::string> xattrs;
  };
  StoreFixture f;
  f.options().deferred_max_bytes = 3000;
  // Files only; and objects moving between inline data and files.
  const uint64_t inline_max = GENERATE(0, 8192);
  // One checksum per key, a few per key (objects span several groups and
  // writes change parts of them), one key per object.
  const uint32_t group = GENERATE(1u, 2u, 64u);
  INFO("inline_max_bytes " << inline_max << " csum_group_blocks " << group);
  f.options().inline_max_bytes = inline_max;
  f.options().csum_group_blocks = group;
  f.Open();
  std::map<std::string, Model> model;
  std::mt19937 rng(1234);
  auto rand = [&rng](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
  for (int round = 0; round < 300; ++round) {
    Transaction txn;
    std::map<std::string, Model> next = model;
    for (int op = 0, ops = 1 + rand(3); op < ops; ++op) {
      const std::string oid = "o" + std::to_string(rand(4));
      const bool exists = next.count(oid) > 0;
      Model& m = next[oid];
      // A third of the offsets on a checksum block boundary (truncates there
      // cut checksum groups short without a partial block).
      const uint64_t offset = rand(3) == 0 ? 4096 * rand(4) : rand(14000);
      const std::string data = Pattern(rand(3) == 0 ? rand(9000) : rand(300), rng());
      switch (rand(6)) {
        case 0: txn.WriteFull(oid, data); m.data = data; break;
        case 1:
          txn.Truncate(oid, offset);
          m.data.resize(offset, '\0');
          break;
        case 2:
          txn.Remove(oid);
          next.erase(oid);
          break;
        case 3: {
          const std::string name = "x" + std::to_string(rand(3));
          if (exists && rand(2) == 0) {
            txn.RmXattr(oid, name);
            m.xattrs.erase(name);
          } else {
            txn.SetXattr(oid, name, data.substr(0, 10));
            m.xattrs[name] = data.substr(0, 10);
          }
          break;
        }
        default:
          txn.Write(oid, offset, data);
          if (!data.empty()) {
            if (m.data.size() < offset + data.size()) m.data.resize(offset + data.size(), '\0');
            m.data.replace(offset, data.size(), data);
          }
          break;
      }
    }
    f.Apply(std::move(txn));
    model = std::move(next);
    if (round % 50 == 49) {
      f.Open();
      REQUIRE(f.store().Fsck(true).ok());
    }
    for (const auto& [oid, m] : model) {
      INFO("round " << round << " oid " << oid);
      REQUIRE(f.ReadAll(oid) == m.data);
      REQUIRE(*f.store().GetXattrs("1.0", oid) == m.xattrs);
    }
    bool more = false;
    REQUIRE(f.store().ListObjects("1.0", "", 100, &more)->size() == model.size());
  }
  CHECK(f.store().Fsck(true).ok());
}

TEST_CASE("Concurrent transactions with fsync", "[store]") {
  StoreFixture f;
  f.options().sync = true;
  f.Open();
  constexpr int kThreads = 4;
  constexpr int kWrites = 15;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&f, t] {
      for (int i = 0; i < kWrites; ++i) {
        Transaction txn;
        // Each thread its own object (new files, group dir sync) ...
        txn.WriteFull("own" + std::to_string(t) + "." + std::to_string(i),
                      Pattern(5000, t * 100 + i));
        // ... and its own slot of a shared object (same-object serialization).
        txn.Write("shared", (t * kWrites + i) * 10, std::string(10, static_cast<char>('a' + t)));
        CHECK(f.store().Apply("1.0", std::move(txn)).ok());
        auto read = f.store().Read("1.0", "shared", 0, UINT64_MAX);
        CHECK(read.ok());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::string expect;
  for (int t = 0; t < kThreads; ++t) {
    expect += std::string(10 * kWrites, static_cast<char>('a' + t));
  }
  CHECK(f.ReadAll("shared") == expect);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kWrites; ++i) {
      CHECK(f.ReadAll("own" + std::to_string(t) + "." + std::to_string(i)) ==
            Pattern(5000, t * 100 + i));
    }
  }
  CHECK(f.store().Fsck(true).ok());
}

}  // namespace
}  // namespace weft::osd
