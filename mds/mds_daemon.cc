#include "mds/mds_daemon.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/fs/mds_roles.h"
#include "common/log/log.h"
#include "common/status/status.h"

namespace weft::mds {

absl::StatusOr<DaemonOptions> DaemonOptions::FromConfig(const Config& config) {
  DaemonOptions o;
  ASSIGN_OR_RETURN(int64_t cache, config.GetInt("mds_cache_memory_limit", 1ll << 30));
  ASSIGN_OR_RETURN(int64_t timeout, config.GetInt("mds_session_timeout", 60));
  ASSIGN_OR_RETURN(int64_t revoke, config.GetInt("mds_revoke_timeout", 30));
  ASSIGN_OR_RETURN(int64_t split, config.GetInt("mds_bal_split_size", 10000));
  ASSIGN_OR_RETURN(int64_t max_caps, config.GetInt("mds_max_caps_per_client",
                                                   static_cast<int64_t>(o.max_caps_per_client)));
  ASSIGN_OR_RETURN(int64_t recall_max, config.GetInt("mds_recall_max_caps",
                                                     static_cast<int64_t>(o.recall_max_caps)));
  ASSIGN_OR_RETURN(int64_t recall_interval,
                   config.GetInt("mds_recall_interval_ms", o.recall_interval_ms));
  if (max_caps < 0 || max_caps > (1ll << 32)) {
    return absl::InvalidArgumentError(
        "mds_max_caps_per_client must be within [0, 2^32] (0: no limit)");
  }
  if (recall_max < 1 || recall_max > (1 << 30)) {
    return absl::InvalidArgumentError("mds_recall_max_caps must be within [1, 2^30]");
  }
  if (recall_interval < 10 || recall_interval > 600000) {
    return absl::InvalidArgumentError("mds_recall_interval_ms must be within [10, 600000]");
  }
  ASSIGN_OR_RETURN(int64_t object, config.GetInt("fs_default_object_size", 4 << 20));
  ASSIGN_OR_RETURN(int64_t unit, config.GetInt("fs_default_stripe_unit", 4 << 20));
  ASSIGN_OR_RETURN(int64_t count, config.GetInt("fs_default_stripe_count", 1));
  ASSIGN_OR_RETURN(int64_t reconnect, config.GetInt("mds_reconnect_timeout", 10));
  ASSIGN_OR_RETURN(int64_t unsafe, config.GetInt("mds_unsafe_replies", 1));
  ASSIGN_OR_RETURN(int64_t delay, config.GetInt("mds_debug_journal_delay_ms", 0));
  ASSIGN_OR_RETURN(int64_t inline_max,
                   config.GetInt("mds_inline_max_bytes", static_cast<int64_t>(o.inline_max_bytes)));
  if (inline_max < 0 || inline_max > (1 << 20)) {
    return absl::InvalidArgumentError("mds_inline_max_bytes must be within [0, 1 MiB]");
  }
  ASSIGN_OR_RETURN(int64_t batch, config.GetInt("mds_journal_batch_ms", o.journal_batch_ms));
  // Unset, the lease follows a short reconnect window down (see below).
  ASSIGN_OR_RETURN(int64_t lease, config.GetInt("mds_dir_lease_ms",
                                                std::min<int64_t>(o.dir_lease_ms, reconnect * 500)));
  if (reconnect < 1 || reconnect > 600) {
    return absl::InvalidArgumentError("mds_reconnect_timeout must be within [1, 600] s");
  }
  if (batch < 0 || batch > 1000) {
    return absl::InvalidArgumentError("mds_journal_batch_ms must be within [0, 1000]");
  }
  if (lease < 0 || lease * 2 > reconnect * 1000) {
    // A restarted rank must not serve anyone before the leases of its
    // earlier life ran out (its reconnect window covers that).
    return absl::InvalidArgumentError(
        "mds_dir_lease_ms must be within [0, mds_reconnect_timeout * 500]");
  }
  if (delay < 0 || delay > 60000) {
    return absl::InvalidArgumentError("mds_debug_journal_delay_ms must be within [0, 60000]");
  }
  ASSIGN_OR_RETURN(int64_t max_object,
                   config.GetInt("osd_max_object_size", static_cast<int64_t>(o.max_object_bytes)));
  if (cache < (16 << 20)) return absl::InvalidArgumentError("mds_cache_memory_limit under 16 MiB");
  if (timeout < 5 || timeout > 3600) return absl::InvalidArgumentError("mds_session_timeout must be within [5, 3600] s");
  if (revoke < 1 || revoke > 3600) {
    return absl::InvalidArgumentError("mds_revoke_timeout must be within [1, 3600] s");
  }
  if (split < 100) return absl::InvalidArgumentError("mds_bal_split_size under 100");
  if (unit < 4096 || object < unit || object % unit != 0 || count < 1 || count > 256) {
    return absl::InvalidArgumentError(
        "fs_default_stripe_unit must be >= 4096 and divide fs_default_object_size; "
        "fs_default_stripe_count within [1, 256]");
  }
  if (max_object < (1 << 20) || object > max_object) {
    return absl::InvalidArgumentError(
        "osd_max_object_size must be at least 1 MiB and fs_default_object_size at most it");
  }
  o.cache_memory_limit_bytes = cache;
  o.session_timeout_s = timeout;
  o.revoke_timeout_s = revoke;
  o.max_caps_per_client = static_cast<uint64_t>(max_caps);
  o.recall_max_caps = static_cast<uint64_t>(recall_max);
  o.recall_interval_ms = recall_interval;
  o.frag_split_entries = split;
  o.default_object_bytes = object;
  o.default_stripe_unit_bytes = unit;
  o.default_stripe_count = count;
  o.reconnect_timeout_ms = reconnect * 1000;
  o.unsafe_replies = unsafe != 0;
  o.journal_write_delay_ms = delay;
  o.journal_batch_ms = batch;
  o.dir_lease_ms = lease;
  o.max_object_bytes = max_object;
  o.inline_max_bytes = static_cast<uint64_t>(inline_max);
  return o;
}

MdsDaemon::MdsDaemon(DaemonOptions options, MapManager* manager, FsMapStore* fsmap,
                     MdsRegistry* registry, objects::ObjectClient* objects)
    : options_(std::move(options)),
      manager_(manager),
      fsmap_(fsmap),
      registry_(registry),
      objects_(objects) {}

MdsDaemon::~MdsDaemon() { Stop(); }

void MdsDaemon::Start() {
  supervisor_ = std::thread([this] { SuperviseLoop(); });
  follower_ = std::thread([this] { FollowLoop(); });
}

void MdsDaemon::Stop() {
  std::map<RankKey, std::shared_ptr<MdsRank>> ranks;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    ranks.swap(ranks_);
  }
  if (supervisor_.joinable()) supervisor_.join();
  if (follower_.joinable()) follower_.join();
  {
    absl::MutexLock lock(&mu_);
    followers_.clear();
  }
  for (auto& [id, rank] : ranks) rank->Stop();
}

RankOptions MdsDaemon::RankOptionsFor(const pb::FsInfo& fs, uint32_t rank) {
  RankOptions o;
  o.fs_id = fs.id();
  o.rank = rank;
  o.fs_name = fs.name();
  o.metadata_pool = PoolId(fs.metadata_pool());
  o.data_pool = PoolId(fs.data_pools_size() > 0 ? fs.data_pools(0) : 0);
  o.cache_max_bytes = options_.cache_memory_limit_bytes;
  o.session_timeout_ms = options_.session_timeout_s * 1000;
  o.revoke_timeout_ms = options_.revoke_timeout_s * 1000;
  o.max_caps_per_client = options_.max_caps_per_client;
  o.recall_max_caps = options_.recall_max_caps;
  o.recall_interval_ms = options_.recall_interval_ms;
  o.frag_split_entries = options_.frag_split_entries;
  o.default_layout.set_object_size(options_.default_object_bytes);
  o.default_layout.set_stripe_unit(options_.default_stripe_unit_bytes);
  o.default_layout.set_stripe_count(options_.default_stripe_count);
  o.default_layout.set_pool(o.data_pool.value());
  o.reconnect_timeout_ms = options_.reconnect_timeout_ms;
  o.unsafe_events_max = options_.unsafe_replies ? 4096 : 0;
  o.journal.write_delay_ms = options_.journal_write_delay_ms;
  o.journal.batch_wait_ms = options_.unsafe_replies ? options_.journal_batch_ms : 0;
  o.dir_lease_ms = options_.dir_lease_ms;
  o.object_bytes_max = options_.max_object_bytes;
  o.inline_max_bytes = options_.inline_max_bytes;
  return o;
}

Capacity MdsDaemon::CachedCapacity() {
  const int64_t now = absl::ToUnixMillis(absl::Now());
  {
    absl::MutexLock lock(&mu_);
    if (now - capacity_ms_ < 2000) return capacity_;
  }
  pb::StatusReply status;
  Capacity cap;
  if (manager_->Status(&status).ok()) {
    cap.bytes_total = status.bytes_total();
    cap.bytes_avail = status.bytes_avail();
    cap.bytes_used = status.bytes_used();
  }
  absl::MutexLock lock(&mu_);
  capacity_ = cap;
  capacity_ms_ = now;
  return cap;
}

bool MdsDaemon::ClusterFull() {
  std::shared_ptr<const OsdMap> map = objects_->map();
  return map != nullptr && map->FirstFull() != nullptr;
}

// Wakes on a new fsmap epoch or a daemon coming or going, checking both
// every 100 ms (a wait on one of them), and works at least once a second.
void MdsDaemon::SuperviseLoop() {
  uint64_t seen_epoch = 0, seen_daemons = 0;
  absl::Time last = absl::InfinitePast();
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    const uint64_t epoch = fsmap_->map().epoch();
    const uint64_t daemons = registry_->generation();
    if (epoch != seen_epoch || daemons != seen_daemons || absl::Now() - last >= absl::Seconds(1)) {
      seen_epoch = epoch;
      seen_daemons = daemons;
      last = absl::Now();
      SuperviseOnce();
    }
    fsmap_->WaitNewer(seen_epoch, absl::Milliseconds(100));
  }
}

void MdsDaemon::SuperviseOnce() {
  if (objects_->map()->FindBlocklisted(objects_->name(), absl::ToUnixMillis(absl::Now())) !=
      nullptr) {
    // Failed by the operator, or fenced while frozen: every OSD refuses this
    // object client now. Nothing more from this process; a new one stands by.
    if (restart_) restart_("blocklisted");
    return;
  }
  if (manager_->IsLeader()) AssignRanks();
  FollowAssignments();
}

bool MdsDaemon::Mine(const pb::FsRank& rank) const {
  return rank.name() == options_.name && rank.client() == objects_->name();
}

void MdsDaemon::AssignRanks() {
  const pb::FsMap map = fsmap_->map();
  std::vector<pb::MdsAlive> alive = registry_->daemons();
  absl::flat_hash_set<std::string> failed;
  {
    absl::MutexLock lock(&mu_);
    failed = failed_;
  }
  std::erase_if(alive, [&](const pb::MdsAlive& d) { return failed.contains(d.client()); });
  for (const pb::FsInfo& fs : map.filesystems()) {
    for (uint32_t rank = 0; rank < static_cast<uint32_t>(fs.ranks_size()); ++rank) {
      const pb::FsRank& holder = fs.ranks(static_cast<int>(rank));
      if (holder.stopping() && holder.client().empty()) continue;  // stopped
      if (fs::RankServed(holder, alive)) {
        AssignFollower(map, fs, rank, alive);
        continue;
      }
      // The rank's standby-replay if it is alive; else the live daemon holding
      // the fewest ranks (a standby if any; one following no other rank
      // first), by name.
      const pb::MdsAlive* next = nullptr;
      size_t fewest = SIZE_MAX;
      for (const pb::MdsAlive& d : alive) {
        if (fs::FollowsRank(holder, d)) {
          next = &d;
          break;
        }
        const size_t score =
            2 * fs::RanksHeldBy(map, d).size() + (fs::RanksFollowedBy(map, d).empty() ? 0 : 1);
        if (score < fewest) {
          next = &d;
          fewest = score;
        }
      }
      if (next == nullptr) continue;  // nobody alive, not even this daemon yet
      absl::StatusOr<uint64_t> fenced = FenceHolder(fs, rank);
      if (!fenced.ok()) {
        // Never hand on a rank whose last holder might still write.
        LOG(ERROR) << "event=rank_fence_failed fs=" << fs.name() << " rank=" << rank << " holder=\""
                   << absl::CHexEscape(holder.client()) << "\" status=\"" << fenced.status()
                   << "\"";
        continue;
      }
      auto status = MutateRank(fs.id(), rank, holder, [&](pb::FsRank* r) {
        r->set_name(next->name());
        r->set_addr(next->addr());
        r->set_client(next->client());
        r->set_incarnation(r->incarnation() + 1);
        r->set_fence_epoch(*fenced);
        // The follower holds it now (or follows on, if another took it).
        if (r->standby_replay().client() == next->client()) r->clear_standby_replay();
      });
      if (!status.ok()) {
        LOG(WARNING) << "event=rank_assign_failed fs=" << fs.name() << " rank=" << rank
                     << " status=\"" << status << "\"";
        continue;
      }
      LOG(INFO) << "event=rank_assigned fs=" << fs.name() << " rank=" << rank
                << " to=" << next->name() << " addr=" << next->addr()
                << " from=" << (holder.name().empty() ? "-" : holder.name())
                << " reason=" << (holder.name().empty() ? "new_rank" : "holder_not_alive")
                << " standby_replay=" << fs::FollowsRank(holder, *next)
                << " fence_epoch=" << *fenced;
    }
  }
}

absl::Status MdsDaemon::MutateRank(uint32_t fs_id, uint32_t rank, const pb::FsRank& seen,
                                  const std::function<void(pb::FsRank*)>& edit) {
  return fsmap_->Mutate([&](pb::FsMap* m) -> absl::Status {
    for (pb::FsInfo& f : *m->mutable_filesystems()) {
      if (f.id() != fs_id) continue;
      if (static_cast<int>(rank) >= f.ranks_size()) return absl::AbortedError("the rank is gone");
      pb::FsRank* r = f.mutable_ranks(static_cast<int>(rank));
      if (r->client() != seen.client() ||
          r->standby_replay().client() != seen.standby_replay().client()) {
        return absl::AbortedError("the rank changed meanwhile");
      }
      edit(r);
      return absl::OkStatus();
    }
    return absl::AbortedError("the filesystem is gone");
  });
}

void MdsDaemon::AssignFollower(const pb::FsMap& map, const pb::FsInfo& fs, uint32_t which,
                               const std::vector<pb::MdsAlive>& alive) {
  const pb::FsRank& rank = fs::RankOf(fs, which);
  if (rank.stopping()) return;
  const bool has = rank.has_standby_replay();
  bool follower_ok = false;
  for (const pb::MdsAlive& d : alive) {
    follower_ok |= fs::FollowsRank(rank, d) && !fs::HoldsRank(rank, d);
  }
  if (fs.allow_standby_replay() && has && follower_ok) return;
  if (!fs.allow_standby_replay() && !has) return;
  // A live daemon that holds no rank and follows none.
  const pb::MdsAlive* next = nullptr;
  if (fs.allow_standby_replay()) {
    for (const pb::MdsAlive& d : alive) {
      if (fs::RanksHeldBy(map, d).empty() && fs::RanksFollowedBy(map, d).empty()) {
        next = &d;
        break;
      }
    }
    if (next == nullptr && !has) return;
  }
  auto status = MutateRank(fs.id(), which, rank, [&](pb::FsRank* r) {
    if (next == nullptr) {
      r->clear_standby_replay();
      return;
    }
    pb::MdsRef* follower = r->mutable_standby_replay();
    follower->set_name(next->name());
    follower->set_addr(next->addr());
    follower->set_client(next->client());
  });
  if (!status.ok()) {
    LOG(WARNING) << "event=standby_replay_assign_failed fs=" << fs.name() << " status=\"" << status
                 << "\"";
    return;
  }
  LOG(INFO) << "event=standby_replay_assigned fs=" << fs.name() << " rank=" << which << " to="
            << (next == nullptr ? "-" : next->name());
}

namespace {

// The rank `key` names in `map` (nullptr if none), and its filesystem.
const pb::FsRank* FindRank(const pb::FsMap& map, RankKey key, const pb::FsInfo** fs = nullptr) {
  for (const pb::FsInfo& f : map.filesystems()) {
    if (f.id() != key.first || static_cast<int>(key.second) >= f.ranks_size()) continue;
    if (fs != nullptr) *fs = &f;
    return &f.ranks(static_cast<int>(key.second));
  }
  return nullptr;
}

}  // namespace

void MdsDaemon::FollowAssignments() {
  const pb::FsMap map = fsmap_->map();
  std::vector<std::shared_ptr<MdsRank>> to_stop;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = ranks_.begin(); it != ranks_.end();) {
      const pb::FsRank* held = FindRank(map, it->first);
      if (held != nullptr && Mine(*held)) {
        ++it;
        continue;
      }
      LOG(INFO) << "event=rank_stopped fs=" << it->second->fs_name() << " rank=" << it->first.second
                << " reason=assigned_elsewhere to=" << (held ? held->name() : "-");
      to_stop.push_back(std::move(it->second));
      it = ranks_.erase(it);
    }
    std::erase_if(stopped_, [&](const RankKey& key) {
      const pb::FsRank* held = FindRank(map, key);
      return held == nullptr || !Mine(*held);
    });
  }
  for (auto& rank : to_stop) rank->Stop();
  if (!registry_->Trusted()) return;  // serve nothing on a lease that may be gone
  for (const pb::FsInfo& fs : map.filesystems()) {
    for (uint32_t r = 0; r < static_cast<uint32_t>(fs.ranks_size()); ++r) {
      const pb::FsRank& held = fs.ranks(static_cast<int>(r));
      if (!Mine(held)) continue;
      const RankKey key{fs.id(), r};
      if (held.stopping() && StopRank(fs, r)) continue;
      {
        absl::MutexLock lock(&mu_);
        if (ranks_.contains(key) || stopping_) continue;
      }
      // Every OSD refuses the previous holder before this one writes: its
      // requests carry at least the epoch that blocklists it.
      if (absl::Status fenced = WaitForEpoch(held.fence_epoch()); !fenced.ok()) {
        LOG(ERROR) << "event=rank_start_deferred fs=" << fs.name() << " rank=" << r << " status=\""
                   << fenced << "\"";
        continue;
      }
      // Standby-replay: the rank this daemon followed has all but the last
      // events applied already.
      std::shared_ptr<MdsRank> rank;
      {
        absl::MutexLock following(&follow_mu_);
        absl::MutexLock lock(&mu_);
        if (auto it = followers_.find(key); it != followers_.end()) {
          rank = std::move(it->second);
          followers_.erase(it);
        }
      }
      if (rank == nullptr) rank = MakeRank(fs, r);
      if (r > 0) {
        // A rank above 0 gets its journal and tables when first served.
        absl::StatusOr<bool> created = rank->Created();
        absl::Status made = created.status();
        if (created.ok() && !*created) {
          made = rank->Create();
          if (made.ok()) LOG(INFO) << "event=rank_created fs=" << fs.name() << " rank=" << r;
        }
        if (!made.ok()) {
          LOG(ERROR) << "event=rank_create_failed fs=" << fs.name() << " rank=" << r << " status=\""
                     << made << "\"";
          continue;
        }
      }
      const absl::Time t0 = absl::Now();
      absl::Status status = rank->Start();
      if (!status.ok()) {
        LOG(ERROR) << "event=rank_start_failed fs=" << fs.name() << " rank=" << r << " status=\""
                   << status << "\"";
        continue;
      }
      LOG(INFO) << "event=rank_started fs=" << fs.name() << " rank=" << r << " incarnation="
                << held.incarnation()
                << " replay_ms=" << absl::ToInt64Milliseconds(absl::Now() - t0);
      absl::MutexLock lock(&mu_);
      ranks_[key] = std::move(rank);
    }
  }
  // The journals this daemon follows, by the fsmap.
  const pb::MdsAlive self = registry_->self();
  absl::MutexLock lock(&mu_);
  for (auto it = followers_.begin(); it != followers_.end();) {
    const pb::FsRank* held = FindRank(map, it->first);
    if (held != nullptr && fs::FollowsRank(*held, self) && !Mine(*held)) {
      ++it;
      continue;
    }
    LOG(INFO) << "event=standby_replay_stopped fs=" << it->second->fs_name()
              << " rank=" << it->first.second;
    it = followers_.erase(it);
  }
  for (const pb::FsInfo& fs : map.filesystems()) {
    for (uint32_t r = 0; r < static_cast<uint32_t>(fs.ranks_size()); ++r) {
      const pb::FsRank& held = fs.ranks(static_cast<int>(r));
      const RankKey key{fs.id(), r};
      if (!fs::FollowsRank(held, self) || Mine(held) || followers_.contains(key) || stopping_) {
        continue;
      }
      LOG(INFO) << "event=standby_replay_started fs=" << fs.name() << " rank=" << r
                << " holder=" << held.name();
      followers_[key] = MakeRank(fs, r);
    }
  }
}

// A stopping rank held here (above max_mds): its journal flushed and
// trimmed, it stops, and the map manager is told (again on each pass until
// the map drops it). One never started here (taken over while stopping)
// is started first, so that what its journal holds is replayed and
// flushed: false then.
bool MdsDaemon::StopRank(const pb::FsInfo& fs, uint32_t r) {
  const RankKey key{fs.id(), r};
  std::shared_ptr<MdsRank> running;
  bool done = false;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = ranks_.find(key); it != ranks_.end()) {
      running = std::move(it->second);
      ranks_.erase(it);
    }
    done = stopped_.contains(key);
  }
  if (running != nullptr) {
    absl::Status flushed = running->FlushAll();
    running->Stop();
    if (!flushed.ok()) {
      // Started again (replayed), and flushed on the next pass.
      LOG(ERROR) << "event=rank_stop_flush_failed fs=" << fs.name() << " rank=" << r
                 << " status=\"" << flushed << "\"";
      return false;
    }
    LOG(INFO) << "event=rank_stopped fs=" << fs.name() << " rank=" << r << " reason=max_mds";
    absl::MutexLock lock(&mu_);
    stopped_.insert(key);
    done = true;
  }
  if (!done) return false;
  pb::RankStoppedRequest req;
  req.set_fs_id(fs.id());
  req.set_rank(r);
  req.set_client(objects_->name());
  absl::Status told;
  if (manager_->IsLeader()) {
    told = RankStopped(req);
  } else if (const std::string leader = manager_->LeaderAddr(); !leader.empty()) {
    pb::AdminReply reply;
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(5000));
    grpc::Status rpc_status =
        pb::Filesystems::NewStub(channels_.Get(leader))->RankStopped(&ctx, req, &reply);
    told = rpc_status.ok() ? rpc::FromProto(reply.status()) : rpc::FromGrpc(rpc_status, leader);
  } else {
    told = absl::UnavailableError("no map manager elected");
  }
  if (!told.ok() && !absl::IsAlreadyExists(told)) {
    LOG(WARNING) << "event=rank_stopped_report_failed fs=" << fs.name() << " rank=" << r
                 << " status=\"" << told << "\"";
  }
  return true;
}

absl::Status MdsDaemon::RankStopped(const pb::RankStoppedRequest& req) {
  if (!manager_->IsLeader()) return manager_->NotLeader();
  return fsmap_->Mutate([&](pb::FsMap* m) -> absl::Status {
    for (pb::FsInfo& f : *m->mutable_filesystems()) {
      if (f.id() != req.fs_id()) continue;
      if (static_cast<int>(req.rank()) >= f.ranks_size()) return absl::AlreadyExistsError("unchanged");
      pb::FsRank* r = f.mutable_ranks(static_cast<int>(req.rank()));
      if (!r->stopping()) {
        return absl::FailedPreconditionError(absl::StrCat("rank ", req.rank(), " is not stopping"));
      }
      if (r->client().empty()) return absl::AlreadyExistsError("unchanged");
      if (r->client() != req.client()) {
        return absl::PermissionDeniedError("only the rank's holder says it stopped");
      }
      // Stopped: held by nobody; dropped once it is the last.
      r->clear_name();
      r->clear_addr();
      r->clear_client();
      r->clear_standby_replay();
      TrimStoppedRanks(&f);
      LOG(INFO) << "event=rank_removed fs=" << f.name() << " rank=" << req.rank();
      return absl::OkStatus();
    }
    return absl::NotFoundError(absl::StrCat("no filesystem ", req.fs_id()));
  });
}

void MdsDaemon::TrimStoppedRanks(pb::FsInfo* fs) {
  while (fs->ranks_size() > static_cast<int>(fs::MaxMds(*fs))) {
    const pb::FsRank& last = fs->ranks(fs->ranks_size() - 1);
    if (!last.stopping() || !last.client().empty()) break;
    fs->mutable_ranks()->RemoveLast();
  }
}

std::shared_ptr<MdsRank> MdsDaemon::MakeRank(const pb::FsInfo& fs, uint32_t rank) {
  const uint32_t fs_id = fs.id();
  RankEnv env;
  env.objects = objects_;
  env.capacity = [this] { return CachedCapacity(); };
  env.data_pools = [this, fs_id] { return DataPoolsOf(fs_id); };
  env.cluster_full = [this] { return ClusterFull(); };
  env.fence_client = [this](const std::string& client) { return Fence(client); };
  return std::make_shared<MdsRank>(RankOptionsFor(fs, rank), std::move(env));
}

// Every kFollowInterval: each followed journal read on; a follower that fell
// behind, failed, or outgrew the cache limit starts over (a fresh rank: the
// tables, then the journal from its trim point).
void MdsDaemon::FollowLoop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      if (mu_.AwaitWithTimeout(absl::Condition(&wake), kFollowInterval)) return;
    }
    absl::MutexLock following(&follow_mu_);
    std::map<RankKey, std::shared_ptr<MdsRank>> followers;
    {
      absl::MutexLock lock(&mu_);
      followers = followers_;
    }
    for (auto& [key, rank] : followers) {
      absl::StatusOr<uint64_t> followed = rank->Follow();
      const size_t cached =
          rank->Inspect([](const MetaCache& cache, const Sessions&, const auto&) {
            return cache.EstimatedBytes();
          });
      if (followed.ok() && cached <= options_.cache_memory_limit_bytes) continue;
      LOG(WARNING) << "event=standby_replay_restart fs=" << rank->fs_name() << " status=\""
                   << (followed.ok() ? absl::ResourceExhaustedError("over the cache limit")
                                     : followed.status())
                   << "\"";
      const pb::FsMap map = fsmap_->map();
      absl::MutexLock lock(&mu_);
      auto it = followers_.find(key);
      if (it == followers_.end() || it->second != rank) continue;
      const pb::FsInfo* fs = nullptr;
      if (FindRank(map, key, &fs) != nullptr) it->second = MakeRank(*fs, key.second);
    }
  }
}

bool MdsDaemon::WouldRatherNotLead() {
  {
    absl::MutexLock lock(&mu_);
    if (ranks_.empty()) return false;
  }
  const pb::FsMap map = fsmap_->map();
  for (const pb::MdsAlive& d : registry_->daemons()) {
    if (fs::RanksHeldBy(map, d).empty()) return true;
  }
  return false;
}

// The rank's previous holder (another MDS, or this one before a restart:
// each process has its own client name) goes on the OSD blocklist, and the
// next holder waits for the map that says so (FsRank.fence_epoch). Its
// requests then carry that epoch, so every OSD it reaches knows the entry
// before serving it, and an OSD refuses any request of an older epoch:
// whatever the old holder still sends after the journal is replayed is
// refused. As CephFS does on failover. The entry expires after a day
// (mds_blocklist_interval in Ceph), long past any lease the old holder
// could believe it has.
absl::StatusOr<uint64_t> MdsDaemon::FenceHolder(const pb::FsInfo& fs, uint32_t rank) {
  const std::string& holder = fs::RankOf(fs, rank).client();
  if (holder.empty() || holder == objects_->name()) return objects_->map()->epoch;
  ASSIGN_OR_RETURN(uint64_t epoch, Fence(holder));
  LOG(INFO) << "event=rank_holder_fenced fs=" << fs.name() << " rank=" << rank << " holder=\""
            << absl::CHexEscape(holder) << "\" epoch=" << epoch;
  return epoch;
}

// Evicted clients are fenced the same way (MdsRank::Evict through
// RankEnv::fence_client). The map manager adds the entry: a rank holder
// that is not the leader asks it over gRPC.
absl::StatusOr<uint64_t> MdsDaemon::Fence(const std::string& client) {
  if (client == objects_->name()) {
    return absl::InvalidArgumentError("refusing to blocklist this MDS's own OSD identity");
  }
  const int64_t expires_ms = absl::ToUnixMillis(absl::Now() + absl::Hours(24));
  ASSIGN_OR_RETURN(uint64_t epoch, BlocklistAdd(client, expires_ms));
  RETURN_IF_ERROR(WaitForEpoch(epoch));
  return epoch;
}

absl::Status MdsDaemon::WaitForEpoch(uint64_t epoch) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (auto map = objects_->map(); map->epoch < epoch; map = objects_->map()) {
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("the object client did not get osdmap epoch ", epoch, " within 30 s"));
    }
    objects_->WaitNewer(map->epoch, absl::Seconds(1));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> MdsDaemon::BlocklistAdd(const std::string& client, int64_t expires_ms) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (;;) {
    if (manager_->IsLeader()) {
      auto epoch = manager_->BlocklistAdd(client, expires_ms);
      if (epoch.ok() || absl::Now() >= deadline) return epoch;
    } else if (const std::string leader = manager_->LeaderAddr(); !leader.empty()) {
      pb::BlocklistRequest req;
      req.set_client(client);
      req.set_expires_ms(expires_ms);
      pb::AdminReply reply;
      grpc::ClientContext ctx;
      ctx.set_deadline(rpc::DeadlineIn(5000));
      grpc::Status rpc_status = pb::Cluster::NewStub(channels_.Get(leader))->Blocklist(&ctx, req, &reply);
      absl::Status status = rpc_status.ok() ? rpc::FromProto(reply.status())
                                            : rpc::FromGrpc(rpc_status, leader);
      if (status.ok()) return reply.epoch();
      if (absl::Now() >= deadline) return status;
      LOG(WARNING) << "event=blocklist_via_leader_failed leader=" << leader << " status=\"" << status
                   << "\"";
    } else if (absl::Now() >= deadline) {
      return absl::UnavailableError("no map manager to add the blocklist entry");
    }
    // Leadership is moving (a daemon steps down, or one died): try again.
    absl::SleepFor(absl::Milliseconds(200));
  }
}

absl::Status MdsDaemon::FsNew(const std::string& name, const std::string& metadata_pool,
                              const std::string& data_pool) {
  absl::MutexLock serial(&new_mu_);
  if (!manager_->IsLeader()) {
    return absl::FailedPreconditionError(absl::StrCat("not the map manager; leader=", manager_->LeaderAddr()));
  }
  pb::FsMap current = fsmap_->map();
  std::shared_ptr<const OsdMap> osdmap = manager_->map();
  RETURN_IF_ERROR(FsMapStore::ValidateNew(current, *osdmap, name, metadata_pool, data_pool));
  pb::FsInfo info;
  info.set_id(std::max<uint32_t>(1, current.next_fs_id()));
  info.set_name(name);
  info.set_metadata_pool(osdmap->FindPoolByName(metadata_pool)->id.value());
  info.add_data_pools(osdmap->FindPoolByName(data_pool)->id.value());
  info.set_created_ms(absl::ToUnixMillis(absl::Now()));
  info.set_max_mds(1);
  pb::FsRank* rank0 = info.add_ranks();
  rank0->set_name(options_.name);
  rank0->set_addr(options_.addr);
  rank0->set_client(objects_->name());
  rank0->set_incarnation(1);
  RankEnv env;
  env.objects = objects_;
  env.capacity = [] { return Capacity{}; };
  env.data_pools = [] { return DataPools{}; };
  env.cluster_full = [] { return false; };
  MdsRank creator(RankOptionsFor(info, 0), std::move(env));
  RETURN_IF_ERROR(creator.Create());
  return fsmap_->Mutate([&](pb::FsMap* m) -> absl::Status {
    RETURN_IF_ERROR(FsMapStore::ValidateNew(*m, *osdmap, name, metadata_pool, data_pool));
    if (std::max<uint32_t>(1, m->next_fs_id()) != info.id()) {
      return absl::AbortedError("another filesystem was created meanwhile; try again");
    }
    m->set_next_fs_id(info.id() + 1);
    *m->add_filesystems() = info;
    return absl::OkStatus();
  });
}

absl::Status MdsDaemon::FsAddDataPool(const std::string& name, const std::string& data_pool) {
  std::shared_ptr<const OsdMap> osdmap = manager_->map();
  const PoolInfo* pool = osdmap->FindPoolByName(data_pool);
  if (pool == nullptr) return absl::NotFoundError(absl::StrCat("no pool ", data_pool));
  return fsmap_->Mutate([&](pb::FsMap* m) -> absl::Status {
    for (pb::FsInfo& fs : *m->mutable_filesystems()) {
      if (fs.name() != name) continue;
      if (fs.metadata_pool() == pool->id.value()) {
        return absl::InvalidArgumentError("the metadata pool cannot hold file data");
      }
      for (uint32_t p : fs.data_pools()) {
        if (p == pool->id.value()) return absl::AlreadyExistsError("unchanged");
      }
      fs.add_data_pools(pool->id.value());
      return absl::OkStatus();
    }
    return absl::NotFoundError(absl::StrCat("no filesystem ", name));
  });
}

absl::Status MdsDaemon::FsSet(const std::string& name, const std::string& key,
                              const std::string& value) {
  if (!manager_->IsLeader()) return manager_->NotLeader();
  uint32_t n = 0;
  if (!absl::SimpleAtoi(value, &n) || n > 64) {
    return absl::InvalidArgumentError(absl::StrCat(key, " takes a number within [0, 64], not '",
                                                   value, "'"));
  }
  if (key == "max_mds") {
    if (n < 1) return absl::InvalidArgumentError("max_mds must be at least 1");
    // Each active rank needs a daemon of its own (one failed by the operator
    // does not count).
    std::vector<pb::MdsAlive> alive = registry_->daemons();
    absl::flat_hash_set<std::string> failed;
    {
      absl::MutexLock lock(&mu_);
      failed = failed_;
    }
    std::erase_if(alive, [&](const pb::MdsAlive& d) { return failed.contains(d.client()); });
    if (n > alive.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("max_mds ", n, " needs ", n, " MDS daemons, one per active rank; ",
                       alive.size(), " are running"));
    }
    return fsmap_->Mutate([&](pb::FsMap* m) -> absl::Status {
      for (pb::FsInfo& fs : *m->mutable_filesystems()) {
        if (fs.name() != name) continue;
        bool changed = fs::MaxMds(fs) != n;
        fs.set_max_mds(n);
        // Ranks below n serve (a stopping one is kept); those above stop:
        // their holders flush and report (RankStopped); then they go.
        while (fs.ranks_size() < static_cast<int>(n)) {
          fs.add_ranks();
          changed = true;
        }
        for (int r = 0; r < fs.ranks_size(); ++r) {
          const bool stop = r >= static_cast<int>(n);
          if (fs.ranks(r).stopping() != stop) {
            fs.mutable_ranks(r)->set_stopping(stop);
            changed = true;
          }
        }
        TrimStoppedRanks(&fs);
        return changed ? absl::OkStatus() : absl::AlreadyExistsError("unchanged");
      }
      return ErrnoError(absl::StatusCode::kNotFound, ENOENT, absl::StrCat("no filesystem ", name));
    });
  }
  if (key == "allow_standby_replay" && n > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("allow_standby_replay takes 0 or 1, not '", value, "'"));
  }
  if (key != "standby_count_wanted" && key != "allow_standby_replay") {
    return absl::InvalidArgumentError(absl::StrCat(
        "no setting '", key, "' (standby_count_wanted, allow_standby_replay, max_mds)"));
  }
  return fsmap_->Mutate([&](pb::FsMap* m) -> absl::Status {
    for (pb::FsInfo& fs : *m->mutable_filesystems()) {
      if (fs.name() != name) continue;
      if (key == "allow_standby_replay") {
        if (fs.allow_standby_replay() == (n == 1)) return absl::AlreadyExistsError("unchanged");
        fs.set_allow_standby_replay(n == 1);
        return absl::OkStatus();
      }
      if (fs.standby_count_wanted() == n) return absl::AlreadyExistsError("unchanged");
      fs.set_standby_count_wanted(n);
      return absl::OkStatus();
    }
    return ErrnoError(absl::StatusCode::kNotFound, ENOENT, absl::StrCat("no filesystem ", name));
  });
}

absl::StatusOr<std::string> MdsDaemon::MdsFail(const std::string& who) {
  if (!manager_->IsLeader()) return manager_->NotLeader();
  const pb::FsMap map = fsmap_->map();
  // WHO: a daemon's name, FS:RANK, or RANK with one filesystem.
  std::string name = who;
  std::string fs_part, rank_part = who;
  if (auto colon = who.find(':'); colon != std::string::npos) {
    fs_part = who.substr(0, colon);
    rank_part = who.substr(colon + 1);
  }
  uint32_t rank = 0;
  if (absl::SimpleAtoi(rank_part, &rank)) {
    if (fs_part.empty() && map.filesystems_size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("several filesystems: name the rank as FS:", rank));
    }
    const pb::FsInfo* fs = nullptr;
    for (const pb::FsInfo& f : map.filesystems()) {
      if (fs_part.empty() || f.name() == fs_part) fs = &f;
    }
    if (fs == nullptr) return absl::NotFoundError(absl::StrCat("no filesystem ", fs_part));
    if (rank >= static_cast<uint32_t>(fs->ranks_size())) {
      return absl::InvalidArgumentError(absl::StrCat("no rank ", rank, " in ", fs->name(), ": it has ",
                                                     fs->ranks_size(), " (max_mds ",
                                                     fs::MaxMds(*fs), ")"));
    }
    name = fs::RankOf(*fs, rank).name();
    if (name.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("rank ", rank, " of ", fs->name(), " has no daemon"));
    }
  }
  std::optional<pb::MdsAlive> daemon = registry_->Find(name);
  if (!daemon) return absl::NotFoundError(absl::StrCat("no MDS daemon named '", name, "' is alive"));
  if (daemon->client() == objects_->name()) {
    // The map manager cannot fence itself: it leaves the maps to another
    // daemon, which does it when asked again (FsAdmin::MdsFail asks again).
    if (registry_->daemons().size() < 2) {
      return absl::FailedPreconditionError(
          absl::StrCat("no other MDS daemon is alive to take over from ", name));
    }
    manager_->StepDown(absl::Seconds(5));
    return absl::UnavailableError(
        absl::StrCat(name, " is the map manager: it steps down for another daemon; try again"));
  }
  ASSIGN_OR_RETURN(uint64_t epoch, Fence(daemon->client()));
  {
    absl::MutexLock lock(&mu_);
    failed_.insert(daemon->client());
  }
  LOG(WARNING) << "event=mds_failed name=" << name << " reason=operator epoch=" << epoch;
  AssignRanks();
  const std::string held = fs::Describe(fs::RanksHeldBy(map, *daemon));
  return absl::StrCat("failed ", name, " (fenced at osdmap epoch ", epoch, ")",
                      held.empty() ? "" : absl::StrCat("; ", held, " handed to a standby"));
}

void MdsDaemon::AddHealthChecks(pb::StatusReply* reply) {
  const pb::FsMap map = fsmap_->map();
  const std::vector<pb::MdsAlive> alive = registry_->daemons();
  size_t standbys = 0;
  for (const pb::MdsAlive& d : alive) standbys += fs::RanksHeldBy(map, d).empty();
  for (const pb::FsInfo& fs : map.filesystems()) {
    for (int r = 0; r < fs.ranks_size(); ++r) {
      const pb::FsRank& held = fs.ranks(r);
      if (held.stopping() && held.client().empty()) continue;  // stopped
      if (fs::RankServed(held, alive)) continue;
      auto* check = reply->add_checks();
      check->set_severity("ERR");
      check->set_code("MDS_RANK_DOWN");
      check->set_message(absl::StrCat("rank ", r, " of ", fs.name(), " has no live MDS daemon (",
                                      standbys > 0 ? "a standby is taking it over" : "no standby",
                                      ")"));
    }
    if (standbys < fs.standby_count_wanted()) {
      auto* check = reply->add_checks();
      check->set_severity("WARN");
      check->set_code("MDS_INSUFFICIENT_STANDBY");
      check->set_message(absl::StrCat(fs.name(), " wants ", fs.standby_count_wanted(),
                                      " standby MDS daemons, ", standbys, " running"));
    }
  }
}

absl::Status MdsDaemon::NotHere(const std::string& fs, uint32_t rank) {
  pb::FsMap map = fsmap_->map();
  for (const pb::FsInfo& info : map.filesystems()) {
    if (info.name() == fs || absl::StrCat(info.id()) == fs) {
      if (rank >= static_cast<uint32_t>(info.ranks_size())) {
        return ErrnoError(absl::StatusCode::kNotFound, ENOENT,
                          absl::StrCat("no rank ", rank, " in filesystem ", info.name()));
      }
      const pb::FsRank& held = fs::RankOf(info, rank);
      return absl::UnavailableError(absl::StrCat("rank ", rank, " of ", info.name(),
                                                 " is served by ", held.addr(), " (",
                                                 held.name(), ")"));
    }
  }
  return ErrnoError(absl::StatusCode::kNotFound, ENOENT, absl::StrCat("no filesystem ", fs));
}

absl::Status MdsDaemon::Untrusted() {
  return absl::UnavailableError(
      "this MDS's liveness lease ran out: its ranks may be served elsewhere now");
}

DataPools MdsDaemon::DataPoolsOf(uint32_t fs_id) {
  DataPools out;
  if (std::shared_ptr<const OsdMap> osdmap = manager_->map()) {
    for (const PoolInfo& p : osdmap->pools) out.names[p.id] = p.name;
  }
  pb::FsMap map = fsmap_->map();
  for (const pb::FsInfo& fs : map.filesystems()) {
    if (fs.id() != fs_id) continue;
    for (uint32_t id : fs.data_pools()) out.data_pools.push_back(PoolId(id));
  }
  return out;
}

absl::StatusOr<std::shared_ptr<MdsRank>> MdsDaemon::RankByName(const std::string& fs,
                                                               uint32_t rank) {
  if (!registry_->Trusted()) return Untrusted();
  {
    absl::MutexLock lock(&mu_);
    for (auto& [key, served] : ranks_) {
      if (served->fs_name() == fs && key.second == rank) return served;
    }
  }
  return NotHere(fs, rank);
}

std::vector<std::shared_ptr<MdsRank>> MdsDaemon::Ranks() {
  absl::MutexLock lock(&mu_);
  std::vector<std::shared_ptr<MdsRank>> out;
  for (auto& [key, rank] : ranks_) out.push_back(rank);
  return out;
}

absl::StatusOr<std::shared_ptr<MdsRank>> MdsDaemon::RankOfSession(uint64_t session) {
  if (!registry_->Trusted()) return Untrusted();
  const SessionId id(session);
  {
    absl::MutexLock lock(&mu_);
    auto it = ranks_.find(RankKey{id.fs(), id.rank()});
    if (it != ranks_.end()) return it->second;
  }
  return NotHere(absl::StrCat(id.fs()), id.rank());
}

}  // namespace weft::mds
