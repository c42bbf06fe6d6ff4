// RequestRun: one request's steps (see request_run.h). The operation logic is
// in mds/ops/; this file decides around it: the session, a retry answered
// from the completed table, other sessions' leases and buffered writes,
// truncates and inline moves in the way, the commit, and the reply.
#include "mds/request_run.h"

#include <fcntl.h>

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "mds/ops/ops.h"
#include "mds/rank.h"

namespace weft::mds {
namespace {

// Runs of one operation (loads, moves, recalls and truncates in the way)
// before the client is told to retry: metadata that keeps changing under it.
constexpr int kAttemptsMax = 32;
// How long a request waits for a file's truncate to cut its objects before
// the client is told to retry (Unavailable): the OSDs may be down.
constexpr absl::Duration kTrimWait = absl::Seconds(10);
// A failed cut is tried again after this long (the request's own truncate).
constexpr absl::Duration kCutRetry = absl::Seconds(1);

absl::Status RunsItself() {
  return absl::InternalError("dispatch of a request the run handles itself");
}

// A reply as the session tables keep it for a retry: the wire's encoding,
// without inline bytes (a retry reads them again).
std::string KeptReply(const Reply& reply) {
  pb::MetaReply kept;
  ToWire(reply, /*tid=*/0, &kept);
  kept.clear_inline_data();
  return kept.SerializeAsString();
}

// A kept reply back, marked as answered from the table; false if it does
// not parse.
bool ReadKept(const std::string& bytes, Reply* reply) {
  pb::MetaReply kept;
  if (!kept.ParseFromString(bytes)) return false;
  absl::StatusOr<Reply> parsed = FromWire(kept);
  if (!parsed.ok()) return false;
  *reply = *std::move(parsed);
  reply->replayed = true;
  return true;
}

}  // namespace

RequestRun::RequestRun(MdsRank* rank, const Request& request, Reply* reply,
                       bool replay)
    : rank_(rank),
      request_(request),
      reply_(reply),
      replay_(replay),
      session_(request.session),
      tid_(request.id.value()),
      phase_(request.Is<req::Lock>() ? Phase::kLock : Phase::kOp) {}

RequestRun::~RequestRun() { DCHECK(ended_) << "a request run was dropped without End()"; }

void RequestRun::End() {
  rank_->mu_.AssertHeld();
  if (ended_) return;
  ended_ = true;
  rank_->locks_.Done(&lock_wait_);
  if (moving_ != 0) rank_->moves_.End(moving_);
  if (opening_ != 0) rank_->leases_.EndOpening(session_, opening_);
  if (!held_.empty()) {
    rank_->leases_.EndHolds(held_);
    for (const auto& [session, ino] : held_) rank_->MaybeReleaseHoldsLocked(ino);
  }
}

RequestRun::Outcome RequestRun::Done(absl::Status status) {
  phase_ = Phase::kDone;
  final_ = std::move(status);
  Outcome o;
  o.kind = Kind::kDone;
  o.status = final_;
  return o;
}

RequestRun::Outcome RequestRun::Io(Kind kind) {
  pending_io_ = kind;
  Outcome o;
  o.kind = kind;
  switch (kind) {
    case Kind::kLoad:
      o.load = load_;
      break;
    case Kind::kMove:
      o.move = move_;
      break;
    case Kind::kCut:
      o.cut = cut_;
      break;
    case Kind::kDurable:
      o.seq = phase_ == Phase::kTrim && first_durable_done_ ? cut_seq_ : wait_seq_;
      break;
    default:
      break;
  }
  return o;
}

RequestRun::Outcome RequestRun::WaitFor(const char* what, std::function<bool()> ready,
                                        absl::Time deadline) {
  Outcome o;
  o.kind = Kind::kWait;
  o.wait.what = what;
  o.wait.ready = std::move(ready);
  o.wait.deadline = deadline;
  return o;
}

RequestRun::Outcome RequestRun::Step() {
  rank_->mu_.AssertHeld();  // the driver's; not annotated: it holds its rank's, which is ours
  switch (phase_) {
    case Phase::kOp:
      return StepOp();
    case Phase::kLock:
      return StepLock();
    case Phase::kInval:
      return StepInval();
    case Phase::kTrim:
      return StepTrim();
    case Phase::kReply:
      return StepReply();
    case Phase::kDone:
      break;
  }
  return Done(final_);  // what it ended with (an I/O result can end it)
}

void RequestRun::IoDone(const absl::Status& status) {
  rank_->mu_.AssertHeld();
  const Kind io = pending_io_;
  pending_io_ = Kind::kDone;
  switch (io) {
    case Kind::kLoad:
      if (!status.ok()) Done(status);
      break;  // the operation runs again
    case Kind::kMove:
      if (!status.ok()) {
        Done(status);
        break;
      }
      moved_ = std::make_pair(move_.ino, move_.inline_version);
      break;
    case Kind::kCut:
      if (status.ok()) {
        Event event;
        event.op = "trimmed";
        event.cuts_done.push_back(cut_.ino);
        cut_seq_ = rank_->CommitLocked(&event);
        cut_state_ = CutState::kDurable;
      } else {
        rank_->trims_.End(cut_.ino.value());
        LOG(WARNING) << "event=trim_failed ino=" << cut_.ino << " keep=" << cut_.keep
                     << " size=" << cut_.size << " status=\"" << status << "\"";
        cut_error_ = status;
        retry_at_ = rank_->env_.clock->Now() + kCutRetry;
        cut_state_ = CutState::kRetry;
      }
      break;
    case Kind::kDurable:
      if (phase_ == Phase::kTrim && !first_durable_done_) {
        if (!status.ok()) Done(status);
        first_durable_done_ = true;
      } else if (phase_ == Phase::kTrim) {
        // trim_done is durable: a restart would not cut again over what
        // the writers write from now on.
        const uint64_t ino = cut_.ino.value();
        rank_->trims_.End(ino);
        rank_->MaybeReleaseHoldsLocked(ino);
        VLOG(1) << "event=trimmed ino=" << ino << " keep=" << cut_.keep << " size=" << cut_.size;
        if (!status.ok()) {
          Done(status);
          break;
        }
        ++trim_next_;
        cut_state_ = CutState::kStart;
      } else {
        // kReply: the answer, once the change is durable.
        if (status.ok()) reply_->seq = wait_seq_;
        Done(status);
      }
      break;
    default:
      LOG(ERROR) << "event=bad_io_result request_tid=" << tid_;
      break;
  }
}

// ---- the operation

RequestRun::Outcome RequestRun::StepOp() {
  const absl::Time now = rank_->env_.clock->Now();
  if (rank_->stopping_) return Done(absl::UnavailableError("the MDS is stopping"));
  // What the last step waited for, if it is still not there.
  if (recall_wait_) {
    if (!rank_->leases_.Answered(recall_wait_->keys)) {
      if (now < recall_wait_->deadline) return WaitRecall(std::move(recall_wait_->keys), now);
      // A client that stopped answering is evicted (fenced first: what it
      // buffered cannot land later); one that cannot be fenced is passed
      // over, and what the MDS has is all there is.
      if (auto wait = EvictUnanswered(recall_wait_->keys, /*invals=*/false, now)) return *wait;
      if (!rank_->leases_.Answered(recall_wait_->keys)) {
        LOG(WARNING) << "event=write_recall_timeout session=" << session_;
        rank_->leases_.ForgetRecalls(recall_wait_->keys);
      }
    }
    recall_wait_.reset();
    evict_wait_.reset();
  }
  if (trim_wait_) {
    if (TrimsBlock(trim_wait_->inos)) {
      if (now < trim_wait_->deadline) {
        uncounted_ = true;
        return WaitFor(
            "trim",
            [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_) {
              return rank_->stopping_ || !TrimsBlock(trim_wait_->inos);
            },
            trim_wait_->deadline);
      }
      return Done(
          absl::UnavailableError("a truncate of the file is still cutting its objects; retry"));
    }
    trim_wait_.reset();
  }
  if (!uncounted_ && ++attempts_ > kAttemptsMax) {
    return Done(absl::UnavailableError("metadata kept changing while loading; retry"));
  }
  uncounted_ = false;
  SessionState* s = rank_->sessions_.Find(session_);
  if (s == nullptr) return Done(Err(ENOTCONN, "no such session"));
  if (s->evicting) return Done(EvictedError("this session is being evicted"));
  s->last_renew_ms = absl::ToUnixMillis(now);
  if (tid_ != 0) {
    auto done = s->rec.completed().find(tid_);
    if (done != s->rec.completed().end()) {
      // A retry of a request this rank (or an earlier incarnation) applied:
      // its answer again, once durable, and nothing applied twice.
      if (!ReadKept(done->second, reply_)) return Done(absl::InternalError("bad completed reply"));
      auto seq = s->completed_seq.find(tid_);
      wait_seq_ = seq == s->completed_seq.end() ? 0 : seq->second;
      const req::Create* create = request_.As<req::Create>();
      if (!replay_ && !reopened_ && wait_seq_ == 0 && create != nullptr && create->open) {
        // Created and opened by an earlier incarnation, whose answer never
        // arrived: the client opens the file now, and no Reconnect of it
        // counted the handle (the client had none yet). Without this its
        // writes failed with EBADF after the restart.
        const uint32_t flags = create->open_flags;
        const bool write = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) != 0;
        const uint64_t ino = reply_->attr.ino;
        absl::Time until = absl::InfiniteFuture();
        if (write && rank_->leases_.RevokeAttrs(session_, {ino}, now, &until)) {
          return WaitLeases(now, until);  // a session that looked at it since
        }
        rank_->sessions_.Opened(session_, ino, write);
        reopened_ = true;  // once per run: a wait below comes back through here
        rank_->leases_.NoteOpen(session_, ino, rank_->sessions_.Find(session_));
        std::tie(reply_->write_through, reply_->buffer_seq) =
            rank_->leases_.BufferFor(session_, ino);
      }
      // A truncate resent while its objects are still being cut (the first
      // try's thread, or a restart's) is answered once they are.
      if (TrimsBlock({reply_->attr.ino})) return WaitTrims({reply_->attr.ino}, now);
      phase_ = Phase::kReply;
      return StepReply();
    }
    if (auto kept = s->answered.find(tid_); kept != s->answered.end()) {
      if (!ReadKept(kept->second, reply_)) return Done(absl::InternalError("bad kept answer"));
      return Done(absl::OkStatus());
    }
  }
  if (!replay_) {
    // Other sessions' leases on what this changes come back first.
    absl::Time until = absl::InfiniteFuture();
    if (rank_->leases_.Revoke(request_, now, &until)) return WaitLeases(now, until);
  }
  if (const req::Sync* sync = request_.As<req::Sync>()) {
    // Everything this session was told through `seq` (0: through now).
    const uint64_t seq = sync->seq;
    wait_seq_ = seq == 0 ? rank_->last_seq_ : std::min(seq, rank_->last_seq_);
    phase_ = Phase::kReply;
    return StepReply();
  }
  if (request_.Is<req::Release>()) {
    // Every handle of a batch is released even when one fails.
    Event event;
    absl::Status released = Release(&event);
    if (!event.removed_inodes.empty()) wait_seq_ = rank_->CommitLocked(&event);
    if (!released.ok()) return Done(released);
    phase_ = Phase::kReply;
    return StepReply();
  }
  return RunOperation(now);
}

RequestRun::Outcome RequestRun::RunOperation(absl::Time now) {
  const int64_t op_now = replay_ && request_.replay_time_ns != 0 ? request_.replay_time_ns
                                                                 : absl::ToUnixNanos(now);
  *reply_ = Reply();
  OpContext ctx(rank_->OpEnvLocked(), &rank_->cache_, &rank_->sessions_, request_, op_now);
  if (replay_) {
    ctx.ReuseIno(request_.replay_ino);
    ctx.SetReplay();
  }
  ctx.SetMoved(moved_);
  const absl::Status status = Dispatch(ctx);
  if (const uint64_t busy = rank_->moves_.RecordedElsewhere(ctx.touched(), moving_); busy != 0) {
    // Another request moved this file's inline data and its record is not
    // durable yet: an answer showing the move would let the client write
    // objects that a replay of the move overwrites.
    *reply_ = Reply();
    uncounted_ = true;  // waiting is not a failed try
    return WaitFor("move", [this, busy]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_) {
      return rank_->stopping_ || !rank_->moves_.Moving(busy);
    });
  }
  if (IsNeedLoad(status) && ctx.loads_pending()) {
    load_.inodes = ctx.load_inodes();
    load_.frags = ctx.load_frags();
    load_.inline_data = ctx.load_inline();
    *reply_ = Reply();
    return Io(Kind::kLoad);
  }
  if (IsNeedMove(status) && ctx.move()) {
    *reply_ = Reply();
    const uint64_t ino = ctx.move()->ino;
    if (moving_ != ino) {
      if (rank_->moves_.Moving(ino)) {
        // Another request moves it: its result decides this one.
        return WaitFor("move", [this, ino]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_) {
          return rank_->stopping_ || !rank_->moves_.Moving(ino);
        });
      }
      rank_->moves_.Begin(ino);
      moving_ = ino;
    }
    move_ = *ctx.move();
    return Io(Kind::kMove);
  }
  if (!status.ok()) {
    if (!replay_) {
      std::vector<Leases::RecallKey> wanted = rank_->leases_.Recall(
          request_, *reply_, ctx.touched(), {}, rank_->sessions_, &recalled_, &held_);
      if (!wanted.empty()) {
        // Decided on a file another session may have changed on its own.
        *reply_ = Reply();
        return WaitRecall(std::move(wanted), now);
      }
    }
    if (request_.Is<req::Lookup>() && IsNoEntry(status)) {
      rank_->leases_.Grant(request_, *reply_, now, &reply_->leases);  // a negative lookup's
    }
    return Done(status);
  }
  if (rank_->trims_.Any(rank_->cache_)) {
    // A truncate is cutting the objects of a file this shows. Its end
    // releases the writers: a truncate here holds them again.
    std::vector<uint64_t> shown = ShownInos(*reply_, ctx.touched());
    if (TrimsBlock(shown)) {
      *reply_ = Reply();
      recalled_.clear();
      return WaitTrims(std::move(shown), now);
    }
  }
  if (!replay_) {
    if (opening_ == 0) {
      opening_ = OpenedBy(request_, *reply_);
      if (opening_ != 0) rank_->leases_.Opening(session_, opening_);
    }
    std::vector<Leases::RecallKey> wanted = rank_->leases_.Recall(
        request_, *reply_, ctx.touched(), ctx.trim_add(), rank_->sessions_, &recalled_, &held_);
    if (!wanted.empty()) {
      // Other sessions flush what this reply shows: run it again after.
      *reply_ = Reply();
      return WaitRecall(std::move(wanted), now);
    }
  }
  if (!replay_) {
    // Other sessions' attribute caps on what this changes come back first;
    // the operation runs again after (what it read may have moved on).
    absl::Time until = absl::InfiniteFuture();
    if (rank_->leases_.RevokeAttrs(session_, ctx.changed(), now, &until)) {
      *reply_ = Reply();
      return WaitLeases(now, until);
    }
    lease_give_up_.reset();
  }
  // The operation stands: commit what it changed, in one event (which takes
  // the edits from the context).
  const std::vector<uint64_t> changed = ctx.changed();
  Event event;
  const bool committed = ctx.Finish(&event);
  if (committed) {
    if (tid_ != 0) {
      event.session = session_;
      event.tid = request_.id;
      event.oldest_tid = request_.oldest;
      event.reply = KeptReply(*reply_);
    }
    wait_seq_ = rank_->CommitLocked(&event);
    if (moved_) rank_->moves_.Recorded(moving_);  // durable when this request ends
    reply_->time_ns = op_now;
    AfterCommit(ctx, changed);
    for (const Cut& t : ctx.trim_add()) trims_.push_back(t.ino.value());
  }
  // A resent create or open is not counted again: the session's Reconnect
  // gave back its handles, this one among them (counted twice, the file
  // stayed open after its last close, and an unlinked one was never purged).
  if (auto ino = ctx.open_ref(); ino && !replay_) {
    rank_->sessions_.Opened(session_, *ino, ctx.open_write());
    rank_->leases_.NoteOpen(session_, *ino, rank_->sessions_.Find(session_));
    if (wait_seq_ == 0 && tid_ != 0) {
      // No event, so no completed reply: a retry must not open it twice.
      rank_->sessions_.Answered(session_, request_.id, request_.oldest, KeptReply(*reply_));
    }
    std::tie(reply_->write_through, reply_->buffer_seq) =
        rank_->leases_.BufferFor(session_, *ino);
  }
  if (const req::Written* w = request_.As<req::Written>();
      w != nullptr && !replay_ && rank_->sessions_.HasOpen(session_, w->ino.value(), true)) {
    // A writer that writes through learns here that it may buffer again
    // (the other openers closed the file), one that buffers that it still may.
    std::tie(reply_->write_through, reply_->buffer_seq) =
        rank_->leases_.BufferFor(session_, w->ino.value());
  }
  if (!replay_) {
    rank_->leases_.Grant(request_, *reply_, now, &reply_->leases);
    rank_->leases_.GrantAttrs(session_, reply_, now);
    if (rank_->leases_.MayGrantAttrAuthority(request_, *reply_, rank_->sessions_)) {
      reply_->attr_authority = true;
    }
  }
  if (committed && !replay_) {
    invals_ = rank_->leases_.Invalidate(request_, *reply_);
    if (!invals_.empty()) {
      inval_deadline_ = now + absl::Milliseconds(rank_->options_.revoke_timeout_ms);
      phase_ = Phase::kInval;
      return StepInval();
    }
  }
  return AfterInval();
}

RequestRun::Outcome RequestRun::AfterInval() {
  if (!trims_.empty()) {
    phase_ = Phase::kTrim;
    return StepTrim();
  }
  phase_ = Phase::kReply;
  return StepReply();
}

RequestRun::Outcome RequestRun::StepInval() {
  if (!rank_->stopping_ && !rank_->leases_.Invalidated(invals_)) {
    const absl::Time now = rank_->env_.clock->Now();
    if (now < inval_deadline_) {
      const std::vector<Leases::RecallKey>* keys = &invals_;
      return WaitFor(
          "inval",
          [this, keys]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_) {
            return rank_->stopping_ || rank_->leases_.Invalidated(*keys);
          },
          inval_deadline_);
    }
    // A client that stopped answering is evicted; one that cannot be fenced
    // is passed over (its pages may be stale until it reopens the file).
    if (auto wait = EvictUnanswered(invals_, /*invals=*/true, now)) return *wait;
    if (!rank_->leases_.Invalidated(invals_)) {
      LOG(WARNING) << "event=data_inval_timeout session=" << session_;
      rank_->leases_.ForgetInvals(invals_);
    }
  }
  invals_.clear();
  evict_wait_.reset();
  return AfterInval();
}

RequestRun::Outcome RequestRun::WaitLeases(absl::Time now, absl::Time until) {
  if (!lease_give_up_) lease_give_up_ = now + 3 * rank_->leases_.lease() + absl::Seconds(1);
  if (now > *lease_give_up_) {
    // Cannot happen while leases run out on time: a bug, not a client's fault.
    LOG(ERROR) << "event=lease_wait_stuck session=" << session_;
    return Done(absl::UnavailableError("a lease or cap was not returned; retry"));
  }
  const uint64_t seen = rank_->leases_.returns();
  uncounted_ = true;
  return WaitFor(
      "lease",
      [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_) {
        return rank_->leases_.returns() != seen || rank_->stopping_;
      },
      std::min(until, *lease_give_up_));
}

std::optional<RequestRun::Outcome> RequestRun::EvictUnanswered(
    const std::vector<Leases::RecallKey>& keys, bool invals, absl::Time now) {
  if (!evict_wait_) {
    EvictWait wait;
    wait.deadline = now + absl::Milliseconds(rank_->options_.revoke_timeout_ms);
    const std::string reason =
        absl::StrCat(invals ? "a data invalidation" : "a recall of buffered writes",
                     " not answered within ", rank_->options_.revoke_timeout_ms / 1000, " s");
    for (SessionId s : rank_->leases_.Unanswered(keys, invals)) {
      if (rank_->WantEvictLocked(s, reason)) wait.sessions.push_back(s);
    }
    evict_wait_ = std::move(wait);
  }
  const std::vector<SessionId>* sessions = &evict_wait_->sessions;
  auto settled = [this, sessions]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_) {
    return rank_->stopping_ ||
           std::all_of(sessions->begin(), sessions->end(),
                       [this](SessionId s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_) {
                         return rank_->EvictSettledLocked(s);
                       });
  };
  if (settled() || now >= evict_wait_->deadline) return std::nullopt;
  uncounted_ = true;
  return WaitFor("evict", settled, evict_wait_->deadline);
}

RequestRun::Outcome RequestRun::WaitRecall(std::vector<Leases::RecallKey> wanted, absl::Time now) {
  if (!recall_wait_) {
    recall_wait_ =
        RecallWait{{}, now + absl::Milliseconds(rank_->options_.revoke_timeout_ms)};
  }
  recall_wait_->keys = std::move(wanted);
  const std::vector<Leases::RecallKey>* keys = &recall_wait_->keys;
  return WaitFor(
      "recall",
      [this, keys]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_) {
        return rank_->stopping_ || rank_->leases_.Answered(*keys);
      },
      recall_wait_->deadline);
}

RequestRun::Outcome RequestRun::WaitTrims(std::vector<uint64_t> inos, absl::Time now) {
  trim_wait_ = TrimWait{std::move(inos), now + kTrimWait};
  return WaitFor(
      "trim",
      [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_) {
        return rank_->stopping_ || !TrimsBlock(trim_wait_->inos);
      },
      trim_wait_->deadline);
}

bool RequestRun::TrimsBlock(const std::vector<uint64_t>& inos) const {
  if (!rank_->trims_.Any(rank_->cache_)) return false;  // nearly always
  for (uint64_t ino : inos) {
    if (rank_->trims_.Blocked(rank_->cache_, ino)) return true;
  }
  return false;
}

// ---- advisory locks

RequestRun::Outcome RequestRun::StepLock() {
  if (rank_->stopping_) return Done(absl::UnavailableError("the MDS is stopping"));
  const SessionState* s = rank_->sessions_.Find(session_);
  if (s == nullptr) return Done(Err(ENOTCONN, "no such session"));
  if (s->evicting) return Done(EvictedError("this session is being evicted"));
  absl::Status status;
  if (rank_->locks_.Try(session_, std::get<req::Lock>(request_.op), rank_->sessions_,
                        rank_->env_.clock->Now(), &lock_wait_, reply_,
                        &status) == RankLocks::Step::kDone) {
    return Done(status);
  }
  const uint64_t gen = lock_wait_.gen;
  return WaitFor(
      "lock",
      [this, gen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_) {
        return rank_->locks_.gen() != gen || rank_->stopping_;
      },
      lock_wait_.give_up);
}

// ---- a truncate's cuts

RequestRun::Outcome RequestRun::StepTrim() {
  // Its objects are cut once the event that truncated is durable.
  if (!first_durable_done_) return Io(Kind::kDurable);
  while (trim_next_ < trims_.size()) {
    const uint64_t ino = trims_[trim_next_];
    switch (cut_state_) {
      case CutState::kRetry: {
        if (rank_->stopping_) return Done(cut_error_);
        const absl::Time now = rank_->env_.clock->Now();
        if (now < retry_at_) {
          return WaitFor(
              "cut-retry",
              [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_) { return rank_->stopping_; },
              retry_at_);
        }
        cut_state_ = CutState::kStart;
        [[fallthrough]];
      }
      case CutState::kStart: {
        if (rank_->stopping_) return Done(absl::UnavailableError("the MDS is stopping"));
        if (rank_->trims_.Running(ino)) {  // the janitor, or another request
          return WaitFor("trim", [this, ino]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rank_->mu_) {
            return rank_->stopping_ || !rank_->trims_.Running(ino);
          });
        }
        auto it = rank_->cache_.trims().find(ino);
        if (it == rank_->cache_.trims().end()) {  // cut by someone else meanwhile
          ++trim_next_;
          continue;
        }
        cut_ = it->second;
        rank_->trims_.Begin(ino);
        cut_state_ = CutState::kCutting;
        return Io(Kind::kCut);
      }
      case CutState::kCutting:
        return Done(absl::InternalError("a cut stepped before its result"));
      case CutState::kDurable:
        return Io(Kind::kDurable);
    }
  }
  reply_->seq = wait_seq_;
  return Done(absl::OkStatus());
}

// ---- the reply

RequestRun::Outcome RequestRun::StepReply() {
  if (wait_seq_ == 0) return Done(absl::OkStatus());
  // An early reply when the client takes one and the journal is not too far
  // behind; the client keeps the request until a reply shows it durable.
  // Not after a move of inline data: the client writes the file's objects
  // once it sees the move, and a replay of the request would move the
  // (recorded) inline bytes again over what it wrote.
  if (request_.unsafe_ok && !reply_->replayed && !request_.Is<req::Sync>() &&
      !moved_.has_value() &&
      wait_seq_ - std::min(wait_seq_, rank_->journal_.durable_seq()) <
          rank_->options_.unsafe_events_max) {
    absl::Status broken = rank_->journal_.error();
    if (!broken.ok()) return Done(broken);
    reply_->unsafe = true;
    reply_->seq = wait_seq_;
    return Done(absl::OkStatus());
  }
  return Io(Kind::kDurable);
}

// ---- dispatch

namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};
template <class... F>
Overloaded(F...) -> Overloaded<F...>;

}  // namespace

absl::Status RequestRun::Dispatch(OpContext& ctx) {
  Reply* reply = reply_;
  // A changing operation names its journal event (ctx.SetOp).
  return std::visit(
      Overloaded{
          [&](const req::Lookup& op) { return DoLookup(ctx, op, reply); },
          [&](const req::Getattr& op) { return DoGetattr(ctx, op, reply); },
          [&](const req::Setattr& op) {
            ctx.SetOp("setattr");
            return DoSetattr(ctx, op, reply);
          },
          [&](const req::Create& op) {
            ctx.SetOp("create");
            return DoCreate(ctx, op, reply);
          },
          [&](const req::Mkdir& op) {
            ctx.SetOp("mkdir");
            return DoMkdir(ctx, op, reply);
          },
          [&](const req::Symlink& op) {
            ctx.SetOp("symlink");
            return DoSymlink(ctx, op, reply);
          },
          [&](const req::Link& op) {
            ctx.SetOp("link");
            return DoLink(ctx, op, reply);
          },
          [&](const req::Unlink& op) {
            ctx.SetOp("unlink");
            return DoUnlink(ctx, op, reply);
          },
          [&](const req::Rmdir& op) {
            ctx.SetOp("rmdir");
            return DoRmdir(ctx, op, reply);
          },
          [&](const req::Rename& op) {
            ctx.SetOp("rename");
            return DoRename(ctx, op, reply);
          },
          [&](const req::Readlink& op) { return DoReadlink(ctx, op, reply); },
          [&](const req::Readdir& op) { return DoReaddir(ctx, op, reply); },
          [&](const req::Getxattr& op) { return DoGetxattr(ctx, op, reply); },
          [&](const req::Setxattr& op) {
            ctx.SetOp("setxattr");
            return DoSetxattr(ctx, op, reply);
          },
          [&](const req::Listxattr& op) { return DoListxattr(ctx, op, reply); },
          [&](const req::Removexattr& op) {
            ctx.SetOp("removexattr");
            return DoRemovexattr(ctx, op, reply);
          },
          [&](const req::Statfs& op) { return DoStatfs(ctx, op, reply); },
          [&](const req::Open& op) { return DoOpen(ctx, op, reply); },
          [&](const req::Written& op) {
            ctx.SetOp("written");
            return DoWritten(ctx, op, reply);
          },
          [&](const req::Access& op) { return DoAccess(ctx, op, reply); },
          [&](const req::Inline& op) {
            ctx.SetOp("inline");
            return DoInline(ctx, op, reply);
          },
          [&](const req::Atime& op) {
            ctx.SetOp("atime");
            return DoAtime(ctx, op, reply);
          },
          // StepOp's own (release, sync) and StepLock's.
          [](const req::Release&) { return RunsItself(); },
          [](const req::Sync&) { return RunsItself(); },
          [](const req::Lock&) { return RunsItself(); },
          [](const std::monostate&) { return Err(EINVAL, "request without an operation"); },
      },
      request_.op);
}

absl::Status RequestRun::Release(Event* event) {
  absl::Status first_error;
  for (const req::Release::Handle& h : std::get<req::Release>(request_.op).handles) {
    absl::Status s = ReleaseOne(h.ino.value(), h.write, event);
    if (first_error.ok()) first_error = s;
  }
  return first_error;
}

absl::Status RequestRun::ReleaseOne(uint64_t ino, bool write, Event* event) {
  SessionState* s = rank_->sessions_.Find(session_);
  DCHECK(s != nullptr) << "release in session " << session_ << ", which StepOp found";
  auto it = s->opens.find(ino);
  if (it == s->opens.end() || it->second <= 0) {
    return Err(EBADF, absl::StrCat("release of inode ", ino, ", not open"));
  }
  if (--it->second == 0) s->opens.erase(it);
  auto w = s->opens_write.find(ino);
  if (w != s->opens_write.end() && (write || !s->opens.contains(ino))) {
    if (--w->second <= 0 || !s->opens.contains(ino)) s->opens_write.erase(w);
  }
  rank_->leases_.NoteOpen(session_, ino, s);
  if (s->opens.contains(ino)) return absl::OkStatus();
  rank_->locks_.DropSession(session_, ino);  // what close and release left
  event->op = "release";
  rank_->ReleaseStrayLocked(ino, session_, event);
  return absl::OkStatus();
}

void RequestRun::AfterCommit(const OpContext& ctx, const std::vector<uint64_t>& changed) {
  // (Its recursive statistics went with the event: MdsRank::CommitLocked.)
  for (uint64_t dir : ctx.new_dirs()) rank_->cache_.MergeFrag(dir, kRootFrag, {});
  // The directories it changed (a name's parents, a moved directory), at
  // their new versions: the client keeps them instead of asking again, as
  // its kernel does before the next create or unlink in one (the permission
  // check after the kernel dropped their attributes). An atime report
  // fills `changed` itself.
  if (!reply_->changed.empty()) return;
  for (uint64_t ino : changed) {
    const CInode* c = rank_->cache_.Peek(ino);
    if (c == nullptr || !IsDir(c->inode) || c->inode.nlink == 0 || ino == reply_->attr.ino) {
      continue;
    }
    FillAttr(c->inode, &reply_->changed.emplace_back());
  }
}

}  // namespace weft::mds
