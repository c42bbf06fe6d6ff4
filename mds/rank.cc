#include "mds/rank.h"

#include <algorithm>
#include <random>

#include <sys/stat.h>

#include <cerrno>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log/log.h"
#include "common/rpc/rpc.h"
#include "common/status/status.h"
#include "mds/ops/ops.h"

namespace weft::mds {
namespace {

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }
int64_t NowNs() { return absl::ToUnixNanos(absl::Now()); }



}  // namespace

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

MdsRank::MdsRank(RankOptions options, client::ObjectClient* objects,
                 std::function<Capacity()> capacity, std::function<DataPools()> data_pools)
    : options_(std::move(options)),
      objects_(objects),
      capacity_(std::move(capacity)),
      data_pools_(std::move(data_pools)),
      store_(objects, options_.metadata_pool, options_.fs_id),
      journal_(&store_, options_.journal),
      cache_(options_.fs_id),
      next_session_((uint64_t{options_.fs_id} << 40) + 1),
      boot_(NewBootId()),
      leases_(absl::Milliseconds(
          std::clamp<int64_t>(options_.dir_lease_ms, 0, options_.reconnect_timeout_ms / 2))),
      trim_io_(objects, kTrimInflightBytes) {}

MdsRank::~MdsRank() { Stop(); }

absl::Status MdsRank::Create() {
  const int64_t now = NowNs();
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
  RETURN_IF_ERROR(store_.Apply(TableObject(options_.fs_id, "inotable"), inotable));
  return journal_.Create();
}

absl::Status MdsRank::Start() {
  const absl::Time start = absl::Now();
  ASSIGN_OR_RETURN(auto sessions, store_.LoadTable("sessions"));
  ASSIGN_OR_RETURN(auto strays, store_.LoadTable("strays"));
  ASSIGN_OR_RETURN(auto purge, store_.LoadTable("purge"));
  ASSIGN_OR_RETURN(auto trims, store_.LoadTable("trims"));
  ASSIGN_OR_RETURN(auto inotable, store_.LoadTable("inotable"));
  {
    absl::MutexLock lock(&mu_);
    cache_.LoadTables(sessions, strays, purge, trims, inotable);
  }
  uint64_t events = 0;
  ASSIGN_OR_RETURN(uint64_t last, journal_.Replay([&](pb::JournalEvent& event) {
    absl::MutexLock lock(&mu_);
    cache_.Apply(event);
    ++events;
    return absl::OkStatus();
  }));
  {
    absl::MutexLock lock(&mu_);
    last_seq_ = last;
    const int64_t now = NowMs();
    for (auto& [id, s] : cache_.sessions()) {
      s.last_renew_ms = now;  // every client gets a full timeout to come back
      next_session_ = std::max(next_session_, id + 1);
      for (auto& [tid, reply] : s.rec.completed()) s.completed_seq[tid] = 0;
    }
    // Open handles are not journaled, except where they matter: a stray
    // (unlinked while open) keeps its holder, whose release purges it.
    for (const auto& [ino, holder] : cache_.strays()) {
      if (SessionState* s = cache_.Session(holder)) s->opens[ino] = 1;
    }
    cache_.SkipInos(std::max<uint64_t>(kInoSkipAfterRestart, options_.unsafe_events_max));
    // Every session the table knows may hold unsafe replies of the previous
    // incarnation: new requests wait until they reconnect (or the window ends).
    for (const auto& [id, s] : cache_.sessions()) awaiting_reconnect_.insert(id);
    reconnecting_ = !awaiting_reconnect_.empty();
    reconnect_until_ = absl::Now() + absl::Milliseconds(options_.reconnect_timeout_ms);
  }
  // Strays are purged from their inode's layout and size: keep them cached.
  Load strays_load;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [ino, holder] : cache_.strays()) {
      if (cache_.Inode(ino) == nullptr) strays_load.inodes.push_back(ino);
    }
  }
  if (!strays_load.inodes.empty()) RETURN_IF_ERROR(LoadMissing(strays_load));
  replay_ms_ = absl::ToInt64Milliseconds(absl::Now() - start);
  LOG(INFO) << "event=rank_started fs=" << options_.fs_name << " replayed_events=" << events
            << " last_seq=" << last << " replay_ms=" << replay_ms_;
  journal_.Start();
  flusher_ = std::thread([this] { FlusherLoop(); });
  janitor_ = std::thread([this] { JanitorLoop(); });
  // Truncates the previous incarnation did not finish cutting: before
  // anyone may write the files again (those that fail block their files
  // until the janitor's next try).
  {
    absl::MutexLock lock(&mu_);
    if (!cache_.trims().empty()) LOG(INFO) << "event=trims_resumed n=" << cache_.trims().size();
  }
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

absl::StatusOr<pb::SessionReply> MdsRank::SessionOpen(const std::string& client,
                                                      uint64_t reclaim) {
  pb::SessionReply reply;
  uint64_t seq = 0;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the MDS is stopping");
    if (reclaim != 0) {
      SessionState* s = cache_.Session(reclaim);
      if (s == nullptr) return Err(ESTALE, "the session to reclaim is gone");
      s->last_renew_ms = NowMs();
      reply.set_session(reclaim);
    } else {
      pb::JournalEvent event;
      event.set_op("session_open");
      pb::SessionRec* rec = event.add_sessions();
      rec->set_id(next_session_++);
      rec->set_client(client);
      rec->set_opened_ms(NowMs());
      seq = CommitLocked(&event);
      cache_.Session(rec->id())->last_renew_ms = NowMs();
      reply.set_session(rec->id());
    }
  }
  if (seq != 0) RETURN_IF_ERROR(journal_.WaitDurable(seq));
  reply.set_root(kRootIno);
  reply.set_timeout_ms(options_.session_timeout_ms);
  reply.set_fs_id(options_.fs_id);
  reply.set_boot(boot_);
  reply.set_inline_max_bytes(options_.inline_max_bytes);
  return reply;
}

absl::StatusOr<pb::SessionReply> MdsRank::SessionRenew(uint64_t session) {
  absl::MutexLock lock(&mu_);
  SessionState* s = cache_.Session(session);
  if (s == nullptr) return Err(ENOTCONN, "no such session");
  s->last_renew_ms = NowMs();
  pb::SessionReply reply;
  reply.set_session(session);
  reply.set_root(kRootIno);
  reply.set_timeout_ms(options_.session_timeout_ms);
  reply.set_fs_id(options_.fs_id);
  reply.set_boot(boot_);
  reply.set_inline_max_bytes(options_.inline_max_bytes);
  return reply;
}

absl::Status MdsRank::SessionClose(uint64_t session) {
  uint64_t seq = 0;
  {
    absl::MutexLock lock(&mu_);
    if (cache_.Session(session) == nullptr) return Err(ENOTCONN, "no such session");
    pb::JournalEvent event;
    CloseSessionLocked(session, &event);
    seq = CommitLocked(&event);
  }
  return journal_.WaitDurable(seq);
}

void MdsRank::CloseSessionLocked(uint64_t session, pb::JournalEvent* event) {
  event->set_op("session_close");
  SessionState* s = cache_.Session(session);
  std::vector<uint64_t> held;
  if (s != nullptr) {
    for (auto& [ino, count] : s->opens) held.push_back(ino);
    for (auto& [ino, count] : s->opens_write) DropWriterLocked(session, ino);
  }
  pb::SessionRec* rec = event->add_sessions();
  rec->set_id(session);
  rec->set_closed(true);
  for (uint64_t ino : held) ReleaseStrayLocked(ino, session, event);
  DropSessionLocksLocked(session, 0);
  DropLeasesLocked(session);
  lease_streams_.erase(session);  // its stream ends
}

// A stray whose last holder went: its inode goes and its data is purged.
void MdsRank::ReleaseStrayLocked(uint64_t ino, uint64_t releasing, pb::JournalEvent* event) {
  if (!cache_.strays().contains(ino)) return;
  for (auto& [id, s] : cache_.sessions()) {
    if (id == releasing) continue;
    auto it = s.opens.find(ino);
    if (it != s.opens.end() && it->second > 0) return;
  }
  event->add_stray_remove(ino);
  event->add_removed_inodes(ino);
  CInode* inode = cache_.Inode(ino);
  if (inode != nullptr && !HasDataObjects(inode->rec)) return;  // no data to purge
  pb::PurgeRec* purge = event->add_purge_add();
  purge->set_ino(ino);
  if (inode != nullptr) {
    purge->set_size(inode->rec.size());
    *purge->mutable_layout() = inode->rec.layout();
  }
}

uint64_t MdsRank::CommitLocked(pb::JournalEvent* event) {
  const uint64_t seq = ++last_seq_;
  event->set_seq(seq);
  cache_.Apply(*event);
  journal_.Enqueue(seq, event->SerializeAsString());
  return seq;
}

pb::MetaReply MdsRank::Handle(const pb::MetaRequest& request) {
  pb::MetaReply reply;
  MaybeFinishReconnect();
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    if (reconnecting_) status = absl::UnavailableError("the MDS is waiting for clients to reconnect");
  }
  if (status.ok()) status = request.has_lock() ? RunLock(request, &reply) : RunOp(request, &reply);
  if (!status.ok()) {
    google::protobuf::RepeatedPtrField<pb::DirLease> leases;
    leases.Swap(reply.mutable_leases());  // a lookup's ENOENT grants too
    reply.Clear();
    leases.Swap(reply.mutable_leases());
    if (IsNeedLoad(status)) status = absl::UnavailableError("metadata kept changing; retry");
    rpc::ToProto(status, reply.mutable_status());
  }
  reply.set_boot(boot_);
  reply.set_durable_seq(journal_.durable_seq());
  return reply;
}

// ---- reconnect after a restart

absl::StatusOr<pb::ReconnectReply> MdsRank::Reconnect(const pb::ReconnectRequest& request) {
  pb::ReconnectReply reply;
  std::vector<pb::MetaRequest> late;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the MDS is stopping");
    SessionState* s = cache_.Session(request.session());
    if (s == nullptr) return Err(ENOTCONN, "no such session");
    s->last_renew_ms = NowMs();
    for (const pb::OpenRef& o : request.opens()) {
      if (o.handles() == 0) continue;
      s->opens[o.ino()] = static_cast<int>(o.handles());
      if (o.writers() > 0) {
        s->opens_write[o.ino()] = static_cast<int>(o.writers());
        NoteWriterLocked(request.session(), o.ino());
      }
    }
    for (const pb::MetaRequest& r : request.replays()) {
      if (r.session() != request.session()) return Err(EINVAL, "resent request of another session");
    }
    ReclaimLocksLocked(request, &reply);
    const bool window_open = reconnecting_ && !replaying_;
    for (const pb::MetaRequest& r : request.replays()) {
      (window_open ? replays_ : late).push_back(r);
    }
    awaiting_reconnect_.erase(request.session());
    LOG(INFO) << "event=reconnect session=" << request.session()
              << " opens=" << request.opens_size() << " replays=" << request.replays_size()
              << " locks=" << request.locks_size() << " locks_lost=" << reply.locks_lost_size()
              << (window_open ? "" : " late=1");
  }
  // Too late for the window: applied now, still in their own order.
  if (!late.empty()) Replay(std::move(late));
  MaybeFinishReconnect();
  {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !reconnecting_ || stopping_; };
    mu_.AwaitWithDeadline(absl::Condition(&done), reconnect_until_);
  }
  MaybeFinishReconnect();  // the window timed out: whoever notices applies the replays
  {
    absl::MutexLock lock(&mu_);
    auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !reconnecting_ || stopping_; };
    mu_.Await(absl::Condition(&done));
  }
  reply.set_boot(boot_);
  reply.set_replayed(static_cast<uint32_t>(request.replays_size()));
  return reply;
}

void MdsRank::MaybeFinishReconnect() {
  std::vector<pb::MetaRequest> replays;
  {
    absl::MutexLock lock(&mu_);
    if (!reconnecting_ || replaying_) return;
    if (!awaiting_reconnect_.empty() && absl::Now() < reconnect_until_) return;
    replaying_ = true;
    replays = std::move(replays_);
    replays_.clear();
  }
  const size_t n = replays.size();
  Replay(std::move(replays));
  absl::MutexLock lock(&mu_);
  LOG(INFO) << "event=reconnect_done resent=" << n
            << " missing_sessions=" << awaiting_reconnect_.size();
  reconnecting_ = false;
  replaying_ = false;
}

void MdsRank::Replay(std::vector<pb::MetaRequest> requests) {
  // The order the previous incarnation applied them in.
  std::stable_sort(requests.begin(), requests.end(),
                   [](const pb::MetaRequest& a, const pb::MetaRequest& b) {
                     return a.replay_seq() < b.replay_seq();
                   });
  uint64_t last = 0;
  for (pb::MetaRequest& r : requests) {
    r.set_unsafe_ok(true);  // one wait for all of them, below
    pb::MetaReply reply;
    absl::Status s = RunOp(r, &reply, /*replay=*/true);
    if (!s.ok()) {
      // The history changed under it (e.g. a request it depended on was
      // lost with a client that never came back).
      LOG(WARNING) << "op=replay session=" << r.session() << " tid=" << r.tid()
                   << " seq=" << r.replay_seq() << " status=" << s;
    }
    last = std::max(last, reply.seq());
  }
  if (last != 0) {
    absl::Status s = journal_.WaitDurable(last);
    if (!s.ok()) LOG(ERROR) << "op=replay wait_durable status=" << s;
  }
}

}  // namespace weft::mds
