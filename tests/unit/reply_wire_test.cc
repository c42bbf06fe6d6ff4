// The MDS's replies to and from the wire (mds/reply.h): every field of the
// wire's MetaReply has a place in Reply, a reply comes back from the
// completed-request table as it was kept, and defaults stay off the wire.
#include <catch2/catch.hpp>

#include "common/status/status.h"
#include "mds/reply.h"

namespace weft::mds {
namespace {

pb::Attr WireAttr(uint64_t ino) {
  pb::Attr a;
  a.set_ino(ino);
  a.set_mode(0100640);
  a.set_uid(1000);
  a.set_size(5);
  a.set_version(9);
  a.mutable_layout()->set_stripe_unit(65536);
  a.mutable_layout()->set_stripe_count(1);
  a.mutable_layout()->set_object_size(1 << 22);
  a.mutable_layout()->set_pool(2);
  return a;
}

TEST_CASE("reply wire: every field goes there and back", "[mds]") {
  // A field added to the wire needs a place in Reply, ToWire and FromWire
  // (and a line here).
  REQUIRE(pb::MetaReply::descriptor()->field_count() == 29);
  REQUIRE(pb::DirLease::descriptor()->field_count() == 4);
  pb::MetaReply w;
  *w.mutable_attr() = WireAttr(4096);
  pb::DirEntry* e = w.add_entries();
  e->set_name("a\0b", 3);
  e->set_ino(4097);
  e->set_type(8);
  e->set_cookie(77);
  *e->mutable_attr() = WireAttr(4097);
  w.add_entries()->set_name("no attributes");
  w.set_eof(true);
  w.set_value(std::string("v\0x", 3));
  w.add_names("user.a");
  w.add_names("user.b");
  w.mutable_statfs()->set_bytes_total(1 << 30);
  w.mutable_statfs()->set_name_max(255);
  w.set_replayed(true);
  w.set_unsafe(true);
  w.set_seq(12);
  w.set_durable_seq(11);
  w.set_boot(99);
  w.set_time_ns(-5);
  w.set_created(true);
  pb::DirLease* l = w.add_leases();
  l->set_ino(1);
  l->set_seq(3);
  l->set_lease_ms(30000);
  l->set_searchable(true);
  w.set_attr_authority(true);
  w.set_tid(31);
  w.set_prior_size(1 << 20);
  *w.mutable_replaced() = WireAttr(4098);
  w.set_inline_data("bytes");
  w.set_inline_refused(true);
  *w.add_changed() = WireAttr(4099);
  w.mutable_lock()->set_ino(4096);
  w.mutable_lock()->set_kind(pb::LK_POSIX);
  w.mutable_lock()->set_type(pb::LK_WRITE);
  w.mutable_lock()->set_start(10);
  w.mutable_lock()->set_end(20);
  w.mutable_lock()->set_owner(5);
  w.mutable_lock()->set_pid(6);
  w.mutable_lock()->set_session(7);
  w.set_lock_retry(true);
  pb::DirLease* cap = w.add_attr_caps();
  cap->set_ino(4097);
  cap->set_seq(8);
  cap->set_lease_ms(5000);
  w.set_osd_epoch_barrier(41);
  w.set_write_through(true);
  w.set_buffer_seq(43);
  w.set_append_offset(1 << 21);

  absl::StatusOr<Reply> r = FromWire(w);
  REQUIRE(r.ok());
  CHECK(r->status.ok());
  CHECK(r->attr.ino == 4096);
  CHECK(r->attr.layout.pool == PoolId(2));
  REQUIRE(r->entries.size() == 2);
  CHECK(r->entries[0].name == std::string("a\0b", 3));
  CHECK(r->entries[0].attr.ino == 4097);
  CHECK_FALSE(r->entries[1].has_attr());
  CHECK(r->eof);
  CHECK(r->value == std::string("v\0x", 3));
  CHECK(r->names == std::vector<std::string>{"user.a", "user.b"});
  REQUIRE(r->statfs.has_value());
  CHECK(r->statfs->name_max == 255);
  CHECK(r->leases == std::vector<DirLeaseGrant>{{InodeId(1), 3, 30000, true}});
  CHECK(r->attr_caps == std::vector<AttrCapGrant>{{InodeId(4097), 8, 5000}});
  CHECK(r->osd_epoch_barrier == 41);
  CHECK(r->write_through);
  CHECK(r->buffer_seq == 43);
  CHECK(r->append_offset == (1 << 21));
  CHECK(r->replaced.ino == 4098);
  CHECK(r->inline_data == "bytes");
  REQUIRE(r->changed.size() == 1);
  CHECK(r->changed[0].ino == 4099);
  REQUIRE(r->lock_query.has_value());
  REQUIRE(r->lock_query->conflict.has_value());
  CHECK(r->lock_query->conflict->owner.session == 7);
  CHECK(r->lock_query->conflict->pid == 6);

  pb::MetaReply back;
  ToWire(*r, 31, &back);
  CHECK(back.SerializeAsString() == w.SerializeAsString());
}

TEST_CASE("reply wire: an empty answer stays empty - a failed one carries its errno", "[mds]") {
  pb::MetaReply back;
  ToWire(Reply(), 0, &back);
  CHECK(back.ByteSizeLong() == 0);  // no attr, statfs, replaced or lock on the wire

  Reply failed;
  failed.status = ErrnoError(absl::StatusCode::kNotFound, ENOENT, "no such entry");
  failed.leases.push_back({InodeId(1), 2, 100, true});  // a lookup's ENOENT grants
  ToWire(failed, 4, &back);
  absl::StatusOr<Reply> r = FromWire(back);
  REQUIRE(r.ok());
  CHECK(StatusToErrno(r->status) == ENOENT);
  CHECK(r->leases.size() == 1);
  CHECK(back.tid() == 4);
}

TEST_CASE("reply wire: a lock query with nothing in the way", "[mds]") {
  Reply none;
  none.lock_query = Reply::LockQuery{};
  pb::MetaReply w;
  ToWire(none, 0, &w);
  REQUIRE(w.has_lock());
  CHECK(w.lock().type() == pb::LK_UNLOCK);
  absl::StatusOr<Reply> r = FromWire(w);
  REQUIRE(r.ok());
  REQUIRE(r->lock_query.has_value());
  CHECK_FALSE(r->lock_query->conflict.has_value());
  // A kept reply whose lock does not parse is refused, not half read.
  w.mutable_lock()->set_type(pb::LK_READ);  // inode 0
  CHECK_FALSE(FromWire(w).ok());
}

}  // namespace
}  // namespace weft::mds
