// Attribute values to and from the MDS's wire messages (common/fs/attr_wire.h):
// every field arrives, and a value goes back to the wire as it came.
#include <catch2/catch.hpp>

#include "common/fs/attr_wire.h"

namespace weft::fs {
namespace {

TEST_CASE("attr wire: every field of an attribute reply arrives", "[client]") {
  // A field added to the wire Attr needs a place in fs::Attr, FromWire and ToWire.
  REQUIRE(pb::Attr::descriptor()->field_count() == 19);
  REQUIRE(pb::FileLayout::descriptor()->field_count() == 4);
  pb::Attr w;
  w.set_ino(1);
  w.set_mode(0100644);
  w.set_uid(3);
  w.set_gid(4);
  w.set_size(5);
  w.set_nlink(6);
  w.set_rdev(7);
  w.set_atime_ns(-8);
  w.set_mtime_ns(9);
  w.set_ctime_ns(10);
  w.set_btime_ns(11);
  w.set_version(12);
  w.set_generation(13);
  w.mutable_layout()->set_stripe_unit(65536);
  w.mutable_layout()->set_stripe_count(4);
  w.mutable_layout()->set_object_size(1 << 22);
  w.mutable_layout()->set_pool(2);
  w.set_no_xattrs(true);
  w.set_no_acl(true);
  w.set_allocated(17);
  w.set_searchable_by_all(true);
  w.set_data_inline(true);
  const Attr a = FromWire(w);
  CHECK(a.ino == 1);
  CHECK(a.mode == 0100644);
  CHECK(a.uid == 3);
  CHECK(a.gid == 4);
  CHECK(a.size == 5);
  CHECK(a.nlink == 6);
  CHECK(a.rdev == 7);
  CHECK(a.atime_ns == -8);
  CHECK(a.mtime_ns == 9);
  CHECK(a.ctime_ns == 10);
  CHECK(a.btime_ns == 11);
  CHECK(a.version == 12);
  CHECK(a.generation == 13);
  CHECK(a.layout.stripe.stripe_unit == 65536);
  CHECK(a.layout.stripe.stripe_count == 4);
  CHECK(a.layout.stripe.object_size == (1 << 22));
  CHECK(a.layout.pool == PoolId(2));
  CHECK(a.no_xattrs);
  CHECK(a.no_acl);
  CHECK(a.allocated == 17);
  CHECK(a.searchable_by_all);
  CHECK(a.data_inline);
  pb::Attr back;
  ToWire(a, &back);
  CHECK(back.SerializeAsString() == w.SerializeAsString());
}

TEST_CASE("attr wire: an inode without data objects sends no layout", "[client]") {
  pb::Attr w;
  w.set_ino(1);
  w.set_mode(040755);
  pb::Attr back;
  ToWire(FromWire(w), &back);
  CHECK_FALSE(back.has_layout());
  CHECK(back.SerializeAsString() == w.SerializeAsString());
}

TEST_CASE("attr wire: an entry without attributes has none", "[client]") {
  REQUIRE(pb::DirEntry::descriptor()->field_count() == 5);
  pb::DirEntry w;
  w.set_name("a\0b", 3);  // names are bytes
  w.set_ino(42);
  w.set_type(4);
  w.set_cookie(99);
  DirEntry e = FromWire(w);
  CHECK(e.name == std::string("a\0b", 3));
  CHECK(e.ino == 42);
  CHECK(e.type == 4);
  CHECK(e.cookie == 99);
  CHECK_FALSE(e.has_attr());
  w.mutable_attr()->set_ino(42);
  w.mutable_attr()->set_version(3);
  e = FromWire(w);
  REQUIRE(e.has_attr());
  CHECK(e.attr.version == 3);
  pb::DirEntry back;
  ToWire(e, &back);
  CHECK(back.SerializeAsString() == w.SerializeAsString());
}

TEST_CASE("attr wire: statfs", "[client]") {
  REQUIRE(pb::StatfsReply::descriptor()->field_count() == 6);
  pb::StatfsReply w;
  w.set_bytes_total(1);
  w.set_bytes_avail(2);
  w.set_bytes_used(3);
  w.set_files(4);
  w.set_files_free(5);
  w.set_name_max(255);
  const FsStats s = FromWire(w);
  CHECK(s.bytes_total == 1);
  CHECK(s.bytes_avail == 2);
  CHECK(s.bytes_used == 3);
  CHECK(s.files == 4);
  CHECK(s.files_free == 5);
  CHECK(s.name_max == 255);
  pb::StatfsReply back;
  ToWire(s, &back);
  CHECK(back.SerializeAsString() == w.SerializeAsString());
}

}  // namespace
}  // namespace weft::fs
