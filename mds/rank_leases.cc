// Directory leases of a rank: granting them with replies, revoking them
// before changes, and the per-session streams the revokes travel on
// (mds/cache/dir_leases.h has the protocol).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>

#include "absl/time/clock.h"
#include "common/log/log.h"
#include "common/posix/acl.h"
#include "common/status/status.h"
#include "mds/ops/op_context.h"
#include "mds/rank.h"

namespace weft::mds {
namespace {

struct LeaseChange {
  uint64_t dir;
  bool include_self;  // a permission change: the changer's own knowledge goes too
};

// The directories a request changes in a way a lease holder must hear of.
std::vector<LeaseChange> ChangesOf(const pb::MetaRequest& r) {
  using R = pb::MetaRequest;
  switch (r.op_case()) {
    case R::kCreate: return {{r.create().parent(), false}};
    case R::kMkdir: return {{r.mkdir().parent(), false}};
    case R::kSymlink: return {{r.symlink().parent(), false}};
    case R::kLink: return {{r.link().new_parent(), false}};
    case R::kUnlink: return {{r.unlink().parent(), false}};
    case R::kRmdir: return {{r.rmdir().parent(), false}};
    case R::kRename:
      if (r.rename().parent() == r.rename().new_parent()) return {{r.rename().parent(), false}};
      return {{r.rename().parent(), false}, {r.rename().new_parent(), false}};
    case R::kSetattr:
      // Mode and owner decide who may search the directory.
      if (r.setattr().valid() & (pb::SA_MODE | pb::SA_UID | pb::SA_GID)) {
        return {{r.setattr().ino(), true}};
      }
      return {};
    case R::kSetxattr:
      if (r.setxattr().name() == posix::kXattrPosixAclAccess) return {{r.setxattr().ino(), true}};
      return {};
    case R::kRemovexattr:
      if (r.removexattr().name() == posix::kXattrPosixAclAccess) return {{r.removexattr().ino(), true}};
      return {};
    default:
      return {};
  }
}

}  // namespace

absl::Status MdsRank::WaitForLeasesLocked(const pb::MetaRequest& request) {
  const std::vector<LeaseChange> changes = ChangesOf(request);
  if (changes.empty()) return absl::OkStatus();
  const absl::Time give_up = absl::Now() + 3 * leases_.lease() + absl::Seconds(1);
  for (;;) {
    const absl::Time now = absl::Now();
    std::vector<DirLeaseTable::Revoke> revokes;
    absl::Time until = absl::InfiniteFuture();
    bool blocked = false;
    for (const LeaseChange& c : changes) {
      blocked |= leases_.Conflicts(c.dir, request.session(), c.include_self, now, &revokes, &until);
    }
    for (const DirLeaseTable::Revoke& r : revokes) {
      pb::LeaseEvent event;
      event.set_ino(r.ino);
      event.set_seq(r.seq);
      SendLeaseEventLocked(r.session, event);
    }
    if (!blocked) return absl::OkStatus();
    if (stopping_) return absl::UnavailableError("the MDS is stopping");
    if (now > give_up) {
      // Cannot happen while leases run out on time: a bug, not a client's fault.
      LOG(ERROR) << "event=lease_wait_stuck session=" << request.session();
      return absl::UnavailableError("a directory lease was not returned; retry");
    }
    if (!revokes.empty()) {
      VLOG(1) << "event=lease_revoke session=" << request.session() << " n=" << revokes.size();
    }
    const uint64_t seen = lease_returns_;
    auto returned = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return lease_returns_ != seen || stopping_;
    };
    mu_.AwaitWithDeadline(absl::Condition(&returned), std::min(until, give_up));
  }
}

void MdsRank::GrantLeasesLocked(const pb::MetaRequest& r, const pb::MetaReply& done,
                                google::protobuf::RepeatedPtrField<pb::DirLease>* out) {
  if (!lease_streams_.contains(r.session())) return;  // revokes could not reach it
  const absl::Time now = absl::Now();
  auto grant = [&](uint64_t dir, bool searchable) {
    const uint64_t seq = leases_.Grant(dir, r.session(), now);
    if (seq == 0) return;
    pb::DirLease* l = out->Add();
    l->set_ino(dir);
    l->set_seq(seq);
    l->set_lease_ms(absl::ToInt64Milliseconds(leases_.lease()));
    l->set_searchable(searchable);
  };
  using R = pb::MetaRequest;
  switch (r.op_case()) {
    case R::kLookup: grant(r.lookup().parent(), true); break;
    case R::kReaddir: grant(r.readdir().ino(), false); break;
    case R::kCreate: grant(r.create().parent(), true); break;
    case R::kMkdir:
      grant(r.mkdir().parent(), true);
      if (done.attr().ino() != 0) grant(done.attr().ino(), false);  // new and empty
      break;
    case R::kSymlink: grant(r.symlink().parent(), true); break;
    case R::kLink: grant(r.link().new_parent(), true); break;
    case R::kUnlink: grant(r.unlink().parent(), true); break;
    case R::kRmdir: grant(r.rmdir().parent(), true); break;
    case R::kRename:
      grant(r.rename().parent(), true);
      if (r.rename().new_parent() != r.rename().parent()) grant(r.rename().new_parent(), true);
      break;
    default: break;
  }
}

void MdsRank::SendLeaseEventLocked(uint64_t session, const pb::LeaseEvent& event) {
  auto it = lease_streams_.find(session);
  // No stream: the revoke cannot be delivered; the lease runs out instead.
  if (it != lease_streams_.end()) it->second.queue.push_back(event);
}

void MdsRank::DropLeasesLocked(uint64_t session) {
  leases_.DropSession(session);
  DropRecallsLocked(session);
  ++lease_returns_;
}

void MdsRank::NoteWriterLocked(uint64_t session, uint64_t ino) {
  const SessionState* s = cache_.Session(session);
  if (s != nullptr) {
    auto it = s->opens_write.find(ino);
    if (it != s->opens_write.end() && it->second > 0) {
      writers_[ino].insert(session);
      return;
    }
  }
  DropWriterLocked(session, ino);
}

void MdsRank::DropWriterLocked(uint64_t session, uint64_t ino) {
  auto w = writers_.find(ino);
  if (w == writers_.end()) return;
  w->second.erase(session);
  if (w->second.empty()) writers_.erase(w);
}

void MdsRank::DropRecallsLocked(uint64_t session) {
  absl::erase_if(write_recalls_, [session](const auto& r) { return r.first.first == session; });
}

void MdsRank::GrantAttrAuthorityLocked(const pb::MetaRequest& request, pb::MetaReply* reply) {
  const pb::Attr& a = reply->attr();
  if (!request.has_create() || !request.create().open() || !reply->created() ||
      !lease_streams_.contains(request.session()) || (a.mode() & S_IFMT) != S_IFREG ||
      !a.no_xattrs() || (a.mode() & (S_ISUID | S_ISGID)) != 0) {
    return;
  }
  // The recall that ends it needs the session counted as a writer.
  const SessionState* s = cache_.Session(request.session());
  if (s == nullptr) return;
  auto it = s->opens_write.find(a.ino());
  if (it == s->opens_write.end() || it->second <= 0) return;
  reply->set_attr_authority(true);
}

std::vector<uint64_t> ShownInos(const pb::MetaReply& reply, const std::vector<uint64_t>& touched) {
  std::vector<uint64_t> shown = touched;
  if (reply.attr().ino() != 0) shown.push_back(reply.attr().ino());
  for (const pb::DirEntry& e : reply.entries()) {
    if (e.attr().ino() != 0) shown.push_back(e.attr().ino());
  }
  return shown;
}

bool MdsRank::RecallWritesLocked(const pb::MetaRequest& request, const pb::MetaReply& reply,
                                 const std::vector<uint64_t>& touched,
                                 const std::vector<pb::TrimRec>& trims,
                                 absl::flat_hash_set<RecallKey>* recalled,
                                 absl::flat_hash_set<RecallKey>* held) {
  // A flush's own report, and what cannot show a file's size.
  using R = pb::MetaRequest;
  // A move of inline data comes from a flush too (the writers' own reports
  // then find the file moved).
  // An atime moved by reads needs no writer's changes either.
  if (writers_.empty() || request.op_case() == R::kWritten || request.op_case() == R::kRelease ||
      request.op_case() == R::kSync || request.op_case() == R::kAtime ||
      (request.op_case() == R::kInlineData && request.inline_data().uninline())) {
    return false;
  }
  // What the reply shows, and what the operation looked at: a permission
  // decision on a file's mode or owner (also one that failed) needs the
  // writer's own changes of them (MetaReply.attr_authority) first.
  const std::vector<uint64_t> shown = ShownInos(reply, touched);
  if (shown.empty()) return false;
  std::vector<RecallKey> wanted;
  absl::flat_hash_set<RecallKey> holds;  // of `wanted`: those asked to hold
  for (uint64_t ino : shown) {
    auto w = writers_.find(ino);
    if (w == writers_.end()) continue;
    const bool hold = std::any_of(trims.begin(), trims.end(),
                                  [ino](const pb::TrimRec& t) { return t.ino() == ino; });
    for (uint64_t id : w->second) {
      if (id == request.session() || !lease_streams_.contains(id)) continue;
      const SessionState* s = cache_.Session(id);
      if (s == nullptr) continue;
      auto it = s->opens_write.find(ino);
      if (it == s->opens_write.end() || it->second <= 0) continue;
      const RecallKey key{id, ino};
      const bool first = recalled->insert(key).second;
      // Recalled already when the run before had no truncate to hold it for.
      const bool hold_now = hold && held->insert(key).second;
      if (hold_now) holds.insert(key);
      if (first || hold_now) wanted.push_back(key);
    }
  }
  if (wanted.empty()) return false;
  for (const RecallKey& key : wanted) {
    const bool hold = holds.contains(key);
    // Already asked for another request (a hold is asked again).
    if (write_recalls_.contains(key) && !hold) continue;
    const uint64_t seq = ++next_recall_seq_;
    write_recalls_[key] = seq;
    pb::LeaseEvent event;
    event.set_ino(key.second);
    event.set_seq(seq);
    event.set_flush(true);
    event.set_hold(hold);
    if (hold) {
      trim_holds_[key.second].insert(key.first);
      ++hold_requests_[key.second];
    }
    SendLeaseEventLocked(key.first, event);
  }
  VLOG(1) << "event=write_recall session=" << request.session() << " n=" << wanted.size();
  auto answered = [this, &wanted]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (stopping_) return true;
    for (const RecallKey& key : wanted) {
      if (write_recalls_.contains(key)) return false;
    }
    return true;
  };
  const absl::Time deadline =
      absl::Now() + absl::Milliseconds(options_.write_recall_timeout_ms);
  if (!mu_.AwaitWithDeadline(absl::Condition(&answered), deadline)) {
    // A client that stopped answering: what the MDS has is all there is.
    LOG(WARNING) << "event=write_recall_timeout session=" << request.session();
    for (const RecallKey& key : wanted) write_recalls_.erase(key);
  }
  return true;
}

absl::Status MdsRank::ServeLeases(uint64_t session, const std::function<bool()>& cancelled,
                                  const std::function<bool(const pb::LeaseEvent&)>& write) {
  uint64_t gen = 0;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the MDS is stopping");
    if (cache_.Session(session) == nullptr) return Err(ENOTCONN, "no such session");
    // The client dropped every lease when its earlier stream broke, and
    // trusts no grant of a request it sent before this hello.
    DropLeasesLocked(session);
    gen = ++lease_stream_gen_;
    LeaseStream& stream = lease_streams_[session];
    stream.gen = gen;
    stream.queue.clear();
    pb::LeaseEvent hello;
    hello.set_hello(true);
    stream.queue.push_back(hello);
  }
  VLOG(1) << "event=lease_stream_open session=" << session;
  for (;;) {
    std::deque<pb::LeaseEvent> batch;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        auto it = lease_streams_.find(session);
        return stopping_ || it == lease_streams_.end() || it->second.gen != gen ||
               !it->second.queue.empty();
      };
      mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(1));
      auto it = lease_streams_.find(session);
      if (stopping_ || it == lease_streams_.end() || it->second.gen != gen) break;
      batch.swap(it->second.queue);
    }
    if (cancelled()) break;
    bool ok = true;
    for (const pb::LeaseEvent& e : batch) {
      if (!(ok = write(e))) break;
    }
    if (!ok) break;
  }
  absl::MutexLock lock(&mu_);
  auto it = lease_streams_.find(session);
  // Its leases stay until acknowledged or run out: the client may not know
  // yet that the stream is gone.
  if (it != lease_streams_.end() && it->second.gen == gen) {
    lease_streams_.erase(it);
    DropRecallsLocked(session);
  }
  VLOG(1) << "event=lease_stream_end session=" << session;
  return absl::OkStatus();
}

absl::StatusOr<pb::SessionReply> MdsRank::LeaseAck(const pb::LeaseAckRequest& request) {
  absl::MutexLock lock(&mu_);
  if (cache_.Session(request.session()) == nullptr) return Err(ENOTCONN, "no such session");
  for (const pb::LeaseEvent& e : request.acks()) {
    if (e.flush()) {
      auto it = write_recalls_.find(RecallKey{request.session(), e.ino()});
      // The waiter's condition reads write_recalls_ itself.
      if (it != write_recalls_.end() && it->second == e.seq()) write_recalls_.erase(it);
    } else if (leases_.Ack(request.session(), e.ino(), e.seq())) {
      ++lease_returns_;
    }
  }
  pb::SessionReply reply;
  reply.set_session(request.session());
  reply.set_boot(boot_);
  return reply;
}

}  // namespace weft::mds
