// The OSD map: which OSDs exist, where they are, whether they are up and in, and
// which pools exist. Published by the map manager to etcd (/weft/<fsid>/osdmap)
// with a new epoch on every change; every daemon and client holds a copy and
// computes placement from it (common/placement). These are plain values: no
// locking, no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/cluster_map/types.h"

namespace weft {

// What two replicas (or two EC shards) of one PG must not share.
enum class FailureDomain { kOsd, kHost, kRack };
// "osd", "host", "rack".
absl::string_view FailureDomainName(FailureDomain domain);
absl::StatusOr<FailureDomain> ParseFailureDomain(absl::string_view name);

enum class PoolType { kReplicated, kErasure };
// "replicated", "erasure".
absl::string_view PoolTypeName(PoolType type);
absl::StatusOr<PoolType> ParsePoolType(absl::string_view name);

struct OsdInfo {
  OsdId id;
  std::string addr;  // "127.0.0.1:6801"
  std::string host;  // Failure domain labels; empty means "its own host/rack"
  std::string rack;  // (see placement.h).
  // Relative capacity. 0 (or out) means the OSD receives no PGs.
  double weight = 1.0;
  // up: the daemon is alive (its etcd liveness key exists). in: it is part of
  // placement. A down OSD stays in for a grace period so that a restart moves
  // no data.
  bool up = false;
  bool in = true;
  Epoch up_from = 0;          // epoch of the last down -> up transition
  Epoch down_at = 0;          // epoch of the last up -> down transition
  int64_t down_since_ms = 0;  // wall time of that transition (for the out grace)
  // Marked out by the map manager's down-out timer rather than by an admin:
  // it is marked in again when it comes back up (Ceph's auto-out-in).
  bool auto_out = false;
  // Its file system is at least full_ratio full (set by the map manager from
  // the OSD's statistics): clients' data writes get ENOSPC.
  bool full = false;
  // Its file system is at least backfillfull_ratio full: PGs do not
  // backfill into it (they wait, backfill_toofull); writes still go on.
  bool backfillfull = false;
  // The operator's override in [0, 1] (weft osd reweight): placement gives
  // the OSD weight × reweight, so 0.5 moves about half its data away and
  // keeps its capacity weight for later.
  double reweight = 1.0;
  double placement_weight() const { return weight * reweight; }

  friend bool operator==(const OsdInfo&, const OsdInfo&) = default;
};

// A per-PG exception to placement (Ceph's pg_upmap_items): in PG `pg_seed` of
// the pool, the member `from` of the computed `up` set is replaced by `to`, at
// the same position. Written by the balancer (common/placement/balancer.h).
// Placement applies an item only while it still makes sense (`from` in the
// set; `to` in, weight > 0, not in the set, in a failure domain no other member
// uses) and ignores it otherwise, so a stale item never breaks placement.
struct UpmapItem {
  uint32_t pg_seed = 0;
  OsdId from;
  OsdId to;

  friend bool operator==(const UpmapItem&, const UpmapItem&) = default;
  // The order of PoolInfo::upmap_items, and the order in which placement
  // applies one PG's items: by seed, then `from`, then `to`.
  friend auto operator<=>(const UpmapItem&, const UpmapItem&) = default;
};

// An interval of one PG that may have acknowledged writes: its acting set
// had a primary and at least min_size members, so peering may have taken it
// active. Every write acknowledged in it is on every member of `acting`
// (on every shard, for erasure pools). Recorded by the map manager when the
// PG's acting set or primary changes (the interval ended at `last_epoch`),
// and dropped once the PG has been reported active+clean in an interval that
// began after it. A primary does not go active while some recorded interval
// has no member it can hear from (replicated) or fewer than k members in its
// acting set (erasure): its PG is `down`, waiting for them.
struct PastInterval {
  uint32_t pg_seed = 0;
  Epoch last_epoch = 0;
  std::vector<OsdId> acting;  // the members that were up, in placement order

  friend bool operator==(const PastInterval&, const PastInterval&) = default;
};

struct PoolInfo {
  PoolId id;
  std::string name;
  PoolType type = PoolType::kReplicated;
  // Replicated: number of copies. Erasure: ec_k + ec_m shards.
  uint32_t size = 3;
  // Writes are refused while fewer than min_size members are acting.
  uint32_t min_size = 2;
  uint32_t pg_num = 0;
  FailureDomain failure_domain = FailureDomain::kHost;
  uint32_t ec_k = 0, ec_m = 0, ec_chunk_bytes = 0;  // erasure pools only
  int64_t created_ms = 0;
  // Placement exceptions, sorted (UpmapItem's order). Within one PG: `from`
  // values distinct, `to` values distinct, from != to, at most `size` items;
  // every `to` exists in the map; pg_seed < pg_num. Validate checks all of it.
  std::vector<UpmapItem> upmap_items;
  // Sorted by (pg_seed, last_epoch); pg_seed < pg_num; acting not empty.
  std::vector<PastInterval> past_intervals;

  friend bool operator==(const PoolInfo&, const PoolInfo&) = default;
};

// A client whose requests OSDs refuse until `expires_ms` (0: until the entry
// is removed): an MDS that lost its rank (MdsDaemon::FenceHolder), or one an
// operator fenced (`weft osd blocklist add`).
struct BlocklistEntry {
  std::string client;
  Epoch added = 0;
  int64_t expires_ms = 0;

  bool ExpiredAt(int64_t now_ms) const { return expires_ms != 0 && expires_ms <= now_ms; }

  friend bool operator==(const BlocklistEntry&, const BlocklistEntry&) = default;
};

// Past this fill of its disk an OSD refuses every write that adds data, the
// MDS's too: what is left keeps its store (LevelDB, deferred writes)
// working. The map's full ratio may not exceed it.
inline constexpr double kFailsafeFullRatio = 0.97;

inline constexpr double kDefaultBackfillfullRatio = 0.90;

// The used share of a filesystem from statfs figures (0 when unknown).
inline double DiskFill(uint64_t total_bytes, uint64_t avail_bytes) {
  return total_bytes == 0 ? 0 : 1.0 - static_cast<double>(avail_bytes) / total_bytes;
}

struct OsdMap {
  std::string fsid;
  Epoch epoch = 0;
  int64_t modified_ms = 0;
  std::vector<OsdInfo> osds;    // sorted by id, ids unique (FindOsd relies on it)
  std::vector<PoolInfo> pools;  // sorted by id, ids and names unique
  std::vector<BlocklistEntry> blocklist;
  // nearfull warns, backfillfull stops backfill into an OSD, full refuses
  // clients' new data (0 < nearfull <= backfillfull <= full <= failsafe).
  double full_ratio = 0.95, nearfull_ratio = 0.85, backfillfull_ratio = kDefaultBackfillfullRatio;
  uint32_t flags = 0;
  FailureDomain default_failure_domain = FailureDomain::kHost;
  int32_t next_osd_id = 0;     // greater than every id in `osds`
  uint32_t next_pool_id = 1;   // greater than every id in `pools`

  // nullptr when absent. Binary search: `osds` must be sorted.
  const OsdInfo* FindOsd(OsdId id) const;
  OsdInfo* FindOsd(OsdId id);
  // nullptr when absent. Binary search: `pools` must be sorted.
  const PoolInfo* FindPool(PoolId id) const;
  const PoolInfo* FindPoolByName(absl::string_view name) const;
  // False for an OSD that is not in the map.
  bool IsUp(OsdId id) const;
  bool IsIn(OsdId id) const;
  // The first up and in OSD marked full, if any: while there is one, the
  // cluster refuses writes that add data (as Ceph's cluster-wide full flag).
  const OsdInfo* FirstFull() const;
  // The blocklist entry naming `client` that has not expired at `now_ms`, or
  // nullptr. OSDs refuse every request of such a client.
  const BlocklistEntry* FindBlocklisted(absl::string_view client, int64_t now_ms) const;

  // OK if the map keeps the invariants above and every pool is usable: sizes and
  // ratios in range, EC size == k + m, known enums, finite weights >= 0, upmap
  // items as PoolInfo::upmap_items describes.
  // InvalidArgument naming the first violation otherwise. The map manager calls
  // it before publishing; Decode calls it on everything it accepts.
  absl::Status Validate() const;

  // Protobuf bytes of weft.pb.OsdMap with an integrity trailer (format in
  // proto/cluster_map.proto). Deterministic for a given map and binary.
  std::string Encode() const;
  // The inverse of Encode. DataLoss for bytes that are truncated, corrupted or
  // not an encoded map; InvalidArgument for a well-formed map that fails
  // Validate(). Never crashes, whatever the input.
  static absl::StatusOr<OsdMap> Decode(absl::string_view bytes);

  friend bool operator==(const OsdMap&, const OsdMap&) = default;
};

}  // namespace weft
