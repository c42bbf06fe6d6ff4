// Options of one weft-osd process, filled from flags in main.cc and checked by
// Validate() before anything starts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace weft::osd {

struct OsdOptions {
  int32_t id = -1;
  std::string data_dir;
  std::string conf_path;
  std::string fsid;
  std::vector<std::string> etcd_endpoints;
  std::string bind_addr = "127.0.0.1:0";  // port 0 = any free port
  std::string host;                        // failure domain; default: hostname
  std::string rack;
  int64_t lease_ttl_s = 10;                // liveness: down after this long silent
  uint64_t max_object_bytes = 128ull << 20;
  uint64_t inline_max_bytes = 0;           // objects this small keep their data in LevelDB
  uint64_t spare_keep_bytes = 1ull << 30;  // removed objects' blocks kept for new files
  size_t spare_reserve_files = 1024;        // empty data files made ahead (StoreOptions)
  size_t pg_log_max_entries = 3000;
  int64_t stats_interval_ms = 2000;         // liveness key refresh with statistics
  int64_t peer_timeout_ms = 10000;         // one RPC to another OSD
  // EC: how long a write's commit point waits to ride on the PG's next
  // sub-write before it is sent to the shards by itself (0: at once).
  int64_t ec_commit_delay_ms = 1000;
  // Recovery and backfill (osd/recovery_throttle.h): objects move in pieces
  // of at most recovery_max_chunk bytes (an erasure shard rebuild reads k
  // shard ranges that add up to it), at most recovery_max_active objects at
  // once per OSD, at most recovery_max_bytes_per_sec (0: no limit), each
  // piece waiting up to recovery_client_wait_ms while clients are served.
  uint64_t recovery_max_chunk = 8ull << 20;
  int64_t recovery_max_active = 3;
  int64_t recovery_max_bytes_per_sec = 0;
  int64_t recovery_client_wait_ms = 50;
  // Every memory_trim_ms, once the heap holds memory_trim_free_bytes free,
  // it goes back to the kernel (malloc_trim; OsdDaemon::TrimLoop); 0 = never.
  int64_t memory_trim_ms = 1000;
  uint64_t memory_trim_free_bytes = 256ull << 20;
  int64_t fault_commit_delay_ms = 0;       // tests: a slow disk (fault point osd.slow_disk_ms)
  // Tests: recovery starts this long after a PG turns active, a window in
  // which a primary serves without what it lacks (fault point osd.recovery_delay_ms).
  int64_t fault_recovery_delay_ms = 0;
  // Scrub (osd/pg/pg_scrub.cc): each PG this OSD is primary of is scrubbed
  // once its last scrub is older than scrub_min_interval_s and deep-scrubbed
  // once its last deep scrub is older than deep_scrub_interval_s, only while
  // the host's load average per core is below scrub_load_threshold_pct %,
  // at most max_scrubs at once; scrub_sleep_ms between chunks of
  // scrub_chunk_objects objects (the PG's writes wait for a chunk).
  int64_t scrub_min_interval_s = 86400;
  int64_t deep_scrub_interval_s = 7 * 86400;
  int64_t scrub_load_threshold_pct = 50;
  int max_scrubs = 1;
  int64_t scrub_sleep_ms = 20;
  int scrub_chunk_objects = 25;
  std::string metrics_addr;                // Prometheus text on host:port; empty = off
  bool sync = true;                        // fsync; off only for tests on tmpfs

  absl::Status Validate() const;
};

}  // namespace weft::osd
