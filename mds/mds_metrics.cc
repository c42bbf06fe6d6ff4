#include "mds/mds_metrics.h"

#include <utility>
#include <vector>

#include "mds/manager/map_manager.h"
#include "mds/mds_daemon.h"
#include "proto/mds_client.pb.h"

namespace weft::mds {
namespace {

// A gauge of every filesystem served here, read from its rank's status.
struct PerFsGauge {
  const char* name;
  const char* help;
  uint64_t (pb::FsStatusReply::*field)() const;
};
using R = pb::FsStatusReply;
constexpr PerFsGauge kPerFs[] = {
    {"weft_mds_sessions", "Client sessions open.", &R::sessions},
    {"weft_mds_cached_inodes", "Inodes in the cache.", &R::cached_inodes},
    {"weft_mds_cached_dentries", "Dentries in the cache.", &R::cached_dentries},
    {"weft_mds_dirty_inodes", "Inodes changed but not yet written back.", &R::dirty_inodes},
    {"weft_mds_cache_bytes", "Estimated size of the inode and dentry cache.", &R::cache_bytes},
    {"weft_mds_cache_limit_bytes", "mds_cache_memory_limit.", &R::cache_limit_bytes},
    {"weft_mds_evictions", "Client sessions evicted since the rank started.", &R::evictions},
    {"weft_mds_journal_bytes", "Bytes in the journal not yet trimmed.", &R::journal_bytes},
    {"weft_mds_journal_segments", "Journal objects not yet trimmed.", &R::journal_segments},
    {"weft_mds_strays", "Unlinked inodes still open or not yet purged.", &R::strays},
    {"weft_mds_purge_queue", "Inodes waiting for their data to be removed.", &R::purge_queue},
    {"weft_mds_trims", "Truncates whose objects are still being cut.", &R::trims},
    {"weft_mds_dir_leases", "Directory leases held by clients.", &R::dir_leases},
    {"weft_mds_attr_caps", "Attribute caps held by clients.", &R::attr_caps},
    {"weft_mds_caps_bytes", "Estimated memory of the caps and leases (counted in the limit).",
     &R::caps_bytes},
    {"weft_mds_caps_granted", "Caps and directory leases granted anew.", &R::caps_granted},
    {"weft_mds_caps_refused", "New caps refused: the client held mds_max_caps_per_client.",
     &R::caps_refused},
    {"weft_mds_caps_recalled", "Caps asked back from clients for memory.", &R::caps_recalled},
    {"weft_mds_caps_released", "Caps clients gave back when asked.", &R::caps_released},
    {"weft_mds_locks", "Advisory locks held (POSIX ranges and flock).", &R::locks},
    {"weft_mds_lock_waiters", "Lock requests waiting for a conflicting lock to go.",
     &R::lock_waiters},
};

// One row per rank: its status is taken once per scrape for every column.
std::vector<metrics::Registry::Row> PerFsRows(std::atomic<MdsDaemon*>* daemon) {
  std::vector<metrics::Registry::Row> rows;
  MdsDaemon* d = daemon->load();
  if (d == nullptr) return rows;
  for (const auto& rank : d->Ranks()) {
    const pb::FsStatusReply status = rank->Status();
    metrics::Registry::Row row{metrics::Label("fs", status.fs()), {}};
    for (const PerFsGauge& g : kPerFs) {
      row.values.push_back(static_cast<double>((status.*g.field)()));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

MdsMetrics::MdsMetrics(MapManager* manager, std::atomic<MdsDaemon*>* daemon) {
  const google::protobuf::OneofDescriptor* oneof =
      pb::MetaRequest::descriptor()->FindOneofByName("op");
  const char* latency_help = "Namespace requests from arrival to reply, in seconds.";
  const char* errors_help = "Namespace requests answered with an error (ENOENT included).";
  for (int i = 0; i < oneof->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = oneof->field(i);
    auto op = std::make_unique<Op>();
    const std::string label = metrics::Label("op", field->name());
    registry_.AddHistogram("weft_mds_request_latency_seconds", latency_help, label,
                           &op->latency);
    registry_.AddCounter("weft_mds_request_errors_total", errors_help, label,
                         [o = op.get()] { return static_cast<double>(o->errors.load()); });
    ops_[field->number()] = std::move(op);
  }
  std::vector<metrics::Registry::Column> columns;
  for (const PerFsGauge& g : kPerFs) columns.push_back({g.name, g.help});
  registry_.AddGaugeTable(std::move(columns), [daemon] { return PerFsRows(daemon); });
  registry_.AddGauge("weft_mds_osdmap_epoch", "Epoch of the newest OSD map this MDS knows.", "",
                     [manager] {
                       auto map = manager->map();
                       return map ? static_cast<double>(map->epoch) : 0.0;
                     });
  metrics::AddProcessMetrics(&registry_);
}

void MdsMetrics::Observe(int op, absl::Duration took, bool failed) {
  auto it = ops_.find(op);
  if (it == ops_.end()) return;  // no op set: refused before any work
  it->second->latency.Observe(took);
  if (failed) it->second->errors.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace weft::mds
