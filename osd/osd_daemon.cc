#include "osd/osd_daemon.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/config/config.h"
#include "common/log/log.h"
#include "common/memory/memory.h"
#include "common/placement/placement.h"
#include "common/status/status.h"
#include "osd/osd_service.h"
#include "osd/pg/object_ops.h"
#include "osd/pg/osd_error.h"
#include "proto/cluster.pb.h"

namespace weft::osd {
namespace {

StoreOptions StoreOptionsFor(const OsdOptions& options) {
  StoreOptions so;
  so.dir = options.data_dir;
  so.max_object_bytes = options.max_object_bytes;
  so.inline_max_bytes = options.inline_max_bytes;
  so.spare_keep_bytes = options.spare_keep_bytes;
  so.spare_reserve_files = options.spare_reserve_files;
  so.sync = options.sync;
  so.fault_commit_delay_ms = options.fault_commit_delay_ms;
  return so;
}

}  // namespace

OsdDaemon::OsdDaemon(OsdOptions options) : options_(std::move(options)) {}

OsdDaemon::~OsdDaemon() { Shutdown(); }

absl::Status OsdDaemon::Mkfs(const OsdOptions& options) {
  return ObjectStore::Mkfs(StoreOptionsFor(options), options.fsid, options.id);
}

absl::Status OsdDaemon::Start() {
  started_ms_ = absl::ToUnixMillis(absl::Now());
  if (options_.fault_commit_delay_ms > 0) {
    LOG(WARNING) << "event=fault_point name=slow_disk commit_delay_ms="
                 << options_.fault_commit_delay_ms;
  }
  ASSIGN_OR_RETURN(store_, ObjectStore::Open(StoreOptionsFor(options_)));
  const Superblock& sb = store_->superblock();
  if (sb.fsid != options_.fsid) {
    return absl::FailedPreconditionError(absl::StrCat("data dir ", options_.data_dir,
                                                      " belongs to cluster ", sb.fsid,
                                                      ", not ", options_.fsid));
  }
  if (sb.osd_id != options_.id) {
    return absl::FailedPreconditionError(absl::StrCat("data dir ", options_.data_dir,
                                                      " holds osd.", sb.osd_id, ", not osd.",
                                                      options_.id));
  }
  ASSIGN_OR_RETURN(etcd_, etcd::Client::Connect(options_.etcd_endpoints, absl::Seconds(5)));
  RETURN_IF_ERROR(LoadInitialMap());
  recovery_ = std::make_unique<RecoveryThrottle>(
      static_cast<int>(options_.recovery_max_active),
      static_cast<uint64_t>(options_.recovery_max_bytes_per_sec), options_.recovery_client_wait_ms);
  // Before serving: a metrics address that cannot be used stops the daemon
  // before the cluster sees it up.
  RETURN_IF_ERROR(StartMetrics());

  peers_ = std::make_unique<PeerClient>(&channels_, options_.peer_timeout_ms);
  background_ = std::make_unique<ThreadPool>("osd-bg", 8, 1 << 20);

  // Serve before registering: the manager marks us up as soon as it sees the
  // liveness key, and clients come right after.
  service_ = std::make_unique<OsdService>(this);
  grpc::ServerBuilder builder;
  rpc::ConfigureServer(&builder);
  int port = 0;
  builder.AddListeningPort(options_.bind_addr, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.bind_addr));
  }
  std::string host = options_.bind_addr.substr(0, options_.bind_addr.rfind(':'));
  if (host.empty() || host == "0.0.0.0" || host == "[::]") host = "127.0.0.1";
  address_ = absl::StrCat(host, ":", port);

  // PGs already on disk, then the current map's.
  ASSIGN_OR_RETURN(auto colls, store_->ListCollections());
  const auto initial = CurrentMap();
  for (const auto& coll : colls) {
    auto id = PgId::Parse(coll);
    if (!id.ok()) continue;
    // A PG of a deleted pool loads as replicated; ApplyMap drops it.
    const PoolInfo* pool = initial->FindPool(id->pool);
    LoadPg(*id, pool != nullptr ? *pool : PoolInfo{});
  }
  ApplyMap(CurrentMap());
  WatchMap(map_revision_ + 1);  // nothing published since the initial read is missed
  RETURN_IF_ERROR(Register());
  stats_thread_ = std::thread([this] { StatsLoop(); });
  if (options_.ec_commit_delay_ms > 0) commit_thread_ = std::thread([this] { CommitLoop(); });
  if (options_.memory_trim_ms > 0) trim_thread_ = std::thread([this] { TrimLoop(); });
  for (int i = 0; i < options_.max_scrubs; ++i) {
    scrub_threads_.emplace_back([this] { ScrubLoop(); });
  }
  LOG(INFO) << "event=started osd=" << options_.id << " addr=" << address_
            << " data=" << options_.data_dir << " epoch=" << CurrentMap()->epoch;
  return absl::OkStatus();
}

absl::Status OsdDaemon::LoadInitialMap() {
  const std::string key = ClusterPrefix(options_.fsid) + "osdmap";
  ASSIGN_OR_RETURN(etcd::RangeResult got, etcd_->Get(key));
  if (got.kvs.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cluster ", options_.fsid, " is not initialized (run weft cluster init)"));
  }
  ASSIGN_OR_RETURN(OsdMap map, OsdMap::Decode(got.kvs[0].value));
  if (map.FindOsd(OsdId(options_.id)) == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("osd.", options_.id, " does not exist in the map (run weft osd create)"));
  }
  {
    absl::MutexLock lock(&map_mu_);
    map_ = std::make_shared<const OsdMap>(std::move(map));
  }
  // Start() watches from here once it can apply maps: a map delivered
  // before the background pool existed made its PGs schedule peering on a
  // null pool (a crash in about one test run of ten that restarted every daemon).
  map_revision_ = got.revision;
  return absl::OkStatus();
}

void OsdDaemon::WatchMap(int64_t from_revision) {
  const std::string key = ClusterPrefix(options_.fsid) + "osdmap";
  map_watch_ = etcd_->WatchRange(
      key, "", from_revision,
      [this](const std::vector<etcd::WatchEvent>& events) {
        for (const auto& ev : events) {
          if (ev.type == etcd::WatchEvent::kPut) OnMapEvent(ev.kv.value);
        }
      },
      [this, key](const absl::Status& status) {
        // History compacted: re-read the key; the watch itself resumes.
        LOG(WARNING) << "event=map_watch_error status=\"" << status.message() << "\"";
        auto got = etcd_->Get(key);
        if (got.ok() && !got->kvs.empty()) OnMapEvent(got->kvs[0].value);
      });
}

void OsdDaemon::OnMapEvent(const std::string& bytes) {
  auto map = OsdMap::Decode(bytes);
  if (!map.ok()) {
    LOG(ERROR) << "event=bad_map status=\"" << map.status().message() << "\"";
    return;
  }
  auto shared = std::make_shared<const OsdMap>(std::move(*map));
  {
    absl::MutexLock lock(&map_mu_);
    if (map_ && map_->epoch >= shared->epoch) return;
    map_ = shared;
  }
  // A map marking us down follows the loss of our lease, which the keeper
  // reports itself (on_lost re-registers); nothing to do here.
  ApplyMap(shared);
}

std::shared_ptr<const OsdMap> OsdDaemon::CurrentMap() {
  absl::MutexLock lock(&map_mu_);
  return map_;
}

bool OsdDaemon::WaitForEpoch(Epoch epoch, absl::Duration timeout) {
  absl::MutexLock lock(&map_mu_);
  auto ready = [this, epoch]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(map_mu_) {
    return map_ && map_->epoch >= epoch;
  };
  return map_mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
}

std::shared_ptr<Pg> OsdDaemon::LoadPg(const PgId& id, const PoolInfo& pool) {
  const std::string name = CollectionName(id);
  {
    absl::MutexLock lock(&pgs_mu_);
    auto it = pgs_.find(name);
    if (it != pgs_.end()) return it->second;
  }
  auto log = PgLog::Load(store_.get(), name, options_.pg_log_max_entries);
  if (!log.ok()) {
    LOG(ERROR) << "pg=" << name << " event=log_load_failed status=\"" << log.status() << "\"";
    return nullptr;
  }
  PgContext ctx;
  ctx.store = store_.get();
  ctx.whoami = OsdId(options_.id);
  ctx.peers = peers_.get();
  ctx.background = background_.get();
  ctx.recovery = recovery_.get();
  ctx.options = &options_;
  ctx.counters = &counters_;
  ctx.state_changed = [this] { StatsSoon(); };
  auto pg = std::make_shared<Pg>(id, ctx, std::move(*log), pool);
  absl::MutexLock lock(&pgs_mu_);
  auto [it, inserted] = pgs_.emplace(name, pg);
  return it->second;
}

void OsdDaemon::ApplyMap(std::shared_ptr<const OsdMap> map) {
  // Start() applies the initial map before the watch starts, and the watch
  // delivers one map at a time; the lock and the epoch check keep that so
  // for any other caller: an older epoch applied after a newer one would
  // leave PGs on stale acting sets until the next epoch (which may never
  // come) and drop the PGs, data included, of a pool it does not know yet.
  // The same epoch again is fine (PGs loaded since get theirs).
  absl::MutexLock apply(&apply_mu_);
  if (map->epoch < applied_epoch_) return;
  applied_epoch_ = map->epoch;
  const OsdId me(options_.id);
  for (const PoolInfo& pool : map->pools) {
    const placement::PoolPlacement placement(*map, pool);
    for (uint32_t seed = 0; seed < pool.pg_num; ++seed) {
      PgId id{pool.id, seed};
      placement::PgMapping mapping = placement.Map(seed);
      bool mine = std::find(mapping.up.begin(), mapping.up.end(), me) != mapping.up.end() ||
                  std::find(mapping.acting.begin(), mapping.acting.end(), me) !=
                      mapping.acting.end();
      std::shared_ptr<Pg> pg;
      if (mine) {
        pg = LoadPg(id, pool);
      } else {
        absl::MutexLock lock(&pgs_mu_);
        auto it = pgs_.find(CollectionName(id));
        if (it != pgs_.end()) pg = it->second;
      }
      if (pg) pg->OnMap(map, pool, mapping);
    }
  }
  // PGs of deleted pools: drop them and their data.
  std::vector<std::shared_ptr<Pg>> dropped;
  {
    absl::MutexLock lock(&pgs_mu_);
    for (auto it = pgs_.begin(); it != pgs_.end();) {
      if (map->FindPool(it->second->id().pool) == nullptr) {
        dropped.push_back(it->second);
        pgs_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  for (const auto& pg : dropped) {
    auto status = store_->RemoveCollection(pg->coll());
    LOG(INFO) << "pg=" << pg->coll() << " event=removed_with_pool status=" << status.ok();
  }
  StatsSoon();  // the manager counts only reports made under its newest map
}

absl::Status OsdDaemon::Register() {
  absl::MutexLock lock(&reg_mu_);
  keeper_.reset();
  if (lease_ != 0) (void)etcd_->LeaseRevoke(lease_);
  ASSIGN_OR_RETURN(lease_, etcd_->LeaseGrant(options_.lease_ttl_s));
  RETURN_IF_ERROR(etcd_->Put(AliveKey(), AliveValue(), lease_).status());
  keeper_ = etcd_->KeepAlive(lease_, options_.lease_ttl_s, [this] {
    LOG(WARNING) << "event=lease_lost osd=" << options_.id;
    if (shutdown_.HasBeenNotified()) return;
    background_->Submit([this] {
      for (int attempt = 0; !shutdown_.HasBeenNotified(); ++attempt) {
        auto status = Register();
        if (status.ok()) return;
        LOG(ERROR) << "event=reregister_failed status=\"" << status << "\"";
        shutdown_.WaitForNotificationWithTimeout(absl::Seconds(1));
      }
    });
  });
  return absl::OkStatus();
}

namespace {

// This machine, for telling OSDs that share a file system (AliveValue).
const std::string& MachineId() {
  static const std::string id = [] {
    std::ifstream in("/etc/machine-id");
    std::string line;
    if (std::getline(in, line) && !line.empty()) return line;
    char name[256] = {0};
    gethostname(name, sizeof(name) - 1);
    return std::string(name);
  }();
  return id;
}

}  // namespace

std::string OsdDaemon::AliveKey() const {
  return absl::StrCat(ClusterPrefix(options_.fsid), "alive/osd.", options_.id);
}

std::string OsdDaemon::AliveValue() {
  pb::OsdAlive alive;
  alive.set_id(options_.id);
  alive.set_addr(address_);
  alive.set_host(options_.host);
  alive.set_rack(options_.rack);
  alive.set_pid(getpid());
  alive.set_started_ms(started_ms_);
  if (auto map = CurrentMap()) alive.set_epoch(map->epoch);
  ObjectStore::Stats stats = store_->GetStats();
  if (stats.fs_total_bytes > 0) {
    fill_ = DiskFill(stats.fs_total_bytes, stats.fs_avail_bytes);
    fs_total_ = stats.fs_total_bytes;
    admitted_ = 0;
  }
  alive.set_bytes_used(stats.bytes_used);
  alive.set_objects(stats.objects);
  alive.set_fs_total_bytes(stats.fs_total_bytes);
  alive.set_fs_avail_bytes(stats.fs_avail_bytes);
  if (stats.fs_device != 0) alive.set_fs_id(absl::StrCat(MachineId(), ":", stats.fs_device));
  alive.set_read_bytes(counters_.read_bytes);
  alive.set_write_bytes(counters_.write_bytes);
  alive.set_recovery_bytes(counters_.recovery_bytes);
  const CommitWindow window = RecentCommits();
  alive.set_commits(window.commits);
  alive.set_commit_latency_us(window.median_us);
  for (const auto& pg : PrimaryPgs()) {
    auto* stat = alive.add_pgs();
    stat->set_pgid(pg->coll());
    stat->set_state(pg->StateName());
    const pb::PgScrubStat scrub = pg->ScrubStat();
    stat->set_scrub_errors(scrub.errors());
    stat->set_last_scrub_ms(scrub.last_scrub_ms());
    stat->set_last_deep_scrub_ms(scrub.last_deep_scrub_ms());
    pg->FillStat(stat);
  }
  alive.set_read_repairs(counters_.read_repairs);
  return alive.SerializeAsString();
}

OsdDaemon::CommitWindow OsdDaemon::RecentCommits() {
  const metrics::Histogram& latency = store_->commit_latency();
  const absl::Time t = absl::Now();
  absl::MutexLock lock(&commit_window_mu_);
  commit_samples_.push_back({t, latency.Take()});
  // Keep the newest sample at least a window old as the base of the deltas.
  while (commit_samples_.size() > 2 && commit_samples_[1].at <= t - kCommitWindow) {
    commit_samples_.pop_front();
  }
  const metrics::Histogram::Snapshot& base = commit_samples_.front().latency;
  const metrics::Histogram::Snapshot& now = commit_samples_.back().latency;
  CommitWindow window;
  window.commits = now.count - base.count;
  // The median, not the mean: a few large writes take long on any disk; a
  // sick disk makes every commit slow.
  const double median = metrics::Quantile(latency, base, now, 0.5);
  if (median > 0) window.median_us = static_cast<uint64_t>(median * 1e6);
  return window;
}

void OsdDaemon::StatsSoon() {
  absl::MutexLock lock(&stats_mu_);
  stats_due_ = true;
}

void OsdDaemon::StatsLoop() {
  const absl::Duration interval = absl::Milliseconds(options_.stats_interval_ms);
  while (!shutdown_.HasBeenNotified()) {
    bool early = false;
    {
      absl::MutexLock lock(&stats_mu_);
      auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(stats_mu_) {
        return stats_due_ || shutdown_.HasBeenNotified();
      };
      early = stats_mu_.AwaitWithTimeout(absl::Condition(&woken), interval);
    }
    if (early && shutdown_.WaitForNotificationWithTimeout(kStatsSoon)) break;
    if (shutdown_.HasBeenNotified()) break;
    {
      absl::MutexLock lock(&stats_mu_);
      stats_due_ = false;
    }
    int64_t lease = 0;
    {
      absl::MutexLock lock(&reg_mu_);
      lease = lease_;
    }
    auto status = etcd_->Put(AliveKey(), AliveValue(), lease).status();
    if (!status.ok()) VLOG(1) << "event=stats_put_failed status=\"" << status << "\"";
    constexpr absl::Duration kStraySweep = absl::Seconds(15);
    if (absl::Now() - last_sweep_ >= kStraySweep && !sweeping_.exchange(true)) {
      last_sweep_ = absl::Now();
      background_->Submit([this] {
        SweepStrays();
        sweeping_ = false;
      });
    }
  }
}

// Object data passes through the heap in buffers of a few MiB. What a burst
// of requests freed stays resident: with glibc's malloc scattered between
// live allocations where its own trimming (only the top of the main heap)
// never reaches it (after a 16-thread write benchmark an OSD held 309 MB
// from the kernel with 50 MB in use); with tcmalloc, which weft-osd links,
// in its page heap until its slow background release gets to it. Giving it
// back bounds the OSD's resident memory by what it uses plus the threshold.
// The threshold is high on purpose: every trimmed page faults again when
// the next request reuses it; trimming every second at 64 MiB cost a
// quarter of the sequential read bandwidth, at 256 MiB a tenth, and every
// 10 s no longer held 512 MiB (docs/ARCHITECTURE.md, OSD memory).
void OsdDaemon::TrimLoop() {
  const absl::Duration tick = absl::Milliseconds(options_.memory_trim_ms);
  const uint64_t free_bytes = options_.memory_trim_free_bytes;
  while (!shutdown_.WaitForNotificationWithTimeout(tick)) {
    memory::ReleaseFreeHeapOver(free_bytes);
  }
}

std::vector<std::shared_ptr<Pg>> OsdDaemon::AllPgs() {
  absl::MutexLock lock(&pgs_mu_);
  std::vector<std::shared_ptr<Pg>> pgs;
  pgs.reserve(pgs_.size());
  for (const auto& [name, pg] : pgs_) pgs.push_back(pg);
  return pgs;
}

std::vector<std::shared_ptr<Pg>> OsdDaemon::PrimaryPgs() {
  std::vector<std::shared_ptr<Pg>> pgs = AllPgs();
  std::erase_if(pgs, [](const std::shared_ptr<Pg>& pg) { return !pg->IsPrimary(); });
  return pgs;
}

void OsdDaemon::CommitLoop() {
  const absl::Duration tick =
      absl::Milliseconds(std::max<int64_t>(10, options_.ec_commit_delay_ms / 4));
  while (!shutdown_.WaitForNotificationWithTimeout(tick)) {
    const absl::Time now = absl::Now();
    for (const auto& pg : AllPgs()) pg->EcFlushCommit(now);
  }
}

void OsdDaemon::Wait() { shutdown_.WaitForNotification(); }

void OsdDaemon::RequestShutdown() {
  if (!shutdown_.HasBeenNotified()) shutdown_.Notify();
  absl::MutexLock wake(&stats_mu_);  // StatsLoop's condition reads shutdown_
  absl::MutexLock wake_scrubs(&scrub_mu_);  // so does ScrubLoop's
}

void OsdDaemon::Shutdown() {
  RequestShutdown();
  metrics_server_.reset();  // no scrape reads what is torn down below
  if (stats_thread_.joinable()) stats_thread_.join();
  if (commit_thread_.joinable()) commit_thread_.join();
  if (trim_thread_.joinable()) trim_thread_.join();
  for (std::thread& t : scrub_threads_) t.join();
  scrub_threads_.clear();
  // No new maps, so no new peering; queued peering and recovery are dropped.
  map_watch_.reset();
  if (background_) background_->Cancel();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  {
    absl::MutexLock lock(&reg_mu_);
    keeper_.reset();
    // Leaving cleanly: revoke the lease so that the manager marks us down now
    // rather than after the lease times out.
    if (lease_ != 0 && etcd_) (void)etcd_->LeaseRevoke(lease_);
    lease_ = 0;
  }
  background_.reset();
  server_.reset();
}

// --- Request entry points -----------------------------------------------------

absl::StatusOr<std::shared_ptr<Pg>> OsdDaemon::FindPg(Epoch epoch, uint32_t pool_id,
                                                      uint32_t seed, bool client,
                                                      std::shared_ptr<const OsdMap>* map_out) {
  std::shared_ptr<const OsdMap> map = CurrentMap();
  if (epoch > map->epoch) {
    WaitForEpoch(epoch, absl::Seconds(3));
    map = CurrentMap();
    if (epoch > map->epoch) {
      return OsdError(pb::NEWER_MAP, absl::StrCat("osd.", options_.id, " has epoch ", map->epoch,
                                                  ", request has ", epoch));
    }
  }
  *map_out = map;
  if (client && epoch < map->epoch) {
    return OsdError(pb::STALE_MAP, absl::StrCat("map epoch ", epoch, " is older than ",
                                                map->epoch));
  }
  const PoolInfo* pool = map->FindPool(PoolId(pool_id));
  if (pool == nullptr) return absl::NotFoundError(absl::StrCat("pool ", pool_id, " does not exist"));
  if (seed >= pool->pg_num) {
    return absl::InvalidArgumentError(absl::StrCat("pg seed ", seed, " is beyond pg_num ",
                                                   pool->pg_num, " of pool ", pool->name));
  }
  PgId id{pool->id, seed};
  absl::MutexLock lock(&pgs_mu_);
  auto it = pgs_.find(CollectionName(id));
  if (it == pgs_.end()) {
    return OsdError(pb::NOT_PRIMARY, absl::StrCat("osd.", options_.id, " does not hold pg ",
                                                  CollectionName(id)));
  }
  return it->second;
}

namespace {

// What a request's operations bring: their data, and a block for each
// (metadata, the file's last block).
uint64_t DataBytes(const google::protobuf::RepeatedPtrField<pb::ObjectOp>& ops) {
  uint64_t bytes = 0;
  for (const pb::ObjectOp& op : ops) bytes += op.data().size() + 4096;
  return bytes;
}

bool AddsData(const google::protobuf::RepeatedPtrField<pb::ObjectOp>& ops) {
  for (const pb::ObjectOp& op : ops) {
    switch (op.type()) {
      case pb::WRITE: case pb::WRITE_FULL: case pb::APPEND: case pb::CREATE:
      case pb::SETXATTR: case pb::OMAP_SET:
        return true;
      default:
        break;
    }
  }
  return false;
}

}  // namespace

void OsdDaemon::RefreshFill() {
  struct statvfs st;
  if (statvfs(options_.data_dir.c_str(), &st) != 0 || st.f_blocks == 0) return;
  const uint64_t total = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
  const uint64_t avail = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  admitted_ = 0;
  fs_total_ = total;
  fill_ = DiskFill(total, avail);
}

absl::Status OsdDaemon::CheckFailsafe(uint64_t adding) {
  auto estimate = [&] {
    const uint64_t total = fs_total_.load();
    const uint64_t admitted = admitted_.load() + adding;
    return fill_.load() + (total == 0 ? 0 : static_cast<double>(admitted) / total);
  };
  double fill = estimate();
  if (fill >= kFailsafeFullRatio) {
    RefreshFill();  // deletes may have freed room since
    fill = estimate();
  }
  if (fill < kFailsafeFullRatio) {
    admitted_ += adding;
    return absl::OkStatus();
  }
  return ErrnoToStatus(ENOSPC, absl::StrCat("osd.", options_.id, " is ",
                                            static_cast<int>(fill * 100),
                                            "% full, past its failsafe ratio ", kFailsafeFullRatio));
}

absl::Status OsdDaemon::CheckFull(const pb::OpRequest& req, const OsdMap& map) {
  if (!AddsData(req.ops())) return absl::OkStatus();  // reads, removes, truncates
  RETURN_IF_ERROR(CheckFailsafe(DataBytes(req.ops())));
  if (req.flags() & pb::OPF_FULL_TRY) return absl::OkStatus();
  if (const OsdInfo* full = map.FirstFull()) {
    return ErrnoToStatus(ENOSPC, absl::StrCat("cluster full: osd.", full->id.value(),
                                              " is past the full ratio ", map.full_ratio,
                                              " (free space, or raise it: weft osd set-full-ratio)"));
  }
  return absl::OkStatus();
}

void OsdDaemon::Op(pb::OpRequest* mutable_req, pb::OpReply* reply) {
  const pb::OpRequest& req = *mutable_req;
  const bool writes = std::any_of(req.ops().begin(), req.ops().end(),
                                  [](const pb::ObjectOp& op) { return IsMutation(op.type()); });
  metrics::ScopedTimer timer(writes ? &write_latency_ : &read_latency_);
  std::shared_ptr<const OsdMap> map;
  bool local = req.flags() & pb::OPF_LOCAL;
  // Recovery's own reads (pulls, rebuilds) do not make recovery wait.
  RecoveryThrottle::ClientOp client_op(local || (req.flags() & pb::OPF_REBUILD_READ) ? nullptr : recovery_.get());
  auto pg = FindPg(req.map_epoch(), req.pool(), req.pg_seed(), !local, &map);
  if (pg.ok()) {
    const PoolInfo* pool = map->FindPool(PoolId(req.pool()));
    if (placement::ObjectToPgSeed(req.oid(), pool->pg_num) != req.pg_seed()) {
      pg = absl::InvalidArgumentError(absl::StrCat("object maps to another pg than ",
                                                   req.pool(), ".", req.pg_seed()));
    }
  }
  if (pg.ok()) {
    // A fenced client (an MDS that lost its rank, a client an operator
    // blocklisted) gets nothing, reads included: what it holds is no longer
    // its to act on. The check uses this OSD's newest map, whatever epoch the
    // request carries, so once this OSD has the epoch that added the entry,
    // no request of that client gets through.
    const BlocklistEntry* b =
        map->blocklist.empty()
            ? nullptr
            : map->FindBlocklisted(req.reqid().client(), absl::ToUnixMillis(absl::Now()));
    if (b != nullptr) {
      // ESHUTDOWN: the client knows it was fenced (IsEvicted), not denied.
      pg = EvictedError(absl::StrCat("client ", absl::CHexEscape(req.reqid().client()),
                                     " is blocklisted (osdmap epoch ", b->added,
                                     "; weft osd blocklist ls)"));
    }
  }
  if (pg.ok()) {
    if (absl::Status full = CheckFull(req, *map); !full.ok()) {
      // A resend of a write applied before the cluster filled (its reply
      // was lost) gets its original answer, not ENOSPC.
      if ((*pg)->AnswerIfApplied(req, reply)) {
        FillStatus(absl::OkStatus(), reply->mutable_status());
        reply->set_map_epoch(map->epoch);
        return;
      }
      pg = full;
    }
  }
  if (!pg.ok()) {
    FillStatus(pg.status(), reply->mutable_status());
    if (map) {
      reply->set_map_epoch(map->epoch);
      if (req.map_epoch() < map->epoch) reply->set_osdmap(map->Encode());
    }
    return;
  }
  (*pg)->HandleOp(mutable_req, reply);
  reply->set_map_epoch(map->epoch);
}

void OsdDaemon::PgList(const pb::PgListRequest& req, pb::PgListReply* reply) {
  std::shared_ptr<const OsdMap> map;
  bool local = req.flags() & pb::OPF_LOCAL;
  auto pg = FindPg(req.map_epoch(), req.pool(), req.pg_seed(), !local, &map);
  if (!pg.ok()) {
    if (local && OsdErrorCodeOf(pg.status()) == pb::NOT_PRIMARY) {
      FillStatus(absl::OkStatus(), reply->mutable_status());  // nothing here
      return;
    }
    FillStatus(pg.status(), reply->mutable_status());
    if (map && req.map_epoch() < map->epoch) reply->set_osdmap(map->Encode());
    return;
  }
  (*pg)->HandleList(req, reply);
  reply->set_map_epoch(map->epoch);
}

void OsdDaemon::GetMap(const pb::GetMapRequest& req, pb::GetMapReply* reply) {
  auto map = CurrentMap();
  if (map && map->epoch > req.have_epoch()) reply->set_osdmap(map->Encode());
}

void OsdDaemon::RepOp(pb::RepOpRequest* mutable_req, pb::RepOpReply* reply) {
  const pb::RepOpRequest& req = *mutable_req;
  metrics::ScopedTimer timer(&subop_latency_);
  RecoveryThrottle::ClientOp client_op(recovery_.get());  // a client's write, replicated here
  std::shared_ptr<const OsdMap> map;
  auto pg = FindPg(req.map_epoch(), req.pool(), req.pg_seed(), false, &map);
  if (!pg.ok()) return FillStatus(pg.status(), reply->mutable_status());
  // Replicas and shards guard their own disk too (the primary checked its own).
  if (AddsData(req.ops())) {
    if (absl::Status full = CheckFailsafe(DataBytes(req.ops())); !full.ok()) {
      return FillStatus(full, reply->mutable_status());
    }
  }
  (*pg)->HandleRepOp(mutable_req, reply);
}

void OsdDaemon::PgQuery(const pb::PgQueryRequest& req, pb::PgQueryReply* reply) {
  std::shared_ptr<const OsdMap> map;
  auto pg = FindPg(req.map_epoch(), req.pool(), req.pg_seed(), false, &map);
  if (!pg.ok()) {
    // Not holding the PG is an empty history, not an error.
    if (OsdErrorCodeOf(pg.status()) == pb::NOT_PRIMARY) {
      FillStatus(absl::OkStatus(), reply->mutable_status());
      return;
    }
    return FillStatus(pg.status(), reply->mutable_status());
  }
  (*pg)->HandleQuery(req, reply);
}

void OsdDaemon::Push(const pb::PushRequest& req, pb::PushReply* reply) {
  std::shared_ptr<const OsdMap> map;
  auto pg = FindPg(req.map_epoch(), req.pool(), req.pg_seed(), false, &map);
  if (!pg.ok()) return FillStatus(pg.status(), reply->mutable_status());
  // Recovery into a disk past its failsafe ratio waits (the primary backs
  // off and tries again) rather than filling it.
  if (!req.deleted()) {
    if (absl::Status full = CheckFailsafe(req.data().size() + 4096); !full.ok()) {
      return FillStatus(full, reply->mutable_status());
    }
  }
  (*pg)->HandlePush(req, reply);
}

void OsdDaemon::Activate(const pb::ActivateRequest& req, pb::ActivateReply* reply) {
  std::shared_ptr<const OsdMap> map;
  auto pg = FindPg(req.map_epoch(), req.pool(), req.pg_seed(), false, &map);
  if (!pg.ok()) return FillStatus(pg.status(), reply->mutable_status());
  (*pg)->HandleActivate(req, reply);
}

void OsdDaemon::Rollback(const pb::RollbackRequest& req, pb::PushReply* reply) {
  std::shared_ptr<const OsdMap> map;
  auto pg = FindPg(req.map_epoch(), req.pool(), req.pg_seed(), false, &map);
  if (!pg.ok()) return FillStatus(pg.status(), reply->mutable_status());
  (*pg)->HandleRollback(req, reply);
}

}  // namespace weft::osd
