// File layouts through the MDS (real processes): the weft.dir.layout and
// weft.file.layout virtual xattrs set, read, inherited, removed, journaled,
// and refused with the errno CephFS gives (see mds/ops/layout.cc).
#include <catch2/catch.hpp>

#include <fcntl.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/harness/cluster.h"
#include "tests/harness/fs_fixture.h"

namespace weft::testing {
namespace {

constexpr char kDefault[] = "stripe_unit=4194304 stripe_count=1 object_size=4194304 pool=fs1_data";
constexpr char kWide[] = "stripe_unit=1048576 stripe_count=4 object_size=16777216 pool=fs1_data";

std::string Get(FsCaller& fs, uint64_t ino, const std::string& name) {
  auto v = fs.Getxattr(ino, name);
  INFO(name << " of " << ino << ": " << v.status());
  REQUIRE(v.ok());
  return *v;
}

void Set(FsCaller& fs, uint64_t ino, const std::string& name, const std::string& value) {
  absl::Status s = fs.Setxattr(ino, name, value);
  INFO(name << "=" << value << " on " << ino << ": " << s);
  REQUIRE(s.ok());
}

TEST_CASE("layouts: dir layouts set - read - inherited down the tree - removed - journaled",
          "[mds][layout]") {
  FsFixture f;
  FsCaller& fs = f.fs();
  const uint64_t root = fs.root();

  // The root always shows the filesystem default; other directories only
  // what was set on them.
  CHECK(Get(fs, root, "weft.dir.layout") == kDefault);
  uint64_t a = Ino(fs.Mkdir(root, "a"));
  uint64_t b = Ino(fs.Mkdir(a, "b"));  // exists before a gets its layout
  CHECK(Errno(fs.Getxattr(a, "weft.dir.layout")) == ENODATA);
  CHECK(Errno(fs.Getxattr(a, "weft.dir.layout.pool")) == ENODATA);
  auto before = fs.Create(a, "before");
  REQUIRE(before.ok());
  CHECK(before->layout().object_size() == 4u << 20);

  Set(fs, a, "weft.dir.layout", "stripe_unit=1M stripe_count=4 object_size=16M pool=fs1_data");
  CHECK(Get(fs, a, "weft.dir.layout") == kWide);
  CHECK(Get(fs, a, "weft.dir.layout.stripe_unit") == "1048576");
  CHECK(Get(fs, a, "weft.dir.layout.stripe_count") == "4");
  CHECK(Get(fs, a, "weft.dir.layout.object_size") == "16777216");
  CHECK(Get(fs, a, "weft.dir.layout.pool") == "fs1_data");
  CHECK(Errno(fs.Getxattr(a, "weft.dir.layout.bogus")) == ENODATA);

  // New files take the nearest ancestor's layout, also below a directory
  // that existed before the layout was set; older files keep theirs.
  auto in_a = fs.Create(a, "f");
  REQUIRE(in_a.ok());
  CHECK(in_a->layout().stripe_unit() == 1u << 20);
  CHECK(in_a->layout().stripe_count() == 4u);
  CHECK(in_a->layout().object_size() == 16u << 20);
  CHECK(Get(fs, in_a->ino(), "weft.file.layout") == kWide);
  CHECK(Get(fs, in_a->ino(), "weft.file.layout.object_size") == "16777216");
  uint64_t in_b = Ino(fs.Create(b, "f"));
  CHECK(Get(fs, in_b, "weft.file.layout") == kWide);
  CHECK(Errno(fs.Getxattr(b, "weft.dir.layout")) == ENODATA);  // inherited, not its own
  uint64_t c = Ino(fs.Mkdir(b, "c"));
  CHECK(Get(fs, Ino(fs.Create(c, "f")), "weft.file.layout") == kWide);
  CHECK(Get(fs, before->ino(), "weft.file.layout") == kDefault);
  CHECK(Get(fs, Ino(fs.Create(root, "top")), "weft.file.layout") == kDefault);

  // A single field starts from the effective (inherited) layout.
  Set(fs, b, "weft.dir.layout.stripe_count", "2");
  CHECK(Get(fs, b, "weft.dir.layout") ==
        "stripe_unit=1048576 stripe_count=2 object_size=16777216 pool=fs1_data");
  CHECK(Get(fs, Ino(fs.Create(c, "g")), "weft.file.layout.stripe_count") == "2");
  // So does a partial layout string.
  Set(fs, c, "weft.dir.layout", "object_size=8M");
  CHECK(Get(fs, c, "weft.dir.layout") ==
        "stripe_unit=1048576 stripe_count=2 object_size=8388608 pool=fs1_data");

  // Survives an MDS crash (journaled like any setxattr).
  f.RestartMds();
  CHECK(Get(fs, a, "weft.dir.layout") == kWide);
  CHECK(Get(fs, c, "weft.dir.layout.object_size") == "8388608");

  // Removing a directory's layout makes it inherit again.
  REQUIRE(fs.Removexattr(b, "weft.dir.layout").ok());
  CHECK(Errno(fs.Getxattr(b, "weft.dir.layout")) == ENODATA);
  CHECK(Errno(fs.Removexattr(b, "weft.dir.layout")) == ENODATA);
  CHECK(Get(fs, Ino(fs.Create(b, "h")), "weft.file.layout") == kWide);
  CHECK(Errno(fs.Removexattr(a, "weft.dir.layout.pool")) == EOPNOTSUPP);
  CHECK(Errno(fs.Removexattr(in_b, "weft.file.layout")) == EOPNOTSUPP);
  CHECK(Errno(fs.Removexattr(in_b, "weft.dir.layout")) == ENODATA);
  // The virtual names are never listed.
  auto names = fs.Listxattr(a);
  REQUIRE(names.ok());
  CHECK(names->empty());
}

TEST_CASE("layouts: file layouts - refused once the file has data - bad values - pools - owners",
          "[mds][layout]") {
  FsFixture f;
  FsCaller& fs = f.fs();
  const uint64_t root = fs.root();
  uint64_t d = Ino(fs.Mkdir(root, "d", 0777));
  uint64_t file = Ino(fs.Create(d, "file"));

  SECTION("a file's layout while it is empty, then fixed") {
    Set(fs, file, "weft.file.layout", "stripe_unit=64K object_size=1M");
    CHECK(Get(fs, file, "weft.file.layout") ==
          "stripe_unit=65536 stripe_count=1 object_size=1048576 pool=fs1_data");
    Set(fs, file, "weft.file.layout.stripe_count", "3");
    auto attr = fs.Getattr(file);
    REQUIRE(attr.ok());
    CHECK(attr->layout().stripe_count() == 3u);  // the attributes carry it to clients
    // Open by this session for writing: still allowed while empty.
    REQUIRE(fs.Open(file, O_WRONLY).ok());
    Set(fs, file, "weft.file.layout.object_size", "2M");
    // Another session writing it: refused, its client would not know.
    auto other_meta = f.cluster->Meta("fs1");
    REQUIRE(other_meta != nullptr);
    FsCaller other(other_meta.get());
    REQUIRE(other.Open(file, O_RDWR).ok());
    CHECK(Errno(fs.Setxattr(file, "weft.file.layout.stripe_count", "1")) == EBUSY);
    REQUIRE(other.Release(file, true).ok());
    Set(fs, file, "weft.file.layout.stripe_count", "1");
    // Data: the layout is fixed (ENOTEMPTY, as CephFS).
    REQUIRE(fs.Written(file, 100).ok());
    CHECK(Errno(fs.Setxattr(file, "weft.file.layout", "stripe_count=2")) == ENOTEMPTY);
    CHECK(Errno(fs.Setxattr(file, "weft.file.layout.pool", "fs1_data")) == ENOTEMPTY);
    CHECK(Get(fs, file, "weft.file.layout") ==
          "stripe_unit=65536 stripe_count=1 object_size=2097152 pool=fs1_data");
    // Truncated to empty, it may change again.
    REQUIRE(fs.Truncate(file, 0).ok());
    Set(fs, file, "weft.file.layout.stripe_count", "2");
  }

  SECTION("wrong inode types and garbage are EINVAL and change nothing") {
    CHECK(Errno(fs.Setxattr(d, "weft.file.layout", "stripe_count=2")) == EINVAL);
    CHECK(Errno(fs.Setxattr(file, "weft.dir.layout", "stripe_count=2")) == EINVAL);
    CHECK(Errno(fs.Getxattr(d, "weft.file.layout")) == ENODATA);
    CHECK(Errno(fs.Getxattr(file, "weft.dir.layout")) == ENODATA);
    uint64_t link = Ino(fs.Symlink(d, "l", "file"));
    CHECK(Errno(fs.Setxattr(link, "weft.file.layout", "stripe_count=2")) == EINVAL);
    for (const std::string& bad : std::vector<std::string>{
             "", "garbage", "stripe_unit", "stripe_unit=1M stripe_unit=2M", "stripe_unit=0",
             "stripe_unit=1000", "stripe_unit=3M object_size=16M", "stripe_unit=8M",
             "object_size=1G", "stripe_count=0", "stripe_count=1000", "pool=nosuch",
             "pool=fs1_meta", "pool=0", "pool=4294967295", "color=blue",
             std::string(60000, 'x'), std::string("pool=fs1_data\0junk", 18)}) {
      INFO("value: " << bad.substr(0, 40));
      absl::Status s = fs.Setxattr(d, "weft.dir.layout", bad);
      CHECK(Errno(s) == EINVAL);
      CHECK(!s.message().empty());
      CHECK(Errno(fs.Setxattr(file, "weft.file.layout", bad)) == EINVAL);
    }
    CHECK(Errno(fs.Setxattr(d, "weft.dir.layout.stripe_unit", "1.5M")) == EINVAL);
    CHECK(Errno(fs.Setxattr(d, "weft.dir.layout.bogus", "1")) == EINVAL);
    CHECK(Errno(fs.Setxattr(d, "weft.dir.layout.pool", "")) == EINVAL);
    auto meta_pool = fs.Setxattr(d, "weft.dir.layout.pool", "fs1_meta");
    CHECK(std::string(meta_pool.message()).find("not a data pool") != std::string::npos);
    auto odd = fs.Setxattr(d, "weft.dir.layout", "stripe_unit=3M object_size=16M");
    CHECK(std::string(odd.message()).find("does not divide") != std::string::npos);
    CHECK(Errno(fs.Getxattr(d, "weft.dir.layout")) == ENODATA);
    CHECK(Get(fs, file, "weft.file.layout") == kDefault);
    CHECK(Errno(fs.Setxattr(d, "weft.dir.rbytes", "1")) == EOPNOTSUPP);
  }

  SECTION("a second data pool by name and by id") {
    CHECK(Errno(fs.Setxattr(d, "weft.dir.layout.pool", "fast")) == EINVAL);
    absl::Status added = f.cluster->AddDataPool("fs1", "fast");
    INFO(added);
    REQUIRE(added.ok());
    Set(fs, d, "weft.dir.layout.pool", "fast");
    CHECK(Get(fs, d, "weft.dir.layout") ==
          "stripe_unit=4194304 stripe_count=1 object_size=4194304 pool=fast");
    auto in_fast = fs.Create(d, "in-fast");
    REQUIRE(in_fast.ok());
    auto client = f.cluster->Client();
    auto fast = client->LookupPool("fast");
    REQUIRE(fast.ok());
    CHECK(in_fast->layout().pool() == fast->value());
    auto data = client->LookupPool("fs1_data");
    REQUIRE(data.ok());
    Set(fs, d, "weft.dir.layout", absl::StrCat("pool=", data->value()));
    CHECK(Get(fs, d, "weft.dir.layout.pool") == "fs1_data");
  }

  SECTION("only the owner or root changes a layout - anyone reads it") {
    FsCaller alice(f.meta.get());
    alice.As(1000, 1000);
    CHECK(Errno(alice.Setxattr(d, "weft.dir.layout.stripe_count", "2")) == EPERM);
    CHECK(Errno(alice.Setxattr(file, "weft.file.layout.stripe_count", "2")) == EPERM);
    CHECK(Errno(alice.Removexattr(root, "weft.dir.layout")) == ENODATA);
    uint64_t mine = Ino(alice.Mkdir(d, "mine"));
    Set(alice, mine, "weft.dir.layout.stripe_count", "2");
    CHECK(Get(alice, mine, "weft.dir.layout.stripe_count") == "2");
    CHECK(Get(alice, file, "weft.file.layout") == kDefault);
    Set(fs, d, "weft.dir.layout.stripe_count", "3");
    CHECK(Errno(alice.Removexattr(d, "weft.dir.layout")) == EPERM);
    REQUIRE(fs.Removexattr(d, "weft.dir.layout").ok());
  }
}

}  // namespace
}  // namespace weft::testing
