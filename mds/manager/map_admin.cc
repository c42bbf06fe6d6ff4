// Admin commands and `weft status` of the map manager.
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/config/config.h"
#include "common/ec/erasure_code.h"
#include "common/log/log.h"
#include "common/placement/placement.h"
#include "common/status/status.h"
#include "mds/manager/map_manager.h"

namespace weft::mds {
namespace {

constexpr uint32_t kDefaultPgNum = 128;
constexpr uint32_t kMaxPgNum = 65536;
constexpr uint32_t kMaxPoolSize = 10;
constexpr uint32_t kDefaultEcChunkBytes = 64 << 10;
constexpr uint32_t kEcChunkAlignBytes = 4 << 10;
constexpr uint32_t kMaxEcChunkBytes = 1 << 20;

absl::Status ValidateEcProfile(const PoolSpec& spec) {
  if (spec.ec_k < 1 || spec.ec_k > ec::kMaxDataShards) {
    return absl::InvalidArgumentError(
        absl::StrCat("ec k=", spec.ec_k, " is outside [1, ", ec::kMaxDataShards, "]"));
  }
  if (spec.ec_m < 1 || spec.ec_m > ec::kMaxParityShards) {
    return absl::InvalidArgumentError(
        absl::StrCat("ec m=", spec.ec_m, " is outside [1, ", ec::kMaxParityShards, "]"));
  }
  if (spec.ec_chunk_bytes != 0 &&
      (spec.ec_chunk_bytes % kEcChunkAlignBytes != 0 || spec.ec_chunk_bytes > kMaxEcChunkBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--chunk-size ", spec.ec_chunk_bytes, " must be a multiple of 4096 and at most 1 MiB"));
  }
  return absl::OkStatus();
}

bool ValidPoolName(const std::string& name) { return IsPlainName(name, 128); }

}  // namespace

absl::StatusOr<int32_t> MapManager::OsdCreate(const std::string& host, const std::string& rack,
                                              double weight, int32_t id) {
  if (!(weight > 0 && weight <= 1000)) {
    return absl::InvalidArgumentError(absl::StrCat("weight ", weight, " is outside (0, 1000]"));
  }
  if (id < -1) return absl::InvalidArgumentError(absl::StrCat("bad osd id ", id));
  int32_t created = -1;
  RETURN_IF_ERROR(Mutate([&](OsdMap* m) -> absl::Status {
    int32_t new_id = id >= 0 ? id : m->next_osd_id;
    if (m->FindOsd(OsdId(new_id)) != nullptr) {
      return absl::AlreadyExistsError(absl::StrCat("osd.", new_id, " already exists"));
    }
    OsdInfo osd;
    osd.id = OsdId(new_id);
    osd.host = host;
    osd.rack = rack;
    osd.weight = weight;
    osd.up = false;
    osd.in = true;
    auto pos = std::lower_bound(m->osds.begin(), m->osds.end(), osd.id,
                                [](const OsdInfo& a, OsdId b) { return a.id < b; });
    m->osds.insert(pos, osd);
    m->next_osd_id = std::max(m->next_osd_id, new_id + 1);
    Rebalance(m);
    created = new_id;
    return absl::OkStatus();
  }));
  return created;
}

absl::Status MapManager::SetRatio(const std::string& which, double ratio) {
  if (which != "full" && which != "nearfull" && which != "backfillfull") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown ratio '", which, "': full, backfillfull or nearfull"));
  }
  absl::flat_hash_map<int32_t, Alive> alive;
  {
    absl::MutexLock lock(&mu_);
    alive = alive_;
  }
  // OsdMap::Validate() refuses a ratio out of range, with the reason.
  absl::Status status = Mutate([&](OsdMap* m) -> absl::Status {
    double& target = which == "full"           ? m->full_ratio
                     : which == "backfillfull" ? m->backfillfull_ratio
                                               : m->nearfull_ratio;
    if (target == ratio) return absl::AlreadyExistsError("unchanged");
    target = ratio;
    UpdateFullFlags(m, alive);  // against the new ratio, in the same epoch
    return absl::OkStatus();
  });
  if (absl::IsAlreadyExists(status)) return absl::OkStatus();
  return status;
}

absl::Status MapManager::OsdSetIn(int32_t id, bool in) {
  absl::Status status = Mutate([&](OsdMap* m) -> absl::Status {
    OsdInfo* osd = m->FindOsd(OsdId(id));
    if (osd == nullptr) return absl::NotFoundError(absl::StrCat("osd.", id, " does not exist"));
    // An admin's word stands: no automatic mark-in of an OSD set out by hand.
    const bool was_auto = osd->auto_out;
    osd->auto_out = false;
    if (osd->in == in) return was_auto ? absl::OkStatus() : absl::AlreadyExistsError("unchanged");
    osd->in = in;
    Rebalance(m);
    return absl::OkStatus();
  });
  return absl::IsAlreadyExists(status) ? absl::OkStatus() : status;
}

absl::Status MapManager::OsdReweight(int32_t id, double reweight) {
  if (!(reweight >= 0 && reweight <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("reweight ", reweight, " is outside [0, 1]"));
  }
  absl::Status status = Mutate([&](OsdMap* m) -> absl::Status {
    OsdInfo* osd = m->FindOsd(OsdId(id));
    if (osd == nullptr) return absl::NotFoundError(absl::StrCat("osd.", id, " does not exist"));
    if (osd->reweight == reweight) return absl::AlreadyExistsError("unchanged");
    osd->reweight = reweight;
    Rebalance(m);
    return absl::OkStatus();
  });
  return absl::IsAlreadyExists(status) ? absl::OkStatus() : status;
}

absl::Status MapManager::OsdRemove(int32_t id, bool purge) {
  std::shared_ptr<const OsdMap> now = map();
  if (now == nullptr) return absl::UnavailableError("no map yet");
  const OsdInfo* osd = now->FindOsd(OsdId(id));
  if (osd == nullptr) return absl::NotFoundError(absl::StrCat("osd.", id, " does not exist"));
  if (osd->up) {
    return absl::FailedPreconditionError(
        absl::StrCat("osd.", id, " is up: stop its weft-osd first"));
  }
  if (osd->in) {
    return absl::FailedPreconditionError(absl::StrCat(
        "osd.", id, " is in: mark it out (weft osd out ", id,
        ") and wait until every pg is active+clean, so that it holds no needed copy"));
  }
  // Out and down: what it held has a place elsewhere; it is safe to forget
  // once every PG says its copies are complete there.
  pb::StatusReply status;
  RETURN_IF_ERROR(Status(&status));
  for (const auto& [state, count] : status.pg_states()) {
    if (state.rfind("active+clean", 0) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "not safe to remove osd.", id, ": ", count, " pgs are ", state,
          " (it may hold the only copy of something); wait until every pg is active+clean"));
    }
  }
  RETURN_IF_ERROR(Mutate([&](OsdMap* m) -> absl::Status {
    auto it = std::find_if(m->osds.begin(), m->osds.end(),
                           [&](const OsdInfo& o) { return o.id == OsdId(id); });
    if (it == m->osds.end()) return absl::NotFoundError(absl::StrCat("osd.", id, " does not exist"));
    if (it->up || it->in) {
      return absl::FailedPreconditionError(absl::StrCat("osd.", id, " changed state: try again"));
    }
    // A PG that has not been clean since this OSD was in its acting set may
    // need its copy to go active (past intervals).
    for (const PoolInfo& pool : m->pools) {
      for (const PastInterval& past : pool.past_intervals) {
        if (std::find(past.acting.begin(), past.acting.end(), OsdId(id)) != past.acting.end()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "not safe to remove osd.", id, ": pg ", PgId{pool.id, past.pg_seed}.ToString(),
              " has not been clean since it was a member (it may hold the newest writes); "
              "wait until every pg is active+clean"));
        }
      }
    }
    m->osds.erase(it);
    Rebalance(m);
    return absl::OkStatus();
  }));
  if (purge) {
    // Its liveness key, if a lease still holds it, and its statistics.
    auto deleted = etcd_->Delete(absl::StrCat(prefix_, "alive/osd.", id));
    if (!deleted.ok()) LOG(WARNING) << "event=osd_purge osd=" << id << " status=" << deleted.status();
  }
  LOG(INFO) << "event=osd_removed osd=" << id << " purge=" << purge;
  return absl::OkStatus();
}

namespace {

// Drops the entries expired by now.
void PruneBlocklist(OsdMap* m) {
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  std::erase_if(m->blocklist, [&](const BlocklistEntry& b) { return b.ExpiredAt(now_ms); });
}

}  // namespace

absl::StatusOr<Epoch> MapManager::BlocklistAdd(const std::string& client, int64_t expires_ms) {
  if (client.empty() || client.size() > 4096) {
    return absl::InvalidArgumentError("a blocklisted client name is 1..4096 bytes");
  }
  RETURN_IF_ERROR(Mutate([&](OsdMap* m) -> absl::Status {
    PruneBlocklist(m);
    for (BlocklistEntry& b : m->blocklist) {
      if (b.client != client) continue;
      b.expires_ms = expires_ms;
      b.added = m->epoch + 1;
      return absl::OkStatus();
    }
    m->blocklist.push_back(BlocklistEntry{client, m->epoch + 1, expires_ms});
    return absl::OkStatus();
  }));
  return map()->epoch;
}

absl::Status MapManager::BlocklistRemove(const std::string& client) {
  return Mutate([&](OsdMap* m) -> absl::Status {
    PruneBlocklist(m);
    const size_t before = m->blocklist.size();
    std::erase_if(m->blocklist, [&](const BlocklistEntry& b) { return b.client == client; });
    if (m->blocklist.size() == before) {
      return absl::NotFoundError(absl::StrCat("client ", client, " is not blocklisted"));
    }
    return absl::OkStatus();
  });
}

absl::Status MapManager::PoolCreate(const PoolSpec& spec) {
  if (!ValidPoolName(spec.name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pool name '", spec.name, "' must be 1..128 characters of letters, digits, - _ ."));
  }
  const bool erasure = spec.ec_k != 0 || spec.ec_m != 0;
  uint32_t size = spec.size;
  uint32_t min_size = 0;
  uint32_t chunk_bytes = 0;
  if (erasure) {
    RETURN_IF_ERROR(ValidateEcProfile(spec));
    size = spec.ec_k + spec.ec_m;
    chunk_bytes = spec.ec_chunk_bytes != 0 ? spec.ec_chunk_bytes : kDefaultEcChunkBytes;
    // k shards are enough to read; one more keeps a write durable against the
    // loss of any single shard while degraded.
    min_size = spec.min_size != 0 ? spec.min_size : std::min(size, spec.ec_k + 1);
    if (min_size < spec.ec_k || min_size > size) {
      return absl::InvalidArgumentError(absl::StrCat("--min-size ", min_size, " must be within [k=",
                                                     spec.ec_k, ", k+m=", size, "]"));
    }
  } else {
    if (size < 1 || size > kMaxPoolSize) {
      return absl::InvalidArgumentError(
          absl::StrCat("--size ", size, " is outside [1, ", kMaxPoolSize, "]"));
    }
    min_size = spec.min_size != 0 ? spec.min_size : size - size / 2;
    if (min_size < 1 || min_size > size) {
      return absl::InvalidArgumentError(
          absl::StrCat("--min-size ", min_size, " must be within [1, size=", size, "]"));
    }
  }
  uint32_t pg_num = spec.pg_num != 0 ? spec.pg_num : kDefaultPgNum;
  if (pg_num > kMaxPgNum) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pg-num ", pg_num, " is outside [1, ", kMaxPgNum, "]"));
  }
  return Mutate([&](OsdMap* m) -> absl::Status {
    if (m->FindPoolByName(spec.name) != nullptr) {
      return absl::AlreadyExistsError(absl::StrCat("pool '", spec.name, "' already exists"));
    }
    FailureDomain domain = m->default_failure_domain;
    if (!spec.failure_domain.empty()) {
      ASSIGN_OR_RETURN(domain, ParseFailureDomain(spec.failure_domain));
    }
    size_t domains = placement::CountFailureDomains(*m, domain);
    if (domains < size) {
      return absl::FailedPreconditionError(absl::StrCat(
          erasure ? absl::StrCat("ec ", spec.ec_k, "+", spec.ec_m, " places k+m=", size,
                                 " shards on distinct failure domains: it needs ")
                  : absl::StrCat("pool size ", size, " needs "),
          size, " failure domains of type ",
          FailureDomainName(domain), ", the cluster has ", domains,
          domain == FailureDomain::kOsd ? "" : " (on a single host use --failure-domain osd)"));
    }
    PoolInfo pool;
    pool.id = PoolId(m->next_pool_id++);
    pool.name = spec.name;
    pool.type = erasure ? PoolType::kErasure : PoolType::kReplicated;
    pool.size = size;
    if (erasure) {
      pool.ec_k = spec.ec_k;
      pool.ec_m = spec.ec_m;
      pool.ec_chunk_bytes = chunk_bytes;
    }
    pool.min_size = min_size;
    pool.pg_num = pg_num;
    pool.failure_domain = domain;
    pool.created_ms = absl::ToUnixMillis(absl::Now());
    m->pools.push_back(pool);
    Rebalance(m);
    return absl::OkStatus();
  });
}

absl::Status MapManager::PoolSet(const std::string& name, const std::string& key,
                                 const std::string& value) {
  if (key != "min_size") {
    return absl::InvalidArgumentError(
        absl::StrCat("pool setting '", key, "' is not one of: min_size"));
  }
  uint32_t min_size = 0;
  if (!absl::SimpleAtoi(value, &min_size)) {
    return absl::InvalidArgumentError(absl::StrCat("min_size '", value, "' is not a number"));
  }
  return Mutate([&](OsdMap* m) -> absl::Status {
    auto it = std::find_if(m->pools.begin(), m->pools.end(),
                           [&](const PoolInfo& p) { return p.name == name; });
    if (it == m->pools.end()) return absl::NotFoundError(absl::StrCat("no pool '", name, "'"));
    const uint32_t low = it->type == PoolType::kErasure ? it->ec_k : 1;
    if (min_size < low || min_size > it->size) {
      return absl::InvalidArgumentError(
          absl::StrCat("min_size ", min_size, " of pool '", name, "' must be within [",
                       it->type == PoolType::kErasure ? "k=" : "", low, ", ",
                       it->type == PoolType::kErasure ? "k+m=" : "size=", it->size, "]"));
    }
    if (it->min_size == min_size) {
      return absl::AlreadyExistsError(
          absl::StrCat("pool '", name, "' already has min_size ", min_size));
    }
    it->min_size = min_size;
    return absl::OkStatus();
  });
}

absl::Status MapManager::PoolRemove(const std::string& name, const std::string& confirm) {
  if (confirm != name) {
    return absl::InvalidArgumentError(absl::StrCat(
        "removing pool '", name, "' destroys its data: confirm with --yes-i-really-mean-it"));
  }
  return Mutate([&](OsdMap* m) -> absl::Status {
    auto it = std::find_if(m->pools.begin(), m->pools.end(),
                           [&](const PoolInfo& p) { return p.name == name; });
    if (it == m->pools.end()) return absl::NotFoundError(absl::StrCat("no pool '", name, "'"));
    if (pool_user_) {
      std::string user = pool_user_(it->id);
      if (!user.empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("pool '", name, "' is used by filesystem ", user));
      }
    }
    m->pools.erase(it);
    return absl::OkStatus();
  });
}

// --- Status --------------------------------------------------------------------

void MapManager::SetExtraHealth(std::function<void(pb::StatusReply*)> add) {
  absl::MutexLock lock(&mu_);
  extra_health_ = std::move(add);
}

namespace {

void AddCheck(pb::StatusReply* reply, const std::string& severity, const std::string& code,
              const std::string& message) {
  auto* check = reply->add_checks();
  check->set_severity(severity);
  check->set_code(code);
  check->set_message(message);
}

bool IsActive(const std::string& state) { return state.rfind("active", 0) == 0; }

// OSD_SLOW_DISK: the up OSDs whose recent commits stand out (slow_disks.h).
void AddSlowDiskChecks(const OsdMap& map, const std::map<int32_t, pb::OsdAlive>& alive,
                       const SlowDiskOptions& options, pb::StatusReply* reply) {
  std::vector<DiskLatency> disks;
  for (const auto& [id, a] : alive) {
    const OsdInfo* info = map.FindOsd(OsdId(id));
    if (info == nullptr || !info->up) continue;
    disks.push_back({id, a.commits(), static_cast<double>(a.commit_latency_us()) / 1000});
  }
  double median_ms = -1;
  for (const DiskLatency& d : SlowDisks(disks, options, &median_ms)) {
    std::string message = absl::StrFormat(
        "osd.%d's disk is slow: half of its %d writes in the last 30 s took over %.0f ms", d.osd,
        d.commits, d.latency_ms);
    if (median_ms >= 0) absl::StrAppendFormat(&message, " (%.1f ms on the median OSD)", median_ms);
    AddCheck(reply, "WARN", "OSD_SLOW_DISK", message);
  }
}

}  // namespace

absl::Status MapManager::Status(pb::StatusReply* reply) {
  std::shared_ptr<const OsdMap> map = this->map();
  if (!map) return absl::UnavailableError("no map yet");
  ASSIGN_OR_RETURN(etcd::RangeResult alive_kvs, etcd_->GetPrefix(prefix_ + "alive/"));
  std::map<int32_t, pb::OsdAlive> alive;
  for (const auto& kv : alive_kvs.kvs) {
    pb::OsdAlive a;
    if (a.ParseFromString(kv.value)) alive[a.id()] = std::move(a);
  }
  reply->set_fsid(map->fsid);
  reply->set_osdmap_epoch(map->epoch);
  reply->set_leader(LeaderAddr());
  reply->set_osds(map->osds.size());
  std::vector<std::string> down;
  const int64_t now = absl::ToUnixMillis(absl::Now());
  for (const OsdInfo& osd : map->osds) {
    if (osd.up) reply->set_osds_up(reply->osds_up() + 1);
    if (osd.in) reply->set_osds_in(reply->osds_in() + 1);
    if (!osd.up && osd.in) {
      down.push_back(osd.down_since_ms > 0
                         ? absl::StrCat("osd.", osd.id.value(), " (down ",
                                        (now - osd.down_since_ms) / 1000, " s)")
                         : absl::StrCat("osd.", osd.id.value(), " (never started)"));
    }
  }
  // PG states: as reported by each PG's primary under this map; "unknown"
  // when it has not yet. A report from before the latest map (OSDs publish
  // every few seconds) may describe an acting set that no longer exists:
  // "active+clean" just after an OSD went out would be a claim about the
  // old shards, so it does not count.
  std::map<std::string, std::pair<int32_t, std::string>> reported;  // pgid -> (osd, state)
  uint64_t copies_left = 0;  // recovery, from the reports under this map
  uint64_t bytes_left = 0;
  // pgid -> scrub errors, from the PG's primary whatever the epoch of its
  // report (damage stays true across map changes; a primary lists only the
  // PGs it still leads, and one that repaired a PG reports 0).
  std::map<std::string, uint64_t> damaged;
  std::map<std::string, std::string> down_why;  // pgid -> the past members it waits for
  for (const auto& [id, a] : alive) {
    reply->set_read_repairs(reply->read_repairs() + a.read_repairs());
    for (const auto& pg : a.pgs()) {
      if (pg.scrub_errors() > 0) damaged[pg.pgid()] = pg.scrub_errors();
    }
    if (a.epoch() < map->epoch) continue;
    for (const auto& pg : a.pgs()) {
      reported[pg.pgid()] = {id, pg.state()};
      copies_left += pg.objects_missing();
      bytes_left += pg.bytes_missing();
      if (pg.blocked_by_size() > 0) down_why[pg.pgid()] = absl::StrJoin(pg.blocked_by(), "; ");
    }
  }
  uint32_t inactive = 0, degraded = 0, below_min = 0, reported_pgs = 0;
  std::vector<std::string> blocked;  // "pgid (acting N < min_size M)", the first few
  for (const PoolInfo& pool : map->pools) {
    const placement::PoolPlacement placement(*map, pool);
    for (uint32_t seed = 0; seed < pool.pg_num; ++seed) {
      placement::PgMapping mapping = placement.Map(seed);
      std::string state;
      size_t acting = 0;
      for (OsdId osd : mapping.acting) acting += osd != kNoOsd;
      if (mapping.primary == kNoOsd) {
        state = "down";
      } else {
        auto it = reported.find(PgId{pool.id, seed}.ToString());
        const bool current = it != reported.end() && it->second.first == mapping.primary.value();
        reported_pgs += current;
        state = current ? it->second.second : "unknown";
      }
      if (acting < pool.min_size) {
        ++below_min;
        if (blocked.size() < 8) {
          blocked.push_back(absl::StrCat(PgId{pool.id, seed}.ToString(), " (", acting,
                                         " of ", pool.size, " up < min_size ", pool.min_size,
                                         ")"));
        }
      }
      if (!IsActive(state)) ++inactive;
      if (state.find("degraded") != std::string::npos) ++degraded;
      if (state.find("backfilling") != std::string::npos) {
        reply->set_backfilling_pgs(reply->backfilling_pgs() + 1);
      }
      (*reply->mutable_pg_states())[state]++;
      reply->set_pgs(reply->pgs() + 1);
    }
  }
  reply->set_pools(map->pools.size());
  uint64_t used = 0, avail = 0, total = 0, objects = 0;
  // Space: each host's file system once, however many OSDs' data dirs it
  // holds (six OSDs on one disk are one disk's bytes, not six).
  std::set<std::string> filesystems;
  double worst_fill = 0;
  std::string worst;
  for (const auto& [id, a] : alive) {
    auto* io = reply->add_osd_io();
    io->set_id(id);
    io->set_read_bytes(a.read_bytes());
    io->set_write_bytes(a.write_bytes());
    io->set_recovery_bytes(a.recovery_bytes());
    used += a.bytes_used();
    if (a.fs_id().empty() || filesystems.insert(a.fs_id()).second) {
      avail += a.fs_avail_bytes();
      total += a.fs_total_bytes();
    }
    objects += a.objects();
    if (const double fill = Fill(a); fill > worst_fill) {
      worst_fill = fill;
      worst = absl::StrCat("osd.", id);
    }
  }
  {
    // Recovery: copies and bytes left now, and how fast they fell over the
    // window.
    reply->set_recovery_objects_left(copies_left);
    reply->set_recovery_bytes_left(bytes_left);
    const absl::Time t = absl::Now();
    absl::MutexLock lock(&progress_mu_);
    // Only a status every PG reported into is a sample: just after a map
    // change the reports start over, and "0 left" would read as progress.
    if (reported_pgs == reply->pgs()) {
      // More left than before: new work (an OSD went out), so the rate
      // counts from here.
      if (!recovery_samples_.empty() && copies_left > recovery_samples_.back().objects) {
        recovery_samples_.clear();
      }
      recovery_samples_.push_back({t, copies_left, bytes_left});
      while (recovery_samples_.size() > 2 &&
             t - recovery_samples_.front().at > absl::Seconds(30)) {
        recovery_samples_.pop_front();
      }
      const RecoverySample& first = recovery_samples_.front();
      const double dt = absl::ToDoubleSeconds(t - first.at);
      if (dt >= 1 && first.objects > copies_left) {
        reply->set_recovery_objects_sec((first.objects - copies_left) / dt);
      }
      if (dt >= 1 && first.bytes > bytes_left) {
        reply->set_recovery_bytes_sec((first.bytes - bytes_left) / dt);
      }
    }
  }
  reply->set_bytes_used(used);
  reply->set_bytes_avail(avail);
  reply->set_bytes_total(total);
  reply->set_objects(objects);

  if (map->osds.empty()) AddCheck(reply, "WARN", "NO_OSDS", "no OSDs exist (weft osd create)");
  if (!down.empty()) {
    AddCheck(reply, "WARN", "OSD_DOWN",
             absl::StrCat(down.size(), " osds down: ", absl::StrJoin(down, ", ")));
  }
  if (!down_why.empty()) {
    std::vector<std::string> lines;
    for (const auto& [pgid, why] : down_why) {
      if (lines.size() == 8) {
        lines.push_back("...");
        break;
      }
      lines.push_back(absl::StrCat(pgid, " waits for ", why));
    }
    AddCheck(reply, "ERR", "PG_DOWN",
             absl::StrCat(down_why.size(), " pg", down_why.size() == 1 ? "" : "s",
                          " down: the OSDs that may hold their newest writes are down; I/O "
                          "blocked until one returns: ",
                          absl::StrJoin(lines, ", ")));
  }
  if (below_min > 0) {
    AddCheck(reply, "ERR", "PG_UNAVAILABLE",
             absl::StrCat(below_min, " pgs have fewer members than min_size, I/O blocked: ",
                          absl::StrJoin(blocked, ", "), below_min > blocked.size() ? ", ..." : "",
                          " (bring OSDs back, or weft pool set NAME min_size M)"));
  } else if (inactive > 0) {
    AddCheck(reply, "WARN", "PG_AVAILABILITY",
             absl::StrCat(inactive, " pgs not active yet (peering or not reported)"));
  }
  if (degraded > 0) {
    AddCheck(reply, "WARN", "PG_DEGRADED", absl::StrCat(degraded, " pgs degraded"));
  }
  if (!damaged.empty()) {
    for (const auto& [pgid, errors] : damaged) {
      reply->add_inconsistent_pgs(pgid);
      reply->set_scrub_errors(reply->scrub_errors() + errors);
    }
    AddCheck(reply, "ERR", "OSD_SCRUB_ERRORS", absl::StrCat(reply->scrub_errors(), " scrub errors"));
    AddCheck(reply, "ERR", "PG_DAMAGED",
             absl::StrCat("possible data damage: ", damaged.size(), " pg",
                          damaged.size() == 1 ? "" : "s", " inconsistent: ",
                          absl::StrJoin(reply->inconsistent_pgs(), ", "),
                          " (weft pg list-inconsistent-obj PGID; weft pg repair PGID)"));
  }
  if (worst_fill >= map->full_ratio) {
    AddCheck(reply, "ERR", "OSD_FULL",
             absl::StrCat(worst, " is ", static_cast<int>(worst_fill * 100), "% full"));
  } else if (worst_fill >= map->nearfull_ratio) {
    AddCheck(reply, "WARN", "OSD_NEARFULL",
             absl::StrCat(worst, " is ", static_cast<int>(worst_fill * 100), "% full"));
  }
  std::vector<std::string> backfillfull;
  for (const OsdInfo& osd : map->osds) {
    if (osd.backfillfull && !osd.full) backfillfull.push_back(absl::StrCat("osd.", osd.id.value()));
  }
  if (!backfillfull.empty()) {
    AddCheck(reply, "WARN", "OSD_BACKFILLFULL",
             absl::StrCat(absl::StrJoin(backfillfull, ", "), " past the backfillfull ratio ",
                          map->backfillfull_ratio,
                          ": no backfill into ", backfillfull.size() == 1 ? "it" : "them",
                          " (writes go on until the full ratio ", map->full_ratio, ")"));
  }
  AddSlowDiskChecks(*map, alive, options_.slow_disks, reply);
  for (const PoolInfo& pool : map->pools) {
    if (pool.type == PoolType::kErasure && pool.min_size == pool.ec_k) {
      AddCheck(reply, "WARN", "POOL_MIN_SIZE_K",
               absl::StrCat("pool '", pool.name, "' takes writes with only k=", pool.ec_k,
                            " shards up: one more failure then loses them (k+1 is safe)"));
    }
    size_t domains = placement::CountFailureDomains(*map, pool.failure_domain);
    if (domains < pool.size) {
      AddCheck(reply, "WARN", "POOL_UNDERSIZED",
               absl::StrCat("pool '", pool.name, "' wants ", pool.size, " copies, only ",
                            domains, " failure domains are in"));
    }
  }
  std::function<void(pb::StatusReply*)> extra;
  {
    absl::MutexLock lock(&mu_);
    extra = extra_health_;
  }
  if (extra) extra(reply);
  std::string health = "HEALTH_OK";
  for (const auto& check : reply->checks()) {
    if (check.severity() == "ERR") health = "HEALTH_ERR";
    if (check.severity() == "WARN" && health == "HEALTH_OK") health = "HEALTH_WARN";
  }
  reply->set_health(health);
  return absl::OkStatus();
}

}  // namespace weft::mds
