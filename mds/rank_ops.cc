// MdsRank: running one request (see the flow in rank.h).
#include <cerrno>
#include <cstdlib>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "common/striping/striping.h"
#include "mds/ops/ops.h"
#include "mds/rank.h"

namespace weft::mds {

absl::Status MdsRank::Dispatch(OpContext& ctx, const pb::MetaRequest& r, pb::MetaReply* reply) {
  using R = pb::MetaRequest;
  switch (r.op_case()) {
    case R::kLookup: return DoLookup(ctx, r.lookup(), reply);
    case R::kGetattr: return DoGetattr(ctx, r.getattr(), reply);
    case R::kSetattr: ctx.SetOp("setattr"); return DoSetattr(ctx, r.setattr(), reply);
    case R::kCreate: ctx.SetOp("create"); return DoCreate(ctx, r.create(), reply);
    case R::kMkdir: ctx.SetOp("mkdir"); return DoMkdir(ctx, r.mkdir(), reply);
    case R::kSymlink: ctx.SetOp("symlink"); return DoSymlink(ctx, r.symlink(), reply);
    case R::kLink: ctx.SetOp("link"); return DoLink(ctx, r.link(), reply);
    case R::kUnlink: ctx.SetOp("unlink"); return DoUnlink(ctx, r.unlink(), reply);
    case R::kRmdir: ctx.SetOp("rmdir"); return DoRmdir(ctx, r.rmdir(), reply);
    case R::kRename: ctx.SetOp("rename"); return DoRename(ctx, r.rename(), reply);
    case R::kReadlink: return DoReadlink(ctx, r.readlink(), reply);
    case R::kReaddir: return DoReaddir(ctx, r.readdir(), reply);
    case R::kGetxattr: return DoGetxattr(ctx, r.getxattr(), reply);
    case R::kSetxattr: ctx.SetOp("setxattr"); return DoSetxattr(ctx, r.setxattr(), reply);
    case R::kListxattr: return DoListxattr(ctx, r.listxattr(), reply);
    case R::kRemovexattr: ctx.SetOp("removexattr"); return DoRemovexattr(ctx, r.removexattr(), reply);
    case R::kStatfs: return DoStatfs(ctx, r.statfs(), reply);
    case R::kOpen: return DoOpen(ctx, r.open(), reply);
    case R::kWritten: ctx.SetOp("written"); return DoWritten(ctx, r.written(), reply);
    case R::kAccess: return DoAccess(ctx, r.access(), reply);
    case R::kInlineData: ctx.SetOp("inline"); return DoInline(ctx, r.inline_data(), reply);
    case R::kAtime: ctx.SetOp("atime"); return DoAtime(ctx, r.atime(), reply);
    case R::kRelease: return absl::OkStatus();  // handled by RunOp
    case R::kSync: return absl::OkStatus();     // handled by RunOp
    case R::kLock: return Err(EINVAL, "lock request outside Handle");  // RunLock
    case R::OP_NOT_SET: break;
  }
  return Err(EINVAL, "request without an operation");
}

absl::Status MdsRank::ReleaseLocked(const pb::MetaRequest& request, pb::JournalEvent* event) {
  const pb::ReleaseOp& op = request.release();
  absl::Status first_error = ReleaseOneLocked(request.session(), op.ino(), op.write(), event);
  for (const pb::ReleaseRef& ref : op.more()) {
    absl::Status s = ReleaseOneLocked(request.session(), ref.ino(), ref.write(), event);
    if (first_error.ok()) first_error = s;
  }
  return first_error;
}

absl::Status MdsRank::ReleaseOneLocked(uint64_t session, uint64_t ino, bool write,
                                       pb::JournalEvent* event) {
  SessionState* s = cache_.Session(session);
  auto it = s->opens.find(ino);
  if (it == s->opens.end() || it->second <= 0) {
    return Err(EBADF, absl::StrCat("release of inode ", ino, ", not open"));
  }
  if (--it->second == 0) s->opens.erase(it);
  auto w = s->opens_write.find(ino);
  if (w != s->opens_write.end() && (write || !s->opens.contains(ino))) {
    if (--w->second <= 0 || !s->opens.contains(ino)) s->opens_write.erase(w);
    NoteWriterLocked(session, ino);
  }
  if (s->opens.contains(ino)) return absl::OkStatus();
  DropSessionLocksLocked(session, ino);  // what close and release left
  event->set_op("release");
  ReleaseStrayLocked(ino, session, event);
  return absl::OkStatus();
}

void MdsRank::AfterCommitLocked(OpContext& ctx) {
  for (uint64_t dir : ctx.new_dirs()) cache_.MergeFrag(dir, kRootFrag, {});
  for (const auto& [dir, delta] : ctx.rstat_deltas()) {
    RStatDelta& p = rstat_pending_[dir];
    p.rbytes += delta.rbytes;
    p.rfiles += delta.rfiles;
    p.rsubdirs += delta.rsubdirs;
    p.rctime_ns = std::max(p.rctime_ns, delta.rctime_ns);
  }
}

uint64_t MdsRank::RecordedMoveLocked(const std::vector<uint64_t>& touched, uint64_t mine) const {
  if (moving_.empty()) return 0;
  for (uint64_t ino : touched) {
    auto it = moving_.find(ino);
    if (ino != mine && it != moving_.end() && it->second) return ino;
  }
  return 0;
}

void MdsRank::AwaitMoveLocked(uint64_t ino) {
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !moving_.contains(ino);
  };
  mu_.Await(absl::Condition(&done));
}

absl::Status MdsRank::RunOp(const pb::MetaRequest& request, pb::MetaReply* reply, bool replay) {
  absl::flat_hash_set<RecallKey> recalled;
  // A move of inline data this request makes (moving_ holds the file until
  // the request ends), and what it moved: (ino, inline_version).
  uint64_t moving = 0;
  std::optional<std::pair<uint64_t, uint64_t>> moved;
  std::vector<uint64_t> trims;  // files whose objects this request cuts
  absl::flat_hash_set<RecallKey> held;  // writers it held for them
  absl::Cleanup at_end = [&] {
    if (moving == 0 && held.empty()) return;
    absl::MutexLock lock(&mu_);
    moving_.erase(moving);
    EndHoldsLocked(held);
  };
  for (int attempt = 0; attempt < 32; ++attempt) {
    Load load;
    std::optional<InlineMove> move;
    uint64_t wait_seq = 0;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return absl::UnavailableError("the MDS is stopping");
      SessionState* s = cache_.Session(request.session());
      if (s == nullptr) return Err(ENOTCONN, "no such session");
      s->last_renew_ms = absl::ToUnixMillis(absl::Now());
      if (request.tid() != 0) {
        auto done = s->rec.completed().find(request.tid());
        if (done != s->rec.completed().end()) {
          if (!reply->ParseFromString(done->second)) return absl::InternalError("bad completed reply");
          reply->set_replayed(true);
          auto seq = s->completed_seq.find(request.tid());
          wait_seq = seq == s->completed_seq.end() ? 0 : seq->second;
          // A truncate resent while its objects are still being cut (the
          // first try's thread, or a restart's) is answered once they are.
          RETURN_IF_ERROR(AwaitTrimsLocked({reply->attr().ino()}).status());
        }
      }
      if (!reply->replayed() && !replay) {
        // Other sessions' leases on what this changes come back first.
        RETURN_IF_ERROR(WaitForLeasesLocked(request));
        s = cache_.Session(request.session());
        if (s == nullptr) return Err(ENOTCONN, "no such session");
      }
      if (!reply->replayed()) {
        pb::JournalEvent event;
        if (request.op_case() == pb::MetaRequest::kSync) {
          // Everything this session was told through `seq` (0: through now).
          const uint64_t seq = request.sync().seq();
          wait_seq = seq == 0 ? last_seq_ : std::min(seq, last_seq_);
        } else if (request.op_case() == pb::MetaRequest::kRelease) {
          // Every handle of a batch is released even when one fails.
          absl::Status released = ReleaseLocked(request, &event);
          if (event.removed_inodes_size() > 0) wait_seq = CommitLocked(&event);
          RETURN_IF_ERROR(released);
        } else {
          const int64_t now = replay && request.replay_time_ns() != 0
                                  ? request.replay_time_ns()
                                  : absl::ToUnixNanos(absl::Now());
          OpContext ctx(this, &cache_, request, now);
          if (replay) ctx.ReuseIno(request.replay_ino());
          ctx.SetMoved(moved);
          absl::Status status = Dispatch(ctx, request, reply);
          if (const uint64_t busy = RecordedMoveLocked(ctx.touched(), moving); busy != 0) {
            // Another request moved this file's inline data and its record
            // is not durable yet: an answer showing the move would let the
            // client write objects that a replay of the move overwrites.
            reply->Clear();
            AwaitMoveLocked(busy);
            --attempt;  // waiting is not a failed try
            continue;
          }
          if (IsNeedLoad(status) && ctx.loads_pending()) {
            load.inodes = ctx.load_inodes();
            load.frags = ctx.load_frags();
            load.inline_data = ctx.load_inline();
            reply->Clear();
          } else if (IsNeedMove(status) && ctx.move()) {
            reply->Clear();
            const uint64_t ino = ctx.move()->ino;
            if (moving != ino) {
              if (moving_.contains(ino)) {
                // Another request moves it: its result decides this one.
                AwaitMoveLocked(ino);
                continue;
              }
              moving_[ino] = false;
              moving = ino;
            }
            move = *ctx.move();
          } else if (!status.ok()) {
            if (!replay &&
                RecallWritesLocked(request, *reply, ctx.touched(), {}, &recalled, &held)) {
              // Decided on a file another session may have changed on its own.
              reply->Clear();
              continue;
            }
            if (request.has_lookup() && StatusToErrno(status) == ENOENT) {
              GrantLeasesLocked(request, *reply, reply->mutable_leases());
            }
            return status;
          } else if (absl::StatusOr<bool> waited = AwaitTrimsLocked(*reply, ctx.touched());
                     !waited.ok() || *waited) {
            // A truncate was cutting the objects of a file this shows. Its
            // end released the writers: a truncate here holds them again.
            reply->Clear();
            RETURN_IF_ERROR(waited.status());
            recalled.clear();
            continue;
          } else if (!replay &&
                     RecallWritesLocked(request, *reply, ctx.touched(), ctx.trim_add(),
                                        &recalled, &held)) {
            // Other sessions flushed what this reply shows: run it again.
            reply->Clear();
            continue;
          } else {
            if (ctx.Finish(&event)) {
              if (request.tid() != 0) {
                event.set_session(request.session());
                event.set_tid(request.tid());
                event.set_oldest_tid(request.oldest_tid());
                if (reply->has_inline_data()) {
                  pb::MetaReply kept = *reply;  // a retry reads the bytes again
                  kept.clear_inline_data();
                  event.set_reply(kept.SerializeAsString());
                } else {
                  event.set_reply(reply->SerializeAsString());
                }
              }
              wait_seq = CommitLocked(&event);
              if (moved) moving_[moving] = true;  // recorded; durable when this request ends
              reply->set_time_ns(now);
              AfterCommitLocked(ctx);
              for (const pb::TrimRec& t : ctx.trim_add()) trims.push_back(t.ino());
            }
            if (auto ino = ctx.open_ref()) {
              ++s->opens[*ino];
              if (ctx.open_write()) {
                ++s->opens_write[*ino];
                NoteWriterLocked(request.session(), *ino);
              }
            }
            if (!replay) {
              GrantLeasesLocked(request, *reply, reply->mutable_leases());
              GrantAttrAuthorityLocked(request, reply);
            }
          }
        }
      }
    }
    if (!load.inodes.empty() || !load.frags.empty() || !load.inline_data.empty()) {
      RETURN_IF_ERROR(LoadMissing(load));
      continue;
    }
    if (move) {
      RETURN_IF_ERROR(WriteMove(*move));
      moved = std::make_pair(move->ino, move->inline_version);
      continue;
    }
    if (!trims.empty()) {
      // A truncate: its objects are cut before the answer (rank_trims.cc).
      RETURN_IF_ERROR(journal_.WaitDurable(wait_seq));
      for (uint64_t ino : trims) RETURN_IF_ERROR(RunTrim(ino, /*retry=*/true));
      reply->set_seq(wait_seq);
      return absl::OkStatus();
    }
    if (wait_seq == 0) return absl::OkStatus();
    // An early reply when the client takes one and the journal is not too
    // far behind; the client keeps the request until a reply shows it durable.
    // Not after a move of inline data: the client writes the file's objects
    // once it sees the move, and a replay of the request would move the
    // (recorded) inline bytes again over what it wrote.
    if (request.unsafe_ok() && !reply->replayed() && request.op_case() != pb::MetaRequest::kSync &&
        !moved.has_value() &&
        wait_seq - std::min(wait_seq, journal_.durable_seq()) < options_.unsafe_events_max) {
      RETURN_IF_ERROR(journal_.error());
      reply->set_unsafe(true);
      reply->set_seq(wait_seq);
      return absl::OkStatus();
    }
    RETURN_IF_ERROR(journal_.WaitDurable(wait_seq));
    reply->set_seq(wait_seq);
    return absl::OkStatus();
  }
  return absl::UnavailableError("metadata kept changing while loading; retry");
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

bool MdsRank::ClusterFull() {
  std::shared_ptr<const OsdMap> map = objects_->map();
  return map != nullptr && map->FirstFull() != nullptr;
}

absl::Status MdsRank::WriteMove(const InlineMove& move) {
  // The whole object replaced: bytes an earlier, unrecorded move left in it
  // (the MDS stopped before its event) go too.
  client::ObjectOperation op;
  op.WriteFull(move.data);
  absl::StatusOr<client::OpResult> done =
      objects_->Execute(move.pool, striping::DataObjectName(move.ino, 0), op);
  if (!done.ok()) {
    LOG(WARNING) << "event=inline_move_failed ino=" << move.ino << " status=\"" << done.status()
                 << "\"";
    return Annotate(done.status(), absl::StrCat("moving the inline data of inode ", move.ino));
  }
  VLOG(1) << "event=inline_moved ino=" << move.ino << " bytes=" << move.data.size()
          << " inline_version=" << move.inline_version;
  if (std::getenv("WEFT_FAULT_MDS_EXIT_AFTER_MOVE") != nullptr) {
    // Fault point (tests): the object holds the bytes, the event that says
    // so is never written.
    LOG(ERROR) << "event=fault_point name=mds_exit_after_move ino=" << move.ino;
    std::_Exit(137);
  }
  return absl::OkStatus();
}

}  // namespace weft::mds
