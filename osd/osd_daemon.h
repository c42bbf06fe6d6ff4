// The weft-osd daemon: one object store (one disk), its placement groups, its
// registration in etcd and its view of the cluster map.
//
// Startup order: open the store (fails on a missing or corrupt data dir),
// connect to etcd, read the map (the OSD must exist in it and the store's fsid
// must match), serve gRPC, then publish the liveness key bound to a lease; the
// map manager marks the OSD up when it sees that key. The map is followed
// through an etcd watch, never by polling.
//
// Lock order: apply_mu_, then map_mu_ before pgs_mu_ before any Pg lock; none held
// across I/O.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/cluster_map/osd_map.h"
#include "common/etcd/etcd_client.h"
#include "common/executor/thread_pool.h"
#include "common/metrics/http_server.h"
#include "common/metrics/metrics.h"
#include "common/rpc/rpc.h"
#include "osd/osd_options.h"
#include "osd/peer_client.h"
#include "osd/pg/pg.h"
#include "osd/recovery_throttle.h"
#include "osd/store/object_store.h"
#include "proto/osd.grpc.pb.h"

namespace weft::osd {

class OsdDaemon {
 public:
  explicit OsdDaemon(OsdOptions options);
  ~OsdDaemon();

  // Formats `options.data_dir` for this OSD of this cluster.
  static absl::Status Mkfs(const OsdOptions& options);

  absl::Status Start();
  // Blocks until RequestShutdown() (from a signal-waiting thread, say).
  void Wait();
  // Only wakes Wait(); safe from any thread.
  void RequestShutdown();
  // Stops serving and releases everything; idempotent. Called by the thread
  // that owns the daemon (main, the destructor), never concurrently.
  void Shutdown();
  const std::string& address() const { return address_; }

  // Service entry points (the gRPC adapter calls these).
  // Writes move the ops' data out of `req`.
  void Op(pb::OpRequest* req, pb::OpReply* reply);
  void PgList(const pb::PgListRequest& req, pb::PgListReply* reply);
  void GetMap(const pb::GetMapRequest& req, pb::GetMapReply* reply);
  // Moves the ops' data out of `req` into the store.
  void RepOp(pb::RepOpRequest* req, pb::RepOpReply* reply);
  void PgQuery(const pb::PgQueryRequest& req, pb::PgQueryReply* reply);
  void Push(const pb::PushRequest& req, pb::PushReply* reply);
  void Activate(const pb::ActivateRequest& req, pb::ActivateReply* reply);
  void Rollback(const pb::RollbackRequest& req, pb::PushReply* reply);
  // Scrub and repair (osd_scrub.cc).
  void PgCommand(const pb::PgCommandRequest& req, pb::PgCommandReply* reply);
  void ScrubMap(const pb::ScrubMapRequest& req, pb::ScrubMapReply* reply);

 private:
  // ---- scrubs (osd_scrub.cc): max_scrubs threads run the scrubs operators
  // asked for first, then those the schedule makes due.
  struct ScrubWaiter {
    absl::Mutex mu;
    int left ABSL_GUARDED_BY(mu) = 0;
    absl::Status status ABSL_GUARDED_BY(mu);
    std::vector<pb::InconsistentObject> found ABSL_GUARDED_BY(mu);
  };
  struct ScrubJob {
    std::shared_ptr<Pg> pg;
    pb::PgCommandType type = pb::PGC_NONE;
    std::shared_ptr<ScrubWaiter> waiter;  // null: nobody waits
  };
  void ScrubLoop();
  // The next PG the schedule makes due (none while the host is loaded).
  ScrubJob NextScheduledScrub();
  bool HostLoaded() const;
  // The PGs this OSD holds now (a snapshot: no lock held after), and those
  // it is primary of.
  std::vector<std::shared_ptr<Pg>> AllPgs();
  std::vector<std::shared_ptr<Pg>> PrimaryPgs();

  // Stray copies (osd/osd_strays.cc): PGs this OSD holds but no longer
  // serves. Each sweep deletes those whose PG is active+clean without us
  // and that no past interval names us in. Called from the statistics
  // loop every kStraySweep, run in the background pool.
  void SweepStrays();
  void RemoveStray(const std::shared_ptr<Pg>& pg);
  std::atomic<bool> sweeping_{false};
  absl::Time last_sweep_ = absl::InfinitePast();  // the statistics thread's
  absl::Mutex scrub_mu_;
  std::deque<ScrubJob> scrub_queue_ ABSL_GUARDED_BY(scrub_mu_);
  size_t scrub_cursor_ ABSL_GUARDED_BY(scrub_mu_) = 0;  // fairness of the schedule
  std::vector<std::thread> scrub_threads_;

  // ENOSPC for a request that would add data while an OSD is marked full
  // (unless OPF_FULL_TRY), or while this OSD is past its failsafe ratio.
  absl::Status CheckFull(const pb::OpRequest& req, const OsdMap& map);
  // ENOSPC while this OSD's disk, with `adding` more bytes, would be past
  // kFailsafeFullRatio. The fill is the last statfs plus what was let in
  // since (a disk can fill faster than the statistics are refreshed); near
  // the ratio it is measured again first.
  absl::Status CheckFailsafe(uint64_t adding);
  // statfs of the data dir now: fill_ and fs_total_, admitted_ cleared.
  void RefreshFill();
  absl::Status LoadInitialMap();
  absl::Status Register();
  void WatchMap(int64_t from_revision);
  void OnMapEvent(const std::string& bytes);
  void ApplyMap(std::shared_ptr<const OsdMap> map);
  void StatsLoop();
  // Asks StatsLoop to publish within kStatsSoon instead of at its next tick.
  void StatsSoon();
  // Sends EC commit points that waited long enough (Pg::EcFlushCommit).
  void CommitLoop();
  void TrimLoop();
  std::string AliveKey() const;
  std::string AliveValue();

  std::shared_ptr<const OsdMap> CurrentMap();
  // Waits up to `timeout` for a map of at least `epoch`.
  bool WaitForEpoch(Epoch epoch, absl::Duration timeout);
  // For a request at `epoch` on `pool`/`seed`: the PG, or an error status.
  absl::StatusOr<std::shared_ptr<Pg>> FindPg(Epoch epoch, uint32_t pool, uint32_t seed,
                                             bool client, std::shared_ptr<const OsdMap>* map);
  std::shared_ptr<Pg> LoadPg(const PgId& id, const PoolInfo& pool);

  // Store commits since about kCommitWindow ago and their median latency,
  // for the liveness key (the manager compares OSDs to find a slow disk).
  struct CommitWindow {
    uint64_t commits = 0;
    uint64_t median_us = 0;
  };
  static constexpr absl::Duration kCommitWindow = absl::Seconds(30);
  CommitWindow RecentCommits();

  // Registers this daemon's series and, when options_.metrics_addr is set,
  // serves them (osd_metrics.cc).
  absl::Status StartMetrics();

  const OsdOptions options_;
  std::string address_;
  std::unique_ptr<ObjectStore> store_;
  std::unique_ptr<etcd::Client> etcd_;
  std::unique_ptr<etcd::LeaseKeeper> keeper_;
  std::unique_ptr<etcd::Watch> map_watch_;
  rpc::ChannelCache channels_;
  std::unique_ptr<PeerClient> peers_;
  std::unique_ptr<ThreadPool> background_;
  std::unique_ptr<RecoveryThrottle> recovery_;  // made before the metrics
  OsdCounters counters_;
  metrics::Registry metrics_;
  metrics::Histogram read_latency_;   // client ops that change nothing
  metrics::Histogram write_latency_;  // client ops that change the object
  metrics::Histogram subop_latency_;  // replica and shard writes from primaries
  std::unique_ptr<metrics::HttpServer> metrics_server_;
  struct CommitSample {
    absl::Time at;
    metrics::Histogram::Snapshot latency;
  };
  absl::Mutex commit_window_mu_;
  std::deque<CommitSample> commit_samples_ ABSL_GUARDED_BY(commit_window_mu_);
  // This OSD's file system fill (0..1) at the last statfs (with the
  // statistics, or RefreshFill), its size, and the bytes of data requests
  // let in since.
  std::atomic<double> fill_{0};
  std::atomic<uint64_t> fs_total_{0};
  std::atomic<uint64_t> admitted_{0};
  std::unique_ptr<grpc::Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int64_t lease_ = 0;
  int64_t started_ms_ = 0;

  absl::Mutex map_mu_;
  std::shared_ptr<const OsdMap> map_ ABSL_GUARDED_BY(map_mu_);

  // ApplyMap runs from Start() and from the map watch: one at a time, and
  // never an older epoch after a newer one.
  int64_t map_revision_ = 0;  // etcd revision of the map LoadInitialMap read
  absl::Mutex apply_mu_;
  Epoch applied_epoch_ ABSL_GUARDED_BY(apply_mu_) = 0;
  absl::Mutex pgs_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Pg>> pgs_ ABSL_GUARDED_BY(pgs_mu_);

  absl::Mutex reg_mu_;  // serializes re-registration after a lost lease
  absl::Notification shutdown_;
  absl::Mutex stats_mu_;
  bool stats_due_ ABSL_GUARDED_BY(stats_mu_) = false;
  // Peering after one map change ends in a burst: publish once, this long
  // after the first PG of it asked.
  static constexpr absl::Duration kStatsSoon = absl::Milliseconds(200);
  std::thread stats_thread_;
  std::thread commit_thread_;
  std::thread trim_thread_;
};

}  // namespace weft::osd
