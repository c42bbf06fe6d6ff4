#include "fuse-client/lib/meta_client.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/caps/cap_bits.h"
#include "common/fs/mds_roles.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "fuse-client/lib/admin_client.h"
#include "proto/mds_client.grpc.pb.h"

namespace weft::client {
namespace {

bool Retryable(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsAborted(status);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetaClient>> MetaClient::Connect(MetaClientOptions options) {
  if (options.mds_addrs.empty()) return absl::InvalidArgumentError("no MDS address configured");
  if (options.client_name.empty()) {
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    options.client_name = absl::StrCat("client.", host, ".", getpid(), ".", std::random_device{}() % 100000);
  }
  std::unique_ptr<MetaClient> client(new MetaClient(std::move(options)));
  RETURN_IF_ERROR(client->OpenNewSession());
  client->renewer_ = std::thread([c = client.get()] { c->RenewLoop(); });
  client->lease_thread_ = std::thread([c = client.get()] { c->LeaseLoop(); });
  client->map_thread_ = std::thread([c = client.get()] { c->MapLoop(); });
  return client;
}

MetaClient::~MetaClient() {
  (void)Close();
  if (renewer_.joinable()) renewer_.join();
  if (lease_thread_.joinable()) lease_thread_.join();
  if (map_thread_.joinable()) map_thread_.join();
}

absl::Status MetaClient::OpenNewSession() {
  const absl::Time deadline = absl::Now() + absl::Milliseconds(options_.op_timeout_ms);
  for (;;) {
    absl::Status status = Resolve();  // rank 0 may have moved
    if (status.ok()) status = OpenSession(0);
    if (status.ok() || !Retryable(status) || absl::Now() > deadline) return status;
    absl::SleepFor(absl::Milliseconds(200));
  }
}

absl::Status MetaClient::Resolve() {
  // Any daemon answers FsList at once; a frozen one must not hold us long.
  FsAdmin admin(options_.mds_addrs, std::min<int64_t>(options_.rpc_timeout_ms, 3000));
  ASSIGN_OR_RETURN(pb::FsMap map, admin.FsList());
  for (const pb::FsInfo& fs : map.filesystems()) {
    if (fs.name() != options_.fs) continue;
    const std::string& rank0 = fs::RankOf(fs, 0).addr();
    if (rank0.empty()) return absl::UnavailableError("rank 0 has no MDS yet");
    UseAddress(rank0);
    return absl::OkStatus();
  }
  return ErrnoError(absl::StatusCode::kNotFound, ENOENT,
                    absl::StrCat("no filesystem named ", options_.fs));
}

void MetaClient::UseAddress(const std::string& addr) {
  absl::MutexLock lock(&mu_);
  if (addr == addr_) return;
  if (!addr_.empty()) {
    LOG(INFO) << "event=mds_moved fs=" << options_.fs << " from=" << addr_ << " to=" << addr;
    ++moves_;
    for (auto& [ctx, to] : calls_) {
      if (to == addr_) ctx->TryCancel();
    }
    if (lease_ctx_ != nullptr) lease_ctx_->TryCancel();
  }
  addr_ = addr;
}

void MetaClient::MapLoop() {
  pb::FsListRequest req;
  // The bootstrap list, and every daemon the map shows alive since.
  std::vector<std::string> addrs = options_.mds_addrs;
  for (size_t next = 0;; ++next) {
    grpc::ClientContext ctx;
    const std::string addr = addrs[next % addrs.size()];
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      map_ctx_ = &ctx;
      map_heard_ = absl::Now();
    }
    auto stub = pb::Filesystems::NewStub(stream_channels_.Get(addr));
    std::unique_ptr<grpc::ClientReader<pb::FsListReply>> reader = stub->WatchFsMap(&ctx, req);
    pb::FsListReply reply;
    while (reader->Read(&reply)) {
      {
        absl::MutexLock lock(&mu_);
        map_heard_ = absl::Now();
      }
      if (!rpc::FromProto(reply.status()).ok()) break;  // starting or stopping: another
      for (const pb::MdsAlive& d : reply.daemons()) {
        if (std::find(addrs.begin(), addrs.end(), d.addr()) == addrs.end()) addrs.push_back(d.addr());
      }
      for (const pb::FsInfo& fs : reply.fsmap().filesystems()) {
        const std::string& rank0 = fs::RankOf(fs, 0).addr();
        if (fs.name() == options_.fs && !rank0.empty()) UseAddress(rank0);
      }
    }
    (void)reader->Finish();
    absl::MutexLock lock(&mu_);
    map_ctx_ = nullptr;
    if (closed_) return;
    // The next address; a pause once round the list (none answers).
    if ((next + 1) % addrs.size() == 0 &&
        mu_.AwaitWithTimeout(absl::Condition(&closed_), absl::Milliseconds(200))) {
      return;
    }
  }
}

std::shared_ptr<grpc::Channel> MetaClient::Channel() {
  absl::MutexLock lock(&mu_);
  return channels_.Get(addr_);
}

absl::Status MetaClient::OpenSession(uint64_t reclaim) {
  auto stub = pb::Mds::NewStub(Channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(rpc::DeadlineIn(options_.rpc_timeout_ms));
  pb::SessionOpenRequest req;
  req.set_fs(options_.fs);
  req.set_client(options_.client_name);
  req.set_reclaim(reclaim);
  {
    absl::MutexLock lock(&mu_);
    req.set_osd_client(osd_client_);
  }
  pb::SessionReply reply;
  RETURN_IF_ERROR(rpc::FromGrpc(stub->SessionOpen(&ctx, req, &reply), "mds"));
  if (absl::Status opened = rpc::FromProto(reply.status()); !opened.ok()) {
    if (IsEvicted(opened)) NoteEvicted(opened);
    return opened;
  }
  const bool changed = session_ != 0 && session_ != reply.session();
  // Opened again (the MDS answered ENOTCONN): it closed the session, and
  // its locks went with it, even when it lets the session continue.
  if (session_ != 0) LoseAllLocks();
  session_ = reply.session();
  root_ = reply.root();
  inline_max_bytes_ = reply.inline_max_bytes();
  absl::MutexLock lock(&mu_);
  if (changed) {
    // Leases were the old session's: gone, and the stream starts over.
    leases_.DropAll();
    if (lease_ctx_ != nullptr) lease_ctx_->TryCancel();
  }
  timeout_ms_ = reply.timeout_ms();
  if (boot_ == 0 || reclaim == 0) boot_ = reply.boot();
  return absl::OkStatus();
}

void MetaClient::RenewLoop() {
  for (;;) {
    int64_t period = 0;
    {
      absl::MutexLock lock(&mu_);
      // Often enough that a restarted MDS hears from every client soon (its
      // reconnect window waits for them); a renew costs the MDS no journal write.
      period = std::clamp<int64_t>(timeout_ms_ / 4, 200, 1000);
      if (mu_.AwaitWithTimeout(absl::Condition(&closed_), absl::Milliseconds(period))) return;
      // The map watch's daemon said nothing for too long: frozen, or cut
      // off. MapLoop asks the next one.
      if (map_ctx_ != nullptr && absl::Now() - map_heard_ > kMapSilence) {
        map_ctx_->TryCancel();
        map_heard_ = absl::InfiniteFuture();
      }
    }
    auto stub = pb::Mds::NewStub(Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(std::min<int64_t>(period, options_.rpc_timeout_ms)));
    pb::SessionRequest req;
    req.set_fs(options_.fs);
    req.set_session(session_);
    req.set_cached_inodes(cached_inodes_.load(std::memory_order_relaxed));
    pb::SessionReply reply;
    const absl::Time sent = absl::Now();
    const uint64_t epoch = leases_.epoch();
    absl::Status status = rpc::FromGrpc(stub->SessionRenew(&ctx, req, &reply), "mds");
    if (status.ok()) status = rpc::FromProto(reply.status());
    if (status.ok()) {
      // The heartbeat renews the leases and caps held (not each reply).
      leases_.Renewed(sent, epoch, reply.lease_stream(), reply.lease_events(),
                      absl::Milliseconds(reply.lease_ms()));
      bool restarted = false;
      {
        absl::MutexLock lock(&mu_);
        restarted = reply.boot() != 0 && reply.boot() != boot_;
      }
      if (restarted) (void)Reconnect(reply.boot());
    }
    if (IsNoSession(status) && !evicted_.load()) {
      // Closed by the MDS (evicted, or lapsed): an idle mount learns it
      // here, not at its next request, and recovers (recover_session) or
      // fails from now on.
      absl::Status reopened = OpenSession(session_);
      if (IsEvicted(reopened)) status = reopened;
    }
    if (IsEvicted(status)) NoteEvicted(status);
    if (absl::IsUnavailable(status)) (void)Resolve();  // rank 0 may have moved
  }
}

void MetaClient::LeaseLoop() {
  for (;;) {
    grpc::ClientContext ctx;
    pb::SessionRequest req;
    req.set_fs(options_.fs);
    std::string addr;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      lease_ctx_ = &ctx;
      req.set_session(session_);
      addr = addr_;
    }
    auto stub = pb::Mds::NewStub(stream_channels_.Get(addr));
    std::unique_ptr<grpc::ClientReader<pb::LeaseEvent>> reader = stub->LeaseStream(&ctx, req);
    pb::LeaseEvent event;
    while (reader->Read(&event)) {
      if (event.hello()) {
        leases_.StreamUp(event.seq());
        continue;
      }
      HandleLeaseEvent(event);
      leases_.TookEvent();  // applied: a renewal waiting for it may count now
    }
    // No revokes can reach us now: trust nothing until the next hello.
    leases_.DropAll();
    {
      absl::MutexLock lock(&recall_mu_);
      if (stream_lost_) stream_lost_();
    }
    absl::Status ended = rpc::FromGrpc(reader->Finish(), "mds");
    absl::MutexLock lock(&mu_);
    lease_ctx_ = nullptr;
    if (closed_) return;
    VLOG(1) << "op=lease_stream session=" << req.session() << " ended=" << ended;
    const absl::Duration pause = absl::Milliseconds(evicted_.load() ? 5000 : 200);
    if (mu_.AwaitWithTimeout(absl::Condition(&closed_), pause)) return;
  }
}

void MetaClient::HandleLeaseEvent(const pb::LeaseEvent& event) {
  if (event.recall_caps() > 0) {
    GiveBack(event.recall_caps());
    return;
  }
  if (event.inval()) {
    auto ack = [this, event] { AckLease(event); };
    absl::MutexLock lock(&recall_mu_);
    if (data_inval_) {
      data_inval_(event, std::move(ack));
    } else {
      ack();
    }
    return;
  }
  if (event.flush()) {
    auto ack = [this, event] { AckLease(event); };
    absl::MutexLock lock(&recall_mu_);
    if (flush_recall_) {
      flush_recall_(FlushRequest{event.ino(), event.hold(), event.write_through(), event.seq()},
                    std::move(ack));
    } else {
      ack();
    }
    return;
  }
  if (event.release()) {
    absl::MutexLock lock(&recall_mu_);
    if (hold_released_) hold_released_(event.ino());
    return;
  }
  // A revoke of caps: of a directory's names (Ls), of an inode's attributes
  // (As Fs), or both.
  if (event.caps() & caps::kAttrs) leases_.RevokeAttrs(event.ino(), event.seq());
  if (event.caps() & caps::kLs) leases_.Revoke(event.ino(), event.seq());
  Revoked(event);
  AckLease(event);  // the change waits for this (or for the caps to run out)
}

void MetaClient::Revoked(const pb::LeaseEvent& event) {
  absl::MutexLock lock(&recall_mu_);
  if ((event.caps() & caps::kAttrs) && attrs_revoked_) attrs_revoked_(event.ino());
  if ((event.caps() & caps::kLs) && dir_revoked_) dir_revoked_(event.ino());
}

void MetaClient::AckLease(const pb::LeaseEvent& event) {
  auto stub = pb::Mds::NewStub(Channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(rpc::DeadlineIn(options_.rpc_timeout_ms));
  pb::LeaseAckRequest ack;
  ack.set_session(session_);
  *ack.add_acks() = event;
  pb::SessionReply reply;
  absl::Status acked = rpc::FromGrpc(stub->LeaseAck(&ctx, ack, &reply), "mds");
  if (!acked.ok()) VLOG(1) << "op=lease_ack ino=" << event.ino() << " status=" << acked;
}

void MetaClient::GiveBack(uint32_t n) {
  std::vector<pb::LeaseEvent> given = leases_.GiveBack(n, absl::Now());
  // The kernel stops trusting them too before the MDS hears they are back.
  for (const pb::LeaseEvent& e : given) Revoked(e);
  VLOG(1) << "op=give_back wanted=" << n << " given=" << given.size();
  {
    absl::MutexLock lock(&recall_mu_);
    if (caps_given_back_ && !given.empty()) {
      std::vector<uint64_t> inos;
      inos.reserve(given.size());
      for (const pb::LeaseEvent& e : given) inos.push_back(e.ino());
      caps_given_back_(std::move(inos));
    }
  }
  for (size_t i = 0; i < given.size(); i += kAcksPerRequest) {
    auto stub = pb::Mds::NewStub(Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(options_.rpc_timeout_ms));
    pb::LeaseAckRequest ack;
    ack.set_session(session_);
    for (size_t j = i; j < std::min(given.size(), i + kAcksPerRequest); ++j) {
      *ack.add_acks() = given[j];
    }
    pb::SessionReply reply;
    absl::Status acked = rpc::FromGrpc(stub->LeaseAck(&ctx, ack, &reply), "mds");
    if (!acked.ok()) VLOG(1) << "op=give_back_ack status=" << acked;
  }
}

void MetaClient::SetDataInval(DataInval handler) {
  absl::MutexLock lock(&recall_mu_);
  data_inval_ = std::move(handler);
}

void MetaClient::SetFlushRecall(FlushRecall handler) {
  absl::MutexLock lock(&recall_mu_);
  flush_recall_ = std::move(handler);
}

void MetaClient::SetHoldReleased(std::function<void(uint64_t ino)> handler) {
  absl::MutexLock lock(&recall_mu_);
  hold_released_ = std::move(handler);
}

void MetaClient::SetStreamLost(std::function<void()> handler) {
  absl::MutexLock lock(&recall_mu_);
  stream_lost_ = std::move(handler);
}

void MetaClient::SetDirRevoked(DirRevoked handler) {
  absl::MutexLock lock(&recall_mu_);
  dir_revoked_ = std::move(handler);
}

void MetaClient::SetCapsGivenBack(CapsGivenBack handler) {
  absl::MutexLock lock(&recall_mu_);
  caps_given_back_ = std::move(handler);
}

void MetaClient::SetAttrsRevoked(DirRevoked handler) {
  absl::MutexLock lock(&recall_mu_);
  attrs_revoked_ = std::move(handler);
}

absl::StatusOr<pb::MetaReply> MetaClient::Call(pb::MetaRequest request) {
  return CallWithTid(std::move(request), NextTid());
}

absl::StatusOr<pb::MetaReply> MetaClient::CallWithTid(pb::MetaRequest request, uint64_t tid) {
  if (evicted_.load()) return evicted();
  request.set_session(session_);
  request.set_tid(tid);
  request.set_unsafe_ok(options_.unsafe_ok);
  {
    absl::MutexLock lock(&mu_);
    inflight_.insert(tid);
  }
  const absl::Time deadline = absl::Now() + absl::Milliseconds(options_.op_timeout_ms);
  absl::StatusOr<pb::MetaReply> result;
  bool keep = false;  // answered unsafe: the tid stays until durable
  bool answered = false;  // the last attempt got a reply from the MDS
  for (int attempt = 0;; ++attempt) {
    {
      absl::MutexLock lock(&mu_);
      request.set_oldest_tid(*inflight_.begin());
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(options_.rpc_timeout_ms));
    std::string to;
    uint64_t moves = 0;
    {
      absl::MutexLock lock(&mu_);
      to = addr_;
      moves = moves_;
      calls_[&ctx] = to;
    }
    auto stub = pb::Mds::NewStub(channels_.Get(to));
    pb::MetaReply reply;
    // A lease in the reply is trusted from before the request left.
    const absl::Time sent = absl::Now();
    const uint64_t lease_epoch = leases_.epoch();
    absl::Status status = rpc::FromGrpc(stub->Call(&ctx, request, &reply), "mds");
    bool moved = false;
    {
      absl::MutexLock lock(&mu_);
      calls_.erase(&ctx);
      moved = moves_ != moves;
    }
    if (!status.ok() && moved && absl::Now() <= deadline) {
      // Cancelled (or failed) at the address rank 0 moved away from. Sent
      // again with the same tid, it is applied once: the old holder either
      // journaled it (the new one replayed that and answers from its
      // completed requests) or never will (it is fenced).
      continue;
    }
    answered = false;
    uint64_t new_boot = 0;
    if (status.ok()) {
      absl::MutexLock lock(&mu_);
      if (reply.boot() != 0 && reply.boot() != boot_) new_boot = reply.boot();
    }
    if (new_boot != 0) {
      // The MDS restarted since we last heard from it: our unsafe requests
      // go first, then this one again (its reply may be from before them).
      const absl::Status reconnected = Reconnect(new_boot);
      if (evicted_.load()) {
        // The new incarnation evicted this session (it did not reconnect in
        // time): asking again would only get the same answer, at once.
        result = evicted();
        break;
      }
      if (absl::Now() > deadline) {
        result = absl::DeadlineExceededError("mds: reconnect did not finish");
        break;
      }
      if (!reconnected.ok()) absl::SleepFor(absl::Milliseconds(100));  // no busy loop
      continue;
    }
    if (status.ok()) {
      answered = true;
      // The MDS names the request it answers (MetaReply.tid).
      DCHECK(reply.tid() == 0 || reply.tid() == tid) << "reply for tid " << reply.tid()
                                                      << " to request " << tid;
      status = rpc::FromProto(reply.status());
      leases_.Observe(request, reply, status, sent, lease_epoch);
    }
    if (status.ok()) {
      Observe(reply);
      if (reply.unsafe()) {
        pb::MetaRequest resend = request;
        resend.set_replay_seq(reply.seq());
        resend.set_replay_time_ns(reply.time_ns());
        if (request.has_create() || request.has_mkdir() || request.has_symlink()) {
          resend.set_replay_ino(reply.attr().ino());
        }
        absl::MutexLock lock(&mu_);
        unsafe_.emplace(tid, std::move(resend));
        keep = true;
      }
      result = std::move(reply);
      break;
    }
    if (IsNoSession(status) && attempt < 3) {
      // The MDS lost our session (timed out): continue it if it can, else a
      // new one.
      absl::Status reopened = OpenSession(session_);
      if (!reopened.ok() && !IsEvicted(reopened)) reopened = OpenSession(0);
      request.set_session(session_);
      if (reopened.ok()) continue;
      if (IsEvicted(reopened)) status = reopened;
    }
    if (IsEvicted(status)) NoteEvicted(status);
    if (!Retryable(status) || absl::Now() > deadline) {
      result = status;
      break;
    }
    absl::SleepFor(absl::Milliseconds(std::min(1000, 50 << std::min(attempt, 4))));
    (void)Resolve();
  }
  // Given up without a reply: the change may or may not have happened, and
  // the MDS does not revoke a session's leases for its own changes.
  if (!answered) leases_.ForgetAll();
  absl::MutexLock lock(&mu_);
  if (!keep) inflight_.erase(tid);
  return result;
}

void MetaClient::Forget(uint64_t tid) {
  unsafe_.erase(tid);
  inflight_.erase(tid);
}

void MetaClient::Observe(const pb::MetaReply& reply) {
  const uint64_t barrier = reply.osd_epoch_barrier();
  if (barrier > osd_epoch_barrier_.load()) {
    // Rare (an eviction happened): whoever sees it first waits for the
    // map; the others wait behind it on barrier_mu_.
    absl::MutexLock lock(&barrier_mu_);
    if (barrier > osd_epoch_barrier_.load()) {
      if (epoch_barrier_) epoch_barrier_(barrier);
      osd_epoch_barrier_.store(barrier);
    }
  }
  absl::MutexLock lock(&mu_);
  if (reply.boot() == boot_) DropDurableLocked(reply.durable_seq());
}

void MetaClient::SetEpochBarrier(std::function<void(uint64_t)> handler) {
  absl::MutexLock lock(&barrier_mu_);
  epoch_barrier_ = std::move(handler);
}

void MetaClient::NoteEvicted(const absl::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    if (evicted_.exchange(true)) return;
    evicted_status_ = EvictedError(absl::StrCat("this mount's session ", session_,
                                                " was evicted: ", status.message()));
    LOG(ERROR) << "event=client_evicted session=" << session_ << " status=\"" << status << "\"";
  }
  absl::MutexLock lock(&evicted_mu_);
  if (evicted_handler_) evicted_handler_();
}

void MetaClient::SetEvictedHandler(std::function<void()> handler) {
  absl::MutexLock lock(&evicted_mu_);
  evicted_handler_ = std::move(handler);
}

absl::Status MetaClient::Recover(const std::string& osd_client) {
  absl::MutexLock reconnect(&reconnect_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::FailedPreconditionError("the session is closed");
    osd_client_ = osd_client;
    unsafe_.clear();  // the evicted session's: applied, or lost with it
  }
  leases_.DropAll();
  const uint64_t old = session_;
  RETURN_IF_ERROR(OpenNewSession());
  {
    absl::MutexLock lock(&mu_);
    evicted_status_ = absl::OkStatus();
    evicted_.store(false);
    if (lease_ctx_ != nullptr) lease_ctx_->TryCancel();  // the stream starts over
  }
  LOG(WARNING) << "event=session_recovered old_session=" << old << " session=" << session_
               << " osd_client=\"" << osd_client << "\"";
  return absl::OkStatus();
}

absl::Status MetaClient::evicted() {
  absl::MutexLock lock(&mu_);
  return evicted_status_;
}

void MetaClient::DropDurableLocked(uint64_t durable_seq) {
  // An unsafe request is also in flight until dropped here or resent.
  DCHECK(std::all_of(unsafe_.begin(), unsafe_.end(),
                     [this](const auto& u) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                       return inflight_.contains(u.first);
                     }));
  for (auto it = unsafe_.begin(); it != unsafe_.end();) {
    if (it->second.replay_seq() <= durable_seq) {
      inflight_.erase(it->first);
      it = unsafe_.erase(it);
    } else {
      ++it;
    }
  }
}

absl::Status MetaClient::Sync() {
  {
    absl::MutexLock lock(&mu_);
    if (unsafe_.empty()) return absl::OkStatus();
  }
  pb::MetaRequest r;
  r.mutable_sync()->set_seq(0);  // everything so far
  ASSIGN_OR_RETURN(pb::MetaReply reply, Call(std::move(r)));
  // The sync's own reply is safe: everything through its seq is durable.
  absl::MutexLock lock(&mu_);
  if (reply.boot() == boot_) DropDurableLocked(reply.seq());
  return absl::OkStatus();
}

void MetaClient::SetOpenFiles(std::function<std::vector<pb::OpenRef>()> open_files) {
  absl::MutexLock lock(&mu_);
  open_files_ = std::move(open_files);
}

void MetaClient::SetLockHooks(LocksHeld held, LocksLost lost) {
  absl::MutexLock lock(&mu_);
  locks_held_ = std::move(held);
  locks_lost_ = std::move(lost);
}

void MetaClient::LoseAllLocks() {
  LocksHeld held;
  LocksLost lost;
  {
    absl::MutexLock lock(&mu_);
    held = locks_held_;
    lost = locks_lost_;
  }
  if (held && lost) lost(held());
}

size_t MetaClient::unsafe_count() {
  absl::MutexLock lock(&mu_);
  return unsafe_.size();
}

absl::Status MetaClient::Reconnect(uint64_t boot) {
  absl::MutexLock serial(&reconnect_mu_);
  leases_.ForgetAll();  // a new incarnation knows nothing of them
  pb::ReconnectRequest req;
  std::function<std::vector<pb::OpenRef>()> open_files;
  LocksHeld locks_held;
  LocksLost locks_lost;
  {
    absl::MutexLock lock(&mu_);
    if (boot_ == boot) return absl::OkStatus();  // another thread did it
    open_files = open_files_;
    locks_held = locks_held_;
    locks_lost = locks_lost_;
  }
  if (open_files) {
    for (pb::OpenRef& o : open_files()) *req.add_opens() = std::move(o);
    req.set_opens_complete(true);
  }
  if (locks_held) {
    for (pb::LockInfo& l : locks_held()) *req.add_locks() = std::move(l);
  }
  std::vector<uint64_t> sent;
  {
    absl::MutexLock lock(&mu_);
    req.set_session(session_);
    std::vector<const pb::MetaRequest*> order;
    for (const auto& [tid, r] : unsafe_) order.push_back(&r);
    std::sort(order.begin(), order.end(), [](const pb::MetaRequest* a, const pb::MetaRequest* b) {
      return a->replay_seq() < b->replay_seq();
    });
    for (const pb::MetaRequest* r : order) {
      *req.add_replays() = *r;
      sent.push_back(r->tid());
    }
  }
  auto stub = pb::Mds::NewStub(Channel());
  grpc::ClientContext ctx;
  // The MDS answers once its reconnect window closed and the resends applied.
  ctx.set_deadline(rpc::DeadlineIn(options_.op_timeout_ms));
  pb::ReconnectReply reply;
  absl::Status status = rpc::FromGrpc(stub->Reconnect(&ctx, req, &reply), "mds");
  if (status.ok()) status = rpc::FromProto(reply.status());
  if (IsNoSession(status)) {
    // The new MDS does not know this session: what it had not made durable
    // is gone with it. Start over with a new session.
    LOG(ERROR) << "op=reconnect session=" << session_ << " lost_unsafe=" << sent.size()
               << " status=" << status;
    RETURN_IF_ERROR(OpenSession(0));  // loses the locks
    absl::MutexLock lock(&mu_);
    for (uint64_t tid : sent) Forget(tid);
    return status;
  }
  if (IsEvicted(status)) {
    // Too late for the window: the MDS is evicting this session (fenced
    // first), as it would a dead client's. So is this mount from now on.
    NoteEvicted(status);
    return status;
  }
  RETURN_IF_ERROR(status);
  if (locks_lost && reply.locks_lost_size() > 0) {
    locks_lost({reply.locks_lost().begin(), reply.locks_lost().end()});
  }
  LOG(INFO) << "op=reconnect session=" << session_ << " boot=" << reply.boot()
            << " resent=" << sent.size() << " opens=" << req.opens_size();
  absl::MutexLock lock(&mu_);
  for (uint64_t tid : sent) Forget(tid);  // applied and durable
  boot_ = reply.boot();
  return absl::OkStatus();
}

absl::StatusOr<pb::FsStatusReply> MetaClient::FsStatus() {
  const absl::Time deadline = absl::Now() + absl::Milliseconds(options_.op_timeout_ms);
  for (;;) {
    auto stub = pb::Mds::NewStub(Channel());
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(options_.rpc_timeout_ms));
    pb::FsStatusRequest req;
    req.set_fs(options_.fs);
    pb::FsStatusReply reply;
    absl::Status status = rpc::FromGrpc(stub->FsStatus(&ctx, req, &reply), "mds");
    if (status.ok()) status = rpc::FromProto(reply.status());
    if (status.ok()) return reply;
    if (!Retryable(status) || absl::Now() > deadline) return status;
    absl::SleepFor(absl::Milliseconds(200));
    (void)Resolve();
  }
}

absl::Status MetaClient::Close() {
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::OkStatus();
    closed_ = true;
    if (lease_ctx_ != nullptr) lease_ctx_->TryCancel();
    if (map_ctx_ != nullptr) map_ctx_->TryCancel();
  }
  auto stub = pb::Mds::NewStub(Channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(rpc::DeadlineIn(5000));
  pb::SessionRequest req;
  req.set_fs(options_.fs);
  req.set_session(session_);
  pb::SessionReply reply;
  RETURN_IF_ERROR(rpc::FromGrpc(stub->SessionClose(&ctx, req, &reply), "mds"));
  return rpc::FromProto(reply.status());
}

absl::Status FsAdmin::Call(const std::function<absl::Status(pb::Filesystems::Stub*)>& fn) {
  return CallLeader(mds_addrs_, [&](const std::string& addr, std::string*) {
    auto stub = pb::Filesystems::NewStub(channels_.Get(addr));
    return fn(stub.get());
  });
}

template <typename Request>
absl::StatusOr<pb::AdminReply> FsAdmin::AdminCall(AdminMethod<Request> method,
                                                  const Request& req) {
  pb::AdminReply out;
  RETURN_IF_ERROR(Call([&](pb::Filesystems::Stub* stub) {
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
    pb::AdminReply reply;
    RETURN_IF_ERROR(rpc::FromGrpc((stub->*method)(&ctx, req, &reply), "mds"));
    RETURN_IF_ERROR(rpc::FromProto(reply.status()));
    out = std::move(reply);
    return absl::OkStatus();
  }));
  return out;
}

absl::Status FsAdmin::FsNew(const std::string& name, const std::string& metadata_pool,
                            const std::string& data_pool) {
  pb::FsNewRequest req;
  req.set_name(name);
  req.set_metadata_pool(metadata_pool);
  req.set_data_pool(data_pool);
  return AdminCall(&pb::Filesystems::Stub::FsNew, req).status();
}

absl::Status FsAdmin::FsAddDataPool(const std::string& name, const std::string& data_pool) {
  pb::FsAddDataPoolRequest req;
  req.set_name(name);
  req.set_data_pool(data_pool);
  return AdminCall(&pb::Filesystems::Stub::FsAddDataPool, req).status();
}

absl::StatusOr<pb::FsMap> FsAdmin::FsList() {
  ASSIGN_OR_RETURN(pb::FsListReply reply, FsListWithDaemons());
  return std::move(*reply.mutable_fsmap());
}

absl::Status FsAdmin::FsSet(const std::string& name, const std::string& key,
                            const std::string& value) {
  pb::FsSetRequest req;
  req.set_name(name);
  req.set_key(key);
  req.set_value(value);
  return AdminCall(&pb::Filesystems::Stub::FsSet, req).status();
}

absl::StatusOr<std::string> FsAdmin::MdsFail(const std::string& who) {
  pb::MdsFailRequest req;
  req.set_who(who);
  // The map manager failing itself steps down and answers UNAVAILABLE: the
  // next one, elected within seconds, does it when asked again.
  const absl::Time deadline = absl::Now() + absl::Seconds(15);
  for (;;) {
    absl::StatusOr<pb::AdminReply> done = AdminCall(&pb::Filesystems::Stub::MdsFail, req);
    if (done.ok()) return done->message();
    if (!absl::IsUnavailable(done.status()) || absl::Now() > deadline) return done.status();
    absl::SleepFor(absl::Milliseconds(500));
  }
}

absl::StatusOr<pb::FsListReply> FsAdmin::FsListWithDaemons() {
  pb::FsListReply out;
  RETURN_IF_ERROR(Call([&](pb::Filesystems::Stub* stub) {
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(timeout_ms_));
    pb::FsListReply reply;
    RETURN_IF_ERROR(rpc::FromGrpc(stub->FsList(&ctx, pb::FsListRequest(), &reply), "mds"));
    RETURN_IF_ERROR(rpc::FromProto(reply.status()));
    out = std::move(reply);
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace weft::client
