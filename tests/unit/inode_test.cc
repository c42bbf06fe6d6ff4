// The metadata core's inode values to and from the stored record
// (mds/inode.h): every field goes there and back, and records written
// before read as they were.
#include <catch2/catch.hpp>

#include "mds/inode.h"

namespace weft::mds {
namespace {

pb::InodeRec EveryField() {
  pb::InodeRec r;
  r.set_ino(4096);
  r.set_mode(0100640);
  r.set_uid(1000);
  r.set_gid(100);
  r.set_size(5);
  r.set_nlink(2);
  r.set_rdev(7);
  r.set_atime_ns(-8);
  r.set_mtime_ns(9);
  r.set_ctime_ns(10);
  r.set_btime_ns(11);
  r.set_version(12);
  r.set_parent(1);
  r.set_symlink("target");
  pb::Xattr* x = r.add_xattrs();
  x->set_name(std::string("user.\xff", 6));  // any bytes
  x->set_value(std::string("v\0w", 3));
  r.mutable_layout()->set_stripe_unit(65536);
  r.mutable_layout()->set_stripe_count(4);
  r.mutable_layout()->set_object_size(1 << 22);
  r.mutable_layout()->set_pool(2);
  r.mutable_dir_layout()->set_stripe_unit(4096);
  r.mutable_dir_layout()->set_stripe_count(1);
  r.mutable_dir_layout()->set_object_size(1 << 20);
  r.mutable_dir_layout()->set_pool(3);
  r.add_frags(1u << 24);
  r.add_frags((1u << 24) | 1);
  r.mutable_rstat()->set_rbytes(20);
  r.mutable_rstat()->set_rfiles(21);
  r.mutable_rstat()->set_rsubdirs(22);
  r.mutable_rstat()->set_rctime_ns(23);
  r.set_generation(3);
  r.set_allocated(0);  // present though zero
  r.set_data_inline(true);
  r.set_inline_data("");  // present though empty: loaded
  r.set_inline_version(24);
  return r;
}

TEST_CASE("inode: every field of the stored record goes there and back", "[mds]") {
  // A field added to InodeRec needs a place in Inode, InodeOf and RecordOf.
  REQUIRE(pb::InodeRec::descriptor()->field_count() == 24);
  REQUIRE(pb::RStat::descriptor()->field_count() == 4);
  const pb::InodeRec r = EveryField();
  const Inode n = InodeOf(r);
  CHECK(n.ino == InodeId(4096));
  CHECK(n.parent == InodeId(1));
  CHECK(n.atime_ns == -8);
  REQUIRE(n.xattrs.size() == 1);
  CHECK(n.xattrs[0].name == std::string("user.\xff", 6));
  CHECK(n.xattrs[0].value == std::string("v\0w", 3));
  CHECK(n.layout.stripe.stripe_count == 4);
  CHECK(n.dir_layout.pool == PoolId(3));
  CHECK(n.frags.size() == 2);
  CHECK(n.rstat == RStat{20, 21, 22, 23});
  CHECK(n.allocated == uint64_t{0});
  CHECK(n.inline_data == std::string());
  CHECK(RecordOf(n).SerializeAsString() == r.SerializeAsString());
}

TEST_CASE("inode: what a record leaves out stays out", "[mds]") {
  pb::InodeRec r;
  r.set_ino(5000);
  r.set_mode(040755);
  r.set_nlink(2);
  const Inode n = InodeOf(r);
  CHECK_FALSE(n.allocated.has_value());    // made before the field: st_blocks from the size
  CHECK_FALSE(n.inline_data.has_value());  // not loaded
  CHECK_FALSE(n.layout.has_value());
  const pb::InodeRec back = RecordOf(n);
  CHECK_FALSE(back.has_allocated());
  CHECK_FALSE(back.has_inline_data());
  CHECK_FALSE(back.has_layout());
  CHECK_FALSE(back.has_dir_layout());
  CHECK_FALSE(back.has_rstat());
  CHECK(back.SerializeAsString() == r.SerializeAsString());
}

}  // namespace
}  // namespace weft::mds
