// The MDS's adapter from the client wire to the core's requests
// (mds/request.h, FromWire): every field arrives, malformed locks are
// refused there, and a lock is always owned by the request's own session.
#include <catch2/catch.hpp>

#include "common/status/status.h"
#include "mds/request.h"

namespace weft::mds {
namespace {

TEST_CASE("request wire: every operation and envelope field has a place", "[mds]") {
  // A field or an operation added to the wire needs a place in mds::Request
  // and in FromWire (and a case here).
  const google::protobuf::Descriptor* d = pb::MetaRequest::descriptor();
  const google::protobuf::OneofDescriptor* ops = d->FindOneofByName("op");
  REQUIRE(ops != nullptr);
  CHECK(static_cast<size_t>(ops->field_count()) + 1 == std::variant_size_v<Operation>);
  CHECK(d->field_count() - ops->field_count() == 8);
  CHECK(pb::SetattrOp::descriptor()->field_count() == 10);
  CHECK(pb::CreateOp::descriptor()->field_count() == 7);
  CHECK(pb::WrittenOp::descriptor()->field_count() == 9);
  CHECK(pb::RenameOp::descriptor()->field_count() == 5);
  CHECK(pb::ReaddirOp::descriptor()->field_count() == 4);
}

TEST_CASE("request wire: the envelope and a create arrive whole", "[mds]") {
  pb::MetaRequest w;
  w.set_session(7);
  w.set_tid(11);
  w.set_oldest_tid(9);
  w.mutable_creds()->set_uid(1000);
  w.mutable_creds()->set_gid(100);
  w.mutable_creds()->add_groups(5);
  w.mutable_creds()->add_groups(6);
  w.mutable_creds()->set_umask(07022);  // only the permission bits count
  w.set_unsafe_ok(true);
  w.set_replay_seq(40);
  w.set_replay_ino(4096);
  w.set_replay_time_ns(-3);
  pb::CreateOp* c = w.mutable_create();
  c->set_parent(1);
  c->set_name(std::string("a\0b", 3));  // bytes as sent: the op refuses it
  c->set_mode(0100640);
  c->set_rdev(12);
  c->set_exclusive(true);
  c->set_open(true);
  c->set_open_flags(02);
  const absl::StatusOr<Request> r = FromWire(w);
  REQUIRE(r.ok());
  CHECK(r->session == SessionId(7));
  CHECK(r->id == RequestId(11));
  CHECK(r->oldest == RequestId(9));
  CHECK(r->cred.uid == 1000);
  CHECK(r->cred.gid == 100);
  CHECK(r->cred.groups == std::vector<uint32_t>{5, 6});
  CHECK(r->umask == 022);
  CHECK(r->unsafe_ok);
  CHECK(r->replay_seq == 40);
  CHECK(r->replay_ino == InodeId(4096));
  CHECK(r->replay_time_ns == -3);
  const req::Create* op = r->As<req::Create>();
  REQUIRE(op != nullptr);
  CHECK(op->parent == InodeId(1));
  CHECK(op->name == std::string("a\0b", 3));
  CHECK(op->mode == 0100640);
  CHECK(op->rdev == 12);
  CHECK(op->exclusive);
  CHECK(op->open);
  CHECK(op->open_flags == 02);
}

TEST_CASE("request wire: a flush report with attributes and inline bytes", "[mds]") {
  pb::MetaRequest w;
  pb::WrittenOp* op = w.mutable_written();
  op->set_ino(5000);
  op->set_end(8192);
  op->set_mtime_ns(77);
  op->set_keep_times(true);
  op->set_allocated_delta(-4096);
  op->set_inline_report(true);
  op->set_append(300);
  pb::InlineExtent* e = op->add_inline_writes();
  e->set_offset(10);
  e->set_data("xyz");
  op->mutable_attrs()->set_valid(pb::SA_MODE | pb::SA_CTIME);
  op->mutable_attrs()->set_mode(0600);
  op->mutable_attrs()->set_ctime_ns(99);
  const absl::StatusOr<Request> r = FromWire(w);
  REQUIRE(r.ok());
  const req::Written* a = r->As<req::Written>();
  REQUIRE(a != nullptr);
  CHECK(a->ino == InodeId(5000));
  CHECK(a->end == 8192);
  CHECK(a->mtime_ns == 77);
  CHECK(a->keep_times);
  CHECK(a->allocated_delta == -4096);
  CHECK(a->inline_report);
  CHECK(a->append == 300);
  REQUIRE(a->inline_writes.size() == 1);
  CHECK(a->inline_writes[0].offset == 10);
  CHECK(a->inline_writes[0].data == "xyz");
  REQUIRE(a->attrs.has_value());
  CHECK(a->attrs->valid == (posix::kSetMode | posix::kSetCtime));
  CHECK(a->attrs->mode == 0600);
  CHECK(a->attrs->ctime_ns == 99);
  // Without attributes on the wire there are none (not an empty change).
  op->clear_attrs();
  CHECK_FALSE(FromWire(w)->As<req::Written>()->attrs.has_value());
}

TEST_CASE("request wire: batched releases and reads keep their order", "[mds]") {
  pb::MetaRequest w;
  w.mutable_release()->set_ino(3);
  w.mutable_release()->set_write(true);
  pb::ReleaseRef* more = w.mutable_release()->add_more();
  more->set_ino(4);
  const absl::StatusOr<Request> r = FromWire(w);
  REQUIRE(r.ok());
  const req::Release* rel = r->As<req::Release>();
  REQUIRE(rel != nullptr);
  REQUIRE(rel->handles.size() == 2);
  CHECK(rel->handles[0].ino == InodeId(3));
  CHECK(rel->handles[0].write);
  CHECK(rel->handles[1].ino == InodeId(4));
  CHECK_FALSE(rel->handles[1].write);

  pb::MetaRequest t;
  t.mutable_atime()->set_strict(true);
  for (uint64_t ino : {9, 8, 9}) {
    pb::AtimeRef* read = t.mutable_atime()->add_reads();
    read->set_ino(ino);
    read->set_atime_ns(static_cast<int64_t>(ino) * 10);
  }
  const absl::StatusOr<Request> a = FromWire(t);
  REQUIRE(a.ok());
  const req::Atime* reads = a->As<req::Atime>();
  REQUIRE(reads != nullptr);
  CHECK(reads->strict);
  REQUIRE(reads->reads.size() == 3);
  CHECK(reads->reads[1].ino == InodeId(8));
  CHECK(reads->reads[2].atime_ns == 90);
}

TEST_CASE("request wire: locks are checked and owned by the caller's session", "[mds]") {
  pb::MetaRequest w;
  w.set_session(42);
  pb::LockOp* op = w.mutable_lock();
  op->set_action(pb::LockOp::GET);
  op->set_wait_ms(250);
  pb::LockInfo* l = op->mutable_lock();
  l->set_ino(500);
  l->set_kind(pb::LK_POSIX);
  l->set_type(pb::LK_WRITE);
  l->set_start(10);
  l->set_end(19);
  l->set_owner(3);
  l->set_pid(1234);
  l->set_session(99);  // another session's name on the wire changes nothing
  const absl::StatusOr<Request> r = FromWire(w);
  REQUIRE(r.ok());
  const req::Lock* lock = r->As<req::Lock>();
  REQUIRE(lock != nullptr);
  CHECK(lock->action == req::Lock::Action::kGet);
  CHECK(lock->wait_ms == 250);
  CHECK(lock->lock.ino == 500);
  CHECK(lock->lock.start == 10);
  CHECK(lock->lock.end == 19);
  CHECK(lock->lock.type == locks::Type::kWrite);
  CHECK(lock->lock.owner == locks::Owner{42, 3});
  CHECK(lock->lock.pid == 1234);

  l->set_start(20);  // past its end
  CHECK(StatusToErrno(FromWire(w).status()) == EINVAL);
  l->set_start(10);
  l->set_ino(0);
  CHECK(StatusToErrno(FromWire(w).status()) == EINVAL);
  l->set_ino(500);
  op->set_action(static_cast<pb::LockOp::Action>(7));
  CHECK(StatusToErrno(FromWire(w).status()) == EINVAL);
}

TEST_CASE("request wire: a request without an operation converts to none", "[mds]") {
  pb::MetaRequest w;
  w.set_session(1);
  const absl::StatusOr<Request> r = FromWire(w);
  REQUIRE(r.ok());
  CHECK(r->Is<std::monostate>());
  CHECK(r->umask == 0);  // no credentials: root, no umask, as before
  CHECK(r->cred.uid == 0);
}

}  // namespace
}  // namespace weft::mds
