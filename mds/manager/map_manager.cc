#include "mds/manager/map_manager.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/config/config.h"
#include "common/log/log.h"
#include "common/placement/balancer.h"
#include "common/placement/past_intervals.h"
#include "common/status/status.h"

namespace weft::mds {
namespace {

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

}  // namespace

absl::Status ManagerOptions::Validate() const {
  if (name.empty()) return absl::InvalidArgumentError("the MDS needs a name");
  if (fsid.empty()) return absl::InvalidArgumentError("no fsid");
  if (lease_ttl_s < 2 || lease_ttl_s > 300) {
    return absl::InvalidArgumentError("leader lease TTL must be within [2, 300] s");
  }
  if (down_out_interval_s < 1) return absl::InvalidArgumentError("down-out interval must be >= 1 s");
  return absl::OkStatus();
}

MapManager::MapManager(ManagerOptions options, etcd::Client* etcd)
    : options_(std::move(options)), etcd_(etcd), prefix_(ClusterPrefix(options_.fsid)) {}

MapManager::~MapManager() { Stop(); }

absl::Status MapManager::Start() {
  ASSIGN_OR_RETURN(etcd::RangeResult got, etcd_->Get(prefix_ + "osdmap"));
  if (got.kvs.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cluster ", options_.fsid, " is not initialized (run weft cluster init)"));
  }
  OnMapBytes(got.kvs[0].value, got.kvs[0].mod_revision);
  map_watch_ = etcd_->WatchRange(
      prefix_ + "osdmap", "", got.revision + 1,
      [this](const std::vector<etcd::WatchEvent>& events) {
        for (const auto& ev : events) {
          if (ev.type == etcd::WatchEvent::kPut) OnMapBytes(ev.kv.value, ev.kv.mod_revision);
        }
      },
      [this](const absl::Status& status) {
        auto again = etcd_->Get(prefix_ + "osdmap");
        if (again.ok() && !again->kvs.empty()) {
          OnMapBytes(again->kvs[0].value, again->kvs[0].mod_revision);
        }
      });
  leader_watch_ = etcd_->WatchRange(
      prefix_ + "leader", "", 0,
      [this](const std::vector<etcd::WatchEvent>&) {
        absl::MutexLock lock(&mu_);
        leader_key_changed_ = true;
      },
      [](const absl::Status&) {});
  election_ = std::thread([this] { ElectionLoop(); });
  return absl::OkStatus();
}

void MapManager::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (election_.joinable()) election_.join();
  map_watch_.reset();
  leader_watch_.reset();
}

void MapManager::OnMapBytes(const std::string& bytes, int64_t mod_revision) {
  auto decoded = OsdMap::Decode(bytes);
  if (!decoded.ok()) {
    LOG(ERROR) << "event=bad_map status=\"" << decoded.status() << "\"";
    return;
  }
  absl::MutexLock lock(&mu_);
  if (map_ && decoded->epoch <= map_->epoch) {
    map_revision_ = std::max(map_revision_, mod_revision);
    return;
  }
  map_ = std::make_shared<const OsdMap>(std::move(*decoded));
  map_revision_ = mod_revision;
}

std::shared_ptr<const OsdMap> MapManager::map() {
  absl::MutexLock lock(&mu_);
  return map_;
}

std::shared_ptr<const OsdMap> MapManager::WaitNewer(Epoch have, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto ready = [this, have]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || (map_ && map_->epoch > have);
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  if (map_ && map_->epoch > have) return map_;
  return nullptr;
}

bool MapManager::IsLeader() {
  absl::MutexLock lock(&mu_);
  return leader_;
}

int64_t MapManager::LeaderLease() {
  absl::MutexLock lock(&mu_);
  return leader_ ? leader_lease_ : 0;
}

void MapManager::SetDeferLeadership(std::function<bool()> defer) {
  absl::MutexLock lock(&mu_);
  defer_ = std::move(defer);
}

void MapManager::StepDown(absl::Duration how_long) {
  absl::MutexLock lock(&mu_);
  step_down_until_ = absl::Now() + how_long;
}

bool MapManager::Defers() {
  std::function<bool()> defer;
  {
    absl::MutexLock lock(&mu_);
    if (absl::Now() < step_down_until_) return true;
    defer = defer_;
  }
  return defer && defer();
}

std::string MapManager::LeaderAddr() {
  absl::MutexLock lock(&mu_);
  return leader_addr_;
}

absl::Status MapManager::NotLeader() {
  std::string leader = LeaderAddr();
  return absl::FailedPreconditionError(
      absl::StrCat("not the map manager; leader=", leader.empty() ? "none" : leader));
}

// --- Election ------------------------------------------------------------------

void MapManager::ElectionLoop() {
  const std::string key = prefix_ + "leader";
  const std::string value = absl::StrCat(options_.name, "\n", options_.addr);
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    auto lease = etcd_->LeaseGrant(options_.lease_ttl_s);
    if (!lease.ok()) {
      LOG(WARNING) << "event=lease_grant_failed status=\"" << lease.status() << "\"";
      absl::SleepFor(absl::Seconds(1));
      continue;
    }
    auto lost = std::make_shared<std::atomic<bool>>(false);
    auto keeper = etcd_->KeepAlive(*lease, options_.lease_ttl_s, [this, lost] {
      lost->store(true);
      absl::MutexLock lock(&mu_);
      leader_key_changed_ = true;
    });
    while (!lost->load()) {
      if (Defers()) {
        absl::MutexLock lock(&mu_);
        auto changed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return stopping_ || leader_key_changed_;
        };
        mu_.AwaitWithTimeout(absl::Condition(&changed), kDeferFor);
        leader_key_changed_ = false;
        if (stopping_) break;
      }
      auto txn = etcd_->Txn({etcd::Compare::CreateRevision(key, etcd::Compare::kEqual, 0)},
                            {etcd::Op::Put(key, value, *lease)}, {etcd::Op::Get(key)});
      if (txn.ok() && txn->succeeded) {
        LOG(INFO) << "event=elected name=" << options_.name << " addr=" << options_.addr;
        auto status = LeadOnce(*lease);
        LOG(WARNING) << "event=leadership_ended status=\"" << status << "\"";
        break;
      }
      if (txn.ok() && !txn->ranges.empty() && !txn->ranges[0].kvs.empty()) {
        std::vector<std::string> parts = absl::StrSplit(txn->ranges[0].kvs[0].value, '\n');
        absl::MutexLock lock(&mu_);
        leader_addr_ = parts.size() > 1 ? parts[1] : "";
      }
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || leader_key_changed_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&wake), absl::Seconds(5));
      leader_key_changed_ = false;
      if (stopping_) break;
    }
    keeper.reset();
    bool stopping;
    {
      absl::MutexLock lock(&mu_);
      stopping = stopping_;
    }
    // Leaving: give leadership up at once rather than after the TTL.
    (void)etcd_->LeaseRevoke(*lease);
    if (stopping) return;
  }
}

absl::Status MapManager::LeadOnce(int64_t lease) {
  const int64_t leading_since_ms = NowMs();
  ASSIGN_OR_RETURN(etcd::RangeResult alive, etcd_->GetPrefix(prefix_ + "alive/"));
  {
    absl::MutexLock lock(&mu_);
    leader_ = true;
    leader_lease_ = lease;
    leader_addr_ = options_.addr;
    alive_.clear();
  }
  OnAliveEvents([&] {
    std::vector<etcd::WatchEvent> events;
    for (auto& kv : alive.kvs) events.push_back({etcd::WatchEvent::kPut, kv});
    return events;
  }());
  auto watch = etcd_->WatchRange(
      prefix_ + "alive/", etcd::PrefixEnd(prefix_ + "alive/"), alive.revision + 1,
      [this](const std::vector<etcd::WatchEvent>& events) { OnAliveEvents(events); },
      [this](const absl::Status& status) {
        LOG(WARNING) << "event=alive_watch_error status=\"" << status << "\"";
      });
  // Wakes when the leader key changes (watch, or our lease lost) and once a
  // second to mark long-down OSDs out: a timer, not a map poll.
  absl::Status result = absl::OkStatus();
  for (;;) {
    bool key_changed = false;
    {
      absl::MutexLock lock(&mu_);
      auto wake = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || leader_key_changed_ || !leader_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&wake), absl::Seconds(1));
      if (stopping_ || !leader_) break;
      key_changed = leader_key_changed_;
      leader_key_changed_ = false;
    }
    if (key_changed) {
      auto key = etcd_->Get(prefix_ + "leader");
      if (key.ok() && (key->kvs.empty() || key->kvs[0].lease != lease)) {
        result = absl::AbortedError("leader key lost");
        break;
      }
    }
    if (Defers()) {
      result = absl::CancelledError("stepping down: a daemon without a rank is alive to lead");
      break;
    }
    CheckDownOut(leading_since_ms);
  }
  watch.reset();
  absl::MutexLock lock(&mu_);
  leader_ = false;
  leader_lease_ = 0;
  return result;
}

void MapManager::OnAliveEvents(const std::vector<etcd::WatchEvent>& events) {
  {
    absl::MutexLock lock(&mu_);
    const std::string alive_prefix = prefix_ + "alive/osd.";
    for (const auto& ev : events) {
      if (ev.kv.key.rfind(alive_prefix, 0) != 0) continue;
      int32_t id = -1;
      if (!absl::SimpleAtoi(ev.kv.key.substr(alive_prefix.size()), &id)) continue;
      if (ev.type == etcd::WatchEvent::kDelete) {
        alive_.erase(id);
        continue;
      }
      Alive a;
      if (!a.stats.ParseFromString(ev.kv.value)) {
        LOG(WARNING) << "event=bad_alive_value key=" << ev.kv.key;
        continue;
      }
      a.addr = a.stats.addr();
      a.host = a.stats.host();
      a.rack = a.stats.rack();
      alive_[id] = std::move(a);
    }
  }
  Reconcile();
}

double MapManager::Fill(const pb::OsdAlive& stats) {
  return DiskFill(stats.fs_total_bytes(), stats.fs_avail_bytes());
}

bool MapManager::UpdateFullFlags(OsdMap* m, const absl::flat_hash_map<int32_t, Alive>& alive) {
  constexpr double kClearMargin = 0.01;
  bool changed = false;
  for (OsdInfo& osd : m->osds) {
    auto it = alive.find(osd.id.value());
    if (it == alive.end()) continue;  // a down OSD keeps its flag until it reports again
    const double fill = Fill(it->second.stats);
    // Set at the ratio, cleared a point under it.
    auto past = [&](bool flag, double ratio) {
      return flag ? fill >= ratio - kClearMargin : fill >= ratio;
    };
    const bool backfillfull = past(osd.backfillfull, m->backfillfull_ratio);
    if (backfillfull != osd.backfillfull) {
      osd.backfillfull = backfillfull;
      changed = true;
      LOG(INFO) << "event=" << (backfillfull ? "osd_backfillfull" : "osd_not_backfillfull")
                << " osd=" << osd.id.value() << " fill=" << fill
                << " backfillfull_ratio=" << m->backfillfull_ratio;
    }
    const bool full = past(osd.full, m->full_ratio);
    if (full == osd.full) continue;
    osd.full = full;
    changed = true;
    LOG(INFO) << "event=" << (full ? "osd_full" : "osd_not_full") << " osd=" << osd.id.value()
              << " fill=" << fill << " full_ratio=" << m->full_ratio;
  }
  return changed;
}

std::map<PgId, Epoch> MapManager::CleanSince() {
  std::map<PgId, Epoch> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, a] : alive_) {
    for (const pb::PgStat& pg : a.stats.pgs()) {
      const std::string& state = pg.state();
      if (state.rfind("active", 0) != 0 || state.find("+clean") == std::string::npos) continue;
      auto pgid = PgId::Parse(pg.pgid());
      if (!pgid.ok()) continue;
      Epoch& since = out[*pgid];
      since = std::max<Epoch>(since, pg.interval_start_epoch());
    }
  }
  return out;
}

void MapManager::Reconcile() {
  absl::flat_hash_map<int32_t, Alive> alive;
  {
    absl::MutexLock lock(&mu_);
    if (!leader_) return;
    alive = alive_;
  }
  const std::map<PgId, Epoch> clean_since = CleanSince();
  // PGs clean since their past intervals: the records go with any other
  // change, or alone at most every kPruneEvery (during recovery PGs turn
  // clean one by one, and a map epoch per PG would make every client and
  // OSD take a new map each time; a record kept a little longer only
  // delays `osd rm`).
  constexpr absl::Duration kPruneEvery = absl::Seconds(10);
  bool prune_alone = false;
  {
    absl::MutexLock lock(&mu_);
    prune_alone = absl::Now() - last_prune_ >= kPruneEvery;
  }
  auto status = Mutate([&](OsdMap* m) -> absl::Status {
    bool changed = prune_alone && placement::PrunePastIntervals(clean_since, m);
    bool came_up = false;
    const int64_t now = NowMs();
    for (OsdInfo& osd : m->osds) {
      auto it = alive.find(osd.id.value());
      if (it != alive.end()) {
        const Alive& a = it->second;
        bool moved = (!a.host.empty() && a.host != osd.host) || a.rack != osd.rack;
        if (!osd.up || osd.addr != a.addr || moved) {
          if (!osd.up) {
            osd.up_from = m->epoch + 1;
            came_up = true;
            if (osd.auto_out) {  // out only because it was down: in again
              osd.in = true;
              osd.auto_out = false;
              LOG(INFO) << "event=osd_in osd=" << osd.id.value() << " reason=auto_out_booted";
            }
          }
          osd.up = true;
          osd.addr = a.addr;
          if (!a.host.empty()) osd.host = a.host;
          osd.rack = a.rack;
          osd.down_since_ms = 0;
          changed = true;
          LOG(INFO) << "event=osd_up osd=" << osd.id.value() << " addr=" << a.addr;
        }
      } else if (osd.up) {
        osd.up = false;
        osd.down_at = m->epoch + 1;
        osd.down_since_ms = now;
        changed = true;
        LOG(INFO) << "event=osd_down osd=" << osd.id.value();
      }
    }
    if (came_up) Rebalance(m);
    changed |= UpdateFullFlags(m, alive);
    return changed ? absl::OkStatus() : absl::AlreadyExistsError("unchanged");
  });
  if (!status.ok() && !absl::IsAlreadyExists(status)) {
    LOG(WARNING) << "event=reconcile_failed status=\"" << status << "\"";
  }
}

void MapManager::CheckDownOut(int64_t leading_since_ms) {
  const int64_t grace_ms = options_.down_out_interval_s * 1000;
  auto status = Mutate([&](OsdMap* m) -> absl::Status {
    bool changed = false;
    const int64_t now = NowMs();
    for (OsdInfo& osd : m->osds) {
      // Down for the whole grace as this leader saw it: a cluster restarted
      // after a long stop does not mark its OSDs out before they boot.
      const int64_t down_since = std::max(osd.down_since_ms, leading_since_ms);
      if (!osd.up && osd.in && osd.down_since_ms > 0 && now - down_since >= grace_ms) {
        osd.in = false;
        osd.auto_out = true;
        changed = true;
        LOG(INFO) << "event=osd_out osd=" << osd.id.value() << " down_for_ms="
                  << now - osd.down_since_ms;
      }
    }
    if (changed) Rebalance(m);
    return changed ? absl::OkStatus() : absl::AlreadyExistsError("unchanged");
  });
  if (!status.ok() && !absl::IsAlreadyExists(status)) {
    LOG(WARNING) << "event=down_out_failed status=\"" << status << "\"";
  }
}

void MapManager::Rebalance(OsdMap* map) {
  // Within 10% of each OSD's weight share; the item count bounds the map's
  // growth (one item per moved PG replica).
  constexpr double kMaxOverShare = 1.10;
  constexpr int kMaxItemsPerPool = 256;
  for (PoolInfo& pool : map->pools) {
    pool.upmap_items = placement::Balance(*map, pool, kMaxOverShare, kMaxItemsPerPool);
  }
}

// `change` returns AlreadyExists("unchanged") to publish nothing.
absl::Status MapManager::Mutate(const std::function<absl::Status(OsdMap*)>& change) {
  absl::MutexLock serial(&mutate_mu_);
  const std::string map_key = prefix_ + "osdmap";
  const std::string leader_key = prefix_ + "leader";
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::shared_ptr<const OsdMap> current;
    int64_t revision = 0, lease = 0;
    {
      absl::MutexLock lock(&mu_);
      if (!leader_) return NotLeader();
      current = map_;
      revision = map_revision_;
      lease = leader_lease_;
    }
    OsdMap next = *current;
    RETURN_IF_ERROR(change(&next));
    // In the same map that ends an interval, so no OSD acts on this epoch
    // without knowing it.
    placement::RecordPastIntervals(*current, &next);
    placement::PrunePastIntervals(CleanSince(), &next);
    next.epoch = current->epoch + 1;
    next.modified_ms = NowMs();
    RETURN_IF_ERROR(next.Validate());
    std::string bytes = next.Encode();
    ASSIGN_OR_RETURN(
        etcd::TxnResult txn,
        etcd_->Txn({etcd::Compare::ModRevision(map_key, etcd::Compare::kEqual, revision),
                    etcd::Compare::Lease(leader_key, etcd::Compare::kEqual, lease)},
                   {etcd::Op::Put(map_key, bytes)},
                   {etcd::Op::Get(map_key), etcd::Op::Get(leader_key)}));
    if (txn.succeeded) {
      {
        absl::MutexLock lock(&mu_);
        last_prune_ = absl::Now();
      }
      OnMapBytes(bytes, txn.revision);
      LOG(INFO) << "event=map_published epoch=" << next.epoch;
      return absl::OkStatus();
    }
    if (txn.ranges.size() > 1 &&
        (txn.ranges[1].kvs.empty() || txn.ranges[1].kvs[0].lease != lease)) {
      absl::MutexLock lock(&mu_);
      leader_ = false;
      return absl::AbortedError("lost the leader key while publishing a map");
    }
    if (!txn.ranges.empty() && !txn.ranges[0].kvs.empty()) {
      OnMapBytes(txn.ranges[0].kvs[0].value, txn.ranges[0].kvs[0].mod_revision);
    }
  }
  return absl::AbortedError("the map kept changing under us; try again");
}

}  // namespace weft::mds
