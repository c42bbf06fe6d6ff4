#include "absl/strings/numbers.h"
#include "common/caps/cap_bits.h"
#include "common/striping/striping.h"
#include "tests/sim/world.h"

namespace weft::sim {

// ---- the rank

mds::RankOptions World::MakeRankOptions() {
  mds::RankOptions o;
  o.fs_id = kFs;
  o.fs_name = "sim";
  o.metadata_pool = kMetaPool;
  o.data_pool = kDataPool;
  o.threads = false;
  o.session_timeout_ms = 60000;
  o.reconnect_timeout_ms = 10000;
  o.dir_lease_ms = rng_.Chance(0.7) ? 5000 : 0;
  o.revoke_timeout_ms = 10000;
  o.unsafe_events_max = rng_.Chance(0.8) ? 4096 : 0;
  o.frag_split_entries = rng_.Chance(0.5) ? 6 : 10000;
  o.inline_max_bytes = rng_.Chance(0.5) ? 4096 : 0;
  o.journal.segment_bytes = rng_.Chance(0.5) ? 2048 : (4 << 20);
  o.default_layout.set_object_size(65536);
  o.default_layout.set_stripe_unit(65536);
  o.default_layout.set_stripe_count(1);
  o.default_layout.set_pool(kDataPool.value());
  o.cache_max_bytes = rng_.Chance(0.3) ? 8 * mds::MetaCache::kInodeBytes : (1ull << 30);
  // Caps for memory: a client at its limit gets no new ones, and the rank
  // asks for caps back (in ones, or all at once) when it nears the limit or
  // its cache cannot make room.
  o.max_caps_per_client = rng_.Chance(0.4) ? 3 : 1000000;
  o.recall_max_caps = rng_.Chance(0.5) ? 1 : 30000;
  o.recall_interval_ms = 100;
  return o;
}

mds::RankEnv World::MakeEnv(objects::Objects* objects) {
  mds::RankEnv env;
  env.objects = objects;
  env.capacity = [] { return mds::Capacity{1ull << 40, 1ull << 39, 1ull << 39}; };
  env.data_pools = [] {
    mds::DataPools pools;
    pools.data_pools = {kDataPool};
    pools.names[kDataPool] = "data";
    pools.names[kMetaPool] = "meta";
    return pools;
  };
  env.cluster_full = [] { return false; };
  env.clock = &clock_;
  // A request's thread waiting in the simulation (replays at reconnect, the
  // janitor's cuts): time passes until the deadline.
  env.wait = [this](absl::Mutex* mu, const std::function<bool()>& ready, absl::Time deadline) {
    if (ready()) return;
    if (deadline == absl::InfiniteFuture()) {
      Fail("a synchronous wait would never end (no thread can change what it waits for)");
      return;
    }
    clock_.AdvanceTo(deadline);
  };
  env.on_journal_failure = [this](const absl::Status&) { crashed_ = true; };
  // Eviction blocklists the session's OSD identity before the session, its
  // caps and its opens go: so its session must still be there now.
  env.fence_client = [this](const std::string& osd_client) -> absl::StatusOr<uint64_t> {
    bool held = false;
    for (const pb::ClientInfo& info : rank_->ClientList()) held |= info.osd_client() == osd_client;
    if (!held) Fail(absl::StrCat(osd_client, " fenced after its session was gone"));
    fenced_.insert(osd_client);
    return ++osd_epoch_;
  };
  env.boot = static_cast<uint64_t>(incarnation_) + 1;
  return env;
}

absl::Status World::Hook(const objects::MemObjects::Request& r) {
  if (*r.client != rank_name_) return absl::OkStatus();  // the checks' own reads
  if (crashed_) return absl::UnavailableError("sim: the MDS is dead");
  if (r.mutating && crash_after_ >= 0 && crash_after_-- == 0) {
    crashed_ = true;  // dies before this write lands
    return absl::UnavailableError("sim: the MDS died");
  }
  const bool journal = r.oid->find(".journal.") != std::string::npos;
  if (faults_ && !journal && rng_.Chance(refuse_p_)) {
    return absl::UnavailableError("sim: the object store refused");
  }
  return absl::OkStatus();
}

bool World::StartIncarnation() {
  if (follower_ != nullptr) {
    rank_name_ = follower_name_;
    objects_ = std::move(follower_objects_);
    rank_ = std::move(follower_);
    crashed_ = false;
    absl::Status started = rank_->Start();
    if (started.ok() && !crashed_) {
      SIM_TRACE(absl::StrCat("standby-replay ", rank_name_, " took over"));
      ++result_.follower_takeovers;
      StartFollower();
      return true;
    }
    SIM_TRACE(absl::StrCat("standby-replay ", rank_name_, " failed to start: ", started.ToString()));
    rank_.reset();
    store_.Blocklist(rank_name_);
  }
  for (int attempt = 0; attempt < 50; ++attempt) {
    ++incarnation_;
    rank_name_ = absl::StrCat("mds.", incarnation_);
    objects_ = store_.Client(rank_name_);
    crashed_ = false;
    rank_ = std::make_unique<MdsRank>(rank_options_, MakeEnv(objects_.get()));
    absl::Status started = rank_->Start();
    if (started.ok() && !crashed_) {
      SIM_TRACE(absl::StrCat("incarnation ", incarnation_, " started"));
      StartFollower();
      return true;
    }
    SIM_TRACE(absl::StrCat("incarnation ", incarnation_, " failed to start: ", started.ToString()));
    rank_.reset();
    store_.Blocklist(rank_name_);
  }
  Fail("no incarnation could start in 50 tries");
  return false;
}

void World::StartFollower() {
  follower_.reset();
  if (!standby_replay_) return;
  ++incarnation_;
  follower_name_ = absl::StrCat("mds.", incarnation_);
  follower_objects_ = store_.Client(follower_name_);
  follower_ = std::make_unique<MdsRank>(rank_options_, MakeEnv(follower_objects_.get()));
}

void World::FollowStep() {
  if (follower_ == nullptr || !follow_rng_.Chance(0.3)) return;
  absl::StatusOr<uint64_t> followed = follower_->Follow();
  if (followed.ok()) return;
  if (absl::IsFailedPrecondition(followed.status())) {
    SIM_TRACE(absl::StrCat("standby-replay starts over: ", followed.status().ToString()));
    ++result_.follower_restarts;
    StartFollower();
    return;
  }
  // Its reads are never refused: any other error is the journal's or the
  // follower's own.
  Fail(absl::StrCat("standby-replay: ", followed.status().ToString()));
}

void World::Crash(const std::string& why) {
  SIM_TRACE(absl::StrCat("crash (", why, ")"));
  ++result_.crashes;
  for (Client& c : clients_) {
    if (c.pending && c.pending->run) {
      rank_->EndRun(*c.pending->run);
      c.pending->run.reset();
    }
    c.needs_reconnect = true;
    c.stream_gen = 0;
    c.inbox.clear();
    c.caps.clear();
  }
  rank_.reset();
  store_.Blocklist(rank_name_);  // nothing the dead one sends lands any more
  crash_after_ = -1;
  StartIncarnation();
}

// ---- driving requests

absl::Status World::CallNow(Client& c, pb::MetaRequest request, pb::MetaReply* reply) {
  request.set_session(c.session);
  if (request.tid() == 0) request.set_tid(c.next_tid++);
  absl::StatusOr<Request> converted = FromWire(request);
  if (!converted.ok()) return converted.status();
  Reply answer;
  std::unique_ptr<RequestRun> run = rank_->StartRun(*converted, &answer);
  absl::Status status;
  for (int steps = 0;; ++steps) {
    if (steps > 10000) {
      Fail("a request did not finish in 10000 steps");
      status = absl::InternalError("stuck");
      break;
    }
    RequestRun::Outcome o = rank_->StepRun(*run);
    if (o.kind == Kind::kDone) {
      status = o.status;
      break;
    }
    if (o.kind == Kind::kWait) {
      while (!rank_->WaitOver(o.wait)) {
        if (o.wait.deadline == absl::InfiniteFuture()) {
          Fail(absl::StrCat("a synchronous request waits forever (", o.wait.what, ")"));
          rank_->EndRun(*run);
          return absl::InternalError("stuck");
        }
        clock_.AdvanceTo(o.wait.deadline);
      }
      continue;
    }
    if (o.kind == Kind::kDurable) {
      while (rank_->durable_seq() < o.seq && rank_->journal_error().ok() && rank_->WriteJournal()) {
      }
      rank_->IoDoneRun(*run,
                       rank_->durable_seq() >= o.seq ? absl::OkStatus() : rank_->journal_error());
      continue;
    }
    rank_->IoDoneRun(*run, rank_->DoIo(o));
  }
  rank_->EndRun(*run);
  rank_->FinishReply(status, &answer);
  reply->Clear();
  ToWire(answer, request.tid(), reply);  // as the adapter does
  return answer.status;
}

void World::OpenSession(Client& c) {
  if (c.session != 0) ++c.osd_gen;  // as recover_session=clean: a new OSD identity
  c.evicted = false;
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto opened = rank_->SessionOpen(absl::StrCat("client.", c.index), c.osd_name(), 0);
    if (opened.ok()) {
      c.session = opened->session();
      c.boot = opened->boot();
      c.last_renew_ms = clock_.NowMs();
      auto gen = rank_->OpenLeaseStream(c.session);
      c.stream_gen = gen.ok() ? *gen : 0;
      return;
    }
    if (crashed_ || !rank_->journal_error().ok()) Crash("journal broke opening a session");
  }
  Fail("no session could be opened");
}

bool World::Reconnect(Client& c) {
  pb::ReconnectRequest req;
  req.set_session(c.session);
  req.set_opens_complete(true);  // as the FUSE client's: every handle it holds
  for (const auto& [ino, n] : c.handles) {
    pb::OpenRef* o = req.add_opens();
    o->set_ino(ino);
    o->set_handles(n);
    auto w = c.writers.find(ino);
    o->set_writers(w == c.writers.end() ? 0 : w->second);
  }
  if (c.lock) {
    pb::LockInfo* l = req.add_locks();
    l->set_ino(lock_file_);
    l->set_kind(pb::LK_FLOCK);
    l->set_type(*c.lock);
    l->set_start(0);
    l->set_end((uint64_t{1} << 63) - 1);
    l->set_owner(1);
    l->set_pid(100 + c.index);
  }
  std::vector<const pb::MetaRequest*> order;
  for (const auto& [tid, r] : c.unsafe) order.push_back(&r);
  std::sort(order.begin(), order.end(), [](const pb::MetaRequest* a, const pb::MetaRequest* b) {
    return a->replay_seq() < b->replay_seq();
  });
  for (const pb::MetaRequest* r : order) *req.add_replays() = *r;
  absl::StatusOr<pb::ReconnectReply> reply = rank_->ReconnectBegin(req);
  if (!reply.ok()) {
    SIM_TRACE(absl::StrCat("client ", c.index, " reconnect: ", reply.status().ToString()));
    // Refused as too late (IsEvicted): it tries again until the eviction
    // has run (NoteEvictions), then opens a new session below.
    if (IsNoSession(reply.status())) {
      if (!c.unsafe.empty()) {
        Fail(absl::StrCat("client ", c.index, " lost ", c.unsafe.size(),
                          " acknowledged requests: the new incarnation knows no session ",
                          c.session));
      }
      model_.DropOpens(c.handles);
      c.handles.clear();
      c.writers.clear();
      c.lock.reset();
      c.needs_reconnect = false;
      OpenSession(c);
    }
    return false;
  }
  // Kept until the window closed with them durable, as MetaClient keeps
  // them until its Reconnect is answered.
  result_.replays += static_cast<int>(c.unsafe.size());
  c.resent = !c.unsafe.empty();
  for (const pb::LockInfo& lost : reply->locks_lost()) {
    if (lost.ino() == lock_file_) c.lock.reset();
  }
  c.boot = reply->boot();
  c.needs_reconnect = false;
  auto gen = rank_->OpenLeaseStream(c.session);
  c.stream_gen = gen.ok() ? *gen : 0;
  SIM_TRACE(absl::StrCat("client ", c.index, " reconnected, resent ", req.replays_size()));
  return true;
}

void World::Renew(Client& c) {
  if (c.frozen || clock_.NowMs() - c.last_renew_ms < 10000) return;
  auto renewed = rank_->SessionRenew(c.session, /*cached_inodes=*/0);
  if (renewed.ok()) {
    c.last_renew_ms = clock_.NowMs();
    if (renewed->boot() != c.boot) c.needs_reconnect = true;
  }
}

void World::DeliverEvents(Client& c, bool all) {
  c.delivered = clock_.Now();
  if (c.stream_gen == 0 || c.needs_reconnect) return;
  std::deque<pb::LeaseEvent> events;
  if (!rank_->TakeLeaseEvents(c.session, c.stream_gen, &events)) {
    auto gen = rank_->OpenLeaseStream(c.session);  // the stream ended: a new one
    c.stream_gen = gen.ok() ? *gen : 0;
    return;
  }
  for (pb::LeaseEvent& e : events) {
    if (e.hello() || e.release()) continue;
    if (e.recall_caps() > 0) {
      GiveBack(c, e.recall_caps());
      continue;
    }
    if (!e.flush() && !e.inval()) {
      auto held = c.caps.find(e.ino());
      if (held != c.caps.end() && (held->second.bits &= ~e.caps()) == 0) c.caps.erase(held);
    }
    c.inbox.push_back(e);
  }
  // Acknowledged now, or left for later (a slow client).
  if (c.inbox.empty() || (!all && rng_.Chance(0.2))) return;
  pb::LeaseAckRequest ack;
  ack.set_session(c.session);
  for (const pb::LeaseEvent& e : c.inbox) *ack.add_acks() = e;
  c.inbox.clear();
  (void)rank_->LeaseAck(ack);
  SIM_TRACE(absl::StrCat("client ", c.index, " acks ", ack.acks_size()));
}

void World::FreezeAndThaw(bool draining) {
  for (Client& c : clients_) {
    if (c.frozen && (draining || clock_.Now() >= c.thaw_at)) {
      c.frozen = false;
      SIM_TRACE(absl::StrCat("client ", c.index, " thaws", c.evicted ? " (evicted)" : ""));
    }
  }
  if (!freezes_ || draining || !freeze_rng_.Chance(0.006)) return;
  Client& c = clients_[freeze_rng_.Below(clients_.size())];
  int frozen = 0;
  for (const Client& o : clients_) frozen += o.frozen ? 1 : 0;
  // Only an idle one (nothing unsafe either: a client that dies with the
  // MDS loses its unsafe changes, which the model cannot take back), and
  // never all of them.
  if (c.frozen || c.pending || !c.unsafe.empty() || !c.follow_ups.empty() || c.needs_reconnect ||
      c.resent || frozen + 1 >= static_cast<int>(clients_.size())) {
    return;
  }
  // Briefly (a slow client, answered late), or past mds_revoke_timeout and
  // perhaps the session timeout (evicted).
  const int64_t ms = freeze_rng_.Chance(0.5) ? 1000 + freeze_rng_.Below(4000)
                                             : 15000 + freeze_rng_.Below(60000);
  c.frozen = true;
  c.thaw_at = clock_.Now() + absl::Milliseconds(ms);
  ++result_.freezes;
  SIM_TRACE(absl::StrCat("client ", c.index, " freezes for ", ms, " ms"));
}

void World::NoteEvictions() {
  std::set<uint64_t> live;
  for (const pb::ClientInfo& info : rank_->ClientList()) live.insert(info.session());
  for (Client& c : clients_) {
    if (c.evicted || live.contains(c.session) || !fenced_.contains(c.osd_name())) continue;
    SIM_TRACE(absl::StrCat("client ", c.index, " evicted (session ", c.session, ")"));
    ++result_.evictions;
    c.evicted = true;
    model_.DropOpens(c.handles);
    c.handles.clear();
    c.writers.clear();
    c.lock.reset();
    c.caps.clear();
    c.inbox.clear();
    c.stream_gen = 0;
    // Its unsafe requests are durable: the eviction waited for its own
    // journal event, which follows them.
    c.unsafe.clear();
    c.resent = false;
    c.follow_ups.clear();  // duplicates of its answers, and inline moves of files it had open
  }
}

void World::GiveBack(Client& c, uint32_t n) {
  // As DirLeases::GiveBack: those granted longest ago first, each as if
  // revoked, acknowledged as released (with the others waiting, or later).
  std::vector<std::pair<uint64_t, uint64_t>> order;  // (granted, ino)
  for (const auto& [ino, held] : c.caps) order.push_back({held.granted, ino});
  std::sort(order.begin(), order.end());
  for (size_t i = 0; i < order.size() && i < n; ++i) {
    const uint64_t ino = order[i].second;
    pb::LeaseEvent e;
    e.set_ino(ino);
    e.set_seq(c.caps[ino].seq);
    e.set_caps(c.caps[ino].bits);
    e.set_released(true);
    c.caps.erase(ino);
    c.inbox.push_back(e);
  }
  SIM_TRACE(absl::StrCat("client ", c.index, " gives back ", std::min<size_t>(n, order.size())));
}

void World::Advance(Client& c) {
  Pending& p = *c.pending;
  if (!p.run) {
    rank_->MaybeFinishReconnect();
    p.plan.request.set_session(p.plan.session != 0 ? p.plan.session : c.session);
    p.plan.request.set_tid(p.tid);
    uint64_t oldest = p.tid;
    for (const auto& [tid, r] : c.unsafe) oldest = std::min(oldest, tid);
    p.plan.request.set_oldest_tid(oldest);
    p.plan.request.set_unsafe_ok(true);  // as MetaClient: early answers are taken
    p.plan.request.mutable_creds()->set_uid(c.uid);
    p.plan.request.mutable_creds()->set_gid(c.gid);
    p.reply.Clear();
    p.answer = Reply();
    ++p.attempts;
    if (rank_->Reconnecting()) {
      Answer(c, absl::UnavailableError("the MDS is waiting for clients to reconnect"));
      return;
    }
    absl::StatusOr<Request> request = FromWire(p.plan.request);
    if (!request.ok()) {  // refused at the adapter, as MdsService::CallOnRank does
      rank_->FinishReply(request.status(), &p.answer);
      ToWire(p.answer, p.tid, &p.reply);
      Answer(c, request.status());
      return;
    }
    p.request = *std::move(request);
    p.run = rank_->StartRun(p.request, &p.answer);
    p.outcome = rank_->StepRun(*p.run);
  } else {
    RequestRun::Outcome& o = p.outcome;
    switch (o.kind) {
      case Kind::kWait:
        if (!rank_->WaitOver(o.wait)) return;
        break;
      case Kind::kDurable:
        if (rank_->durable_seq() >= o.seq) {
          rank_->IoDoneRun(*p.run, absl::OkStatus());
        } else if (!rank_->journal_error().ok()) {
          rank_->IoDoneRun(*p.run, rank_->journal_error());
        } else {
          return;  // the journal writes when the scheduler says
        }
        break;
      case Kind::kLoad:
      case Kind::kMove:
      case Kind::kCut:
        if (clock_.Now() < p.io_at) return;
        rank_->IoDoneRun(*p.run, rank_->DoIo(o));
        if (crashed_) return;  // it died in the middle: Run() crashes it
        break;
      case Kind::kDone:
        break;
    }
    p.outcome = rank_->StepRun(*p.run);
  }
  RequestRun::Outcome& o = p.outcome;
  SIM_TRACE(absl::StrCat("client ", c.index, " ", p.plan.what, " tid ", p.tid, " -> ",
                         static_cast<int>(o.kind), o.kind == Kind::kWait ? o.wait.what : ""));
  if (o.kind == Kind::kLoad || o.kind == Kind::kMove || o.kind == Kind::kCut) {
    p.io_at = clock_.Now() + absl::Milliseconds(rng_.Below(3) == 0 ? rng_.Below(200) : 0);
    return;
  }
  if (o.kind != Kind::kDone) return;
  rank_->EndRun(*p.run);
  p.run.reset();
  rank_->FinishReply(o.status, &p.answer);
  ToWire(p.answer, p.tid, &p.reply);  // as the adapter does
  Answer(c, p.answer.status);
}

// A reply, as MetaClient takes it: a new incarnation means reconnect and
// send again; an unsafe answer is kept for resending until durable.
void World::Answer(Client& c, absl::Status status) {
  Pending& p = *c.pending;
  if (p.reply.boot() != 0 && p.reply.boot() != c.boot) {
    c.needs_reconnect = true;  // then this request again
    return;
  }
  auto granted = [&c](const pb::DirLease& l, uint32_t bits) {
    Client::HeldCap& held = c.caps[l.ino()];
    if (held.bits == 0) held.granted = ++c.grants;
    held.seq = std::max(held.seq, l.seq());
    held.bits |= bits;
  };
  for (const pb::DirLease& l : p.reply.leases()) granted(l, caps::kLs);
  for (const pb::DirLease& l : p.reply.attr_caps()) granted(l, caps::kAttrs);
  if (status.ok()) {
    if (p.reply.unsafe()) {
      pb::MetaRequest resend = p.plan.request;
      resend.set_replay_seq(p.reply.seq());
      resend.set_replay_time_ns(p.reply.time_ns());
      const pb::MetaRequest& r = p.plan.request;
      if (r.has_create() || r.has_mkdir() || r.has_symlink()) {
        resend.set_replay_ino(p.reply.attr().ino());
      }
      c.unsafe[p.tid] = std::move(resend);
    }
  }
  for (auto it = c.unsafe.begin(); it != c.unsafe.end();) {
    if (it->second.replay_seq() <= p.reply.durable_seq() && p.reply.boot() == c.boot) {
      it = c.unsafe.erase(it);
    } else {
      ++it;
    }
  }
  if (!status.ok()) {
    if (IsNoSession(status) && c.evicted && p.plan.session == 0) {
      // Evicted (NoteEvictions): what needed the old session's handles
      // fails, as the mount reports EIO for it, and a resend of an answered
      // request (a duplicate) belongs to the old session; anything else is
      // sent again in a new one.
      using R = pb::MetaRequest;
      const R::OpCase op = p.plan.request.op_case();
      if (p.plan.tid != 0 || op == R::kWritten || op == R::kInlineData || op == R::kLock ||
          op == R::kRelease) {
        SIM_TRACE(absl::StrCat("client ", c.index, " ", p.plan.what, " failed: evicted"));
        c.pending.reset();
        return;
      }
      OpenSession(c);
      return;
    }
    if (IsNoSession(status) && p.attempts < 3 && !p.plan.no_retry) {
      SIM_TRACE(absl::StrCat("client ", c.index, " lost its session"));
      model_.DropOpens(c.handles);
      c.handles.clear();
      c.writers.clear();
      c.lock.reset();
      OpenSession(c);
      return;  // sent again
    }
    if (Retryable(status) && p.attempts < 200) return;  // sent again (same tid)
  }
  ++result_.requests;
  digest_.Add(absl::StrCat(c.index, ":", p.plan.what, ":", ErrnoOf(status), ":",
                           p.reply.attr().ino(), ":", p.reply.entries_size()));
  SIM_TRACE(absl::StrCat("client ", c.index, " ", p.plan.what, " answered ", status.ToString(),
                         " ino ", p.reply.attr().ino(), p.reply.unsafe() ? " unsafe seq " : " seq ",
                         p.reply.seq(), " | ", p.plan.request.ShortDebugString()));
  std::string wrong = p.plan.check ? p.plan.check(status, p.reply) : "";
  if (!wrong.empty()) Fail(absl::StrCat("client ", c.index, " ", p.plan.what, ": ", wrong));
  using R = pb::MetaRequest;
  const R::OpCase op = p.plan.request.op_case();
  const bool mutation = op == R::kMkdir || op == R::kCreate || op == R::kSymlink ||
                        op == R::kLink || op == R::kUnlink || op == R::kRmdir || op == R::kRename ||
                        op == R::kSetattr || op == R::kSetxattr || op == R::kRemovexattr;
  // Not a create that opens: a client resends only what it got no answer
  // to, and this one has its handle (a resend of an answered open would
  // count a second one, rightly).
  const bool opens = op == R::kCreate && p.plan.request.create().open();
  if (mutation && !opens && p.plan.tid == 0 && rng_.Chance(0.1)) {
    // The same request once more with its tid, as after a lost reply: the
    // same answer, and nothing applied twice.
    Plan dup;
    dup.what = "duplicate";
    dup.request = p.plan.request;
    dup.tid = p.tid;
    const int want = ErrnoOf(status);
    const uint64_t ino = p.reply.attr().ino();
    dup.check = Expect(want, [ino](const pb::MetaReply& r) -> std::string {
      if (r.attr().ino() != ino) return absl::StrCat("a duplicate answered inode ", r.attr().ino());
      return "";
    });
    c.follow_ups.push_front(std::move(dup));
  }
  c.pending.reset();
}

// ---- checks

void World::Fail(const std::string& what) {
  if (result_.failure.empty()) {
    result_.failure = absl::StrCat("seed ", options_.seed, " step ", result_.steps, ": ", what);
  }
}

void World::Trace(const std::string& line) {
  if (options_.trace) std::fprintf(stderr, "sim %5d %s\n", result_.steps, line.c_str());
}

std::string World::CompareModel(const View& v) {
  for (const auto& [dir, entries] : model_.entries()) {
    auto it = v.dirs.find(dir);
    if (it == v.dirs.end()) return absl::StrCat("directory ", dir, " is gone");
    std::map<std::string, uint64_t> got;
    for (const auto& [name, d] : it->second) got[name] = d.ino();
    if (got != entries) {
      for (const auto& [name, ino] : entries) {
        if (!got.contains(name)) return absl::StrCat("directory ", dir, " lacks ", name);
        if (got.at(name) != ino)
          return absl::StrCat(dir, "/", name, " names ", got.at(name), " not ", ino);
      }
      for (const auto& [name, ino] : got) {
        if (!entries.contains(name))
          return absl::StrCat("directory ", dir, " has ", name, " the model lacks");
      }
    }
  }
  for (const auto& [ino, n] : model_.nodes()) {
    auto it = v.inodes.find(ino);
    if (it == v.inodes.end()) return absl::StrCat("inode ", ino, " is gone");
    const pb::InodeRec& rec = it->second;
    if ((rec.mode() & S_IFMT) != (n.mode & S_IFMT))
      return absl::StrCat("inode ", ino, " changed type");
    if ((n.mode & S_IFMT) != S_IFLNK && (rec.mode() & 07777) != (n.mode & 07777)) {
      return absl::StrCat("inode ", ino, " mode ", rec.mode(), ", the model says ", n.mode);
    }
    if ((n.IsReg() || (n.mode & S_IFMT) == S_IFLNK) && rec.size() != n.size) {
      return absl::StrCat("inode ", ino, " size ", rec.size(), ", the model says ", n.size);
    }
    if (!n.IsDir() && static_cast<int>(rec.nlink()) != n.links) {
      return absl::StrCat("inode ", ino, " nlink ", rec.nlink(), ", the model says ", n.links);
    }
    if (rec.symlink() != n.target) return absl::StrCat("inode ", ino, " symlink target changed");
    if (rec.uid() != n.uid || rec.gid() != n.gid) {
      return absl::StrCat("inode ", ino, " owner ", rec.uid(), ":", rec.gid(), ", the model says ",
                          n.uid, ":", n.gid);
    }
    std::map<std::string, std::string> xattrs;
    for (const pb::Xattr& x : rec.xattrs()) {
      if (x.name().rfind("user.", 0) == 0) xattrs[x.name()] = x.value();
    }
    if (xattrs != n.xattrs) return absl::StrCat("inode ", ino, " has other xattrs than the model");
  }
  for (const auto& [ino, rec] : v.inodes) {
    if (!model_.Find(ino)) return absl::StrCat("inode ", ino, " exists, the model has none");
  }
  return "";
}

View World::ReadNow() {
  return rank_->Inspect(
      [&](const mds::MetaCache& cache, const mds::Sessions& sessions, const auto& pending) {
        return ReadView(cache, sessions, pending, store_, kMetaPool, kFs);
      });
}

void World::CheckStep() {
  if (!rank_) return;
  View view = ReadNow();
  view.reconnecting = rank_->Reconnecting();
  if (std::string broken = CheckInvariants(view, rstats_ok_); !broken.empty()) {
    Fail(absl::StrCat("invariant: ", broken));
    return;
  }
  if (absl::Status caps = rank_->CheckCaps(); !caps.ok()) {
    Fail(absl::StrCat("invariant: ", caps.message()));
    return;
  }
  bool idle = !rank_->Reconnecting();
  for (const Client& c : clients_) idle &= !c.pending && !c.needs_reconnect && c.follow_ups.empty();
  if (!idle) return;
  if (std::string differs = CompareModel(view); !differs.empty()) {
    Fail(absl::StrCat("the namespace differs from the model: ", differs));
  }
}

void World::CheckPurged() {
  if (!rank_ || !result_.failure.empty()) return;
  for (Client& c : clients_) {
    // Half the clients release their handles one by one, the others leave
    // them to the session's close.
    if (c.index % 2 == 0) {
      for (const auto& [ino, n] : c.handles) {
        const auto w = c.writers.find(ino);
        const int writers = w == c.writers.end() ? 0 : w->second;
        for (int i = 0; i < n; ++i) {
          pb::MetaRequest release;
          release.mutable_release()->set_ino(ino);
          release.mutable_release()->set_write(i < writers);
          pb::MetaReply reply;
          if (absl::Status s = CallNow(c, release, &reply); !s.ok()) {
            Fail(absl::StrCat("client ", c.index, " release of ", ino, ": ", s.ToString()));
            return;
          }
        }
      }
    }
    if (absl::Status closed = rank_->SessionClose(c.session); !closed.ok()) {
      Fail(absl::StrCat("client ", c.index, " session close: ", closed.ToString()));
      return;
    }
    model_.DropOpens(c.handles);
    c.handles.clear();
    c.writers.clear();
  }
  View view;
  for (int round = 0; round < 64; ++round) {
    rank_->PurgeSome();
    rank_->RunPendingTrims();
    for (int i = 0; i < 8 && rank_->WriteJournal(); ++i) {
    }
    rank_->PropagateRstats();
    (void)rank_->FlushOnce();
    view = ReadNow();
    if (view.strays.empty() && view.purge.empty() && view.trims.empty()) break;
  }
  if (!view.strays.empty() || !view.purge.empty() || !view.trims.empty()) {
    Fail(absl::StrCat("after every session closed, ", view.strays.size(), " strays, ",
                      view.purge.size(), " purges and ", view.trims.size(), " trims are left"));
    return;
  }
  CheckStep();
  for (const std::string& name : store_.Names(kDataPool)) {
    uint64_t ino = 0;
    const size_t dot = name.find('.');
    if (dot == std::string::npos || !absl::SimpleHexAtoi(name.substr(0, dot), &ino) ||
        !striping::DataObjectNumber(ino, name)) {
      Fail(absl::StrCat("data object ", name, " is not named as data objects are"));
      return;
    }
    if (!view.inodes.contains(ino)) {
      Fail(absl::StrCat("data object ", name, " of inode ", ino, " outlives the inode"));
      return;
    }
  }
}

// ---- the run

SimResult World::Run() {
  fault::Disarm(fault::kMdsJournalWriteError);
  fault::Seed(options_.seed);
  rank_options_ = MakeRankOptions();
  const bool faults = rng_.Chance(0.6);
  refuse_p_ = faults ? (rng_.Chance(0.5) ? 0.01 : 0.05) : 0;
  links_ = rng_.Chance(0.35);
  const double crash_p = rng_.Chance(0.5) ? 0.004 : 0.0;
  const bool journal_faults = rng_.Chance(0.2);
  store_.SetHook([this](const objects::MemObjects::Request& r) { return Hook(r); });
  {
    ++incarnation_;
    rank_name_ = absl::StrCat("mds.", incarnation_);
    objects_ = store_.Client(rank_name_);
    mds::MdsRank creator(rank_options_, MakeEnv(objects_.get()));
    if (absl::Status made = creator.Create(); !made.ok()) {
      Fail(absl::StrCat("create: ", made.ToString()));
      return result_;
    }
  }
  standby_replay_ = follow_rng_.Chance(0.5);
  if (!StartIncarnation()) return result_;
  freezes_ = freeze_rng_.Chance(0.4);
  const int nclients = 2 + static_cast<int>(rng_.Below(3));
  clients_.resize(nclients);
  for (int i = 0; i < nclients; ++i) {
    clients_[i].index = i;
    clients_[i].uid = clients_[i].gid = i == 0 ? 0 : 1000 + i;
    OpenSession(clients_[i]);
  }
  {
    Client& c0 = clients_[0];
    pb::MetaRequest mk;
    mk.mutable_mkdir()->set_parent(mds::kRootIno);
    mk.mutable_mkdir()->set_name("shared");
    mk.mutable_mkdir()->set_mode(01777);
    pb::MetaReply reply;
    if (!CallNow(c0, mk, &reply).ok()) {
      Fail("setup: mkdir /shared");
      return result_;
    }
    shared_ = reply.attr().ino();
    model_.Make(mds::kRootIno, "shared", shared_, S_IFDIR | 01777);
    pb::MetaRequest cr;
    cr.mutable_create()->set_parent(shared_);
    cr.mutable_create()->set_name("lock");
    cr.mutable_create()->set_mode(0644);
    if (!CallNow(c0, cr, &reply).ok()) {
      Fail("setup: create /shared/lock");
      return result_;
    }
    lock_file_ = reply.attr().ino();
    model_.Make(shared_, "lock", lock_file_, S_IFREG | 0644);
  }
  for (Client& c : clients_) {
    pb::MetaRequest mk;
    mk.mutable_mkdir()->set_parent(mds::kRootIno);
    mk.mutable_mkdir()->set_name(absl::StrCat("c", c.index));
    mk.mutable_mkdir()->set_mode(0755);
    pb::MetaReply reply;
    if (!CallNow(c, mk, &reply).ok()) {
      Fail("setup: mkdir /cN");
      return result_;
    }
    c.home = reply.attr().ino();
    c.dirs = {c.home};
    model_.Make(mds::kRootIno, absl::StrCat("c", c.index), c.home, S_IFDIR | 0755);
    pb::MetaRequest chown;  // made by root (no creds), given to its user
    chown.mutable_setattr()->set_ino(c.home);
    chown.mutable_setattr()->set_valid(pb::SA_UID | pb::SA_GID);
    chown.mutable_setattr()->set_uid(c.uid);
    chown.mutable_setattr()->set_gid(c.gid);
    if (!CallNow(c, chown, &reply).ok()) {
      Fail("setup: chown /cN");
      return result_;
    }
    model_.SetOwner(c.home, c.uid, c.gid);
    pb::MetaRequest open;
    open.mutable_open()->set_ino(lock_file_);
    open.mutable_open()->set_flags(O_RDONLY);
    if (!CallNow(c, open, &reply).ok()) {
      Fail("setup: open /shared/lock");
      return result_;
    }
    ++c.handles[lock_file_];
    model_.Open(lock_file_);
  }
  faults_ = faults;  // the setup ran without refusals
  if (journal_faults) {
    // The journal breaks now and then: the rank then dies and is replayed.
    fault::Arming journal;
    journal.probability = 0.01;
    journal.times = 2;
    (void)fault::Arm(fault::kMdsJournalWriteError, journal);
  }

  const int total = options_.steps;
  for (int step = 0; result_.failure.empty(); ++step) {
    result_.steps = step;
    const bool draining = step >= total;
    bool busy = false;
    for (const Client& c : clients_) busy |= c.pending.has_value() || c.needs_reconnect;
    if (draining && !busy) break;
    if (step > total * 20 + 20000) {
      Fail("the requests did not finish");
      break;
    }
    // Time passes; sessions renew; the reconnect window may close. A
    // client that is not frozen reconnects within the window: no long jump
    // while one has yet to (one that misses it is evicted, and loses its
    // unsafe changes with the MDS, which the model cannot take back).
    absl::Duration dt = absl::Milliseconds(1 + rng_.Below(rng_.Chance(0.02) ? 6000 : 30));
    for (const Client& o : clients_) {
      if (o.needs_reconnect && !o.frozen) dt = std::min(dt, absl::Milliseconds(30));
    }
    clock_.Advance(dt);
    FreezeAndThaw(draining);
    for (Client& c : clients_) Renew(c);
    // A client that is not frozen answers revokes well within
    // mds_revoke_timeout, however the scheduler picks: only frozen clients
    // are evicted. (A live one evicted with a request in flight would not
    // know whether it was applied, and neither would the model; the
    // cluster tests cut such clients off for real.)
    for (Client& c : clients_) {
      if (!c.frozen && clock_.Now() - c.delivered > absl::Seconds(3)) DeliverEvents(c, true);
    }
    rank_->MaybeFinishReconnect();
    for (Client& c : clients_) {
      if (c.resent && !c.needs_reconnect && rank_->ReconnectResult().ok()) {
        c.unsafe.clear();  // its Reconnect is answered: applied and durable
        c.resent = false;
      }
    }
    const int pick = static_cast<int>(rng_.Below(100));
    Client& c = clients_[rng_.Below(clients_.size())];
    digest_.Add(absl::StrCat(step, ".", pick, ".", c.index));
    const bool acts = c.needs_reconnect || pick < 30 || (pick < 70 && c.pending) ||
                      (pick >= 80 && pick < 88);
    if (c.frozen && acts) {
      // Stopped: it sends nothing and takes no events.
    } else if (c.needs_reconnect) {
      Reconnect(c);
    } else if (pick < 30 && !c.pending && !draining) {
      Pending p;
      p.plan = NextPlan(c);
      p.tid = p.plan.tid != 0 ? p.plan.tid : c.next_tid++;
      c.pending = std::move(p);
      Advance(c);
    } else if (pick < 70 && c.pending) {
      Advance(c);
    } else if (pick < 80) {
      rank_->WriteJournal();
    } else if (pick < 88) {
      DeliverEvents(c);
    } else if (pick < 98) {
      // A background step, perhaps dying in the middle of its writes.
      if (rng_.Chance(crash_p * 10)) crash_after_ = static_cast<int>(rng_.Below(4));
      switch (rng_.Below(7)) {
        case 0:
        case 1:
          (void)rank_->FlushOnce();
          break;
        case 2:
          rank_->PropagateRstats();
          break;
        case 3:
          rank_->PurgeSome();
          break;
        case 4:
          rank_->RunPendingTrims();
          break;
        case 5:
          rank_->ExpireSessions();
          NoteEvictions();
          break;
        default:
          rank_->TrimCache();
          break;
      }
      crash_after_ = -1;
    } else if (rng_.Chance(crash_p * 25) && result_.crashes < 4) {
      Crash("at a random step");
    }
    if (crashed_ || !rank_->journal_error().ok()) Crash("died in the middle of a step");
    if (!result_.failure.empty()) break;
    FollowStep();
    CheckStep();
  }
  if (result_.failure.empty()) {
    // Everything settles: the journal written, the statistics propagated,
    // and then a last crash and replay must show the same namespace.
    faults_ = false;
    fault::Disarm(fault::kMdsJournalWriteError);
    for (int i = 0; i < 8 && rank_->WriteJournal(); ++i) {
    }
    rank_->PropagateRstats();
    (void)rank_->FlushOnce();
    CheckStep();
    if (result_.failure.empty()) {
      Crash("at the end");
      for (Client& c : clients_) {
        if (c.needs_reconnect) Reconnect(c);
      }
      rank_->MaybeFinishReconnect();
      CheckStep();
      CheckPurged();
    }
  }
  digest_.Add(result_.failure);
  result_.digest = digest_.value();
  for (Client& c : clients_) {
    if (c.pending && c.pending->run) rank_->EndRun(*c.pending->run);
  }
  rank_.reset();
  follower_.reset();
  fault::Disarm(fault::kMdsJournalWriteError);
  return result_;
}

SimResult RunSeed(const SimOptions& options) {
  World world(options);
  return world.Run();
}

}  // namespace weft::sim
