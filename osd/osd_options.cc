#include "osd/osd_options.h"

#include "absl/strings/str_cat.h"

namespace weft::osd {

absl::Status OsdOptions::Validate() const {
  if (id < 0) return absl::InvalidArgumentError("--id must be a non-negative OSD id");
  if (data_dir.empty()) return absl::InvalidArgumentError("--data must name the OSD's data dir");
  if (fsid.empty()) return absl::InvalidArgumentError("no fsid in the config");
  if (etcd_endpoints.empty()) return absl::InvalidArgumentError("no etcd endpoints in the config");
  if (lease_ttl_s < 2 || lease_ttl_s > 300) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lease_ttl_s=", lease_ttl_s, " is outside [2, 300]"));
  }
  if (max_object_bytes < (1 << 20) || max_object_bytes > (1ull << 34)) {
    return absl::InvalidArgumentError("osd_max_object_size must be within [1 MiB, 16 GiB]");
  }
  if (stats_interval_ms < 100 || stats_interval_ms > 600000) {
    return absl::InvalidArgumentError("osd_stats_interval_ms must be within [100, 600000]");
  }
  if (memory_trim_ms < 0 || memory_trim_ms > 3600000) {
    return absl::InvalidArgumentError("osd_memory_trim_ms must be within [0, 3600000]");
  }
  if (ec_commit_delay_ms < 0 || ec_commit_delay_ms > 10000) {
    return absl::InvalidArgumentError("osd_ec_commit_delay_ms must be within [0, 10000]");
  }
  if (pg_log_max_entries < 10) return absl::InvalidArgumentError("pg log needs >= 10 entries");
  if (recovery_max_chunk < (64u << 10) || recovery_max_chunk > (64ull << 20)) {
    return absl::InvalidArgumentError("osd_recovery_max_chunk must be within [64 KiB, 64 MiB]");
  }
  if (recovery_max_active < 1 || recovery_max_active > 64) {
    return absl::InvalidArgumentError("osd_recovery_max_active must be within [1, 64]");
  }
  if (recovery_max_bytes_per_sec < 0) {
    return absl::InvalidArgumentError("osd_recovery_max_bytes_per_sec must not be negative");
  }
  if (recovery_client_wait_ms < 0 || recovery_client_wait_ms > 10000) {
    return absl::InvalidArgumentError("osd_recovery_client_wait_ms must be within [0, 10000]");
  }
  if (scrub_min_interval_s < 1 || deep_scrub_interval_s < 1) {
    return absl::InvalidArgumentError(
        "osd_scrub_min_interval and osd_deep_scrub_interval must be at least 1 s");
  }
  if (scrub_load_threshold_pct < 0) {
    return absl::InvalidArgumentError("osd_scrub_load_threshold must not be negative");
  }
  if (max_scrubs < 1 || max_scrubs > 16) {
    return absl::InvalidArgumentError("osd_max_scrubs must be within [1, 16]");
  }
  if (scrub_sleep_ms < 0 || scrub_sleep_ms > 60000) {
    return absl::InvalidArgumentError("osd_scrub_sleep_ms must be within [0, 60000]");
  }
  if (scrub_chunk_objects < 1 || scrub_chunk_objects > 10000) {
    return absl::InvalidArgumentError("osd_scrub_chunk_max must be within [1, 10000]");
  }
  return absl::OkStatus();
}

}  // namespace weft::osd
