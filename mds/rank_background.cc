// MdsRank's background: the flusher (write back, trim the journal) and the
// janitor (session timeouts, recursive statistics, purging, truncates'
// retries, cache trimming), as threads or as steps the owner calls
// (RankOptions::threads).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/executor/thread_pool.h"
#include "common/log/log.h"
#include "common/memory/memory.h"
#include "common/status/status.h"
#include "common/striping/striping.h"
#include "common/objects/data_objects.h"
#include "mds/ops/ops.h"
#include "mds/rank.h"

namespace weft::mds {
namespace {

constexpr size_t kPurgeBatch = 512;  // files per janitor pass (empty ones cost no I/O)
// Listings and removes in flight: one file at a time left a deleted tree of
// 6,200 small files in the queue for minutes; more would crowd out clients' I/O.
constexpr size_t kPurgeInFlight = 8;
// Free heap (tcmalloc's, see docs/ARCHITECTURE.md, OSD memory) the rank
// keeps resident for reuse; more goes back to the kernel, checked every
// second: after a cache trim, RSS follows the cache down.
constexpr uint64_t kHeapFreeBytesKept = 128ull << 20;

}  // namespace

void MdsRank::FlusherLoop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                               absl::Milliseconds(options_.flush_interval_ms))) {
        break;
      }
    }
    absl::Status status = FlushOnce();
    if (!status.ok()) LOG(WARNING) << "event=flush_failed status=\"" << status << "\"";
  }
  absl::Status status = FlushOnce();  // a clean stop leaves a short journal
  if (!status.ok()) LOG(WARNING) << "event=final_flush_failed status=\"" << status << "\"";
}

absl::Status MdsRank::FlushAll() {
  RETURN_IF_ERROR(FlushOnce());
  return FlushOnce();
}

absl::Status MdsRank::FlushOnce() {
  absl::MutexLock serial(&flush_mu_);
  if (failed_batch_) {
    RETURN_IF_ERROR(journal_.WaitDurable(failed_batch_->seq));
    for (const auto& [oid, update] : failed_batch_->updates) {
      RETURN_IF_ERROR(store_.Apply(oid, update));
    }
    failed_batch_.reset();
    absl::MutexLock lock(&mu_);
    cache_.FlushApplied();
  }
  for (int i = 0; i < 3; ++i) {
    Load load;
    {
      absl::MutexLock lock(&mu_);
      load.inodes = cache_.DirtyDirsWithoutInode();
    }
    if (load.inodes.empty()) break;
    RETURN_IF_ERROR(LoadMissing(load));
  }
  FlushBatch batch;
  uint64_t trim_to = 0;
  {
    absl::MutexLock lock(&mu_);
    batch = cache_.TakeDirty(last_seq_);
    sessions_.TakeDirty(&batch);
    // Events whose statistics changes are still pending stay in the journal.
    trim_to = rstat_pending_since_ == 0 ? batch.seq
                                        : std::min(batch.seq, rstat_pending_since_ - 1);
  }
  if (batch.updates.empty() && batch.seq <= journal_.stats().first_seq - 1) return absl::OkStatus();
  // Flushes go forward: each covers the events of the one before.
  CHECK(batch.seq >= flushed_seq_) << "flush of seq " << batch.seq << " after " << flushed_seq_;
  RETURN_IF_ERROR(journal_.WaitDurable(batch.seq));
  for (const auto& [oid, update] : batch.updates) {
    absl::Status status = store_.Apply(oid, update);
    if (!status.ok()) {
      failed_batch_ = std::move(batch);
      return status;
    }
  }
  {
    absl::MutexLock lock(&mu_);
    cache_.FlushApplied();
  }
  flushed_seq_ = batch.seq;
  VLOG(1) << "event=flushed seq=" << batch.seq << " objects=" << batch.updates.size()
          << " inodes=" << batch.inodes << " dentries=" << batch.dentries;
  return journal_.Trim(trim_to);
}

void MdsRank::JanitorLoop() {
  int64_t last_rstat_ms = 0, last_trims_ms = 0;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(200))) return;
    }
    if (absl::Status broken = journal_.error(); !broken.ok()) JournalFailed(broken);
    ExpireSessions();
    if (env_.clock->NowMs() - last_rstat_ms >= options_.rstat_interval_ms) {
      PropagateRstats();
      last_rstat_ms = env_.clock->NowMs();
    }
    PurgeSome();
    if (env_.clock->NowMs() - last_trims_ms >= 1000) {
      SampleRequests();
      RunPendingTrims();  // truncates whose cut failed (OSDs down) try again
      memory::ReleaseFreeHeapOver(kHeapFreeBytesKept);
      last_trims_ms = env_.clock->NowMs();
    }
    TrimCache();
  }
}

void MdsRank::TrimCache() {
  absl::MutexLock lock(&mu_);
  absl::flat_hash_set<uint64_t> pinned;
  for (const auto& [id, s] : sessions_.all()) {
    for (const auto& [ino, count] : s.opens) pinned.insert(ino);
  }
  for (const auto& [dir, delta] : rstat_pending_) pinned.insert(dir);
  // The caps and leases count against the limit too, up to half of it: the
  // cache makes room for them. They are recalled only when that is not
  // enough: beyond their half, or when what the cache cannot drop (dirty,
  // open, pinned) leaves no room. A full cache alone is no reason: caps pin
  // nothing in it.
  const absl::Time now = env_.clock->Now();
  leases_.Expire(now);
  const uint64_t limit = options_.cache_max_bytes;
  const uint64_t caps = leases_.EstimatedBytes();
  const uint64_t target = limit - std::min(caps, limit / 2);
  cache_.Trim(target, pinned);
  const uint64_t cached = cache_.EstimatedBytes();
  const bool pressure =
      cached + caps > limit / 20 * 19 && (caps > limit / 20 * 9 || cached > target);
  leases_.RecallForMemory(now, pressure);
}

void MdsRank::ExpireSessions() {
  uint64_t seq = 0;
  std::vector<std::pair<SessionId, std::string>> evict;
  {
    absl::MutexLock lock(&mu_);
    const int64_t now = env_.clock->NowMs();
    std::vector<SessionId> expired;
    for (const auto& [id, s] : sessions_.all()) {
      if (now - s.last_renew_ms > options_.session_timeout_ms && !s.evicting) {
        expired.push_back(id);
      }
    }
    std::sort(expired.begin(), expired.end());
    for (SessionId id : expired) {
      if (evict_wanted_.contains(id.value()) || evict_running_.contains(id.value())) continue;
      // Fenced first when it can be: what it buffered must not land on
      // what others write once its caps and locks are theirs.
      if (WantEvictLocked(id, absl::StrCat("session lapsed: no renewal for ",
                                           (now - sessions_.Find(id)->last_renew_ms) / 1000,
                                           " s"))) {
        continue;
      }
      LOG(INFO) << "event=session_timeout session=" << id << " fenced=false";
      Event event;
      CloseSessionLocked(id, &event);
      seq = CommitLocked(&event);
    }
    for (auto& [id, reason] : evict_wanted_) {
      evict_running_.insert(id);
      evict.emplace_back(SessionId(id), std::move(reason));
    }
    evict_wanted_.clear();
  }
  if (seq != 0) {
    absl::Status status = journal_.WaitDurable(seq);
    if (!status.ok()) LOG(WARNING) << "event=session_expire_failed status=\"" << status << "\"";
  }
  std::sort(evict.begin(), evict.end());
  for (const auto& [id, reason] : evict) {
    absl::StatusOr<uint64_t> epoch = Evict(id, reason);
    // A failed fence is tried again at the next pass while the session
    // lapses; a request that asked goes on without it.
    if (!epoch.ok()) {
      LOG(WARNING) << "event=auto_evict_failed session=" << id << " status=\"" << epoch.status()
                   << "\"";
    }
    absl::MutexLock lock(&mu_);
    evict_running_.erase(id.value());
  }
}

void MdsRank::PropagateRstats() {
  for (int attempt = 0; attempt < 8; ++attempt) {
    Load load;
    {
      absl::MutexLock lock(&mu_);
      if (rstat_pending_.empty() || stopping_) return;
      std::map<uint64_t, mds::Inode> edits;
      auto work = rstat_pending_;
      while (!work.empty()) {
        absl::flat_hash_map<uint64_t, RStatDelta> next;
        for (const auto& [dir, d] : work) {
          auto e = edits.find(dir);
          if (e == edits.end()) {
            CInode* inode = cache_.Peek(dir);
            if (inode == nullptr) {
              if (!cache_.InodeRemoved(dir)) load.inodes.push_back(dir);
              continue;
            }
            e = edits.emplace(dir, inode->inode).first;
            e->second.version += 1;
            e->second.inline_data.reset();  // unchanged: the cache keeps its copy
          }
          RStat& r = e->second.rstat;
          auto add = [](uint64_t v, int64_t delta) {
            int64_t sum = static_cast<int64_t>(v) + delta;
            return static_cast<uint64_t>(sum < 0 ? 0 : sum);
          };
          r.rbytes = add(r.rbytes, d.rbytes);
          r.rfiles = add(r.rfiles, d.rfiles);
          r.rsubdirs = add(r.rsubdirs, d.rsubdirs);
          r.rctime_ns = std::max(r.rctime_ns, d.rctime_ns);
          if (dir == kRootIno) continue;
          RStatDelta& up = next[e->second.parent.value()];
          up.rbytes += d.rbytes;
          up.rfiles += d.rfiles;
          up.rsubdirs += d.rsubdirs;
          up.rctime_ns = std::max(up.rctime_ns, d.rctime_ns);
        }
        work = std::move(next);
      }
      if (load.inodes.empty()) {
        Event event;
        event.op = "rstat";
        event.rstat_propagated = true;  // clears rstat_pending_
        for (auto& [ino, rec] : edits) event.inodes.push_back(std::move(rec));
        CommitLocked(&event);
        return;
      }
    }
    absl::Status status = LoadMissing(load);
    if (!status.ok()) {
      LOG(WARNING) << "event=rstat_load_failed status=\"" << status << "\"";
      return;
    }
  }
}

void MdsRank::PurgeSome() {
  std::vector<Purge> batch;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [ino, rec] : cache_.purge_queue()) {
      if (batch.size() >= kPurgeBatch) break;
      batch.push_back(rec);
    }
  }
  if (batch.empty()) return;
  // First each file's objects are found (a sparse file may have few of its
  // possible objects: past a small number they are listed, not each removed
  // in turn), then all of them are removed from one queue, kPurgeInFlight
  // at a time whatever file they belong to: a large file's objects one
  // after the other held the whole batch back for minutes.
  std::vector<std::vector<uint64_t>> objects(batch.size());
  std::unique_ptr<std::atomic<bool>[]> failed(new std::atomic<bool>[batch.size()]);
  for (size_t i = 0; i < batch.size(); ++i) failed[i] = false;
  auto fail = [&](size_t i, const absl::Status& status) {
    LOG(WARNING) << "event=purge_failed ino=" << batch[i].ino << " status=\"" << status << "\"";
    failed[i] = true;
  };
  auto run = [&](size_t jobs, const std::function<void(size_t)>& job) {
    if (!options_.threads) {  // in order, on this thread (the simulation)
      for (size_t j = 0; j < jobs; ++j) job(j);
      return;
    }
    std::atomic<size_t> next{0};
    const size_t threads = std::min(kPurgeInFlight, jobs);
    ThreadPool pool("mds-purge", static_cast<int>(threads), threads);
    for (size_t t = 0; t < threads; ++t) {
      pool.Submit([&] {
        for (size_t j = next++; j < jobs; j = next++) job(j);
      });
    }
  };  // the pool's destructor joins
  run(batch.size(), [&](size_t i) {
    const fs::FileLayout& l = batch[i].layout;
    if (l.pool.value() == 0 || l.stripe.object_size == 0) return;
    const uint64_t stripe = std::max<uint64_t>(1, l.stripe.stripe_count);
    const uint64_t set_bytes = l.stripe.object_size * stripe;
    const uint64_t possible = (batch[i].size + set_bytes - 1) / set_bytes * stripe;
    auto existing = objects::DataObjectsIn(objects_, l.pool, batch[i].ino.value(), 0, possible);
    if (!existing.ok()) return fail(i, existing.status());
    objects[i] = *std::move(existing);
  });
  std::vector<std::pair<size_t, uint64_t>> removes;  // (file, object number)
  for (size_t i = 0; i < batch.size(); ++i) {
    for (uint64_t objno : objects[i]) removes.emplace_back(i, objno);
  }
  run(removes.size(), [&](size_t j) {
    const auto [i, objno] = removes[j];
    if (failed[i]) return;  // kept in the queue for the next pass anyway
    absl::Status status = objects_->Remove(
        batch[i].layout.pool, striping::DataObjectName(batch[i].ino.value(), objno));
    if (!status.ok() && !absl::IsNotFound(status)) fail(i, status);
  });
  std::vector<uint64_t> done;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (!failed[i]) done.push_back(batch[i].ino.value());
  }
  if (done.empty()) return;
  absl::MutexLock lock(&mu_);
  Event event;
  event.op = "purged";
  for (uint64_t ino : done) event.purges_done.emplace_back(ino);
  CommitLocked(&event);
}

absl::Status MdsRank::RunTrim(uint64_t ino) {
  Cut trim;
  {
    absl::MutexLock lock(&mu_);
    WaitLocked([this, ino]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || !trims_.Running(ino);
    }, absl::InfiniteFuture());
    if (stopping_) return absl::UnavailableError("the MDS is stopping");
    auto it = cache_.trims().find(ino);
    if (it == cache_.trims().end()) return absl::OkStatus();  // done by another
    trim = it->second;
    trims_.Begin(ino);
  }
  absl::Status cut = CutObjects(trim);
  uint64_t seq = 0;
  {
    absl::MutexLock lock(&mu_);
    if (!cut.ok()) {
      trims_.End(ino);
      LOG(WARNING) << "event=trim_failed ino=" << ino << " keep=" << trim.keep
                   << " size=" << trim.size << " status=\"" << cut << "\"";
      return cut;  // pending still: the janitor's next pass tries again
    }
    Event event;
    event.op = "trimmed";
    event.cuts_done.emplace_back(ino);
    seq = CommitLocked(&event);
  }
  // Until trim_done is durable a restart would cut again, over what
  // writers wrote meanwhile: they wait for it.
  absl::Status durable = journal_.WaitDurable(seq);
  absl::MutexLock lock(&mu_);
  trims_.End(ino);
  MaybeReleaseHoldsLocked(ino);
  VLOG(1) << "event=trimmed ino=" << ino << " keep=" << trim.keep << " size=" << trim.size;
  return durable;
}

void MdsRank::RunPendingTrims() {
  std::vector<uint64_t> pending;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [ino, trim] : cache_.trims()) {
      if (!trims_.Running(ino)) pending.push_back(ino);
    }
  }
  for (uint64_t ino : pending) (void)RunTrim(ino);
}

void MdsRank::SampleRequests() {
  const uint64_t n = requests_.load(std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  request_samples_.emplace_back(env_.clock->NowMs(), n);
  while (request_samples_.size() > kRateSamples) request_samples_.pop_front();
}

pb::FsStatusReply MdsRank::Status() {
  pb::FsStatusReply reply;
  Journal::Stats js = journal_.stats();
  absl::MutexLock lock(&mu_);
  reply.set_fs(options_.fs_name);
  reply.set_rank(options_.rank);
  reply.set_state(stopping_ ? "stopping" : "active");
  reply.set_sessions(sessions_.size());
  reply.set_cached_inodes(cache_.inode_count());
  reply.set_cached_dentries(cache_.dentry_count());
  reply.set_dirty_inodes(cache_.dirty_inode_count());
  reply.set_cache_bytes(cache_.EstimatedBytes());
  reply.set_cache_limit_bytes(options_.cache_max_bytes);
  reply.set_journal_first_seq(js.first_seq);
  reply.set_journal_last_seq(js.last_seq);
  reply.set_journal_bytes(js.bytes);
  reply.set_journal_segments(js.segments);
  reply.set_strays(cache_.strays().size());
  reply.set_purge_queue(cache_.purge_queue().size());
  reply.set_trims(cache_.trims().size());
  reply.set_replay_ms(replay_ms_);
  reply.set_evictions(evictions_);
  reply.set_last_eviction(last_eviction_);
  if (CInode* root = cache_.Inode(kRootIno)) {  // files and directories, root included
    reply.set_inodes(root->inode.rstat.rfiles + root->inode.rstat.rsubdirs + 1);
  }
  reply.set_rss_bytes(memory::ResidentBytes());
  reply.set_caps(leases_.cap_count());
  reply.set_dir_leases(leases_.dir_lease_count());
  reply.set_attr_caps(leases_.attr_cap_count());
  const Leases::CapCounters caps = leases_.counters();
  reply.set_caps_granted(caps.granted);
  reply.set_caps_refused(caps.refused);
  reply.set_caps_recalled(caps.recalled);
  reply.set_caps_released(caps.released);
  reply.set_caps_bytes(leases_.EstimatedBytes());
  reply.set_max_caps_per_client(options_.max_caps_per_client);
  for (pb::ClientInfo& c : ClientListLocked()) *reply.add_clients() = std::move(c);
  reply.set_locks(locks_.size());
  reply.set_lock_waiters(locks_.waiters());
  reply.set_requests(requests_.load(std::memory_order_relaxed));
  if (request_samples_.size() >= 2) {
    const auto& [t0, n0] = request_samples_.front();
    const auto& [t1, n1] = request_samples_.back();
    if (t1 > t0) {
      reply.set_request_rate(static_cast<double>(n1 - n0) * 1000.0 / static_cast<double>(t1 - t0));
      reply.set_request_rate_s(static_cast<uint32_t>((t1 - t0 + 500) / 1000));
    }
  }
  reply.set_request_ns(request_ns_.load(std::memory_order_relaxed));
  reply.set_rank_lock_wait_ns(lock_wait_ns_.load(std::memory_order_relaxed));
  reply.set_rank_lock_held_ns(lock_held_ns_.load(std::memory_order_relaxed));
  return reply;
}

}  // namespace weft::mds
