// The OSD's Prometheus series. Counters are the ones `weft status` already
// sums (OsdCounters); request latencies are timed around the handlers, from
// a request's arrival in its handler to the reply, and the store's commit
// latency (the disk as writers see it) is the one slow-disk detection uses.
#include "common/status/status.h"
#include "osd/osd_daemon.h"

namespace weft::osd {

absl::Status OsdDaemon::StartMetrics() {
  const std::string osd = metrics::Label("osd", absl::StrCat(options_.id));
  auto counter = [&](const char* name, const char* help, const std::atomic<uint64_t>* value) {
    metrics_.AddCounter(name, help, osd, [value] { return static_cast<double>(value->load()); });
  };
  counter("weft_osd_read_bytes_total", "Bytes sent for reads, to clients and peers.",
          &counters_.read_bytes);
  counter("weft_osd_write_bytes_total", "Bytes written by clients through this OSD as primary.",
          &counters_.write_bytes);
  counter("weft_osd_recovery_bytes_total", "Bytes pushed or rebuilt by recovery.",
          &counters_.recovery_bytes);
  counter("weft_osd_ops_total", "Client operations served.", &counters_.ops);
  counter("weft_osd_read_repairs_total",
          "Damaged copies rewritten after a read found them (read repair).",
          &counters_.read_repairs);
  counter("weft_osd_scrub_errors_total", "Inconsistent objects found by this OSD's scrubs.",
          &counters_.scrub_errors);
  counter("weft_osd_scrub_repairs_total", "Copies rewritten by this OSD's repairs.",
          &counters_.scrub_repairs);
  counter("weft_osd_scrubbed_bytes_total", "Bytes read by deep scrubs on this OSD.",
          &counters_.scrubbed_bytes);

  const char* latency_help = "Time from a request's arrival to its reply, in seconds.";
  metrics_.AddHistogram("weft_osd_op_latency_seconds", latency_help,
                        absl::StrCat(osd, ",", metrics::Label("op", "read")), &read_latency_);
  metrics_.AddHistogram("weft_osd_op_latency_seconds", latency_help,
                        absl::StrCat(osd, ",", metrics::Label("op", "write")), &write_latency_);
  metrics_.AddHistogram("weft_osd_subop_latency_seconds",
                        "Time to apply a replica or shard write sent by a primary, in seconds.",
                        osd, &subop_latency_);

  metrics_.AddHistogram("weft_osd_commit_latency_seconds",
                        "Time for a store transaction to become durable (data files and the "
                        "KV batch), in seconds.",
                        osd, &store_->commit_latency());

  auto stat = [this](uint64_t ObjectStore::Stats::*field) {
    return [this, field] { return static_cast<double>(store_->GetStats().*field); };
  };
  metrics_.AddGauge("weft_osd_objects", "Objects in the local store.", osd,
                    stat(&ObjectStore::Stats::objects));
  metrics_.AddGauge("weft_osd_stored_bytes", "Sum of the local objects' sizes.", osd,
                    stat(&ObjectStore::Stats::bytes_used));
  metrics_.AddGauge("weft_osd_fs_size_bytes", "Size of the data directory's file system.", osd,
                    stat(&ObjectStore::Stats::fs_total_bytes));
  metrics_.AddGauge("weft_osd_fs_avail_bytes", "Space left on the data directory's file system.",
                    osd, stat(&ObjectStore::Stats::fs_avail_bytes));
  metrics_.AddGauge("weft_osd_spare_files",
                    "Empty data files ready for new objects (kept from removed ones or made "
                    "ahead, osd_spare_reserve_files).",
                    osd, [this] { return static_cast<double>(store_->spare_files()); });
  metrics_.AddGauge("weft_osd_pgs", "Placement groups this OSD holds.", osd, [this] {
    absl::MutexLock lock(&pgs_mu_);
    return static_cast<double>(pgs_.size());
  });
  metrics_.AddGauge("weft_osd_recovery_active",
                    "Objects recovery or backfill is moving now (at most osd_recovery_max_active).",
                    osd, [this] { return static_cast<double>(recovery_->active()); });
  metrics_.AddGauge("weft_osd_recovery_active_peak",
                    "The most objects recovery or backfill moved at once since the OSD started.",
                    osd,
                    [this] { return static_cast<double>(recovery_->peak_active()); });
  metrics_.AddGauge("weft_osd_map_epoch", "Epoch of the newest map this OSD applied.", osd,
                    [this] { return static_cast<double>(CurrentMap()->epoch); });
  metrics::AddProcessMetrics(&metrics_);

  if (options_.metrics_addr.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(metrics_server_, metrics::HttpServer::Start(options_.metrics_addr, &metrics_));
  return absl::OkStatus();
}

}  // namespace weft::osd
