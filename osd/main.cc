// weft-osd: one object storage daemon for one data directory (one disk).
//
//   weft-osd --mkfs --id N --data DIR [-c weft.conf]    format DIR for osd.N
//   weft-osd --id N --data DIR [-c weft.conf] [--addr 127.0.0.1:0] [--host H]
//            [--metrics HOST:PORT]
//
// Startup problems (missing or corrupt data dir, unreachable etcd, unknown
// OSD) are reported in one line and the exit status is 1.
#include <signal.h>
#include <unistd.h>

#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/config/config.h"
#include "common/fault/fault.h"
#include "common/log/log.h"
#include "common/memory/memory.h"
#include "common/metrics/http_server.h"
#include "osd/osd_daemon.h"

ABSL_FLAG(int32_t, id, -1, "OSD id, as allocated by `weft osd create`");
ABSL_FLAG(std::string, data, "", "data directory (one disk)");
ABSL_FLAG(std::string, conf, "", "config file (default $WEFT_CONF or /etc/weft/weft.conf)");
ABSL_FLAG(bool, mkfs, false, "format the data directory and exit");
ABSL_FLAG(std::string, addr, "", "listen address host:port (port 0 = any free port)");
ABSL_FLAG(std::string, metrics, "",
          "serve Prometheus metrics on host:port (default: osd_metrics_port + id on the "
          "--addr host; none when that is 0)");
ABSL_FLAG(std::string, host, "", "host name used as failure domain (default: hostname)");
ABSL_FLAG(std::string, rack, "", "rack used as failure domain");
ABSL_FLAG(int64_t, lease_ttl_s, 0, "liveness lease TTL in seconds (config osd_lease_ttl_s)");
ABSL_FLAG(bool, nosync, false, "skip fsync (tests on tmpfs only: loses data on power loss)");
ABSL_FLAG(int, v, 0, "verbose log level");

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "weft-osd: %s\n", what.c_str());
  return 1;
}

std::vector<char*> RewriteShortConf(int argc, char** argv) {
  // `-c FILE` like the other weft tools.
  std::vector<char*> args(argv, argv + argc);
  static std::string conf_flag = "--conf";
  for (auto& a : args) {
    if (std::string(a) == "-c") a = conf_flag.data();
  }
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  // weft-osd links tcmalloc (osd/CMakeLists.txt; docs/ARCHITECTURE.md, OSD
  // memory), which ignores these. On glibc's malloc (a sanitizer build, say)
  // they keep buffers of a few MiB fast: above glibc's default threshold each
  // would be a fresh mmap, page faults and zeroing on every request (a tenth
  // of the OSD's CPU when measured), and one arena per gRPC thread kept
  // hundreds of MiB of free buffers (841 MiB peak RSS per OSD).
  if (!weft::memory::UsesTcmalloc()) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    mallopt(M_ARENA_MAX, 2);
  }
  absl::SetProgramUsageMessage("weft-osd --id N --data DIR [-c weft.conf]");
  std::vector<char*> args = RewriteShortConf(argc, argv);
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  weft::log::SetVerbosity(absl::GetFlag(FLAGS_v));

  auto config = weft::Config::Load(weft::Config::DefaultPath(absl::GetFlag(FLAGS_conf)));
  if (!config.ok()) return Fail(std::string(config.status().message()));
  weft::osd::OsdOptions options;
  options.id = absl::GetFlag(FLAGS_id);
  options.data_dir = absl::GetFlag(FLAGS_data);
  options.conf_path = config->path();
  auto fsid = config->Fsid();
  if (!fsid.ok()) return Fail(std::string(fsid.status().message()));
  options.fsid = *fsid;
  auto etcd = config->EtcdEndpoints();
  if (!etcd.ok()) return Fail(std::string(etcd.status().message()));
  options.etcd_endpoints = *etcd;
  if (!absl::GetFlag(FLAGS_addr).empty()) options.bind_addr = absl::GetFlag(FLAGS_addr);
  options.host = absl::GetFlag(FLAGS_host);
  if (options.host.empty()) {
    char name[256] = {0};
    gethostname(name, sizeof(name) - 1);
    options.host = name;
  }
  options.rack = absl::GetFlag(FLAGS_rack);
  auto ttl = config->GetInt("osd_lease_ttl_s", options.lease_ttl_s);
  if (!ttl.ok()) return Fail(std::string(ttl.status().message()));
  options.lease_ttl_s = absl::GetFlag(FLAGS_lease_ttl_s) > 0 ? absl::GetFlag(FLAGS_lease_ttl_s)
                                                             : *ttl;
  auto max_obj = config->GetInt("osd_max_object_size", static_cast<int64_t>(options.max_object_bytes));
  if (!max_obj.ok()) return Fail(std::string(max_obj.status().message()));
  options.max_object_bytes = static_cast<uint64_t>(*max_obj);
  auto inline_max =
      config->GetInt("osd_inline_max_bytes", static_cast<int64_t>(options.inline_max_bytes));
  if (!inline_max.ok()) return Fail(std::string(inline_max.status().message()));
  if (*inline_max < 0 || *inline_max > (1 << 20)) {
    return Fail("osd_inline_max_bytes must be within [0, 1 MiB]");
  }
  options.inline_max_bytes = static_cast<uint64_t>(*inline_max);
  auto spare_keep =
      config->GetInt("osd_spare_keep_bytes", static_cast<int64_t>(options.spare_keep_bytes));
  if (!spare_keep.ok()) return Fail(std::string(spare_keep.status().message()));
  if (*spare_keep < 0) return Fail("osd_spare_keep_bytes must not be negative");
  options.spare_keep_bytes = static_cast<uint64_t>(*spare_keep);
  auto spare_reserve = config->GetInt("osd_spare_reserve_files",
                                      static_cast<int64_t>(options.spare_reserve_files));
  if (!spare_reserve.ok()) return Fail(std::string(spare_reserve.status().message()));
  if (*spare_reserve < 0 ||
      *spare_reserve > static_cast<int64_t>(weft::osd::ObjectStore::kMaxSpareFiles)) {
    return Fail(absl::StrCat("osd_spare_reserve_files must be within [0, ",
                             weft::osd::ObjectStore::kMaxSpareFiles, "]"));
  }
  options.spare_reserve_files = static_cast<size_t>(*spare_reserve);
  auto commit_delay = config->GetInt("osd_ec_commit_delay_ms", options.ec_commit_delay_ms);
  if (!commit_delay.ok()) return Fail(std::string(commit_delay.status().message()));
  options.ec_commit_delay_ms = *commit_delay;
  auto trim_ms = config->GetInt("osd_memory_trim_ms", options.memory_trim_ms);
  if (!trim_ms.ok()) return Fail(std::string(trim_ms.status().message()));
  options.memory_trim_ms = *trim_ms;
  auto trim_free = config->GetInt("osd_memory_trim_free_bytes",
                                  static_cast<int64_t>(options.memory_trim_free_bytes));
  if (!trim_free.ok()) return Fail(std::string(trim_free.status().message()));
  if (*trim_free < 0) return Fail("osd_memory_trim_free_bytes must not be negative");
  options.memory_trim_free_bytes = static_cast<uint64_t>(*trim_free);
  auto stats_ms = config->GetInt("osd_stats_interval_ms", options.stats_interval_ms);
  if (!stats_ms.ok()) return Fail(std::string(stats_ms.status().message()));
  options.stats_interval_ms = *stats_ms;
  // Scrub: intervals in seconds, the load threshold in % of one core's load.
  struct IntKey {
    const char* key;
    int64_t* value;
  };
  int64_t max_scrubs = options.max_scrubs, chunk = options.scrub_chunk_objects;
  int64_t recovery_chunk = static_cast<int64_t>(options.recovery_max_chunk);
  for (IntKey k : {IntKey{"osd_scrub_min_interval", &options.scrub_min_interval_s},
                   IntKey{"osd_deep_scrub_interval", &options.deep_scrub_interval_s},
                   IntKey{"osd_scrub_load_threshold_pct", &options.scrub_load_threshold_pct},
                   IntKey{"osd_max_scrubs", &max_scrubs},
                   IntKey{"osd_scrub_sleep_ms", &options.scrub_sleep_ms},
                   IntKey{"osd_scrub_chunk_max", &chunk},
                   IntKey{"osd_recovery_max_chunk", &recovery_chunk},
                   IntKey{"osd_recovery_max_active", &options.recovery_max_active},
                   IntKey{"osd_recovery_max_bytes_per_sec", &options.recovery_max_bytes_per_sec},
                   IntKey{"osd_recovery_client_wait_ms", &options.recovery_client_wait_ms}}) {
    auto v = config->GetInt(k.key, *k.value);
    if (!v.ok()) return Fail(std::string(v.status().message()));
    *k.value = *v;
  }
  if (max_scrubs > 16 || chunk > 10000) return Fail("osd_max_scrubs or osd_scrub_chunk_max too big");
  options.max_scrubs = static_cast<int>(max_scrubs);
  options.scrub_chunk_objects = static_cast<int>(chunk);
  if (recovery_chunk < 0) return Fail("osd_recovery_max_chunk must not be negative");
  options.recovery_max_chunk = static_cast<uint64_t>(recovery_chunk);
  auto metrics_addr = weft::metrics::ListenAddr(*config, "osd_metrics_port", options.id,
                                                options.bind_addr, absl::GetFlag(FLAGS_metrics));
  if (!metrics_addr.ok()) return Fail(std::string(metrics_addr.status().message()));
  options.metrics_addr = *metrics_addr;
  options.sync = !absl::GetFlag(FLAGS_nosync);
  // Fault points a test armed for this daemon (common/fault: WEFT_FAULTS).
  if (auto armed = weft::fault::ArmFromEnvironment(); !armed.ok()) {
    return Fail(std::string(armed.message()));
  }
  if (auto slow = weft::fault::Value(weft::fault::kOsdSlowDiskMs)) {
    options.fault_commit_delay_ms = *slow;
  }
  if (auto delay = weft::fault::Value(weft::fault::kOsdRecoveryDelayMs)) {
    options.fault_recovery_delay_ms = *delay;
  }
  if (auto status = options.Validate(); !status.ok()) {
    return Fail(std::string(status.message()));
  }

  if (absl::GetFlag(FLAGS_mkfs)) {
    auto status = weft::osd::OsdDaemon::Mkfs(options);
    if (!status.ok()) return Fail(std::string(status.message()));
    std::printf("formatted %s for osd.%d of cluster %s\n", options.data_dir.c_str(), options.id,
                options.fsid.c_str());
    return 0;
  }

  // SIGTERM/SIGINT end the daemon cleanly; a dedicated thread waits for them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  weft::log::StartProcess("osd." + std::to_string(options.id));
  weft::osd::OsdDaemon daemon(options);
  if (auto status = daemon.Start(); !status.ok()) {
    return Fail(std::string(status.message()));
  }
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    LOG(INFO) << "event=signal sig=" << sig;
    daemon.RequestShutdown();  // main() shuts down; two threads must not
  });
  waiter.detach();
  daemon.Wait();
  daemon.Shutdown();
  return 0;
}
