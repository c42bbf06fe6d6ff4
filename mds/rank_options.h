// How a rank is configured (RankOptions, from weft.conf through the daemon)
// and what it takes from the world around it (RankEnv): the object layer,
// the clock, what the daemon knows of the cluster, and how to wait. The
// daemon gives the real ones; the simulation (tests/sim) gives its own.
// A leaf header: operations include it without the rank.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock/clock.h"
#include "common/cluster_map/types.h"
#include "common/objects/objects.h"
#include "mds/fs/layout.h"
#include "mds/inode.h"
#include "mds/journal/journal.h"
#include "proto/common.pb.h"

namespace weft::mds {

struct RankOptions {
  uint32_t fs_id = 0;
  uint32_t rank = 0;  // which of the filesystem's ranks (FsInfo.ranks)
  std::string fs_name;
  PoolId metadata_pool;
  PoolId data_pool;                       // default layout pool
  uint64_t cache_max_bytes = 1ull << 30;  // mds_cache_memory_limit
  int64_t session_timeout_ms = 60000;
  int64_t flush_interval_ms = 1000;
  int64_t rstat_interval_ms = 1000;
  size_t frag_split_entries = 10000;
  size_t completed_per_session_max = 4096;
  // Early ("unsafe") replies while at most this many events are not durable;
  // beyond it a reply waits for the journal (backpressure).
  uint64_t unsafe_events_max = 4096;
  // After a restart, how long the rank waits for the sessions it knew to
  // reconnect and resend their unsafe requests before serving new ones.
  int64_t reconnect_timeout_ms = 10000;
  // Directory leases (mds/caps/dir_leases.h): how long a grant is trusted;
  // 0 grants none. Must be shorter than reconnect_timeout_ms: a restarted
  // rank serves nobody before every lease of its earlier life ran out.
  int64_t dir_lease_ms = 5000;
  // How long an operation waits for another session to answer a recall
  // (flush the buffered writes of a file it is about to show) or a data
  // invalidation (mds_revoke_timeout); then that session is evicted, fenced
  // at the OSDs first, and the operation goes on with what the MDS has. A
  // session that cannot be fenced (no OSD identity) is passed over.
  int64_t revoke_timeout_ms = 30000;
  // Caps and directory leases one session may hold (mds_max_caps_per_client;
  // 0: no limit), how many the rank asks back from it at once
  // (mds_recall_max_caps) and how often (mds_recall_interval_ms): see
  // Leases::RecallForMemory.
  uint64_t max_caps_per_client = 1000000;
  uint64_t recall_max_caps = 30000;
  int64_t recall_interval_ms = 1000;
  JournalOptions journal;
  pb::FileLayout default_layout;             // pool 0 = data_pool, 4 MiB objects
  uint64_t object_bytes_max = 128ull << 20;  // osd_max_object_size: no layout above it
  // New regular files keep up to this many bytes of data in their inode
  // (InodeRec.data_inline), never more than their layout's stripe unit; 0: none.
  uint64_t inline_max_bytes = 0;
  // Background threads: the journal's writer, the flusher and the janitor.
  // Without them the owner drives the rank's background steps itself
  // (MdsRank::FlushOnce, ExpireSessions, ...: the simulation), and object
  // I/O runs on the calling thread, one request after the other.
  bool threads = true;
};

// Capacity for statfs, from the cluster map manager.
struct Capacity {
  uint64_t bytes_total = 0, bytes_avail = 0, bytes_used = 0;
};

// What a rank takes from the daemon around it (MdsDaemon; the simulation in
// tests/sim gives its own). The callbacks are called under the rank's lock,
// so they must not do I/O: they read what the daemon holds in memory.
struct RankEnv {
  objects::Objects* objects = nullptr;    // the metadata and data pools
  std::function<Capacity()> capacity;     // statfs
  std::function<DataPools()> data_pools;  // the filesystem's pools, by the maps
  // An OSD is past the full ratio (by the map the daemon follows).
  std::function<bool()> cluster_full;
  Clock* clock = Clock::Real();
  // How a request's thread waits, with `mu` held, until `ready` holds or the
  // clock reaches `deadline` (null: mu->AwaitWithDeadline, the real clock).
  std::function<void(absl::Mutex* mu, const std::function<bool()>& ready, absl::Time deadline)>
      wait;
  // The journal broke: the events applied to the cache can no longer become
  // durable, so the rank must not serve on (null: the process exits, and a
  // restart or a standby replays the journal).
  std::function<void(const absl::Status&)> on_journal_failure;
  // Fences a client at the OSDs: puts its OSD identity on the blocklist and
  // returns the OSD map epoch that holds the entry once this rank's object
  // client has it (null: eviction is refused, nothing can fence).
  std::function<absl::StatusOr<uint64_t>(const std::string& osd_client)> fence_client;
  // This incarnation's id (MetaReply.boot); 0: a random one.
  uint64_t boot = 0;
};

// Inline data to write to a file's first object, as of its inline_version.
struct InlineMove {
  uint64_t ino = 0;
  PoolId pool;
  std::string data;
  uint64_t inline_version = 0;
};

}  // namespace weft::mds
