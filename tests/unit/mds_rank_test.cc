// A whole rank on in-memory objects, driven on the test's thread (no
// processes, no background threads): requests, the journal, restarts.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <vector>

#include "common/clock/clock.h"
#include "common/objects/mem_objects.h"
#include "common/rpc/rpc.h"
#include "common/status/status.h"
#include "mds/fs/names.h"
#include "mds/rank.h"
#include "mds/request_run.h"

namespace weft::mds {
namespace {

const PoolId kMeta(1);
const PoolId kData(2);

class Bench {
 public:
  Bench() {
    options_.fs_id = 1;
    options_.fs_name = "t";
    options_.metadata_pool = kMeta;
    options_.data_pool = kData;
    options_.threads = false;
    options_.default_layout.set_object_size(1 << 20);
    options_.default_layout.set_stripe_unit(1 << 20);
    options_.default_layout.set_stripe_count(1);
    options_.default_layout.set_pool(kData.value());
  }

  // A new incarnation over the same objects (the last one is dropped as a
  // crash drops it: nothing flushed, its unwritten journal lost).
  MdsRank& Start() {
    rank_.reset();
    if (client_ != nullptr) store_.Blocklist(name_);
    name_ = "mds." + std::to_string(++incarnation_);
    client_ = store_.Client(name_);
    RankEnv env;
    env.objects = client_.get();
    env.capacity = [] { return Capacity{}; };
    env.data_pools = [] {
      DataPools pools;
      pools.data_pools = {kData};
      return pools;
    };
    env.cluster_full = [] { return false; };
    env.clock = &clock_;
    env.boot = static_cast<uint64_t>(incarnation_);
    env.fence_client = fence_;
    rank_ = std::make_unique<MdsRank>(options_, std::move(env));
    if (incarnation_ == 1) REQUIRE(rank_->Create().ok());
    REQUIRE(rank_->Start().ok());
    return *rank_;
  }

  RankOptions options_;
  ManualClock clock_;
  objects::MemObjects store_;
  std::string name_;
  std::unique_ptr<objects::Objects> client_;
  std::unique_ptr<MdsRank> rank_;
  int incarnation_ = 0;
  std::function<absl::StatusOr<uint64_t>(const std::string&)> fence_;
};

pb::MetaRequest Mkdir(uint64_t session, uint64_t tid, uint64_t parent, const std::string& name) {
  pb::MetaRequest r;
  r.set_session(session);
  r.set_tid(tid);
  r.set_oldest_tid(tid);
  r.mutable_mkdir()->set_parent(parent);
  r.mutable_mkdir()->set_name(name);
  r.mutable_mkdir()->set_mode(0755);
  return r;
}

pb::MetaRequest Lookup(uint64_t session, uint64_t parent, const std::string& name) {
  pb::MetaRequest r;
  r.set_session(session);
  r.mutable_lookup()->set_parent(parent);
  r.mutable_lookup()->set_name(name);
  return r;
}

// As the gRPC adapter does it: the wire request converted, then handled.
pb::MetaReply Call(MdsRank& rank, const pb::MetaRequest& wire) {
  absl::StatusOr<Request> request = FromWire(wire);
  REQUIRE(request.ok());
  pb::MetaReply reply;
  ToWire(rank.Handle(*request), wire.tid(), &reply);
  return reply;
}

TEST_CASE("mds rank: requests on in-memory objects - durable across a restart") {
  Bench b;
  MdsRank& rank = b.Start();
  auto session = rank.SessionOpen("client.a", "osd.a", 0);
  REQUIRE(session.ok());
  const uint64_t s = session->session();
  pb::MetaReply made = Call(rank, Mkdir(s, 1, kRootIno, "home"));
  REQUIRE(made.status().code() == 0);
  CHECK_FALSE(made.unsafe());  // unsafe_ok was not asked for
  CHECK(made.seq() <= made.durable_seq());
  const uint64_t home = made.attr().ino();
  // A retry of the same tid is answered from the completed table.
  pb::MetaReply again = Call(rank, Mkdir(s, 1, kRootIno, "home"));
  CHECK(again.status().code() == 0);
  CHECK(again.replayed());
  CHECK(again.attr().ino() == home);
  pb::MetaReply exists = Call(rank, Mkdir(s, 2, kRootIno, "home"));
  CHECK(StatusToErrno(rpc::FromProto(exists.status())) == EEXIST);
  // Bad input changes nothing.
  pb::MetaReply bad = Call(rank, Mkdir(s, 3, kRootIno, "a/b"));
  CHECK(StatusToErrno(rpc::FromProto(bad.status())) == EINVAL);
  pb::MetaReply stale = Call(rank, Lookup(s + 99, kRootIno, "home"));
  CHECK(StatusToErrno(rpc::FromProto(stale.status())) == ENOTCONN);

  MdsRank& second = b.Start();
  // The session must reconnect before anything is served.
  CHECK(second.Reconnecting());
  pb::ReconnectRequest back;
  back.set_session(s);
  REQUIRE(second.ReconnectBegin(back).ok());
  second.MaybeFinishReconnect();
  CHECK_FALSE(second.Reconnecting());
  pb::MetaReply found = Call(second, Lookup(s, kRootIno, "home"));
  REQUIRE(found.status().code() == 0);
  CHECK(found.attr().ino() == home);
  CHECK(found.boot() == 2);
}

TEST_CASE("mds rank: an unsafe answer lost with the journal is applied again at reconnect") {
  Bench b;
  b.options_.unsafe_events_max = 4096;
  MdsRank& rank = b.Start();
  const uint64_t s = rank.SessionOpen("client.a", "osd.a", 0)->session();
  pb::MetaRequest mk = Mkdir(s, 1, kRootIno, "fast");
  mk.set_unsafe_ok(true);
  pb::MetaReply early = Call(rank, mk);
  REQUIRE(early.status().code() == 0);
  REQUIRE(early.unsafe());
  CHECK(early.durable_seq() < early.seq());  // nothing written yet: no writer thread
  // The rank dies before its journal reaches the store.
  MdsRank& second = b.Start();
  pb::MetaReply before = Call(second, Lookup(s, kRootIno, "fast"));
  CHECK(absl::IsUnavailable(rpc::FromProto(before.status())));  // reconnect window
  pb::ReconnectRequest back;
  back.set_session(s);
  pb::MetaRequest resend = mk;
  resend.set_replay_seq(early.seq());
  resend.set_replay_ino(early.attr().ino());
  resend.set_replay_time_ns(early.time_ns());
  *back.add_replays() = resend;
  REQUIRE(second.ReconnectBegin(back).ok());
  second.MaybeFinishReconnect();
  pb::MetaReply found = Call(second, Lookup(s, kRootIno, "fast"));
  REQUIRE(found.status().code() == 0);
  CHECK(found.attr().ino() == early.attr().ino());  // the inode number it was told
  // And once more after another crash: durable now, not applied twice.
  MdsRank& third = b.Start();
  pb::ReconnectRequest again;
  again.set_session(s);
  REQUIRE(third.ReconnectBegin(again).ok());
  third.MaybeFinishReconnect();
  pb::MetaReply dup = Call(third, Mkdir(s, 1, kRootIno, "fast"));
  CHECK(dup.status().code() == 0);
  CHECK(dup.replayed());
}

TEST_CASE("mds rank: a session that missed the reconnect window is refused its late reclaim") {
  Bench b;
  std::vector<std::string> fenced;
  b.fence_ = [&fenced](const std::string& osd) -> absl::StatusOr<uint64_t> {
    fenced.push_back(osd);
    return fenced.size() + 10;
  };
  MdsRank& rank = b.Start();
  const uint64_t late = rank.SessionOpen("client.late", "osd.late", 0)->session();
  const uint64_t prompt = rank.SessionOpen("client.prompt", "osd.prompt", 0)->session();
  REQUIRE(Call(rank, Mkdir(late, 1, kRootIno, "d")).status().code() == 0);
  MdsRank& second = b.Start();
  pb::ReconnectRequest back;
  back.set_session(prompt);
  REQUIRE(second.ReconnectBegin(back).ok());
  // The window closes without the other (frozen, cut off): it is to be
  // evicted, and what it held may be given to others from now on.
  b.clock_.Advance(absl::Milliseconds(b.options_.reconnect_timeout_ms + 1));
  second.MaybeFinishReconnect();
  CHECK_FALSE(second.Reconnecting());
  // Its reclaim now, before the eviction has run: refused as evicted, not
  // taken as a late reconnect.
  pb::ReconnectRequest too_late;
  too_late.set_session(late);
  pb::OpenRef* open = too_late.add_opens();
  open->set_ino(kRootIno);
  open->set_handles(1);
  absl::StatusOr<pb::ReconnectReply> refused = second.ReconnectBegin(too_late);
  INFO(refused.status());
  CHECK(IsEvicted(refused.status()));
  // The eviction fences it first, then its session is gone.
  second.ExpireSessions();
  CHECK(fenced == std::vector<std::string>{"osd.late"});
  CHECK(StatusToErrno(second.ReconnectBegin(too_late).status()) == ENOTCONN);
  CHECK(Call(second, Lookup(prompt, kRootIno, "d")).status().code() == 0);
}

TEST_CASE("mds rank: a request stepped by hand shows its waits and I/O") {
  Bench b;
  b.options_.cache_max_bytes = 1;  // everything clean is dropped at TrimCache
  MdsRank& rank = b.Start();
  const uint64_t s = rank.SessionOpen("client.a", "osd.a", 0)->session();
  REQUIRE(Call(rank, Mkdir(s, 1, kRootIno, "d")).status().code() == 0);
  REQUIRE(rank.FlushOnce().ok());
  rank.TrimCache();
  // Not cached any more: the lookup asks for a load first.
  const absl::StatusOr<Request> lookup = FromWire(Lookup(s, kRootIno, "d"));
  REQUIRE(lookup.ok());
  Reply reply;
  std::unique_ptr<RequestRun> run = rank.StartRun(*lookup, &reply);
  RunOutcome o = rank.StepRun(*run);
  REQUIRE(o.kind == RunOutcome::Kind::kLoad);
  CHECK_FALSE(o.load.empty());
  rank.IoDoneRun(*run, rank.DoIo(o));
  o = rank.StepRun(*run);
  while (o.kind == RunOutcome::Kind::kLoad) {
    rank.IoDoneRun(*run, rank.DoIo(o));
    o = rank.StepRun(*run);
  }
  REQUIRE(o.kind == RunOutcome::Kind::kDone);
  CHECK(o.status.ok());
  rank.EndRun(*run);
  CHECK(reply.attr.ino != 0);
  // A failed load fails the request, and changes nothing.
  rank.TrimCache();
  b.store_.SetHook(
      [](const objects::MemObjects::Request&) { return absl::UnavailableError("down"); });
  pb::MetaReply down = Call(rank, Lookup(s, kRootIno, "d"));
  CHECK(absl::IsUnavailable(rpc::FromProto(down.status())));
  b.store_.SetHook(nullptr);
  CHECK(Call(rank, Lookup(s, kRootIno, "d")).status().code() == 0);
}

TEST_CASE("mds rank: the lock's wait and hold are counted within each request's time") {
  Bench b;
  MdsRank& rank = b.Start();
  const uint64_t s = rank.SessionOpen("client.a", "osd.a", 0)->session();
  const pb::FsStatusReply before = rank.Status();
  for (int i = 0; i < 20; ++i) {
    REQUIRE(Call(rank, Mkdir(s, 100 + i, kRootIno, "d" + std::to_string(i))).status().code() == 0);
  }
  REQUIRE(Call(rank, Lookup(s, kRootIno, "missing")).status().code() != 0);  // errors count too
  const pb::FsStatusReply after = rank.Status();
  CHECK(after.requests() - before.requests() == 21);
  const uint64_t in_rank = after.request_ns() - before.request_ns();
  const uint64_t waited = after.rank_lock_wait_ns() - before.rank_lock_wait_ns();
  const uint64_t held = after.rank_lock_held_ns() - before.rank_lock_held_ns();
  CHECK(held > 0);
  // Both are parts of the requests' own time, taken on one thread here.
  CHECK(waited + held <= in_rank);
}

TEST_CASE("mds rank: a broken journal is sticky and fails what waits for it") {
  Bench b;
  MdsRank& rank = b.Start();
  const uint64_t s = rank.SessionOpen("client.a", "osd.a", 0)->session();
  b.store_.SetHook([](const objects::MemObjects::Request& r) {
    return r.oid->find(".journal.") != std::string::npos && r.mutating
               ? absl::UnavailableError("journal object refused")
               : absl::OkStatus();
  });
  pb::MetaReply failed = Call(rank, Mkdir(s, 1, kRootIno, "x"));
  CHECK(failed.status().code() != 0);
  b.store_.SetHook(nullptr);
  CHECK_FALSE(rank.journal_error().ok());
  pb::MetaReply later = Call(rank, Mkdir(s, 2, kRootIno, "y"));
  CHECK(later.status().code() != 0);  // sticky: a restart must replay
  MdsRank& second = b.Start();
  pb::ReconnectRequest back;
  back.set_session(s);
  REQUIRE(second.ReconnectBegin(back).ok());
  second.MaybeFinishReconnect();
  CHECK(StatusToErrno(rpc::FromProto(Call(second, Lookup(s, kRootIno, "x")).status())) == ENOENT);
  CHECK(Call(second, Mkdir(s, 3, kRootIno, "x")).status().code() == 0);
}

TEST_CASE("mds rank: eviction fences the client before its session goes - and it cannot come back") {
  Bench b;
  int fenced = 0;
  bool fail_fence = false;
  std::vector<pb::ClientInfo> during;  // the sessions while the fence ran
  pb::MetaReply refused;               // a request of the evicted session meanwhile
  uint64_t evicting = 0;
  b.fence_ = [&](const std::string& osd_client) -> absl::StatusOr<uint64_t> {
    if (fail_fence) return absl::UnavailableError("no map manager");
    ++fenced;
    during = b.rank_->ClientList();
    refused = Call(*b.rank_, Lookup(evicting, kRootIno, "x"));
    b.store_.Blocklist(osd_client);
    return uint64_t{7};
  };
  MdsRank& rank = b.Start();
  const uint64_t a = rank.SessionOpen("client.a", "osd.a", 0)->session();
  const uint64_t other = rank.SessionOpen("client.b", "osd.b", 0)->session();
  REQUIRE(Call(rank, Mkdir(a, 1, kRootIno, "d")).status().code() == 0);
  std::vector<pb::ClientInfo> listed = rank.ClientList();
  REQUIRE(listed.size() == 2);
  CHECK(listed[0].session() == a);
  CHECK(listed[0].client() == "client.a");
  CHECK(listed[0].osd_client() == "osd.a");

  // Bad input: an unknown session; a fence that fails leaves the session as it was.
  CHECK(StatusToErrno(rank.Evict(SessionId(a + 99), "test").status()) == ENOTCONN);
  fail_fence = true;
  CHECK(absl::IsUnavailable(rank.Evict(SessionId(other), "test").status()));
  CHECK(Call(rank, Lookup(other, kRootIno, "d")).status().code() == 0);
  fail_fence = false;

  evicting = a;
  absl::StatusOr<uint64_t> epoch = rank.Evict(SessionId(a), "stopped answering");
  REQUIRE(epoch.ok());
  CHECK(*epoch == 7);
  CHECK(fenced == 1);
  // The fence ran while the session still stood (nothing it held was given
  // away yet), and the session's requests were already refused.
  CHECK(during.size() == 2);
  CHECK(IsEvicted(rpc::FromProto(refused.status())));
  // Gone now; its OSD identity may not open a session again, another may.
  REQUIRE(rank.ClientList().size() == 1);
  CHECK(StatusToErrno(rpc::FromProto(Call(rank, Lookup(a, kRootIno, "d")).status())) == ENOTCONN);
  CHECK(IsEvicted(rank.SessionOpen("client.a", "osd.a", 0).status()));
  CHECK(StatusToErrno(rank.SessionOpen("client.a", "osd.a", a).status()) == ESHUTDOWN);
  const uint64_t fresh = rank.SessionOpen("client.c", "osd.c", 0)->session();
  // Every reply asks for the map that holds the fence before data I/O.
  pb::MetaReply after = Call(rank, Lookup(fresh, kRootIno, "d"));
  CHECK(after.status().code() == 0);
  CHECK(after.osd_epoch_barrier() == 7);
  pb::FsStatusReply status = rank.Status();
  CHECK(status.evictions() == 1);
  CHECK(status.last_eviction().find("stopped answering") != std::string::npos);
  // A session that never named its OSD identity cannot be fenced: refused.
  const uint64_t old = rank.SessionOpen("client.old", "", 0)->session();
  CHECK(StatusToErrno(rank.Evict(SessionId(old), "test").status()) == ENOTSUP);
  CHECK(fenced == 1);
}

}  // namespace
}  // namespace weft::mds
