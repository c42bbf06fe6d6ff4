// The owners of a rank's state, each alone (no processes, no rank):
// Sessions, Leases, RankLocks, InlineMoves, Trims.
#include <fcntl.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "absl/time/clock.h"
#include "common/status/status.h"
#include "mds/cache/inline_moves.h"
#include "mds/caps/leases.h"
#include "mds/locks/rank_locks.h"
#include "mds/sessions/sessions.h"
#include "mds/trims/trims.h"

namespace weft::mds {
namespace {

Event OpenEvent(uint64_t seq, uint64_t id) {
  Event ev;
  ev.seq = seq;
  ev.sessions.push_back(SessionHeader{SessionId(id), "c", 0, false});
  return ev;
}

TEST_CASE("sessions: completed requests below the client's oldest tid are dropped") {
  Sessions sessions(3, 0);
  sessions.Apply(OpenEvent(1, 77));
  for (uint64_t tid = 1; tid <= 5; ++tid) {
    Event ev;
    ev.seq = 1 + tid;
    ev.session = SessionId(77);
    ev.tid = RequestId(tid);
    ev.oldest_tid = RequestId(tid >= 4 ? 3 : 1);
    ev.reply = "r" + std::to_string(tid);
    sessions.Apply(ev);
  }
  const auto& completed = sessions.Find(SessionId(77))->rec.completed();
  CHECK(completed.size() == 3);
  CHECK(completed.count(3) == 1);
  CHECK(completed.count(2) == 0);
  CHECK(completed.at(5) == "r5");
  CHECK(sessions.Find(SessionId(77))->completed_seq.at(5) == 6);
}

TEST_CASE("sessions: ids only grow - also past closed and loaded ones") {
  Sessions sessions(1, 0);
  const SessionId first = sessions.TakeId();
  CHECK(first.value() == (uint64_t{1} << 40) + 1);
  CHECK(first.fs() == 1);
  sessions.Apply(OpenEvent(1, first.value() + 10));
  Event close;
  close.seq = 2;
  close.sessions.push_back(SessionHeader{SessionId(first.value() + 10), "", 0, /*closed=*/true});
  sessions.Apply(close);
  CHECK(sessions.Find(SessionId(first.value() + 10)) == nullptr);
  CHECK(sessions.TakeId().value() == first.value() + 11);
  FlushBatch batch;
  sessions.TakeDirty(&batch);
  const ObjectUpdate& u = batch.updates.at(TableObject(1, 0, "sessions"));
  CHECK(u.rm == std::vector<std::string>{SessionKey(SessionId(first.value() + 10))});
  Sessions reloaded(1, 0);
  pb::SessionRec rec;
  rec.set_id(first.value() + 40);
  reloaded.LoadTable({{SessionKey(SessionId(rec.id())), rec.SerializeAsString()}});
  CHECK(reloaded.TakeId().value() == first.value() + 41);
}

TEST_CASE("sessions: the holder of an open file is the lowest session id") {
  Sessions sessions(1, 0);
  for (uint64_t id : {30, 10, 20}) {
    sessions.Apply(OpenEvent(id, id));
    sessions.Opened(SessionId(id), 500, id == 20);
  }
  CHECK(sessions.OtherHolder(500, SessionId(), false) == SessionId(10));
  CHECK(sessions.OtherHolder(500, SessionId(10), false) == SessionId(20));
  CHECK(sessions.OtherHolder(500, SessionId(), true) == SessionId(20));
  CHECK(sessions.OtherHolder(500, SessionId(20), true).value() == 0);
  CHECK(sessions.HasOpen(SessionId(30), 500, false));
  CHECK_FALSE(sessions.HasOpen(SessionId(30), 500, true));
}

// A request of `session`, as the adapter hands it to the rank.
Request Of(uint64_t session, Operation op) {
  Request r;
  r.session = SessionId(session);
  r.op = std::move(op);
  return r;
}

Request Mkdir(uint64_t session, uint64_t parent) {
  return Of(session, req::Mkdir{InodeId(parent), "x", 0755});
}

TEST_CASE("leases: a change revokes other holders' leases and waits for their acks") {
  Leases leases(absl::Seconds(5));
  const absl::Time now = absl::FromUnixSeconds(1000);
  const uint64_t gen = leases.OpenStream(SessionId(1));
  leases.OpenStream(SessionId(2));
  const Request lookup = Of(1, req::Lookup{InodeId(100), "x"});
  std::vector<DirLeaseGrant> granted;
  leases.Grant(lookup, Reply(), now, &granted);
  REQUIRE(granted.size() == 1);
  CHECK(leases.dir_lease_count() == 1);
  std::deque<pb::LeaseEvent> events;
  REQUIRE(leases.TakeEvents(SessionId(1), gen, &events));
  CHECK(events.size() == 1);
  CHECK(events[0].hello());
  // Session 2 changes the directory: session 1 must give its lease back.
  absl::Time until = absl::InfiniteFuture();
  CHECK(leases.Revoke(Mkdir(2, 100), now, &until));
  CHECK(until > now);
  events.clear();
  REQUIRE(leases.TakeEvents(SessionId(1), gen, &events));
  REQUIRE(events.size() == 1);
  CHECK(events[0].ino() == 100);
  CHECK(events[0].seq() == granted[0].seq);
  // No new grant to anyone while the revoke is out.
  granted.clear();
  leases.Grant(lookup, Reply(), now, &granted);
  CHECK(granted.empty());
  const uint64_t seen = leases.returns();
  pb::LeaseAckRequest ack;
  ack.set_session(1);
  *ack.add_acks() = events[0];
  leases.Ack(SessionId(1), ack);
  CHECK(leases.returns() != seen);
  CHECK_FALSE(leases.Revoke(Mkdir(2, 100), now, &until));
  // A session's own change revokes nothing of its own.
  CHECK_FALSE(leases.Revoke(Mkdir(1, 100), now, &until));
}

TEST_CASE("leases: a holder that never acks is waited for until its lease runs out") {
  Leases leases(absl::Seconds(5));
  const absl::Time now = absl::FromUnixSeconds(1000);
  leases.OpenStream(SessionId(1));
  const Request readdir = Of(1, req::Readdir{InodeId(100)});
  std::vector<DirLeaseGrant> granted;
  leases.Grant(readdir, Reply(), now, &granted);
  absl::Time until = absl::InfiniteFuture();
  REQUIRE(leases.Revoke(Mkdir(2, 100), now, &until));
  CHECK(until >= now + absl::Seconds(5));
  CHECK_FALSE(leases.Revoke(Mkdir(2, 100), until + absl::Milliseconds(1), &until));
}

TEST_CASE("leases: writes are recalled from other writers - once - and answered by acks") {
  Leases leases(absl::Seconds(5));
  Sessions sessions(1, 0);
  uint64_t gens[3] = {0, 0, 0};
  for (uint64_t id : {1, 2}) {
    sessions.Apply(OpenEvent(id, id));
    gens[id] = leases.OpenStream(SessionId(id));
  }
  sessions.Opened(SessionId(1), 500, /*write=*/true);
  leases.NoteOpen(SessionId(1), 500, sessions.Find(SessionId(1)));
  CHECK(leases.HasWriters());
  Request stat = Of(2, req::Getattr{InodeId(500)});
  Reply reply;
  reply.attr.ino = 500;
  absl::flat_hash_set<Leases::RecallKey> recalled, held;
  std::vector<Leases::RecallKey> wanted =
      leases.Recall(stat, reply, {}, {}, sessions, &recalled, &held);
  REQUIRE(wanted.size() == 1);
  CHECK_FALSE(leases.Answered(wanted));
  // Asked again in the same request's next run: nothing more to wait for.
  CHECK(leases.Recall(stat, reply, {}, {}, sessions, &recalled, &held).empty());
  std::deque<pb::LeaseEvent> events;
  REQUIRE(leases.TakeEvents(SessionId(1), gens[1], &events));
  pb::LeaseAckRequest ack;
  ack.set_session(1);
  for (const pb::LeaseEvent& e : events) {
    if (e.flush()) *ack.add_acks() = e;
  }
  REQUIRE(ack.acks_size() == 1);
  leases.Ack(SessionId(1), ack);
  CHECK(leases.Answered(wanted));
  // The writer's own view is never recalled.
  stat.session = SessionId(1);
  CHECK(leases.Recall(stat, reply, {}, {}, sessions, &recalled, &held).empty());
  // Its last close: no writer left.
  sessions.Find(SessionId(1))->opens_write.clear();
  leases.NoteOpen(SessionId(1), 500, sessions.Find(SessionId(1)));
  CHECK_FALSE(leases.HasWriters());
}

TEST_CASE("leases: a shared file - its writers write through - its openers drop pages on each change") {
  Leases leases(absl::Seconds(5));
  Sessions sessions(1, 0);
  uint64_t gens[4] = {0, 0, 0, 0};
  for (uint64_t id : {1, 2, 3}) {
    sessions.Apply(OpenEvent(id, id));
    gens[id] = leases.OpenStream(SessionId(id));
  }
  auto take = [&](uint64_t id) {
    std::deque<pb::LeaseEvent> events;
    REQUIRE(leases.TakeEvents(SessionId(id), gens[id], &events));
    return events;
  };
  auto open = [&](uint64_t id, bool write) {
    sessions.Opened(SessionId(id), 500, write);
    leases.NoteOpen(SessionId(id), 500, sessions.Find(SessionId(id)));
    return leases.BufferFor(SessionId(id), 500);
  };
  (void)take(1), (void)take(2), (void)take(3);  // the hellos
  // Alone, a writer buffers.
  const auto [alone, alone_seq] = open(1, true);
  CHECK_FALSE(alone);
  CHECK(leases.MayBuffer(1, 500));
  CHECK(leases.Issued(500, 1) == caps::kFile);  // Fr Fc Fw Fb Fx: one writer, nobody else

  // Another session opens it (to read): the writer flushes and writes
  // through from then on, as the recall says, and is not recalled again.
  Request open2 = Of(2, req::Open{InodeId(500), O_RDONLY});
  Reply reply;
  reply.attr.ino = 500;
  absl::flat_hash_set<Leases::RecallKey> recalled, held;
  std::vector<Leases::RecallKey> wanted =
      leases.Recall(open2, reply, {}, {}, sessions, &recalled, &held);
  REQUIRE(wanted.size() == 1);
  std::deque<pb::LeaseEvent> events = take(1);
  REQUIRE(events.size() == 1);
  CHECK(events[0].flush());
  CHECK(events[0].write_through());
  CHECK(events[0].seq() > alone_seq);  // it stands over the open's answer
  CHECK_FALSE(leases.MayBuffer(1, 500));
  const auto [shared, shared_seq] = open(2, false);
  CHECK(shared);
  CHECK(leases.Issued(500, 1) == (caps::kFr | caps::kFc | caps::kFw));
  CHECK(leases.Issued(500, 2) == (caps::kFr | caps::kFc));
  CHECK(leases.CheckCaps(absl::Now()).ok());
  Request stat = Of(3, req::Getattr{InodeId(500)});
  absl::flat_hash_set<Leases::RecallKey> recalled3, held3;
  CHECK(leases.Recall(stat, reply, {}, {}, sessions, &recalled3, &held3).empty());

  // A third session opening to write is told to write through at once.
  const auto [third, third_seq] = open(3, true);
  CHECK(third);
  CHECK(third_seq > shared_seq);
  CHECK_FALSE(leases.MayBuffer(3, 500));

  // A write report of session 1: sessions 2 and 3 drop their pages first.
  req::Written written;
  written.ino = InodeId(500);
  written.end = 4096;
  Reply grown;
  grown.attr.size = 4096;
  const std::vector<Leases::RecallKey> invals = leases.Invalidate(Of(1, written), grown);
  REQUIRE(invals.size() == 2);
  CHECK_FALSE(leases.Invalidated(invals));
  CHECK(take(1).empty());  // not the writer itself
  for (uint64_t id : {2, 3}) {
    std::deque<pb::LeaseEvent> got = take(id);
    REQUIRE(got.size() == 1);
    CHECK(got[0].inval());
    CHECK(got[0].size() == 4096);  // the kernel's size is raised to it
    CHECK(got[0].tail().empty());  // in objects: the client reads the last byte
    CHECK(got[0].in_objects());
    pb::LeaseAckRequest ack;
    ack.set_session(id);
    // An ack with an old seq, or from another session, answers nothing.
    pb::LeaseEvent stale = got[0];
    stale.set_seq(got[0].seq() - 1);
    *ack.add_acks() = stale;
    leases.Ack(SessionId(id), ack);
    leases.Ack(SessionId(id == 2 ? 3 : 2), [&] {
      pb::LeaseAckRequest other;
      *other.add_acks() = got[0];
      return other;
    }());
    CHECK_FALSE(leases.Invalidated(invals));
    ack.clear_acks();
    *ack.add_acks() = got[0];
    leases.Ack(SessionId(id), ack);
  }
  CHECK(leases.Invalidated(invals));
  // A reservation of a shared appender changes no byte; a truncate does.
  req::Written reserve;
  reserve.ino = InodeId(500);
  reserve.append = 64;
  CHECK(leases.Invalidate(Of(1, reserve), grown).empty());
  req::Setattr cut;
  cut.ino = InodeId(500);
  cut.valid = posix::kSetSize;
  Reply cut_up;
  cut_up.attr.size = 9000;
  cut_up.prior_size = 4096;
  CHECK(leases.Invalidate(Of(2, cut), cut_up).size() == 2);
  for (uint64_t id : {1, 3}) {
    std::deque<pb::LeaseEvent> got = take(id);
    REQUIRE(got.size() == 1);
    CHECK(got[0].size() == 9000);
    CHECK(got[0].tail() == std::string(1, '\0'));  // a truncate up ends in a hole
  }
  // A truncate down raises nothing (the size is 0: nothing to store).
  Reply cut_down;
  cut_down.attr.size = 100;
  cut_down.prior_size = 9000;
  CHECK(leases.Invalidate(Of(2, cut), cut_down).size() == 2);
  for (uint64_t id : {1, 3}) {
    std::deque<pb::LeaseEvent> got = take(id);
    REQUIRE(got.size() == 1);
    CHECK(got[0].size() == 0);
    CHECK(got[0].tail().empty());
  }
  // Inline bytes written at the end show the last byte too.
  req::Written small;
  small.ino = InodeId(500);
  small.end = 4100;
  small.inline_report = true;
  small.inline_writes.push_back({4096, "wxyz"});
  small.inline_writes.push_back({4099, "!"});  // written later: the last byte
  Reply small_reply;
  small_reply.attr.size = 4100;
  small_reply.attr.data_inline = true;
  CHECK(leases.Invalidate(Of(1, small), small_reply).size() == 2);
  for (uint64_t id : {2, 3}) {
    std::deque<pb::LeaseEvent> got = take(id);
    REQUIRE(got.size() == 1);
    CHECK(got[0].tail() == "!");
    CHECK_FALSE(got[0].in_objects());
  }
  // A session that goes takes its invalidations with it.
  leases.DropSession(SessionId(3));
  CHECK(leases.Invalidate(Of(1, written), grown).size() == 1);
  // The reader closes too: the writer, alone again, may buffer (a later
  // answer than the recall that switched it to write through).
  sessions.Find(SessionId(2))->opens.erase(500);
  leases.NoteOpen(SessionId(2), 500, sessions.Find(SessionId(2)));
  const auto [again, again_seq] = leases.BufferFor(SessionId(1), 500);
  CHECK_FALSE(again);
  CHECK(again_seq > events[0].seq());
  CHECK(leases.MayBuffer(1, 500));
  CHECK(leases.Invalidate(Of(1, written), grown).empty());
}

TEST_CASE("leases: attribute caps - granted to readers - revoked by a change - none beside a writer") {
  Leases leases(absl::Seconds(5));
  Sessions sessions(1, 0);
  uint64_t gens[4] = {0, 0, 0, 0};
  for (uint64_t id : {1, 2, 3}) {
    sessions.Apply(OpenEvent(id, id));
    gens[id] = leases.OpenStream(SessionId(id));
  }
  const absl::Time now = absl::FromUnixSeconds(1000);
  auto stat_reply = [](uint64_t ino, uint32_t mode) {
    Reply r;
    r.attr.ino = ino;
    r.attr.mode = mode;
    r.attr.nlink = 1;
    return r;
  };
  auto take = [&](uint64_t id) {
    std::deque<pb::LeaseEvent> events;
    REQUIRE(leases.TakeEvents(SessionId(id), gens[id], &events));
    std::vector<pb::LeaseEvent> out;
    for (const pb::LeaseEvent& e : events) {
      if (!e.hello()) out.push_back(e);
    }
    return out;
  };
  // Two readers of a file hold caps; a directory shown gets one too.
  Reply r1 = stat_reply(500, S_IFREG | 0644);
  leases.GrantAttrs(SessionId(1), &r1, now);
  REQUIRE(r1.attr_caps.size() == 1);
  CHECK(r1.attr_caps[0].ino == InodeId(500));
  CHECK(r1.attr_caps[0].lease_ms == 5000);
  Reply r2 = stat_reply(500, S_IFREG | 0644);
  fs::DirEntry dir;
  dir.name = "d";
  dir.ino = 600;
  dir.attr = stat_reply(600, S_IFDIR | 0755).attr;
  r2.entries.push_back(dir);
  leases.GrantAttrs(SessionId(2), &r2, now);
  REQUIRE(r2.attr_caps.size() == 2);
  CHECK(r2.attr_caps[1].ino == InodeId(600));
  CHECK(leases.attr_cap_count() == 3);
  CHECK(take(1).empty());
  // A name made in the directory moves its times: the cap on it is revoked
  // before the change, in the same wait as the directory's leases.
  absl::Time dir_until = absl::InfiniteFuture();
  CHECK(leases.Revoke(Mkdir(3, 600), now, &dir_until));
  std::vector<pb::LeaseEvent> dir_revoked = take(2);
  REQUIRE(dir_revoked.size() == 1);
  CHECK(dir_revoked[0].caps() == caps::kAttrs);  // it held no lease on the names
  CHECK(dir_revoked[0].ino() == 600);
  pb::LeaseAckRequest dir_ack;
  *dir_ack.add_acks() = dir_revoked[0];
  leases.Ack(SessionId(2), dir_ack);
  CHECK_FALSE(leases.Revoke(Mkdir(3, 600), now, &dir_until));
  CHECK(leases.attr_cap_count() == 2);
  // Session 3 changes the file: both caps are revoked, and it waits for them.
  absl::Time until = absl::InfiniteFuture();
  CHECK(leases.RevokeAttrs(SessionId(3), {500}, now, &until));
  CHECK(until > now);
  const std::vector<pb::LeaseEvent> revoked = take(1);
  REQUIRE(revoked.size() == 1);
  CHECK(revoked[0].caps() == caps::kAttrs);
  CHECK(revoked[0].ino() == 500);
  CHECK(revoked[0].seq() == r1.attr_caps[0].seq);
  // Nobody else gets the cap while the change waits.
  Reply again = stat_reply(500, S_IFREG | 0644);
  leases.GrantAttrs(SessionId(1), &again, now);
  CHECK(again.attr_caps.empty());
  // An ack with a wrong sequence number or from another session releases nothing.
  pb::LeaseAckRequest wrong;
  pb::LeaseEvent bad = revoked[0];
  bad.set_seq(bad.seq() + 100);
  *wrong.add_acks() = bad;
  const uint64_t seen = leases.returns();
  leases.Ack(SessionId(1), wrong);
  leases.Ack(SessionId(3), wrong);
  CHECK(leases.returns() == seen);
  pb::LeaseAckRequest ack;
  *ack.add_acks() = revoked[0];
  leases.Ack(SessionId(1), ack);
  CHECK(leases.returns() != seen);
  ack.clear_acks();
  for (const pb::LeaseEvent& e : take(2)) *ack.add_acks() = e;
  REQUIRE(ack.acks_size() == 1);
  leases.Ack(SessionId(2), ack);
  CHECK_FALSE(leases.RevokeAttrs(SessionId(3), {500}, now, &until));
  CHECK(leases.attr_cap_count() == 0);
  // Session 3 now writes the file: it may hold the cap, nobody else may.
  sessions.Opened(SessionId(3), 500, /*write=*/true);
  leases.NoteOpen(SessionId(3), 500, sessions.Find(SessionId(3)));
  Reply w = stat_reply(500, S_IFREG | 0644);
  leases.GrantAttrs(SessionId(3), &w, now);
  CHECK(w.attr_caps.size() == 1);
  Reply other = stat_reply(500, S_IFREG | 0644);
  leases.GrantAttrs(SessionId(1), &other, now);
  CHECK(other.attr_caps.empty());
  CHECK(leases.CheckCaps(now).ok());
  // A second writer: the first writer's cap is revoked before it counts,
  // and it is told to write through (its Fb goes, as its Fx).
  CHECK(leases.Issued(500, 3) == (caps::kFile | caps::kAttrs));
  CHECK(leases.RevokeAttrs(SessionId(2), {500}, now, &until));
  CHECK_FALSE(leases.RevokeAttrs(SessionId(2), {500}, until + absl::Milliseconds(1), &until));
  absl::flat_hash_set<Leases::RecallKey> recalled, held;
  CHECK(leases.Recall(Of(2, req::Open{InodeId(500), O_RDWR}), w, {}, {}, sessions, &recalled,
                      &held)
            .size() == 1);
  sessions.Opened(SessionId(2), 500, /*write=*/true);
  leases.NoteOpen(SessionId(2), 500, sessions.Find(SessionId(2)));
  CHECK(leases.CheckCaps(until + absl::Milliseconds(1)).ok());
  const uint32_t shared = caps::kFr | caps::kFc | caps::kFw;
  CHECK((leases.Issued(500, 2) & caps::kFile) == shared);
  CHECK((leases.Issued(500, 3) & caps::kFile) == shared);
  // The invariant notices a cap held beside another's writes.
  Leases broken(absl::Seconds(5));
  broken.OpenStream(SessionId(1));
  Reply b = stat_reply(700, S_IFREG | 0644);
  broken.GrantAttrs(SessionId(1), &b, now);
  sessions.Opened(SessionId(2), 700, /*write=*/true);
  broken.NoteOpen(SessionId(2), 700, sessions.Find(SessionId(2)));
  CHECK_FALSE(broken.CheckCaps(now).ok());
  CHECK(broken.CheckCaps(now + absl::Seconds(6)).ok());  // run out
}

TEST_CASE("leases: caps per session are bounded - recalled above 90 percent - and under pressure") {
  Leases leases(absl::Seconds(5));
  leases.set_cap_limits(Leases::CapLimits{100, 30, absl::Seconds(1)});
  uint64_t gen[3] = {0, 0, 0};
  gen[1] = leases.OpenStream(SessionId(1));
  gen[2] = leases.OpenStream(SessionId(2));
  const absl::Time now = absl::FromUnixSeconds(1000);
  // A listing of 150 files grants 100 caps, then refuses: the session is at its limit.
  auto listing = [](uint64_t first, int n) {
    Reply r;
    for (int i = 0; i < n; ++i) {
      fs::DirEntry e;
      e.name = "f" + std::to_string(i);
      e.ino = first + i;
      e.attr.ino = first + i;
      e.attr.mode = S_IFREG | 0644;
      e.attr.nlink = 1;
      r.entries.push_back(e);
    }
    return r;
  };
  Reply big = listing(1000, 150);
  leases.GrantAttrs(SessionId(1), &big, now);
  CHECK(big.attr_caps.size() == 100);
  CHECK(leases.HeldBy(1) == 100);
  CHECK(leases.counters().granted == 100);
  CHECK(leases.counters().refused == 50);
  // A refresh of a cap it holds is no new grant: still given.
  Reply again = listing(1000, 10);
  leases.GrantAttrs(SessionId(1), &again, now);
  CHECK(again.attr_caps.size() == 10);
  CHECK(leases.counters().refused == 50);
  // Another session is not held back by the first one's caps.
  Reply other = listing(1000, 20);
  leases.GrantAttrs(SessionId(2), &other, now);
  CHECK(other.attr_caps.size() == 20);
  // The janitor asks session 1 (above 90 of 100) for what takes it down to 80,
  // at most 30 at once; session 2 (20) is asked nothing.
  auto recalls = [&](uint64_t id) {
    std::deque<pb::LeaseEvent> events;
    REQUIRE(leases.TakeEvents(SessionId(id), gen[id], &events));
    std::vector<uint32_t> out;
    for (const pb::LeaseEvent& e : events) {
      if (e.recall_caps() > 0) out.push_back(e.recall_caps());
    }
    return out;
  };
  (void)recalls(1);
  (void)recalls(2);
  leases.RecallForMemory(now, /*pressure=*/false);
  CHECK(recalls(1) == std::vector<uint32_t>{20});
  CHECK(recalls(2).empty());
  CHECK(leases.counters().recalled == 20);
  // Not again within the interval.
  leases.RecallForMemory(now + absl::Milliseconds(500), false);
  CHECK(recalls(1).empty());
  // The heartbeat renews the session while the recall is fresh, and no
  // more once it went unanswered for a lease (what it holds then runs out).
  CHECK(leases.Renew(SessionId(1), now + absl::Seconds(4)).stream == gen[1]);
  CHECK(leases.Renew(SessionId(1), now + absl::Seconds(6)).stream == 0);
  CHECK(leases.Renew(SessionId(2), now + absl::Seconds(6)).stream == gen[2]);
  // The client gives back 20 of its caps (acks marked released): room again.
  pb::LeaseAckRequest given;
  for (const AttrCapGrant& g : big.attr_caps) {
    if (given.acks_size() == 20) break;
    pb::LeaseEvent* e = given.add_acks();
    e->set_ino(g.ino.value());
    e->set_seq(g.seq);
    e->set_caps(caps::kAttrs);
    e->set_released(true);
  }
  // A give-back with wrong numbers or from another session releases nothing.
  pb::LeaseAckRequest wrong = given;
  for (pb::LeaseEvent& e : *wrong.mutable_acks()) e.set_seq(e.seq() + 1000);
  leases.Ack(SessionId(1), wrong);
  leases.Ack(SessionId(2), given);
  CHECK(leases.HeldBy(1) == 100);
  CHECK(leases.counters().released == 0);
  leases.Ack(SessionId(1), given);
  CHECK(leases.HeldBy(1) == 80);
  CHECK(leases.counters().released == 20);
  CHECK(leases.Renew(SessionId(1), now + absl::Seconds(6)).stream == gen[1]);  // answered
  Reply more = listing(5000, 5);
  leases.GrantAttrs(SessionId(1), &more, now);
  CHECK(more.attr_caps.size() == 5);
  // Under memory pressure every session above the floor gives back a quarter;
  // those below it (both here) are left alone.
  leases.RecallForMemory(now + absl::Seconds(2), /*pressure=*/true);
  CHECK(recalls(1).empty());
  CHECK(recalls(2).empty());
  Leases roomy(absl::Seconds(5));
  roomy.set_cap_limits(Leases::CapLimits{0, 1000, absl::Seconds(1)});  // no per-session limit
  const uint64_t g = roomy.OpenStream(SessionId(1));
  Reply huge = listing(1, 4000);
  roomy.GrantAttrs(SessionId(1), &huge, now);
  CHECK(huge.attr_caps.size() == 4000);
  roomy.RecallForMemory(now, false);
  roomy.RecallForMemory(now + absl::Seconds(1), true);
  std::deque<pb::LeaseEvent> events;
  REQUIRE(roomy.TakeEvents(SessionId(1), g, &events));
  std::vector<uint32_t> asked;
  for (const pb::LeaseEvent& e : events) {
    if (e.recall_caps() > 0) asked.push_back(e.recall_caps());
  }
  CHECK(asked == std::vector<uint32_t>{1000});  // a quarter, at most recall_max
  // A session that goes takes its count along.
  roomy.DropSession(SessionId(1));
  CHECK(roomy.HeldBy(1) == 0);
  CHECK(roomy.attr_cap_count() == 0);
  // Caps that ran out (a lease after the last renewal, at +6 s) leave the
  // count at the next Expire.
  leases.Expire(now + absl::Seconds(11));
  CHECK(leases.HeldBy(1) > 0);
  leases.Expire(now + absl::Seconds(12));
  CHECK(leases.HeldBy(1) == 0);
  CHECK(leases.HeldBy(2) == 0);
  CHECK(leases.EstimatedBytes() == 0);
}

TEST_CASE("leases: a truncate holds the writers until the last request lets them go") {
  Leases leases(absl::Seconds(5));
  Sessions sessions(1, 0);
  for (uint64_t id : {1, 2}) {
    sessions.Apply(OpenEvent(id, id));
    leases.OpenStream(SessionId(id));
  }
  sessions.Opened(SessionId(1), 500, true);
  leases.NoteOpen(SessionId(1), 500, sessions.Find(SessionId(1)));
  req::Setattr cut;
  cut.ino = InodeId(500);
  cut.valid = posix::kSetSize;
  const Request truncate = Of(2, cut);
  Reply reply;
  reply.attr.ino = 500;
  Cut trim;
  trim.ino = InodeId(500);
  absl::flat_hash_set<Leases::RecallKey> recalled, held;
  REQUIRE(leases.Recall(truncate, reply, {}, {trim}, sessions, &recalled, &held).size() == 1);
  CHECK(held.size() == 1);
  CHECK(leases.HoldWanted(500));
  leases.EndHolds(held);
  CHECK_FALSE(leases.HoldWanted(500));
  leases.MaybeReleaseHolds(500);
  std::deque<pb::LeaseEvent> events;
  REQUIRE(leases.TakeEvents(SessionId(1), 1, &events));
  bool released = false;
  for (const pb::LeaseEvent& e : events) released |= e.release() && e.ino() == 500;
  CHECK(released);
}

TEST_CASE("leases: a new stream ends the old one and what it held") {
  Leases leases(absl::Seconds(5));
  const uint64_t first = leases.OpenStream(SessionId(1));
  const uint64_t second = leases.OpenStream(SessionId(1));
  CHECK(first != second);
  std::deque<pb::LeaseEvent> events;
  CHECK_FALSE(leases.TakeEvents(SessionId(1), first, &events));
  CHECK(leases.StreamReady(SessionId(1), first));
  leases.CloseStream(SessionId(1), first);  // too late: the second stays
  CHECK(leases.HasStream(SessionId(1)));
  leases.DropSession(SessionId(1));
  CHECK_FALSE(leases.HasStream(SessionId(1)));
}

// A whole-file flock of inode 500 by owner 1 of `session`.
req::Lock Flock(uint64_t session, locks::Type type, uint32_t wait_ms) {
  req::Lock op;
  op.action = req::Lock::Action::kSet;
  op.wait_ms = wait_ms;
  op.lock.ino = 500;
  op.lock.kind = locks::Kind::kFlock;
  op.lock.type = type;
  op.lock.owner = locks::Owner{session, 1};
  op.lock.pid = static_cast<uint32_t>(session);
  return op;
}

TEST_CASE("rank locks: a conflicting lock waits for the holder's unlock - or is refused") {
  RankLocks locks;
  Sessions sessions(1, 0);
  for (uint64_t id : {1, 2}) {
    sessions.Apply(OpenEvent(id, id));
    sessions.Opened(SessionId(id), 500, false);
  }
  const absl::Time now = absl::FromUnixSeconds(1000);
  RankLocks::Wait w1, w2;
  Reply reply;
  absl::Status status;
  REQUIRE(locks.Try(SessionId(1), Flock(1, locks::Type::kWrite, 0), sessions, now, &w1, &reply,
                    &status) == RankLocks::Step::kDone);
  REQUIRE(status.ok());
  CHECK(locks.size() == 1);
  CHECK(locks.Try(SessionId(2), Flock(2, locks::Type::kWrite, 0), sessions, now, &w2, &reply,
                  &status) == RankLocks::Step::kDone);
  CHECK(StatusToErrno(status) == EAGAIN);
  RankLocks::Wait waiting;
  REQUIRE(locks.Try(SessionId(2), Flock(2, locks::Type::kWrite, 1000), sessions, now, &waiting,
                    &reply, &status) == RankLocks::Step::kWait);
  CHECK(locks.waiters() == 1);
  RankLocks::Wait w3;
  REQUIRE(locks.Try(SessionId(1), Flock(1, locks::Type::kUnlock, 0), sessions, now, &w3, &reply,
                    &status) == RankLocks::Step::kDone);
  CHECK(locks.gen() != waiting.gen);
  REQUIRE(locks.Try(SessionId(2), Flock(2, locks::Type::kWrite, 1000), sessions, now, &waiting,
                    &reply, &status) == RankLocks::Step::kDone);
  CHECK(status.ok());
  CHECK(locks.waiters() == 0);
  // A wait that runs out takes nothing: the client asks again.
  RankLocks::Wait late;
  Reply retry;
  REQUIRE(locks.Try(SessionId(1), Flock(1, locks::Type::kRead, 500), sessions, now, &late, &retry,
                    &status) == RankLocks::Step::kWait);
  REQUIRE(locks.Try(SessionId(1), Flock(1, locks::Type::kRead, 500), sessions,
                    now + absl::Seconds(1), &late, &retry, &status) == RankLocks::Step::kDone);
  CHECK(status.ok());
  CHECK(retry.lock_retry);
  // Abandoned waits leave no waiter behind.
  RankLocks::Wait gone;
  REQUIRE(locks.Try(SessionId(1), Flock(1, locks::Type::kRead, 500), sessions, now, &gone, &retry,
                    &status) == RankLocks::Step::kWait);
  locks.Done(&gone);
  CHECK(locks.waiters() == 0);
  locks.DropSession(SessionId(2), 0);
  CHECK(locks.size() == 0);
}

TEST_CASE("inline moves and trims: one owner per file - and what blocks it") {
  InlineMoves moves;
  moves.Begin(7);
  CHECK(moves.Moving(7));
  CHECK(moves.RecordedElsewhere({7, 8}, 0) == 0);  // not recorded yet
  moves.Recorded(7);
  CHECK(moves.RecordedElsewhere({7, 8}, 0) == 7);
  CHECK(moves.RecordedElsewhere({7, 8}, 7) == 0);  // the mover's own
  moves.End(7);
  CHECK(moves.empty());
  MetaCache cache(1, 0);
  Trims trims;
  CHECK_FALSE(trims.Any(cache));
  Event ev;
  ev.seq = 1;
  ev.cuts_added.push_back(Cut{InodeId(9), /*keep=*/0, /*size=*/100, {}});
  cache.Apply(ev);
  CHECK(trims.Blocked(cache, 9));
  trims.Begin(9);
  Event done;
  done.seq = 2;
  done.cuts_done.push_back(InodeId(9));
  cache.Apply(done);
  CHECK(trims.Blocked(cache, 9));  // until its trim_done is durable
  trims.End(9);
  CHECK_FALSE(trims.Blocked(cache, 9));
}

}  // namespace
}  // namespace weft::mds
