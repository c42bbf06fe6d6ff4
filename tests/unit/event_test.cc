// Journal events as domain values and back (mds/journal/event.h): every
// field there and back, inline bytes only where they changed, events the
// MDS wrote before the domain types read and re-encode byte for byte, and a
// record that breaks the contract is refused.
#include <catch2/catch.hpp>

#include "mds/journal/event.h"

namespace weft::mds {
namespace {

fs::FileLayout Layout(uint64_t unit, uint64_t count, uint64_t object, uint64_t pool) {
  fs::FileLayout l;
  l.stripe.stripe_unit = unit;
  l.stripe.stripe_count = count;
  l.stripe.object_size = object;
  l.pool = PoolId(pool);
  return l;
}

Event EveryField() {
  Event ev;
  ev.seq = 42;
  ev.op = "rename";
  Inode file;
  file.ino = InodeId(4096);
  file.mode = 0100644;
  file.size = 3;
  file.version = 7;
  file.parent = InodeId(1);
  file.layout = Layout(65536, 4, 1 << 22, 2);
  file.data_inline = true;
  file.inline_data = std::string("a\0b", 3);
  file.inline_version = 2;
  ev.inodes.push_back(file);
  ev.removed_inodes = {InodeId(4097)};
  ev.dentries.push_back(Dentry{InodeId(1), std::string("n\xff", 2), InodeId(4096), 8});
  ev.removed_dentries.push_back(Dentry{InodeId(1), "old", InodeId(), 0});
  ev.next_ino = 5000;
  ev.sessions.push_back(SessionHeader{SessionId(9), "client-a", 123, false, "client.h.1.2"});
  ev.sessions.push_back(SessionHeader{SessionId(10), "", 0, true});
  ev.session = SessionId(9);
  ev.tid = RequestId(77);
  ev.reply = std::string("\x08\x01", 2);
  ev.oldest_tid = RequestId(70);
  ev.strays_added.push_back(Stray{InodeId(4098), SessionId(9)});
  ev.strays_removed = {InodeId(4099)};
  ev.purges_added.push_back(Purge{InodeId(4097), 1 << 20, Layout(4096, 1, 1 << 22, 2)});
  ev.purges_done = {InodeId(4000)};
  ev.splits.push_back(FragSplit{InodeId(1), 1u << 24});
  ev.cuts_added.push_back(Cut{InodeId(4096), 10, 1 << 21, Layout(65536, 4, 1 << 22, 2)});
  ev.cuts_done = {InodeId(4001)};
  ev.rstat_changes.push_back(RStatChange{InodeId(1), RStatDelta{-5, 1, 0, 99}});
  ev.rstat_moves.push_back(RStatMove{InodeId(300), InodeId(1)});
  ev.rstat_propagated = true;
  return ev;
}

TEST_CASE("journal events: every field goes to the record and back") {
  const Event ev = EveryField();
  const pb::JournalEvent rec = EventRecord(ev);
  // Fails when the stored record gains a field this codec does not know.
  const auto* descriptor = pb::JournalEvent::descriptor();
  CHECK(descriptor->field_count() == 23);
  std::vector<const google::protobuf::FieldDescriptor*> set;
  rec.GetReflection()->ListFields(rec, &set);
  CHECK(set.size() == static_cast<size_t>(descriptor->field_count()));
  CHECK(pb::SessionRec::descriptor()->field_count() == 6);
  CHECK(pb::PurgeRec::descriptor()->field_count() == 3);
  CHECK(pb::TrimRec::descriptor()->field_count() == 4);
  CHECK(pb::DentryRec::descriptor()->field_count() == 4);

  absl::StatusOr<Event> back = EventOf(rec);
  REQUIRE(back.ok());
  CHECK(back->inodes == ev.inodes);
  CHECK(back->dentries == ev.dentries);
  CHECK(back->sessions == ev.sessions);
  CHECK(back->strays_added == ev.strays_added);
  CHECK(back->purges_added == ev.purges_added);
  CHECK(back->cuts_added == ev.cuts_added);
  CHECK(back->rstat_changes == ev.rstat_changes);
  CHECK(*back == ev);
  // And the encoding is stable: the same record again.
  CHECK(EventRecord(*back).SerializeAsString() == rec.SerializeAsString());
}

TEST_CASE("journal events: an inode's inline bytes travel only when present") {
  Event ev;
  ev.seq = 1;
  Inode file;
  file.ino = InodeId(4096);
  file.mode = 0100644;
  file.data_inline = true;  // bytes unchanged: the cache keeps its copy
  ev.inodes.push_back(file);
  const pb::JournalEvent rec = EventRecord(ev);
  REQUIRE(rec.inodes_size() == 1);
  CHECK(rec.inodes(0).data_inline());
  CHECK_FALSE(rec.inodes(0).has_inline_data());
  absl::StatusOr<Event> back = EventOf(rec);
  REQUIRE(back.ok());
  CHECK_FALSE(back->inodes.at(0).inline_data.has_value());
  // Empty bytes that changed (a truncate to 0) are not "unchanged".
  ev.inodes[0].inline_data = "";
  CHECK(EventRecord(ev).inodes(0).has_inline_data());
}

TEST_CASE("journal events: a record written before the domain types reads and re-encodes as it was") {
  // As OpContext::Finish and the rank wrote them directly into the record.
  pb::JournalEvent old;
  old.set_seq(7);
  old.set_op("unlink");
  pb::InodeRec* dir = old.add_inodes();
  dir->set_ino(1);
  dir->set_mode(040755);
  dir->set_nlink(2);
  dir->set_version(3);
  dir->add_frags(0);
  old.add_removed_inodes(4096);
  pb::DentryRec* gone = old.add_removed_dentries();
  gone->set_dir(1);
  gone->set_name("f");
  pb::DentryRec* link = old.add_dentries();
  link->set_dir(1);
  link->set_name("g");
  link->set_ino(4100);
  link->set_type(8);
  old.set_next_ino(4101);
  old.set_session(uint64_t{1} << 40 | 1);
  old.set_tid(5);
  old.set_reply("r");
  old.set_oldest_tid(4);
  old.add_stray_add(4102);
  (*old.mutable_stray_holders())[4102] = uint64_t{1} << 40 | 1;
  pb::PurgeRec* purge = old.add_purge_add();
  purge->set_ino(4096);
  purge->set_size(100);
  purge->mutable_layout()->set_stripe_unit(4096);
  purge->mutable_layout()->set_stripe_count(1);
  purge->mutable_layout()->set_object_size(4 << 20);
  purge->mutable_layout()->set_pool(2);
  pb::RStatDeltaRec* d = old.add_rstat_deltas();
  d->set_dir(1);
  d->set_rfiles(-1);
  d->set_rctime_ns(123);
  pb::RStatMoveRec* m = old.add_rstat_moves();
  m->set_from(300);
  m->set_to(1);
  const std::string bytes = old.SerializeAsString();

  pb::JournalEvent parsed;
  REQUIRE(parsed.ParseFromString(bytes));
  absl::StatusOr<Event> ev = EventOf(parsed);
  REQUIRE(ev.ok());
  CHECK(ev->removed_dentries.at(0).name == "f");
  CHECK(ev->strays_added.at(0).holder.value() == (uint64_t{1} << 40 | 1));
  CHECK(ev->purges_added.at(0).layout.stripe.object_size == (4u << 20));
  CHECK(ev->rstat_changes.at(0).delta.rfiles == -1);
  CHECK(EventRecord(*ev).SerializeAsString() == bytes);

  // A session header and a closing, as SessionOpen and CloseSessionLocked wrote them.
  pb::JournalEvent sessions;
  sessions.set_seq(8);
  sessions.set_op("session_open");
  pb::SessionRec* open = sessions.add_sessions();
  open->set_id(uint64_t{1} << 40 | 2);
  open->set_client("host:1234");
  open->set_opened_ms(1700000000000);
  sessions.add_sessions()->set_id(uint64_t{1} << 40 | 1);
  sessions.mutable_sessions(1)->set_closed(true);
  absl::StatusOr<Event> s = EventOf(sessions);
  REQUIRE(s.ok());
  CHECK(s->sessions.at(1).closed);
  CHECK(EventRecord(*s).SerializeAsString() == sessions.SerializeAsString());
}

TEST_CASE("journal events: a record that breaks the contract is refused as data loss") {
  auto refused = [](const pb::JournalEvent& rec) {
    absl::StatusOr<Event> ev = EventOf(rec);
    return !ev.ok() && absl::IsDataLoss(ev.status());
  };
  pb::JournalEvent inode;
  inode.add_inodes()->set_mode(0100644);  // no number
  CHECK(refused(inode));
  pb::JournalEvent no_dir;
  no_dir.add_dentries()->set_name("x");
  no_dir.mutable_dentries(0)->set_ino(5);
  CHECK(refused(no_dir));
  pb::JournalEvent no_target;
  no_target.add_dentries()->set_dir(1);
  no_target.mutable_dentries(0)->set_name("x");
  CHECK(refused(no_target));
  pb::JournalEvent no_name;
  no_name.add_removed_dentries()->set_dir(1);
  CHECK(refused(no_name));
  pb::JournalEvent purge;
  purge.add_purge_add()->set_size(5);
  CHECK(refused(purge));
  pb::JournalEvent cut;
  cut.add_trim_add()->set_keep(5);
  CHECK(refused(cut));
  // A removal needs no target.
  pb::JournalEvent removal;
  removal.add_removed_dentries()->set_dir(1);
  removal.mutable_removed_dentries(0)->set_name("x");
  CHECK(EventOf(removal).ok());
}

}  // namespace
}  // namespace weft::mds
