#include "mds/rank.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/fault/fault.h"
#include "common/fs/attr_wire.h"
#include "common/log/log.h"
#include "common/rpc/rpc.h"
#include "common/status/status.h"
#include "common/striping/striping.h"
#include "mds/ops/ops.h"
#include "mds/request_run.h"

namespace weft::mds {
namespace {

uint64_t NewBootId() {
  std::random_device rd;
  uint64_t id = (uint64_t{rd()} << 32) | rd();
  return id == 0 ? 1 : id;
}

// After a restart the inode allocator skips this many numbers: an unsafe reply
// of the previous incarnation may have handed out numbers its journal lost,
// and a client resending that create must get the same number back.
// unsafe_events_max bounds how many there can be.
constexpr uint64_t kInoSkipAfterRestart = uint64_t{1} << 20;
// Truncates' object cuts in flight at once: StripedIo counts each cut as
// one byte of its budget.
constexpr uint64_t kTrimInflightBytes = 16;

}  // namespace

MdsRank::MdsRank(RankOptions options, RankEnv env)
    : options_(std::move(options)),
      env_(std::move(env)),
      objects_(env_.objects),
      store_(objects_, options_.metadata_pool, options_.fs_id, options_.rank),
      journal_(&store_,
               [this] {
                 JournalOptions j = options_.journal;
                 j.writer_thread = options_.threads;
                 return j;
               }()),
      boot_(env_.boot != 0 ? env_.boot : NewBootId()),
      trim_io_(objects_, kTrimInflightBytes, options_.threads ? 16 : 1),
      cache_(options_.fs_id, options_.rank),
      sessions_(options_.fs_id, options_.rank),
      leases_(absl::Milliseconds(
          std::clamp<int64_t>(options_.dir_lease_ms, 0, options_.reconnect_timeout_ms / 2))),
      trims_() {
  leases_.set_cap_limits(Leases::CapLimits{options_.max_caps_per_client,
                                           options_.recall_max_caps,
                                           absl::Milliseconds(options_.recall_interval_ms)});
  CHECK(objects_ != nullptr) << "a rank needs an object layer";
  CHECK(env_.clock != nullptr) << "a rank needs a clock";
}

MdsRank::~MdsRank() { Stop(); }

absl::Status MdsRank::Create() {
  if (options_.rank != 0) {
    // Another rank of an existing filesystem: its own tables and journal.
    ObjectUpdate inotable;
    inotable.set.emplace_back("next_ino", absl::StrCat(RankFirstIno(options_.rank)));
    RETURN_IF_ERROR(store_.Apply(TableObject(options_.fs_id, options_.rank, "inotable"), inotable));
    return journal_.Create();
  }
  const int64_t now = env_.clock->NowNs();
  pb::InodeRec root;
  root.set_ino(kRootIno);
  root.set_mode(S_IFDIR | 0755);
  root.set_nlink(2);
  root.set_parent(kRootIno);
  root.set_atime_ns(now);
  root.set_mtime_ns(now);
  root.set_ctime_ns(now);
  root.set_btime_ns(now);
  root.set_version(1);
  root.set_generation(1);
  ObjectUpdate update;
  update.set.emplace_back(InodeKey(kRootIno), root.SerializeAsString());
  RETURN_IF_ERROR(store_.Apply(InodeTableObject(options_.fs_id, kRootIno), update));
  ObjectUpdate inotable;
  inotable.set.emplace_back("next_ino", absl::StrCat(kFirstFreeIno));
  RETURN_IF_ERROR(store_.Apply(TableObject(options_.fs_id, 0, "inotable"), inotable));
  return journal_.Create();
}

absl::StatusOr<bool> MdsRank::Created() {
  ASSIGN_OR_RETURN(auto head, store_.ReadHead());
  return head.has_value();
}

absl::Status MdsRank::LoadTables() {
  ASSIGN_OR_RETURN(auto sessions, store_.LoadTable("sessions"));
  ASSIGN_OR_RETURN(auto strays, store_.LoadTable("strays"));
  ASSIGN_OR_RETURN(auto purge, store_.LoadTable("purge"));
  ASSIGN_OR_RETURN(auto trims, store_.LoadTable("trims"));
  ASSIGN_OR_RETURN(auto inotable, store_.LoadTable("inotable"));
  absl::MutexLock lock(&mu_);
  sessions_.LoadTable(sessions);
  cache_.LoadTables(strays, purge, trims, inotable);
  return absl::OkStatus();
}

absl::Status MdsRank::ApplyReplayed(Event& event) {
  absl::MutexLock lock(&mu_);
  cache_.Apply(event);
  sessions_.Apply(event);
  NoteRStatsLocked(event);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> MdsRank::Follow() {
  if (!followed_) {
    // The head first: the tables read after it are at least as new as its
    // trim point, and the events after it bring them up to date.
    RETURN_IF_ERROR(journal_.BeginTail());
    RETURN_IF_ERROR(LoadTables());
    followed_ = true;
  }
  return journal_.Tail([&](Event& event) {
    ++followed_events_;
    return ApplyReplayed(event);
  });
}

absl::Status MdsRank::Start() {
  const absl::Time start = env_.clock->Now();
  if (!followed_) RETURN_IF_ERROR(LoadTables());
  uint64_t events = 0;
  ASSIGN_OR_RETURN(uint64_t last, journal_.Replay([&](Event& event) {
    ++events;
    return ApplyReplayed(event);
  }));
  Load strays_load;
  {
    absl::MutexLock lock(&mu_);
    last_seq_ = last;
    const int64_t now = env_.clock->NowMs();
    for (auto& [id, s] : sessions_.all()) {
      s.last_renew_ms = now;  // every client gets a full timeout to come back
      for (auto& [tid, reply] : s.rec.completed()) s.completed_seq[tid] = 0;
    }
    // Open handles are not journaled, except where they matter: a stray
    // (unlinked while open) keeps its holder, whose release purges it.
    for (const auto& [ino, holder] : cache_.strays()) {
      if (SessionState* s = sessions_.Find(SessionId(holder))) s->opens[ino] = 1;
    }
    cache_.SkipInos(std::max<uint64_t>(kInoSkipAfterRestart, options_.unsafe_events_max));
    // Every session the table knows may hold unsafe replies of the previous
    // incarnation: new requests wait until they reconnect (or the window ends).
    for (const auto& [id, s] : sessions_.all()) awaiting_reconnect_.insert(id.value());
    reconnecting_ = !awaiting_reconnect_.empty();
    reconnect_until_ = env_.clock->Now() + absl::Milliseconds(options_.reconnect_timeout_ms);
    // Strays are purged from their inode's layout and size: keep them cached.
    for (const auto& [ino, holder] : cache_.strays()) {
      if (cache_.Inode(ino) == nullptr) strays_load.inodes.push_back(ino);
    }
  }
  if (!strays_load.empty()) RETURN_IF_ERROR(LoadMissing(strays_load));
  const int64_t replay_ms = absl::ToInt64Milliseconds(env_.clock->Now() - start);
  {
    absl::MutexLock lock(&mu_);
    replay_ms_ = replay_ms;
    if (!cache_.trims().empty()) LOG(INFO) << "event=trims_resumed n=" << cache_.trims().size();
  }
  LOG(INFO) << "event=rank_started fs=" << options_.fs_name << " replayed_events=" << events
            << " followed_events=" << followed_events_ << " last_seq=" << last
            << " replay_ms=" << replay_ms;
  journal_.Start();
  if (options_.threads) {
    flusher_ = std::thread([this] { FlusherLoop(); });
    janitor_ = std::thread([this] { JanitorLoop(); });
  }
  // Truncates the previous incarnation did not finish cutting: before
  // anyone may write the files again (those that fail block their files
  // until the janitor's next try).
  RunPendingTrims();
  return absl::OkStatus();
}

void MdsRank::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (flusher_.joinable()) flusher_.join();
  if (janitor_.joinable()) janitor_.join();
  journal_.Stop();
}

// ---- sessions

absl::StatusOr<pb::SessionReply> MdsRank::SessionReplyFor(SessionId session) {
  pb::SessionReply reply;
  reply.set_session(session.value());
  reply.set_root(kRootIno);
  reply.set_timeout_ms(options_.session_timeout_ms);
  reply.set_fs_id(options_.fs_id);
  reply.set_rank(options_.rank);
  reply.set_boot(boot_);
  reply.set_inline_max_bytes(options_.inline_max_bytes);
  return reply;
}

absl::StatusOr<pb::SessionReply> MdsRank::SessionOpen(const std::string& client,
                                                      const std::string& osd_client,
                                                      uint64_t reclaim) {
  SessionId id;
  uint64_t seq = 0;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the MDS is stopping");
    if (!osd_client.empty() && evicted_.contains(osd_client)) {
      return EvictedError(absl::StrCat("client ", absl::CHexEscape(osd_client),
                                       " was evicted (weft client evict); its OSD identity is "
                                       "blocklisted: remount to get a new one"));
    }
    if (reclaim != 0) {
      SessionState* s = sessions_.Find(SessionId(reclaim));
      if (s == nullptr) return Err(ESTALE, "the session to reclaim is gone");
      if (s->evicting) return Err(ESTALE, "the session to reclaim is being evicted");
      s->last_renew_ms = env_.clock->NowMs();
      id = SessionId(reclaim);
    } else {
      Event event;
      event.op = "session_open";
      id = sessions_.TakeId();
      event.sessions.push_back(
          SessionHeader{id, client, env_.clock->NowMs(), /*closed=*/false, osd_client});
      seq = CommitLocked(&event);
      SessionState* s = sessions_.Find(id);
      CHECK(s != nullptr) << "session " << id << " not there after its own event";
      s->last_renew_ms = env_.clock->NowMs();
    }
  }
  if (seq != 0) RETURN_IF_ERROR(journal_.WaitDurable(seq));
  return SessionReplyFor(id);
}

absl::StatusOr<pb::SessionReply> MdsRank::SessionRenew(uint64_t session, uint64_t cached_inodes) {
  absl::MutexLock lock(&mu_);
  SessionState* s = sessions_.Find(SessionId(session));
  if (s == nullptr) return Err(ENOTCONN, "no such session");
  s->last_renew_ms = env_.clock->NowMs();
  s->cached_inodes = cached_inodes;
  ASSIGN_OR_RETURN(pb::SessionReply reply, SessionReplyFor(SessionId(session)));
  const Leases::Renewal renewal = leases_.Renew(SessionId(session), env_.clock->Now());
  reply.set_lease_stream(renewal.stream);
  reply.set_lease_events(renewal.events);
  reply.set_lease_ms(absl::ToInt64Milliseconds(leases_.lease()));
  return reply;
}

absl::Status MdsRank::SessionClose(uint64_t session) {
  uint64_t seq = 0;
  {
    absl::MutexLock lock(&mu_);
    if (sessions_.Find(SessionId(session)) == nullptr) return Err(ENOTCONN, "no such session");
    Event event;
    CloseSessionLocked(SessionId(session), &event);
    seq = CommitLocked(&event);
  }
  return journal_.WaitDurable(seq);
}

void MdsRank::CloseSessionLocked(SessionId session, Event* event) {
  event->op = "session_close";
  SessionState* s = sessions_.Find(session);
  std::vector<uint64_t> held;
  if (s != nullptr) {
    for (auto& [ino, count] : s->opens) held.push_back(ino);
    std::sort(held.begin(), held.end());
  }
  leases_.DropSession(session);
  SessionHeader closed;
  closed.id = session;
  closed.closed = true;
  event->sessions.push_back(std::move(closed));
  for (uint64_t ino : held) ReleaseStrayLocked(ino, session, event);
  locks_.DropSession(session, 0);
}

void MdsRank::ReleaseStrayLocked(uint64_t ino, SessionId releasing, Event* event) {
  if (!cache_.strays().contains(ino)) return;
  if (sessions_.OtherHolder(ino, releasing, /*write=*/false).value() != 0) return;
  event->strays_removed.emplace_back(ino);
  event->removed_inodes.emplace_back(ino);
  CInode* inode = cache_.Inode(ino);
  if (inode != nullptr && !HasDataObjects(inode->inode)) return;  // no data to purge
  Purge purge;
  purge.ino = InodeId(ino);
  if (inode != nullptr) {
    purge.size = inode->inode.size;
    purge.layout = inode->inode.layout;
  }
  event->purges_added.push_back(std::move(purge));
}

uint64_t MdsRank::CommitLocked(Event* event) {
  DCHECK(event->seq == 0) << "an event committed twice";
  const uint64_t seq = ++last_seq_;
  event->seq = seq;
  cache_.Apply(*event);
  sessions_.Apply(*event);
  NoteRStatsLocked(*event);
  journal_.Enqueue(*event);
  return seq;
}

void MdsRank::NoteRStatsLocked(const Event& event) {
  if (event.rstat_propagated) {
    rstat_pending_.clear();
    rstat_pending_since_ = 0;
  }
  for (const RStatChange& c : event.rstat_changes) {
    const RStatDelta& d = c.delta;
    RStatDelta& p = rstat_pending_[c.dir.value()];
    p.rbytes += d.rbytes;
    p.rfiles += d.rfiles;
    p.rsubdirs += d.rsubdirs;
    p.rctime_ns = std::max(p.rctime_ns, d.rctime_ns);
    if (rstat_pending_since_ == 0) rstat_pending_since_ = event.seq;
  }
  for (const RStatMove& m : event.rstat_moves) {
    auto it = rstat_pending_.find(m.from.value());
    if (it == rstat_pending_.end()) continue;
    const RStatDelta moved = it->second;
    rstat_pending_.erase(it);
    RStatDelta& p = rstat_pending_[m.to.value()];
    p.rbytes += moved.rbytes;
    p.rfiles += moved.rfiles;
    p.rsubdirs += moved.rsubdirs;
    p.rctime_ns = std::max(p.rctime_ns, moved.rctime_ns);
  }
}

void MdsRank::MaybeReleaseHoldsLocked(uint64_t ino) {
  if (leases_.HoldWanted(ino) || trims_.Blocked(cache_, ino)) return;
  leases_.MaybeReleaseHolds(ino);
}

void MdsRank::WaitLocked(const std::function<bool()>& ready, absl::Time deadline) {
  if (env_.wait) {
    env_.wait(&mu_, ready, deadline);
  } else {
    mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
  }
}

// ---- requests

Reply MdsRank::Handle(const Request& request) {
  Reply reply;
  MaybeFinishReconnect();
  absl::Status status;
  if (Reconnecting()) {
    status = absl::UnavailableError("the MDS is waiting for clients to reconnect");
  } else {
    RequestRun run(this, request, &reply, /*replay=*/false);
    status = Drive(run);
  }
  FinishReply(std::move(status), &reply);
  return reply;
}

void MdsRank::FinishReply(absl::Status status, Reply* reply) {
  if (!status.ok()) {
    std::vector<DirLeaseGrant> leases = std::move(reply->leases);  // a lookup's ENOENT grants too
    *reply = Reply();
    reply->leases = std::move(leases);
    if (IsNeedLoad(status)) status = absl::UnavailableError("metadata kept changing; retry");
    reply->status = std::move(status);
  }
  reply->boot = boot_;
  reply->durable_seq = journal_.durable_seq();
  reply->osd_epoch_barrier = osd_epoch_barrier_.load(std::memory_order_relaxed);
}

// ---- eviction

std::vector<pb::ClientInfo> MdsRank::ClientList() {
  absl::MutexLock lock(&mu_);
  return ClientListLocked();
}

std::vector<pb::ClientInfo> MdsRank::ClientListLocked() {
  const int64_t now_ms = env_.clock->NowMs();
  std::vector<pb::ClientInfo> out;
  out.reserve(sessions_.size());
  for (const auto& [id, s] : sessions_.all()) {
    pb::ClientInfo& c = out.emplace_back();
    c.set_session(id.value());
    c.set_client(s.rec.client());
    c.set_osd_client(s.rec.osd_client());
    c.set_opened_ms(s.rec.opened_ms());
    c.set_idle_ms(std::max<int64_t>(0, now_ms - s.last_renew_ms));
    c.set_open_files(s.opens.size());
    c.set_caps(leases_.CapsOf(id.value()));
    c.set_dir_leases(leases_.DirLeasesHeldBy(id.value()));
    c.set_attr_caps(leases_.AttrCapsHeldBy(id.value()));
    c.set_lease_stream(leases_.HasStream(id));
    c.set_cached_inodes(s.cached_inodes);
  }
  std::sort(out.begin(), out.end(), [](const pb::ClientInfo& a, const pb::ClientInfo& b) {
    return a.session() < b.session();
  });
  return out;
}

bool MdsRank::WantEvictLocked(SessionId session, const std::string& reason) {
  const SessionState* s = sessions_.Find(session);
  if (s == nullptr || !env_.fence_client || s->rec.osd_client().empty()) return false;
  if (!s->evicting && !evict_running_.contains(session.value())) {
    evict_wanted_.try_emplace(session.value(), reason);
  }
  return true;
}

bool MdsRank::EvictSettledLocked(SessionId session) const {
  const SessionState* s = sessions_.Find(session);
  return s == nullptr || (!s->evicting && !evict_wanted_.contains(session.value()) &&
                          !evict_running_.contains(session.value()));
}

absl::StatusOr<uint64_t> MdsRank::Evict(SessionId session, const std::string& reason) {
  std::string osd_client, client;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the MDS is stopping");
    SessionState* s = sessions_.Find(session);
    if (s == nullptr) return Err(ENOTCONN, absl::StrCat("no session ", session.value()));
    if (s->evicting) return Err(EBUSY, absl::StrCat("session ", session.value(), " is being evicted"));
    if (!env_.fence_client) return Err(ENOTSUP, "this MDS cannot fence clients at the OSDs");
    osd_client = s->rec.osd_client();
    client = s->rec.client();
    if (osd_client.empty()) {
      // A client older than eviction never named its OSD identity: closing
      // its session without a fence would let its late writes land.
      return Err(ENOTSUP, absl::StrCat("session ", session.value(),
                                       " did not name its OSD identity (an older client): it "
                                       "cannot be fenced; stop it, or blocklist it with weft "
                                       "osd blocklist add"));
    }
    s->evicting = true;  // its requests are refused from now on (RequestRun::StepOp)
  }
  // The fence first: nothing the session held may go to another client
  // before its late writes are refused at the OSDs.
  absl::StatusOr<uint64_t> epoch = env_.fence_client(osd_client);
  uint64_t seq = 0;
  {
    absl::MutexLock lock(&mu_);
    SessionState* s = sessions_.Find(session);
    if (!epoch.ok()) {
      if (s != nullptr) s->evicting = false;
      LOG(WARNING) << "event=client_evict_failed session=" << session << " status=\""
                   << epoch.status() << "\"";
      return Annotate(epoch.status(), "fencing the client at the OSDs");
    }
    uint64_t barrier = osd_epoch_barrier_.load();
    while (barrier < *epoch && !osd_epoch_barrier_.compare_exchange_weak(barrier, *epoch)) {
    }
    evicted_.insert(osd_client);
    ++evictions_;
    last_eviction_ = absl::StrCat("session ", session.value(), " (", client, ") at ",
                                  absl::FormatTime("%Y-%m-%d %H:%M:%S UTC",
                                                   env_.clock->Now(), absl::UTCTimeZone()),
                                  ", osdmap epoch ", *epoch, ": ", reason);
    LOG(WARNING) << "event=client_evicted session=" << session << " client=\""
                 << absl::CHexEscape(client) << "\" osd_client=\"" << absl::CHexEscape(osd_client)
                 << "\" osd_epoch=" << *epoch << " reason=\"" << absl::CHexEscape(reason) << "\"";
    if (s != nullptr) {  // (it may have closed itself meanwhile)
      Event event;
      CloseSessionLocked(session, &event);
      event.op = "session_evict";
      seq = CommitLocked(&event);
    }
  }
  if (seq != 0) RETURN_IF_ERROR(journal_.WaitDurable(seq));
  return *epoch;
}

namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int64_t MdsRank::LockForRun() {
  const int64_t asked = SteadyNs();
  mu_.Lock();
  const int64_t taken = SteadyNs();
  lock_wait_ns_.fetch_add(static_cast<uint64_t>(taken - asked), std::memory_order_relaxed);
  return taken;
}

void MdsRank::UnlockForRun(int64_t taken) {
  lock_held_ns_.fetch_add(static_cast<uint64_t>(SteadyNs() - taken), std::memory_order_relaxed);
  mu_.Unlock();
}

absl::Status MdsRank::Drive(RequestRun& run) {
  const int64_t start = SteadyNs();
  int64_t taken = LockForRun();
  absl::Status result;
  for (;;) {
    RunOutcome o = run.Step();
    if (o.kind == RunOutcome::Kind::kDone) {
      result = std::move(o.status);
      break;
    }
    if (o.kind == RunOutcome::Kind::kWait) {
      // Waiting releases mu_: not counted as held.
      lock_held_ns_.fetch_add(static_cast<uint64_t>(SteadyNs() - taken),
                              std::memory_order_relaxed);
      WaitLocked(o.wait.ready, o.wait.deadline);
      taken = SteadyNs();
      continue;
    }
    UnlockForRun(taken);
    const absl::Status io = DoIo(o);
    taken = LockForRun();
    run.IoDone(io);
  }
  run.End();
  UnlockForRun(taken);
  requests_.fetch_add(1, std::memory_order_relaxed);
  request_ns_.fetch_add(static_cast<uint64_t>(SteadyNs() - start), std::memory_order_relaxed);
  return result;
}

std::unique_ptr<RequestRun> MdsRank::StartRun(const Request& request, Reply* reply) {
  return std::make_unique<RequestRun>(this, request, reply, /*replay=*/false);
}

RunOutcome MdsRank::StepRun(RequestRun& run) {
  absl::MutexLock lock(&mu_);
  return run.Step();
}

bool MdsRank::WaitOver(const RunWait& wait) {
  absl::MutexLock lock(&mu_);
  return wait.ready() || env_.clock->Now() >= wait.deadline;
}

void MdsRank::IoDoneRun(RequestRun& run, const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  run.IoDone(status);
}

void MdsRank::EndRun(RequestRun& run) {
  absl::MutexLock lock(&mu_);
  run.End();
}

absl::Status MdsRank::DoIo(const RunOutcome& o) {
  using Kind = RunOutcome::Kind;
  switch (o.kind) {
    case Kind::kLoad:
      return LoadMissing(o.load);
    case Kind::kMove:
      return WriteMove(o.move);
    case Kind::kCut:
      return CutObjects(o.cut);
    case Kind::kDurable:
      return journal_.WaitDurable(o.seq);
    default:
      return absl::InternalError("not an I/O outcome");
  }
}

absl::Status MdsRank::LoadMissing(const Load& load) {
  std::vector<pb::InodeRec> inodes;
  if (!load.inodes.empty()) {
    ASSIGN_OR_RETURN(inodes, store_.LoadInodes(load.inodes));
  }
  std::vector<std::pair<uint64_t, pb::InlineRec>> inline_data;
  for (uint64_t ino : load.inline_data) {
    ASSIGN_OR_RETURN(pb::InlineRec data, store_.LoadInline(ino));
    inline_data.emplace_back(ino, std::move(data));
  }
  std::vector<std::pair<std::pair<uint64_t, Frag>, std::vector<pb::DentryRec>>> frags;
  for (const auto& [dir, frag] : load.frags) {
    ASSIGN_OR_RETURN(auto entries, store_.LoadFrag(dir, frag));
    frags.push_back({{dir, frag}, std::move(entries)});
  }
  absl::MutexLock lock(&mu_);
  absl::flat_hash_set<uint64_t> found;
  for (const pb::InodeRec& rec : inodes) {
    // The store answers what was asked, each inode under its own number.
    DCHECK(std::find(load.inodes.begin(), load.inodes.end(), rec.ino()) != load.inodes.end())
        << "loaded inode " << rec.ino() << ", which was not asked for";
    found.insert(rec.ino());
    cache_.MergeInode(rec);
  }
  for (uint64_t ino : load.inodes) {
    if (!found.contains(ino) && cache_.Inode(ino) == nullptr) cache_.MarkAbsent(ino);
  }
  for (auto& [key, entries] : frags) cache_.MergeFrag(key.first, key.second, entries);
  for (auto& [ino, data] : inline_data) cache_.MergeInline(ino, data);
  return absl::OkStatus();
}

absl::Status MdsRank::WriteMove(const InlineMove& move) {
  // The whole object replaced: bytes an earlier, unrecorded move left in it
  // (the MDS stopped before its event) go too. No bytes: no object (a hole
  // reads as zeros), as a purge removes objects only below the file's size
  // and an empty file's would outlive it (found by the simulation).
  const std::string oid = striping::DataObjectName(move.ino, 0);
  absl::Status done;
  if (move.data.empty()) {
    done = objects_->Remove(move.pool, oid);
    if (absl::IsNotFound(done)) done = absl::OkStatus();
  } else {
    objects::ObjectOperation op;
    op.WriteFull(move.data);
    done = objects_->Execute(move.pool, oid, std::move(op)).status();
  }
  if (!done.ok()) {
    LOG(WARNING) << "event=inline_move_failed ino=" << move.ino << " status=\"" << done << "\"";
    return Annotate(done, absl::StrCat("moving the inline data of inode ", move.ino));
  }
  VLOG(1) << "event=inline_moved ino=" << move.ino << " bytes=" << move.data.size()
          << " inline_version=" << move.inline_version;
  if (fault::Fire(fault::kMdsExitAfterInlineMove)) {
    // The object holds the bytes, the event that says so is never written.
    LOG(ERROR) << "event=fault_point name=mds_exit_after_move ino=" << move.ino;
    std::_Exit(137);
  }
  return absl::OkStatus();
}

absl::Status MdsRank::CutObjects(const Cut& cut) {
  ASSIGN_OR_RETURN(objects::FileData data,
                   objects::FileDataOf(cut.ino.value(), cut.layout.stripe, cut.layout.pool));
  return trim_io_.Trim(data, cut.size, cut.keep);
}

// ---- reconnect after a restart

bool MdsRank::Reconnecting() {
  absl::MutexLock lock(&mu_);
  return reconnecting_;
}

absl::StatusOr<pb::ReconnectReply> MdsRank::ReconnectBegin(const pb::ReconnectRequest& request) {
  pb::ReconnectReply reply;
  std::vector<Request> resent;
  resent.reserve(request.replays_size());
  for (const pb::MetaRequest& r : request.replays()) {
    if (r.session() != request.session()) return Err(EINVAL, "resent request of another session");
    absl::StatusOr<Request> parsed = FromWire(r);
    if (!parsed.ok()) return Annotate(parsed.status(), "a resent request");
    resent.push_back(*std::move(parsed));
  }
  std::vector<Request> late;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the MDS is stopping");
    const SessionId session(request.session());
    SessionState* s = sessions_.Find(session);
    if (s == nullptr) return Err(ENOTCONN, "no such session");
    // Too late: the window closed without it and it is being evicted (fenced
    // first). What it would reclaim may be another session's by now: a file
    // it wrote opened by others, its locks taken. Found by the simulation: a
    // client frozen over the window reclaimed its write open beside the
    // attribute caps another session was granted meanwhile.
    if (s->evicting || evict_wanted_.contains(session.value()) ||
        evict_running_.contains(session.value())) {
      return EvictedError(
          "did not reconnect within mds_reconnect_timeout: this session is being evicted");
    }
    s->last_renew_ms = env_.clock->NowMs();
    // What a client that tracks its handles holds open is the truth: a
    // release the earlier incarnation answered without an event (another
    // session held the file too) left the journal's session state behind
    // it. Strays nobody holds any more are released when the window ends
    // (MaybeFinishReconnect).
    std::vector<uint64_t> before;
    if (request.opens_complete()) {
      for (const auto& [ino, count] : s->opens) before.push_back(ino);
      s->opens.clear();
      s->opens_write.clear();
    }
    for (const pb::OpenRef& o : request.opens()) {
      if (o.handles() == 0) continue;
      s->opens[o.ino()] = static_cast<int>(o.handles());
      if (o.writers() > 0) s->opens_write[o.ino()] = static_cast<int>(o.writers());
      leases_.Reclaimed(session, o.ino(), s);
    }
    for (uint64_t ino : before) {
      if (!s->opens.contains(ino)) leases_.NoteOpen(session, ino, s);
    }
    locks_.Reclaim(request, sessions_, &reply);
    const bool window_open = reconnecting_ && !replaying_;
    for (Request& r : resent) (window_open ? replays_ : late).push_back(std::move(r));
    awaiting_reconnect_.erase(request.session());
    LOG(INFO) << "event=reconnect session=" << request.session()
              << " opens=" << request.opens_size() << " replays=" << request.replays_size()
              << " locks=" << request.locks_size() << " locks_lost=" << reply.locks_lost_size()
              << (window_open ? "" : " late=1");
  }
  // Too late for the window: applied now, still in their own order.
  if (!late.empty()) RETURN_IF_ERROR(Replay(std::move(late)));
  reply.set_boot(boot_);
  reply.set_replayed(static_cast<uint32_t>(request.replays_size()));
  return reply;
}

absl::StatusOr<pb::ReconnectReply> MdsRank::Reconnect(const pb::ReconnectRequest& request) {
  ASSIGN_OR_RETURN(pb::ReconnectReply reply, ReconnectBegin(request));
  MaybeFinishReconnect();
  {
    absl::MutexLock lock(&mu_);
    WaitLocked([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !reconnecting_ || stopping_; },
               reconnect_until_);
  }
  MaybeFinishReconnect();  // the window timed out: whoever notices applies the replays
  {
    absl::MutexLock lock(&mu_);
    WaitLocked([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !reconnecting_ || stopping_; },
               absl::InfiniteFuture());
    // The resends were not made durable (the journal broke): the client
    // must keep them for the next incarnation, not forget them.
    RETURN_IF_ERROR(reconnect_result_);
  }
  return reply;
}

absl::Status MdsRank::ReconnectResult() {
  absl::MutexLock lock(&mu_);
  if (reconnecting_) return absl::UnavailableError("the reconnect window is open");
  return reconnect_result_;
}

void MdsRank::MaybeFinishReconnect() {
  std::vector<Request> replays;
  {
    absl::MutexLock lock(&mu_);
    if (!reconnecting_ || replaying_) return;
    if (!awaiting_reconnect_.empty() && env_.clock->Now() < reconnect_until_) return;
    replaying_ = true;
    replays = std::move(replays_);
    replays_.clear();
  }
  const size_t n = replays.size();
  absl::Status applied = Replay(std::move(replays));
  absl::MutexLock lock(&mu_);
  LOG(INFO) << "event=reconnect_done resent=" << n
            << " missing_sessions=" << awaiting_reconnect_.size() << " status=\"" << applied
            << "\"";
  reconnect_result_ = applied;
  reconnecting_ = false;
  replaying_ = false;
  ReleaseUnheldStraysLocked();
  // Sessions that did not come back within the window are evicted (fenced
  // first) rather than holding their opens and locks until they lapse: a
  // client that comes back later would find the others' changes under its
  // buffered writes.
  std::vector<uint64_t> missing(awaiting_reconnect_.begin(), awaiting_reconnect_.end());
  std::sort(missing.begin(), missing.end());
  for (uint64_t id : missing) {
    if (WantEvictLocked(SessionId(id), "did not reconnect within mds_reconnect_timeout")) {
      LOG(WARNING) << "event=reconnect_missing session=" << id << " action=evict";
    }
  }
}

void MdsRank::ReleaseUnheldStraysLocked() {
  std::vector<uint64_t> strays;
  for (const auto& [ino, holder] : cache_.strays()) strays.push_back(ino);
  std::sort(strays.begin(), strays.end());
  Event event;
  for (uint64_t ino : strays) ReleaseStrayLocked(ino, SessionId(0), &event);
  if (event.strays_removed.empty()) return;
  event.op = "release_unheld_strays";
  CommitLocked(&event);
  LOG(INFO) << "event=strays_released_after_reconnect n=" << event.strays_removed.size();
}

absl::Status MdsRank::Replay(std::vector<Request> requests) {
  // The order the previous incarnation applied them in.
  std::stable_sort(requests.begin(), requests.end(), [](const Request& a, const Request& b) {
    return a.replay_seq < b.replay_seq;
  });
  uint64_t last = 0;
  for (Request& r : requests) {
    r.unsafe_ok = true;  // one wait for all of them, below
    Reply reply;
    absl::Status s;
    for (int attempt = 0;; ++attempt) {
      reply = Reply();
      RequestRun run(this, r, &reply, /*replay=*/true);
      s = Drive(run);
      // The OSDs refused or did not answer (a load, a move, a cut): the
      // client was told this happened, so it must; again until it does or
      // the rank stops (nothing else is served meanwhile).
      if (!absl::IsUnavailable(s) && !absl::IsDeadlineExceeded(s)) break;
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
      LOG(WARNING) << "op=replay session=" << r.session << " tid=" << r.id
                   << " attempt=" << attempt << " status=\"" << s << "\" action=retry";
      const absl::Duration backoff = absl::Milliseconds(std::min(1000, 50 << std::min(attempt, 4)));
      WaitLocked([this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; },
                 env_.clock->Now() + backoff);
    }
    if (!s.ok()) {
      // The history changed under it (e.g. a request it depended on was
      // lost with a client that never came back).
      LOG(WARNING) << "op=replay session=" << r.session << " tid=" << r.id
                   << " seq=" << r.replay_seq << " status=" << s;
    }
    last = std::max(last, reply.seq);
  }
  if (last == 0) return absl::OkStatus();
  absl::Status durable = journal_.WaitDurable(last);
  if (!durable.ok()) LOG(ERROR) << "op=replay wait_durable status=" << durable;
  return durable;
}

// ---- lease streams

absl::StatusOr<uint64_t> MdsRank::OpenLeaseStream(uint64_t session) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the MDS is stopping");
  if (sessions_.Find(SessionId(session)) == nullptr) return Err(ENOTCONN, "no such session");
  return leases_.OpenStream(SessionId(session));
}

bool MdsRank::TakeLeaseEvents(uint64_t session, uint64_t gen, std::deque<pb::LeaseEvent>* out) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return false;
  return leases_.TakeEvents(SessionId(session), gen, out);
}

absl::Status MdsRank::ServeLeases(uint64_t session, const std::function<bool()>& cancelled,
                                  const std::function<bool(const pb::LeaseEvent&)>& write) {
  ASSIGN_OR_RETURN(const uint64_t gen, OpenLeaseStream(session));
  const SessionId id(session);
  VLOG(1) << "event=lease_stream_open session=" << session;
  for (;;) {
    std::deque<pb::LeaseEvent> batch;
    {
      absl::MutexLock lock(&mu_);
      WaitLocked([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                     mu_) { return stopping_ || leases_.StreamReady(id, gen); },
                 env_.clock->Now() + absl::Seconds(1));
      if (stopping_ || !leases_.TakeEvents(id, gen, &batch)) break;
    }
    if (cancelled()) break;
    bool ok = true;
    for (const pb::LeaseEvent& e : batch) {
      if (!(ok = write(e))) break;
    }
    if (!ok) break;
  }
  absl::MutexLock lock(&mu_);
  // Its leases stay until acknowledged or run out: the client may not know
  // yet that the stream is gone.
  leases_.CloseStream(id, gen);
  VLOG(1) << "event=lease_stream_end session=" << session;
  return absl::OkStatus();
}

absl::StatusOr<pb::SessionReply> MdsRank::LeaseAck(const pb::LeaseAckRequest& request) {
  absl::MutexLock lock(&mu_);
  if (sessions_.Find(SessionId(request.session())) == nullptr) {
    return Err(ENOTCONN, "no such session");
  }
  leases_.Ack(SessionId(request.session()), request);
  pb::SessionReply reply;
  reply.set_session(request.session());
  reply.set_boot(boot_);
  return reply;
}

void MdsRank::JournalFailed(const absl::Status& broken) {
  if (env_.on_journal_failure) return env_.on_journal_failure(broken);
  // Events were applied to the cache but cannot be made durable: the only
  // consistent state left is the journal's. Stop the daemon so that it (or
  // a standby) replays it, rather than serve what may vanish.
  LOG(ERROR) << "event=journal_failed fs=" << options_.fs_name << " status=\"" << broken
             << "\" action=exit";
  std::fprintf(stderr, "weft-mds: journal of %s failed: %s\n", options_.fs_name.c_str(),
               std::string(broken.message()).c_str());
  std::_Exit(1);
}

}  // namespace weft::mds
