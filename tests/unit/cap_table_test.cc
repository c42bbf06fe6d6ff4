// Caps: the MDS's table of them (mds/caps/cap_table.h) and what a client
// learns under its directory leases and attribute caps
// (fuse-client/lib/dir_leases.h). The
// protocol end to end, with real processes, is in
// tests/cluster/fuse_lease_test.cc.
#include <catch2/catch.hpp>

#include <stdio.h>  // RENAME_EXCHANGE
#include <sys/stat.h>

#include <cerrno>
#include <vector>

#include "absl/time/clock.h"
#include "common/posix/acl.h"
#include "common/posix/permission.h"
#include "common/status/status.h"
#include "fuse-client/lib/dir_leases.h"
#include "common/caps/cap_bits.h"
#include "mds/caps/cap_table.h"

namespace weft {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1000);
constexpr absl::Duration kLease = absl::Seconds(5);

using mds::CapTable;
constexpr uint32_t kLs = caps::kLs;
constexpr uint32_t kAttrs = caps::kAttrs;

TEST_CASE("mds caps: a change revokes other holders and waits for them", "[unit][mds]") {
  CapTable t(kLease);
  const uint64_t a = t.Grant(10, /*session=*/1, kLs, kT0);
  const uint64_t b = t.Grant(10, 2, kLs, kT0);
  REQUIRE(a != 0);
  REQUIRE(b != 0);
  CHECK(t.Grant(10, 1, kLs, kT0 + absl::Seconds(1)) == a);  // a refresh keeps the number

  std::vector<CapTable::Revoke> sent;
  absl::Time until = absl::InfiniteFuture();
  // Session 1 changes directory 10: only session 2's lease must go.
  CHECK(t.Conflicts(10, 1, kLs, kT0, &sent, &until));
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].session == 2);
  CHECK(sent[0].seq == b);
  CHECK(sent[0].bits == kLs);
  CHECK(until > kT0 + kLease);  // the MDS waits past what the client trusts
  // Sent once; while it is out nobody else gets the directory.
  sent.clear();
  CHECK(t.Conflicts(10, 1, kLs, kT0, &sent, &until));
  CHECK(sent.empty());
  CHECK(t.Grant(10, 3, kLs, kT0) == 0);
  CHECK(t.Grant(10, 2, kLs, kT0) == 0);
  CHECK(!t.Ack(2, 10, b + 100, kLs));  // a wrong number releases nothing
  CHECK(!t.Ack(2, 10, b, kAttrs));     // nor bits it does not hold
  t.SetWanted(10, 2, caps::kFw);      // an open's file bits (any inode will do here)
  CHECK(!t.Ack(2, 10, b, caps::kFb));  // nor file bits: those follow its opens
  CHECK((t.Issued(10, 2) & caps::kFb) != 0);
  t.SetWanted(10, 2, 0);
  CHECK(t.Ack(2, 10, b, kLs));
  CHECK(!t.Conflicts(10, 1, kLs, kT0, &sent, &until));
  // The change went through: others may hold it again, with a new number.
  const uint64_t b2 = t.Grant(10, 2, kLs, kT0);
  CHECK(b2 > b);
}

TEST_CASE("mds caps: one cap per inode - a revoke names its bits - a bit given again takes a "
          "new number",
          "[unit][mds]") {
  CapTable t(kLease);
  const uint64_t s = t.Grant(10, 1, kLs, kT0);
  REQUIRE(s != 0);
  CHECK(t.Grant(10, 1, kAttrs, kT0) == s);  // more bits on the cap held: its number
  CHECK(t.size() == 1);
  CHECK(t.HeldBy(1) == 1);
  CHECK(t.CountWith(kLs) == 1);
  CHECK(t.CountWith(caps::kAs) == 1);
  CHECK(t.Held(10, 1, kT0) == (kLs | kAttrs));
  // Session 2 changes the attributes of 10: only As Fs are revoked.
  std::vector<CapTable::Revoke> sent;
  absl::Time until = absl::InfiniteFuture();
  CHECK(t.Conflicts(10, 2, kAttrs, kT0, &sent, &until));
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].bits == kAttrs);
  CHECK(sent[0].seq == s);
  // While they are out: Ls may still be refreshed, As Fs granted to nobody.
  CHECK(t.Grant(10, 1, kLs, kT0) == s);
  CHECK(t.Grant(10, 1, kAttrs, kT0) == 0);
  CHECK(t.Grant(10, 3, kAttrs, kT0) == 0);
  CHECK(t.Grant(10, 3, kLs, kT0) != 0);  // not what the change waits for
  CHECK(t.Ack(1, 10, s, kAttrs));
  CHECK(t.Held(10, 1, kT0) == kLs);  // the names stay
  CHECK(t.CountWith(caps::kAs) == 0);
  CHECK(!t.Conflicts(10, 2, kAttrs, kT0, &sent, &until));
  // As Fs again: a new number (a grant of `s` crossing the revoke must not
  // be taken by the client), which the whole cap now carries.
  const uint64_t s2 = t.Grant(10, 1, kAttrs, kT0);
  CHECK(s2 > s);
  CHECK(t.Grant(10, 1, kLs, kT0) == s2);
  // A revoke of both, acknowledged in one.
  sent.clear();
  until = absl::InfiniteFuture();
  CHECK(t.Conflicts(10, 2, kLs | kAttrs, kT0, &sent, &until));
  bool found = false;
  for (const CapTable::Revoke& r : sent) {
    if (r.session != 1) continue;
    found = true;
    CHECK(r.bits == (kLs | kAttrs));
    CHECK(r.seq == s2);
  }
  CHECK(found);
  CHECK(!t.Ack(1, 10, s, kLs | kAttrs));  // the old number is not the cap's
  CHECK(t.Ack(1, 10, s2, kLs | kAttrs));
  CHECK(t.HeldBy(1) == 0);
  t.DropSession(3);
  CHECK(t.size() == 0);
  CHECK(t.CountWith(kLs) == 0);
}

TEST_CASE("mds caps: the heartbeat renews every bit but those being revoked", "[unit][mds]") {
  CapTable t(kLease);
  const uint64_t a = t.Grant(10, 1, kLs | kAttrs, kT0);
  REQUIRE(a != 0);
  REQUIRE(t.Grant(11, 1, kLs, kT0) != 0);
  REQUIRE(t.Grant(10, 2, kLs, kT0) != 0);
  // Session 1 renews at +4 s; session 2 does not.
  t.Renew(1, kT0 + absl::Seconds(4));
  const absl::Time later = kT0 + absl::Seconds(8);  // past every grant's own end
  t.Expire(later);
  CHECK(t.HeldBy(1) == 2);
  CHECK(t.HeldBy(2) == 0);
  CHECK(t.Grant(10, 1, kLs, later) == a);  // alive: a refresh keeps its number
  // A change of directory 10's names by session 3 revokes session 1's Ls,
  // whose end freezes at the renewal's: renewing again does not hold the
  // change back past it.
  std::vector<CapTable::Revoke> sent;
  absl::Time until = absl::InfiniteFuture();
  CHECK(t.Conflicts(10, 3, kLs, later, &sent, &until));
  REQUIRE(sent.size() == 1);
  CHECK(sent[0].session == 1);
  const absl::Time frozen = until;
  CHECK(frozen >= later + kLease);  // the refresh at `later` counts
  t.Renew(1, frozen - absl::Seconds(1));
  sent.clear();
  until = absl::InfiniteFuture();
  CHECK(t.Conflicts(10, 3, kLs, frozen - absl::Milliseconds(1), &sent, &until));
  CHECK(until == frozen);
  CHECK(!t.Conflicts(10, 3, kLs, frozen, &sent, &until));  // ran out: the change goes on
  // The renewal still keeps As Fs on 10 and the lease on 11, which nobody
  // revoked.
  CHECK(t.Held(10, 1, frozen) == kAttrs);
  t.Expire(frozen);
  CHECK(t.HeldBy(1) == 2);
  CHECK(t.CountWith(kLs) == 1);
  // Ls given again after it ran out: a new number.
  CHECK(t.Grant(10, 1, kLs, frozen) > a);
  t.DropSession(1);
  CHECK(t.HeldBy(1) == 0);
  CHECK(t.size() == 0);
}

TEST_CASE("mds caps: a silent holder's cap runs out - the changer keeps its own",
          "[unit][mds]") {
  CapTable t(kLease);
  const uint64_t own = t.Grant(10, 1, kLs | kAttrs, kT0);
  REQUIRE(own != 0);
  REQUIRE(t.Grant(10, 2, kLs, kT0) != 0);
  std::vector<CapTable::Revoke> sent;
  absl::Time until = absl::InfiniteFuture();
  CHECK(t.Conflicts(10, 1, kLs | kAttrs, kT0, &sent, &until));
  REQUIRE(sent.size() == 1);  // session 2's lease, not the changer's bits
  CHECK(sent[0].session == 2);
  CHECK(sent[0].bits == kLs);
  CHECK(t.Held(10, 1, kT0) == (kLs | kAttrs));
  // The changer is granted again under the same number while others' go:
  // it was never asked to give anything back.
  CHECK(t.Grant(10, 1, kLs, kT0) == own);
  CHECK(t.Grant(10, 2, kLs, kT0) == 0);
  CHECK(t.Conflicts(10, 1, kLs | kAttrs, until - absl::Milliseconds(1), &sent, &until));
  CHECK(!t.Conflicts(10, 1, kLs | kAttrs, until, &sent, &until));
  t.Expire(until + kLease);
  CHECK(t.size() == 0);  // nobody renewed: everything ran out

  // Expire() forgets caps nobody refreshed; DropSession forgets a session.
  REQUIRE(t.Grant(20, 1, kLs, kT0) != 0);
  REQUIRE(t.Grant(21, 2, kAttrs, kT0) != 0);
  t.DropSession(2);
  CHECK(t.size() == 1);
  t.Expire(kT0 + 2 * kLease);
  CHECK(t.size() == 0);

  CapTable off(absl::ZeroDuration());
  CHECK(off.Grant(10, 1, kLs, kT0) == 0);
}

TEST_CASE("mds caps: Expire drops what ran out - a renewed session's caps live on - frozen ones go",
          "[unit][mds]") {
  CapTable t(kLease);
  for (uint64_t ino = 100; ino < 110; ++ino) REQUIRE(t.Grant(ino, 1, kLs | kAttrs, kT0) != 0);
  REQUIRE(t.Grant(200, 2, kLs, kT0) != 0);
  REQUIRE(t.Grant(201, 2, kLs, kT0) != 0);
  const absl::Time later = kT0 + 3 * kLease;
  // Session 1 renews; session 2 does not.
  t.Renew(1, later - absl::Seconds(1));
  t.Expire(later);
  CHECK(t.HeldBy(1) == 10);
  CHECK(t.HeldBy(2) == 0);
  CHECK(t.size() == 10);
  // A revoke of session 1's lease on 100 freezes it at its renewal's end;
  // once that passed the lease goes though session 1 still renews, and
  // its attributes stay.
  std::vector<CapTable::Revoke> sent;
  absl::Time until = absl::InfiniteFuture();
  REQUIRE(t.Conflicts(100, 3, kLs, later, &sent, &until));
  REQUIRE(sent.size() == 1);
  t.Renew(1, until - absl::Milliseconds(1));
  t.Expire(until - absl::Milliseconds(1));
  CHECK(t.HeldWith(1, kLs) == 10);
  t.Expire(until + absl::Milliseconds(1));
  CHECK(t.HeldWith(1, kLs) == 9);
  CHECK(t.HeldWith(1, caps::kAs) == 10);
  CHECK(t.Held(100, 1, until + absl::Milliseconds(1)) == kAttrs);
  // Nobody renews any more: everything goes.
  t.Expire(until + 2 * kLease);
  CHECK(t.size() == 0);
}

pb::MetaRequest Req(uint32_t uid) {
  pb::MetaRequest r;
  r.mutable_creds()->set_uid(uid);
  r.mutable_creds()->set_gid(uid);
  return r;
}

pb::Creds Who(uint32_t uid) { return Req(uid).creds(); }

void AddLease(pb::MetaReply* reply, uint64_t ino, uint64_t seq, bool searchable) {
  pb::DirLease* l = reply->add_leases();
  l->set_ino(ino);
  l->set_seq(seq);
  l->set_lease_ms(5000);
  l->set_searchable(searchable);
}

// The client of one session: the stream is up, directory 7 was made by a
// mkdir under lease 3 (in parent 1, lease 2).
struct Client {
  client::DirLeases leases;
  Client() {
    leases.StreamUp(1);
    pb::MetaRequest mk = Req(0);
    mk.mutable_mkdir()->set_parent(1);
    mk.mutable_mkdir()->set_name("d");
    pb::MetaReply reply;
    reply.mutable_attr()->set_ino(7);
    AddLease(&reply, 1, 2, true);
    AddLease(&reply, 7, 3, false);
    leases.Observe(mk, reply, absl::OkStatus(), absl::Now(), leases.epoch());
    // A create in it: searchable for root from now on.
    Create("f", 70);
  }
  void Create(const std::string& name, uint64_t ino, uint64_t seq = 3) {
    pb::MetaRequest r = Req(0);
    r.mutable_create()->set_parent(7);
    r.mutable_create()->set_name(name);
    pb::MetaReply reply;
    reply.mutable_attr()->set_ino(ino);
    AddLease(&reply, 7, seq, true);
    leases.Observe(r, reply, absl::OkStatus(), absl::Now(), leases.epoch());
  }
  std::optional<uint64_t> Known(const std::string& name, uint32_t uid = 0) {
    return leases.Known(7, name, Who(uid), absl::Now());
  }
};

TEST_CASE("client dir leases: a new directory is complete - own changes keep it so",
          "[unit][client]") {
  Client c;
  CHECK(c.Known("f") == 70u);
  CHECK(c.Known("g") == 0u);           // absent, known without the MDS
  CHECK(!c.Known("g", 1000).has_value());  // uid 1000 never searched it: ask the MDS
  CHECK(!c.Known(".").has_value());
  CHECK(c.Known(std::string(255, 'n')) == 0u);
  CHECK(!c.Known(std::string(256, 'n')).has_value());  // ENAMETOOLONG comes from the MDS
  // The parent is not complete: only the name this client made there is known.
  CHECK(c.leases.Known(1, "d", Who(0), absl::Now()) == 7u);
  CHECK(!c.leases.Known(1, "e", Who(0), absl::Now()).has_value());

  pb::MetaRequest un = Req(0);
  un.mutable_unlink()->set_parent(7);
  un.mutable_unlink()->set_name("f");
  pb::MetaReply reply;
  AddLease(&reply, 7, 3, true);
  c.leases.Observe(un, reply, absl::OkStatus(), absl::Now(), c.leases.epoch());
  CHECK(c.Known("f") == 0u);

  pb::MetaRequest mv = Req(0);
  c.Create("a", 71);
  mv.mutable_rename()->set_parent(7);
  mv.mutable_rename()->set_name("a");
  mv.mutable_rename()->set_new_parent(7);
  mv.mutable_rename()->set_new_name("b");
  c.leases.Observe(mv, reply, absl::OkStatus(), absl::Now(), c.leases.epoch());
  CHECK(c.Known("a") == 0u);
  CHECK(c.Known("b") == 71u);

  // RENAME_EXCHANGE keeps both names and swaps what they stand for.
  c.Create("c", 72);
  pb::MetaRequest ex = Req(0);
  ex.mutable_rename()->set_parent(7);
  ex.mutable_rename()->set_name("b");
  ex.mutable_rename()->set_new_parent(7);
  ex.mutable_rename()->set_new_name("c");
  ex.mutable_rename()->set_flags(RENAME_EXCHANGE);
  c.leases.Observe(ex, reply, absl::OkStatus(), absl::Now(), c.leases.epoch());
  CHECK(c.Known("b") == 72u);
  CHECK(c.Known("c") == 71u);
  // With a name this client does not know in a directory whose names it
  // does not all know (1), the name here is known to exist only; which
  // inode it is, the MDS says. The other side now names what b did.
  ex.mutable_rename()->set_new_parent(1);
  ex.mutable_rename()->set_new_name("e");
  c.leases.Observe(ex, reply, absl::OkStatus(), absl::Now(), c.leases.epoch());
  CHECK(!c.Known("b").has_value());
  CHECK(c.leases.Known(1, "e", Who(0), absl::Now()) == 72u);
}

TEST_CASE("client dir leases: names a lookup found are known under its lease - own changes keep them true",
          "[unit][client]") {
  client::DirLeases leases;
  leases.StreamUp(1);
  auto lookup = [&](const std::string& name, uint64_t ino, uint64_t seq) {
    pb::MetaRequest r = Req(0);
    r.mutable_lookup()->set_parent(1);
    r.mutable_lookup()->set_name(name);
    pb::MetaReply reply;
    reply.mutable_attr()->set_ino(ino);
    AddLease(&reply, 1, seq, true);
    leases.Observe(r, reply, absl::OkStatus(), absl::Now(), leases.epoch());
  };
  auto known = [&](const std::string& name) { return leases.Known(1, name, Who(0), absl::Now()); };
  lookup("a", 10, 4);
  lookup("b", 11, 4);
  CHECK(known("a") == 10u);
  CHECK(known("b") == 11u);
  CHECK(!known("c").has_value());  // not complete: nothing else is known
  CHECK(!leases.Known(1, "a", Who(1000), absl::Now()).has_value());  // never searched by 1000

  // This client's own unlink and rename: the names follow, with or without
  // a lease in the reply.
  pb::MetaRequest un = Req(0);
  un.mutable_unlink()->set_parent(1);
  un.mutable_unlink()->set_name("a");
  leases.Observe(un, pb::MetaReply(), absl::OkStatus(), absl::Now(), leases.epoch());
  CHECK(!known("a").has_value());
  pb::MetaRequest mv = Req(0);
  mv.mutable_rename()->set_parent(1);
  mv.mutable_rename()->set_name("b");
  mv.mutable_rename()->set_new_parent(1);
  mv.mutable_rename()->set_new_name("c");
  leases.Observe(mv, pb::MetaReply(), absl::OkStatus(), absl::Now(), leases.epoch());
  CHECK(!known("b").has_value());
  CHECK(known("c") == 11u);

  // A revoke forgets them; a found answer that crossed it teaches nothing.
  leases.Revoke(1, 4);
  CHECK(!known("c").has_value());
  lookup("c", 11, 4);
  CHECK(!known("c").has_value());
  // A lookup whose reply holds no lease on the directory teaches nothing.
  pb::MetaRequest r = Req(0);
  r.mutable_lookup()->set_parent(1);
  r.mutable_lookup()->set_name("d");
  pb::MetaReply bare;
  bare.mutable_attr()->set_ino(12);
  leases.Observe(r, bare, absl::OkStatus(), absl::Now(), leases.epoch());
  CHECK(!known("d").has_value());
  lookup("d", 12, 5);  // a new lease
  CHECK(known("d") == 12u);
}

TEST_CASE("client dir leases: a revoke forgets - a grant that crossed it is ignored",
          "[unit][client]") {
  Client c;
  c.leases.Revoke(7, 3);
  CHECK(!c.Known("g").has_value());
  // A reply sent before the revoke, carrying lease 3, arrives after it.
  c.Create("h", 72, 3);
  CHECK(!c.Known("g").has_value());
  // A new lease (4) does not make the directory complete again, but a
  // lookup's ENOENT under it is remembered.
  pb::MetaRequest lk = Req(0);
  lk.mutable_lookup()->set_parent(7);
  lk.mutable_lookup()->set_name("g");
  pb::MetaReply reply;
  AddLease(&reply, 7, 4, true);
  c.leases.Observe(lk, reply, ErrnoToStatus(ENOENT, "lookup"), absl::Now(), c.leases.epoch());
  CHECK(c.Known("g") == 0u);
  CHECK(!c.Known("zz").has_value());
  // An ENOENT under a lease that is not the one held teaches nothing.
  lk.mutable_lookup()->set_name("old");
  pb::MetaReply stale;
  AddLease(&stale, 7, 3, true);
  c.leases.Observe(lk, stale, ErrnoToStatus(ENOENT, "lookup"), absl::Now(), c.leases.epoch());
  CHECK(!c.Known("old").has_value());
}

// tar gives a directory its mode and may fill it after (a tarball that
// lists directories first): the changer keeps its lease (the MDS revokes
// only the others'), so the names it knows stay known; who may search is
// asked again.
TEST_CASE("client dir leases: an own permission change keeps the names - forgets who may search",
          "[unit][client]") {
  Client c;
  const absl::Time before = absl::Now();
  auto lookup = [&](uint32_t uid, const std::string& name, absl::Time sent) {
    pb::MetaRequest lk = Req(uid);
    lk.mutable_lookup()->set_parent(7);
    lk.mutable_lookup()->set_name(name);
    pb::MetaReply reply;
    AddLease(&reply, 7, 3, true);
    c.leases.Observe(lk, reply, ErrnoToStatus(ENOENT, "lookup"), sent, c.leases.epoch());
  };
  lookup(1000, "g", before);
  REQUIRE(c.Known("g", 1000) == 0u);
  auto change = [&](pb::MetaRequest r, const absl::Status& status) {
    pb::MetaReply reply;
    reply.mutable_attr()->set_ino(7);
    reply.mutable_attr()->set_mode(S_IFDIR | 0700);
    c.leases.Observe(r, reply, status, absl::Now(), c.leases.epoch());
  };
  pb::MetaRequest chmod = Req(0);
  chmod.mutable_setattr()->set_ino(7);
  chmod.mutable_setattr()->set_valid(posix::kSetMode);
  chmod.mutable_setattr()->set_mode(0700);
  change(chmod, ErrnoToStatus(EPERM, "setattr"));  // failed: nothing changed
  CHECK(c.Known("g", 1000) == 0u);
  change(chmod, absl::OkStatus());
  CHECK(!c.Known("g", 1000).has_value());
  CHECK(!c.Known("g").has_value());
  // A search check answered before the change, heard after it, may be the
  // old permissions': it does not count.
  lookup(1000, "g", before);
  CHECK(!c.Known("g", 1000).has_value());
  // One asked after it counts, and the names known under the lease are
  // known again: the directory is still complete.
  lookup(0, "g", absl::Now());
  CHECK(c.Known("f") == 70u);
  CHECK(c.Known("zz") == 0u);
  CHECK(!c.Known("zz", 1000).has_value());

  // Times and other xattrs do not change who may search; an access ACL and
  // an owner do.
  auto forgets = [&](pb::MetaRequest r) {
    change(r, absl::OkStatus());
    const bool forgot = !c.Known("zz").has_value();
    lookup(0, "g", absl::Now());  // asked again: known again
    REQUIRE(c.Known("zz") == 0u);
    return forgot;
  };
  pb::MetaRequest r = Req(0);
  r.mutable_setattr()->set_ino(7);
  r.mutable_setattr()->set_valid(posix::kSetMtime);
  CHECK_FALSE(forgets(r));
  r.mutable_setattr()->set_valid(posix::kSetUid);
  CHECK(forgets(r));
  r.mutable_setxattr()->set_ino(7);
  r.mutable_setxattr()->set_name(std::string(posix::kXattrPosixAclAccess));
  CHECK(forgets(r));
  r.mutable_removexattr()->set_ino(7);
  r.mutable_removexattr()->set_name("user.x");
  CHECK_FALSE(forgets(r));
  r.mutable_removexattr()->set_name(std::string(posix::kXattrPosixAclAccess));
  CHECK(forgets(r));
}

TEST_CASE("client dir leases: expiry - a broken stream - replies from before it", "[unit][client]") {
  Client c;
  CHECK(!c.leases.Known(7, "g", Who(0), absl::Now() + absl::Seconds(6)).has_value());

  const uint64_t before = c.leases.epoch();
  c.leases.DropAll();
  CHECK(!c.Known("g").has_value());
  c.leases.StreamUp(1);
  // A reply to a request sent before the stream came back grants nothing.
  pb::MetaRequest mk = Req(0);
  mk.mutable_mkdir()->set_parent(1);
  mk.mutable_mkdir()->set_name("e");
  pb::MetaReply reply;
  reply.mutable_attr()->set_ino(8);
  AddLease(&reply, 8, 9, false);
  c.leases.Observe(mk, reply, absl::OkStatus(), absl::Now(), before);
  CHECK(c.leases.size() == 0);
  // Sent after it: counted, and trusted for lease_ms from when it was sent.
  const absl::Time sent = absl::Now() - absl::Seconds(4);
  c.leases.Observe(mk, reply, absl::OkStatus(), sent, c.leases.epoch());
  CHECK(c.leases.size() == 1);
  pb::MetaRequest cr = Req(0);
  cr.mutable_create()->set_parent(8);
  cr.mutable_create()->set_name("f");
  pb::MetaReply created;
  created.mutable_attr()->set_ino(80);
  AddLease(&created, 8, 9, true);
  c.leases.Observe(cr, created, absl::OkStatus(), sent, c.leases.epoch());
  CHECK(c.leases.Known(8, "x", Who(0), sent + absl::Milliseconds(4999)) == 0u);
  CHECK(!c.leases.Known(8, "x", Who(0), sent + absl::Seconds(5)).has_value());
}

}  // namespace
TEST_CASE("client attribute caps: trusted until revoked or run out - a crossing grant is ignored",
          "[unit][client]") {
  client::DirLeases leases;
  leases.StreamUp(1);
  const absl::Time sent = absl::Now();
  auto stat = [&](uint64_t seq, absl::Time when, uint64_t epoch) {
    pb::MetaRequest r = Req(0);
    r.mutable_getattr()->set_ino(500);
    pb::MetaReply reply;
    reply.mutable_attr()->set_ino(500);
    reply.mutable_attr()->set_version(seq * 10);
    pb::DirLease* cap = reply.add_attr_caps();
    cap->set_ino(500);
    cap->set_seq(seq);
    cap->set_lease_ms(5000);
    leases.Observe(r, reply, absl::OkStatus(), when, epoch);
  };
  constexpr uint64_t kNewest = 1000;
  stat(4, sent, leases.epoch());
  CHECK(leases.attr_caps() == 1);
  // Attributes older than those the grant came with are not covered by it.
  CHECK(leases.AttrRemaining(500, 39, sent) == absl::ZeroDuration());
  CHECK(leases.AttrRemaining(500, 40, sent) > absl::ZeroDuration());
  CHECK(leases.AttrRemaining(500, kNewest, sent + absl::Seconds(1)) == absl::Seconds(4));
  CHECK(leases.AttrRemaining(500, kNewest, sent + absl::Seconds(5)) == absl::ZeroDuration());
  CHECK(leases.AttrRemaining(501, kNewest, sent) == absl::ZeroDuration());
  // A directory lease on the same number is another thing.
  CHECK(leases.Remaining(500, sent) == absl::ZeroDuration());
  // Revoked: not trusted, and a reply that crossed the revoke (cap 4 again)
  // does not bring it back; a new cap (5) does.
  leases.RevokeAttrs(500, 4);
  CHECK(leases.AttrRemaining(500, kNewest, sent) == absl::ZeroDuration());
  stat(4, sent, leases.epoch());
  CHECK(leases.AttrRemaining(500, kNewest, sent) == absl::ZeroDuration());
  stat(5, sent, leases.epoch());
  CHECK(leases.AttrRemaining(500, kNewest, sent) > absl::ZeroDuration());
  // A late reply with an older cap keeps the newer one.
  stat(3, sent - absl::Seconds(3), leases.epoch());
  CHECK(leases.AttrRemaining(500, kNewest, sent + absl::Seconds(4)) > absl::ZeroDuration());
  // The stream broke: nothing is trusted, and replies from before the next
  // hello grant nothing.
  const uint64_t before = leases.epoch();
  leases.DropAll();
  CHECK(leases.AttrRemaining(500, kNewest, sent) == absl::ZeroDuration());
  leases.StreamUp(1);
  stat(6, sent, before);
  CHECK(leases.AttrRemaining(500, kNewest, sent) == absl::ZeroDuration());
  stat(6, sent, leases.epoch());
  CHECK(leases.AttrRemaining(500, kNewest, sent) > absl::ZeroDuration());
  // A request with an unknown outcome forgets every cap too.
  leases.ForgetAll();
  CHECK(leases.AttrRemaining(500, kNewest, sent) == absl::ZeroDuration());
}

}  // namespace weft

namespace weft {
namespace {

TEST_CASE("client caps: a heartbeat renews them - once the events queued before it are taken",
          "[unit][client]") {
  client::DirLeases leases;
  leases.StreamUp(/*stream=*/7);
  const absl::Time sent = absl::Now();
  pb::MetaRequest r = Req(0);
  r.mutable_getattr()->set_ino(500);
  pb::MetaReply reply;
  reply.mutable_attr()->set_ino(500);
  reply.mutable_attr()->set_version(10);
  pb::DirLease* cap = reply.add_attr_caps();
  cap->set_ino(500);
  cap->set_seq(4);
  cap->set_lease_ms(5000);
  AddLease(&reply, 8, 9, true);
  leases.Observe(r, reply, absl::OkStatus(), sent, leases.epoch());
  const absl::Time late = sent + absl::Seconds(7);  // past the grants' own end
  CHECK(leases.AttrRemaining(500, 10, late) == absl::ZeroDuration());

  // A renewal of another stream, or one sent before everything was
  // dropped, renews nothing.
  leases.Renewed(sent + absl::Seconds(4), leases.epoch(), /*stream=*/6, 1, kLease);
  CHECK(leases.AttrRemaining(500, 10, late) == absl::ZeroDuration());
  // A renewal that needs two more events than were taken counts once they are.
  leases.Renewed(sent + absl::Seconds(4), leases.epoch(), 7, /*events=*/3, kLease);
  CHECK(leases.AttrRemaining(500, 10, late) == absl::ZeroDuration());
  leases.TookEvent();
  CHECK(leases.AttrRemaining(500, 10, late) == absl::ZeroDuration());
  leases.TookEvent();
  CHECK(leases.AttrRemaining(500, 10, late) == absl::Seconds(2));
  CHECK(leases.Remaining(8, late) == absl::Seconds(2));
  // A revoke taken before the renewal counted: not trusted whatever renews.
  leases.RevokeAttrs(500, 4);
  leases.Renewed(sent + absl::Seconds(6), leases.epoch(), 7, 3, kLease);
  CHECK(leases.AttrRemaining(500, 10, late) == absl::ZeroDuration());
  CHECK(leases.Remaining(8, late) == absl::Seconds(4));
  // The stream breaks: nothing is trusted, and the renewal is forgotten.
  const uint64_t before = leases.epoch();
  leases.DropAll();
  leases.StreamUp(8);
  leases.Renewed(sent + absl::Seconds(6), before, 8, 1, kLease);
  leases.Observe(r, reply, absl::OkStatus(), sent, leases.epoch());
  CHECK(leases.Remaining(8, late) == absl::ZeroDuration());
}

TEST_CASE("client caps: a recall gives back the oldest grants - a crossing grant is ignored",
          "[unit][client]") {
  client::DirLeases leases;
  leases.StreamUp(1);
  const absl::Time now = absl::Now();
  // Three stats at three times: caps on 11, 12, 13, granted in that order.
  for (uint64_t ino : {11, 12, 13}) {
    pb::MetaRequest req;
    req.mutable_getattr()->set_ino(ino);
    pb::MetaReply reply;
    reply.mutable_attr()->set_ino(ino);
    reply.mutable_attr()->set_version(1);
    pb::DirLease* cap = reply.add_attr_caps();
    cap->set_ino(ino);
    cap->set_seq(ino * 10);
    cap->set_lease_ms(5000);
    leases.Observe(req, reply, absl::OkStatus(), now + absl::Milliseconds(ino), leases.epoch());
  }
  REQUIRE(leases.attr_caps() == 3);
  const std::vector<pb::LeaseEvent> given = leases.GiveBack(2, now);
  REQUIRE(given.size() == 2);
  CHECK(given[0].ino() == 11);
  CHECK(given[0].seq() == 110);
  CHECK(given[1].ino() == 12);
  for (const pb::LeaseEvent& e : given) {
    CHECK(e.caps() == caps::kAttrs);
    CHECK(e.released());
  }
  CHECK(leases.attr_caps() == 1);
  CHECK(leases.AttrRemaining(11, 1, now) == absl::ZeroDuration());
  CHECK(leases.AttrRemaining(13, 1, now) > absl::ZeroDuration());
  // The grant of seq 110 that crossed the give-back on the wire is not taken.
  pb::MetaRequest req;
  req.mutable_getattr()->set_ino(11);
  pb::MetaReply late;
  late.mutable_attr()->set_ino(11);
  late.mutable_attr()->set_version(1);
  pb::DirLease* cap = late.add_attr_caps();
  cap->set_ino(11);
  cap->set_seq(110);
  cap->set_lease_ms(5000);
  leases.Observe(req, late, absl::OkStatus(), now, leases.epoch());
  CHECK(leases.AttrRemaining(11, 1, now) == absl::ZeroDuration());
  // More wanted than held: all of them, once.
  CHECK(leases.GiveBack(10, now).size() == 1);
  CHECK(leases.GiveBack(10, now).empty());
}

}  // namespace
}  // namespace weft
