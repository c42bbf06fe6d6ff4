// Unit tests for mds/fs/layout.*: the text of the weft.dir.layout and
// weft.file.layout virtual xattrs, parsed, validated and printed.
#include "mds/fs/layout.h"

#include <cerrno>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "common/status/status.h"

namespace weft::mds {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kOsdMax = 128 * kMiB;

// Pools 1 (fs_meta), 2 (fs_data) and 3 (fast) exist; 2 and 3 hold file data.
DataPools Pools() {
  DataPools p;
  p.data_pools = {PoolId(2), PoolId(3)};
  p.names = {{PoolId(1), "fs_meta"}, {PoolId(2), "fs_data"}, {PoolId(3), "fast"}};
  return p;
}

FileLayout Default() {
  FileLayout l;
  l.stripe = {4 * kMiB, 1, 4 * kMiB};
  l.pool = PoolId(2);
  return l;
}

absl::StatusOr<FileLayout> Apply(const std::string& value, const std::string& field = "") {
  return ApplyLayoutText(Default(), field, value, Pools(), kOsdMax);
}

int ErrnoOf(const absl::StatusOr<FileLayout>& s) { return StatusToErrno(s.status()); }

TEST_CASE("layout text: fields in any order and any subset", "[layout]") {
  auto l = Apply("stripe_unit=1M stripe_count=4 object_size=16M pool=fast");
  REQUIRE(l.ok());
  CHECK(l->stripe.stripe_unit == kMiB);
  CHECK(l->stripe.stripe_count == 4);
  CHECK(l->stripe.object_size == 16 * kMiB);
  CHECK(l->pool == PoolId(3));
  CHECK(FormatLayout(*l, Pools()) ==
        "stripe_unit=1048576 stripe_count=4 object_size=16777216 pool=fast");

  l = Apply("  pool=3\tstripe_count=2\n");  // by id, any whitespace
  REQUIRE(l.ok());
  CHECK(l->pool == PoolId(3));
  CHECK(l->stripe.stripe_count == 2);
  CHECK(l->stripe.stripe_unit == 4 * kMiB);  // from the base
  CHECK(l->stripe.object_size == 4 * kMiB);

  l = Apply("object_size=8388608 stripe_unit=64k");
  REQUIRE(l.ok());
  CHECK(l->stripe.object_size == 8 * kMiB);
  CHECK(l->stripe.stripe_unit == 64 * 1024);
  CHECK(l->pool == PoolId(2));
}

TEST_CASE("layout text: single fields", "[layout]") {
  auto l = Apply("2M", "stripe_unit");
  REQUIRE(l.ok());
  CHECK(l->stripe.stripe_unit == 2 * kMiB);
  l = Apply(" 8 ", "stripe_count");
  REQUIRE(l.ok());
  CHECK(l->stripe.stripe_count == 8);
  l = Apply("fast", "pool");
  REQUIRE(l.ok());
  CHECK(l->pool == PoolId(3));
  CHECK(FormatLayoutField(*l, "pool", Pools()) == "fast");
  CHECK(FormatLayoutField(*l, "stripe_unit", Pools()) == "4194304");
  CHECK(FormatLayoutField(*l, "object_size", Pools()) == "4194304");
  CHECK(FormatLayoutField(*l, "stripe_count", Pools()) == "1");
  CHECK(ErrnoOf(Apply("1M", "stripe_size")) == EINVAL);
  CHECK(ErrnoOf(Apply("", "stripe_unit")) == EINVAL);
}

TEST_CASE("layout text: sizes", "[layout]") {
  CHECK(*ParseLayoutSize("4096") == 4096);
  CHECK(*ParseLayoutSize("4K") == 4096);
  CHECK(*ParseLayoutSize("4k") == 4096);
  CHECK(*ParseLayoutSize("3M") == 3 * kMiB);
  CHECK(*ParseLayoutSize("1G") == 1024 * kMiB);
  CHECK(*ParseLayoutSize("0") == 0);
  for (const char* bad : {"", "K", "1.5M", "-1", "+1", "1 M", "1MB", "0x10", "1T",
                          "99999999999999", "2000G"}) {
    INFO(bad);
    CHECK(StatusToErrno(ParseLayoutSize(bad).status()) == EINVAL);
  }
}

TEST_CASE("layout text: garbage is EINVAL", "[layout]") {
  for (const std::string& bad : std::vector<std::string>{
           "", "   ", "garbage", "stripe_unit", "=1M", "stripe_unit=", "stripe_unit=1M=2",
        "stripe_unit=1M stripe_unit=2M", "pool_namespace=x", "stripe_unit=1M,stripe_count=2",
        "stripe_count=two", std::string("stripe_unit=1M\0x", 16), "pool=", "pool=nosuch",
        "pool=-1", "pool=0", "pool=99999999999"}) {
    INFO(bad);
    CHECK(ErrnoOf(Apply(bad)) == EINVAL);
  }
}

TEST_CASE("layout validation: alignment - divisibility - limits - data pools", "[layout]") {
  // stripe_unit: a positive multiple of 4 KiB that divides object_size.
  CHECK(Apply("stripe_unit=4K object_size=4K").ok());
  CHECK(ErrnoOf(Apply("stripe_unit=0")) == EINVAL);
  CHECK(ErrnoOf(Apply("stripe_unit=1000")) == EINVAL);
  CHECK(ErrnoOf(Apply("stripe_unit=12K object_size=16K")) == EINVAL);
  CHECK(ErrnoOf(Apply("stripe_unit=8M object_size=4M")) == EINVAL);
  // stripe_count within [1, 256].
  CHECK(Apply("stripe_count=256").ok());
  CHECK(ErrnoOf(Apply("stripe_count=0")) == EINVAL);
  CHECK(ErrnoOf(Apply("stripe_count=257")) == EINVAL);
  // object_size at most the OSDs' limit, and never over 1 GiB.
  CHECK(Apply("object_size=128M").ok());
  CHECK(ErrnoOf(Apply("object_size=256M")) == EINVAL);
  CHECK(ApplyLayoutText(Default(), "", "object_size=1G", Pools(), 16ull << 30).ok());
  CHECK(ErrnoOf(ApplyLayoutText(Default(), "", "object_size=2G", Pools(), 16ull << 30)) == EINVAL);
  // The pool must be one of this filesystem's data pools.
  auto meta = Apply("pool=fs_meta");
  CHECK(ErrnoOf(meta) == EINVAL);
  CHECK(meta.status().message().find("not a data pool") != std::string::npos);
  auto missing = Apply("pool=77");
  CHECK(ErrnoOf(missing) == EINVAL);
  CHECK(missing.status().message().find("does not exist") != std::string::npos);
  // The message names what is wrong.
  auto bad = Apply("stripe_unit=3M object_size=16M");
  CHECK(bad.status().message().find("does not divide") != std::string::npos);
}

TEST_CASE("layout xattr names", "[layout]") {
  CHECK(ParseLayoutXattrName("weft.dir.layout").target == LayoutTarget::kDir);
  CHECK(ParseLayoutXattrName("weft.dir.layout").field.empty());
  CHECK(ParseLayoutXattrName("weft.file.layout.pool").target == LayoutTarget::kFile);
  CHECK(ParseLayoutXattrName("weft.file.layout.pool").field == "pool");
  CHECK(ParseLayoutXattrName("weft.dir.layoutx").target == LayoutTarget::kNone);
  CHECK(ParseLayoutXattrName("weft.dir.layout.").target == LayoutTarget::kNone);
  CHECK(ParseLayoutXattrName("weft.dir.rbytes").target == LayoutTarget::kNone);
  CHECK(ParseLayoutXattrName("user.weft.dir.layout").target == LayoutTarget::kNone);
  CHECK(ParseLayoutXattrName("weft.dir.layout.bogus").field == "bogus");
  CHECK(!IsLayoutField("bogus"));
  CHECK(IsLayoutField("object_size"));
}

}  // namespace
}  // namespace weft::mds
