// A real Weft cluster for tests: etcd, M weft-mds (one by default; named a,
// b, c, ...: the first holds the ranks, the others wait as standbys) and N weft-osd processes
// on 127.0.0.1 in a temporary directory. Everything is killed (SIGKILL, by
// PID, then reaped) and the directory removed when the Cluster is destroyed,
// including when a test assertion fails; every daemon also runs with
// PR_SET_PDEATHSIG so that it dies with the test process if that crashes.
// Set WEFT_KEEP_TEST_DIR=1 to keep the directory (logs) for a post-mortem.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "fuse-client/lib/admin_client.h"
#include "fuse-client/lib/meta_client.h"
#include "common/objects/object_client.h"
#include "tests/harness/etcd_process.h"

namespace weft::testing {

struct ClusterOptions {
  int osds = 3;
  int mds = 1;  // MDS daemons, started in order: the first takes the ranks
  int64_t osd_lease_ttl_s = 3;
  int64_t down_out_interval_s = 600;
  std::string failure_domain = "osd";
  std::vector<std::string> extra_conf = {};  // "key = value" lines for weft.conf
  // The default file layout of every filesystem (weft.conf fs_default_*); 0
  // keeps the MDS default (4 MiB objects, 4 MiB stripe unit, one stripe).
  uint64_t fs_object_bytes = 0;
  uint64_t fs_stripe_unit_bytes = 0;
  uint32_t fs_stripe_count = 0;
  // Every daemon serves Prometheus metrics (`--metrics` on a free port).
  bool metrics = false;
  // MDS daemon i starts in the cgroup whose cgroup.procs is
  // mds_cgroup_procs[i] when given and not empty (a NetCut's), every time.
  std::vector<std::string> mds_cgroup_procs = {};
};

// The data pool CreateFs makes for a filesystem: replicated `size` times, or
// erasure coded K+M when `ec_k` > 0.
struct DataPoolOptions {
  int size = 3;
  int ec_k = 0;
  int ec_m = 0;
  uint32_t ec_chunk_bytes = 0;  // 0: the pool default (64 KiB)
  int pg_num = 16;
  std::string failure_domain;  // empty: the cluster's
};

// A child process started by the harness.
class Process {
 public:
  // Starts `argv` with stdout/stderr appended to `log_path`; with
  // `cgroup_procs` (a cgroup v2 group's cgroup.procs: NetCut), in that group
  // from before it runs.
  static absl::StatusOr<std::unique_ptr<Process>> Spawn(const std::vector<std::string>& argv,
                                                        const std::string& log_path,
                                                        const std::string& cgroup_procs = "");
  ~Process();
  pid_t pid() const { return pid_; }
  bool Running();
  void Kill(int sig);
  // Waits for exit; returns the exit code (128+signal if killed).
  int Wait();

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

struct CommandResult {
  int code = -1;
  std::string output;  // stdout and stderr together
};

// Runs a command to completion and captures its output.
CommandResult RunCommand(const std::vector<std::string>& argv);

class Cluster {
 public:
  static absl::StatusOr<std::unique_ptr<Cluster>> Start(ClusterOptions options = {});
  ~Cluster();

  const std::string& dir() const { return dir_; }
  const std::string& conf_path() const { return conf_path_; }
  std::vector<std::string> mds_addrs() const { return mds_addrs_; }
  int osd_id(int i) const { return osd_ids_.at(i); }
  std::string OsdDataDir(int i) const;
  // Where the daemons serve metrics (ClusterOptions::metrics), "host:port".
  const std::string& MdsMetricsAddr() const { return mds_metrics_addr_; }
  const std::string& OsdMetricsAddr(int i) const { return osd_metrics_addrs_.at(i); }

  // `weft -c <conf> args...`
  CommandResult Weft(const std::vector<std::string>& args) const;

  // MDS daemon `i` (name MdsName(i)): restart after a kill, as an operator
  // would. Returns once the daemon answers (a standby, or replaying).
  absl::Status StartMds(int i = 0);
  void KillMds(int i = 0);  // SIGKILL
  // Sends `sig` to MDS `i` and waits for it to end; its exit code (128+signal
  // if the signal ended it), -1 if it was not running.
  int SignalMds(int sig, int i = 0);
  // Sends `sig` (SIGSTOP, SIGCONT) to MDS `i` without waiting.
  void SendMds(int sig, int i = 0);
  static std::string MdsName(int i) { return std::string(1, static_cast<char>('a' + i)); }
  std::string MdsLogPath(int i = 0) const { return dir_ + "/mds." + MdsName(i) + ".log"; }
  int mds_count() const { return static_cast<int>(mds_.size()); }
  void StopMds(int i = 0);  // SIGTERM and wait
  bool MdsRunning(int i = 0);
  // The index of the MDS daemon holding rank `rank` of `fs` by the fsmap,
  // -1 if none of the harness's does.
  int ActiveMds(const std::string& fs, uint32_t rank = 0);
  // Asks `weft fs status FS` every 200 ms until its output satisfies `ok`
  // (at most `timeout`); *last gets the last output.
  bool FsStatusUntil(const std::string& fs, const std::function<bool(const std::string&)>& ok,
                     absl::Duration timeout, std::string* last);

  // Stops every daemon (the MDS, the OSDs, then etcd) and starts them all
  // again on the same data directories and addresses: with SIGTERM as an
  // operator would (`crash` false), or with SIGKILL as a power cut would.
  // Returns once every OSD is up and every PG active+clean; the MDS may still
  // be replaying (Meta() waits for it). A failure leaves whatever did start
  // to the destructor.
  absl::Status RestartAll(bool crash, absl::Duration timeout = absl::Seconds(90));

  // Creates pools NAME_meta (3x) and NAME_data (3x, or `data_pool` if given)
  // and the filesystem NAME with the CLI, then waits until rank 0 serves it.
  absl::Status CreateFs(const std::string& name, const std::string& data_pool = "");
  // The same with a data pool NAME_data made as `data` says (e.g. EC 4+2
  // with 4 KiB chunks): a filesystem's data pool is chosen at `fs new`.
  absl::Status CreateFs(const std::string& name, const DataPoolOptions& data);
  // Creates pool `pool` with the CLI (`create_args` follow the name: by
  // default 3x with 16 PGs), waits until every PG is clean, then makes it a
  // data pool of filesystem `fs` with `weft fs add-data-pool`.
  absl::Status AddDataPool(const std::string& fs, const std::string& pool,
                           const std::vector<std::string>& create_args = {"--size", "3",
                                                                          "--pg-num", "16"});
  // A session with the filesystem (waits up to 60 s for rank 0).
  std::unique_ptr<client::MetaClient> Meta(const std::string& fs);

  // A new OSD (`weft osd create`, mkfs, start) while the cluster runs, as an
  // operator adds a disk; returns its index (osd_id(index) is its id).
  absl::StatusOr<int> AddOsd();
  int osd_count() const { return static_cast<int>(osd_ids_.size()); }
  absl::Status StartOsd(int i);
  void KillOsd(int i);       // SIGKILL
  int SignalOsd(int i, int sig);  // as SignalMds
  std::string OsdLogPath(int i) const;
  void StopOsd(int i);       // SIGTERM and wait
  bool OsdRunning(int i);
  EtcdProcess* etcd() { return etcd_.get(); }

  // Waits until the map shows `n` OSDs up.
  absl::Status WaitOsdsUp(int n, absl::Duration timeout);
  // Waits until every PG reports active+clean (with +scrubbing or
  // +inconsistent too: every copy is in place).
  absl::Status WaitClean(absl::Duration timeout);

  // Creates a replicated pool with the CLI, as a user would, then waits until
  // `client` sees it and every PG is active+clean.
  absl::StatusOr<PoolId> CreatePool(objects::ObjectClient& client, const std::string& name,
                                    int size, int pg_num);
  // Waits until `client` sees pool `name` (made by the caller) and every PG
  // is active+clean.
  absl::StatusOr<PoolId> WaitPool(objects::ObjectClient& client, const std::string& name,
                                  absl::Duration clean_timeout = absl::Seconds(60));

  std::unique_ptr<objects::ObjectClient> Client();
  std::unique_ptr<client::AdminClient> Admin();

 private:
  explicit Cluster(ClusterOptions options) : options_(std::move(options)) {}
  absl::Status Boot();

  const ClusterOptions options_;
  std::string dir_;
  std::string conf_path_;
  std::vector<std::string> mds_addrs_;
  std::string mds_metrics_addr_;  // MDS 0's
  std::vector<std::string> osd_metrics_addrs_;
  std::unique_ptr<EtcdProcess> etcd_;
  std::vector<std::unique_ptr<Process>> mds_;
  std::vector<int> osd_ids_;
  std::vector<std::unique_ptr<Process>> osds_;
};

std::string BinPath(const std::string& name);
// `n` reproducible pseudo-random bytes.
std::string RandomBytes(size_t n, uint64_t seed);

// Every acting member's own copy of each object of a replicated `pool`
// (name -> bytes) equals its bytes: the first that does not (or cannot be
// read), named with its OSD, otherwise OK. With `size`, each object's
// acting set must have that many members.
absl::Status EveryCopyMatches(objects::ObjectClient& client, PoolId pool,
                              const std::map<std::string, std::string>& objects,
                              size_t size = 0);
// Waits up to `timeout` for `client`'s map to satisfy `pred`; its last word.
bool WaitForMap(objects::ObjectClient& client, absl::Duration timeout,
                const std::function<bool(const OsdMap&)>& pred);
int FreePort();

// What a raw unary call got: the transport status and the reply's bytes.
struct RawReply {
  grpc::Status status;
  std::string body;
};
// Sends `body` as the request of `method` ("/weft.pb.Osd/Op") on `channel`,
// bypassing the generated stubs, so tests can send malformed messages.
RawReply CallRaw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                 const std::string& body, absl::Duration timeout = absl::Seconds(5));

}  // namespace weft::testing
