// weft-mds: the metadata server. Every instance follows the cluster map and
// serves it to clients; the one elected through etcd manages it (OSD
// up/down/out, pools, admin commands, which daemon holds each rank). It
// registers its liveness (MdsRegistry) and serves the ranks the fsmap gives
// it, or waits as a standby. A daemon that finds its liveness lease lost (it
// was frozen, or cut off from etcd, past mds_beacon_grace) may have been
// fenced and replaced: it starts over as a new process (execv, a new OSD
// identity), a standby.
//
//   weft-mds --name a [-c weft.conf] [--addr 127.0.0.1:6789]
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <atomic>
#include <cstdio>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/config/config.h"
#include "common/etcd/etcd_client.h"
#include "common/fault/fault.h"
#include "common/log/log.h"
#include "common/metrics/http_server.h"
#include "common/rpc/rpc.h"
#include "mds/manager/map_manager.h"
#include "mds/fs_service.h"
#include "mds/manager/fs_map.h"
#include "mds/manager/manager_map_source.h"
#include "mds/manager/mds_registry.h"
#include "mds/mds_daemon.h"
#include "mds/mds_metrics.h"
#include "mds/mds_service.h"

ABSL_FLAG(std::string, name, "a", "this MDS's name");
ABSL_FLAG(std::string, conf, "", "config file (default $WEFT_CONF or /etc/weft/weft.conf)");
ABSL_FLAG(std::string, addr, "", "listen address host:port (default: the config's mds entry)");
ABSL_FLAG(int64_t, lease_ttl_s, 10, "leader lease TTL in seconds");
ABSL_FLAG(int64_t, down_out_interval_s, 0,
          "mark a down OSD out after this many seconds (config mon_osd_down_out_interval, "
          "default 600)");
ABSL_FLAG(std::string, metrics, "",
          "serve Prometheus metrics on host:port (default: mds_metrics_port on the --addr "
          "host; none when that is 0)");
ABSL_FLAG(int, v, 0, "verbose log level");

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "weft-mds: %s\n", what.c_str());
  return 1;
}

// Set for the next incarnation of a daemon that starts over: it waits for
// etcd however long it takes, since what made this one start over may be a
// network cut that still stands.
constexpr char kRestartedEnv[] = "WEFT_MDS_RESTARTED";

// This process, fenced or about to be, writes nothing more and runs again
// from the start: a new object client, a standby.
[[noreturn]] void StartOver(const std::vector<char*>& argv, const std::string& reason) {
  LOG(ERROR) << "event=restart reason=" << reason << " action=execv";
  setenv(kRestartedEnv, reason.c_str(), 1);
  execv("/proc/self/exe", argv.data());
  LOG(FATAL) << "execv /proc/self/exe failed: " << std::strerror(errno);
  std::abort();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> original_argv(argv, argv + argc);
  original_argv.push_back(nullptr);
  absl::SetProgramUsageMessage(
      "weft-mds --name NAME [-c weft.conf] [--addr HOST:PORT] [--metrics HOST:PORT]");
  std::vector<char*> args(argv, argv + argc);
  static std::string conf_flag = "--conf";
  for (auto& a : args) {
    if (std::string(a) == "-c") a = conf_flag.data();
  }
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  weft::log::SetVerbosity(absl::GetFlag(FLAGS_v));

  // Fault points a test armed for this daemon (common/fault: WEFT_FAULTS).
  if (auto armed = weft::fault::ArmFromEnvironment(); !armed.ok()) {
    return Fail(std::string(armed.message()));
  }
  auto config = weft::Config::Load(weft::Config::DefaultPath(absl::GetFlag(FLAGS_conf)));
  if (!config.ok()) return Fail(std::string(config.status().message()));
  auto fsid = config->Fsid();
  if (!fsid.ok()) return Fail(std::string(fsid.status().message()));
  auto endpoints = config->EtcdEndpoints();
  if (!endpoints.ok()) return Fail(std::string(endpoints.status().message()));
  std::string addr = absl::GetFlag(FLAGS_addr);
  if (addr.empty()) {
    auto mds = config->MdsAddresses();
    if (!mds.ok()) return Fail("no --addr and " + std::string(mds.status().message()));
    addr = (*mds)[0];
  }
  weft::mds::ManagerOptions options;
  options.name = absl::GetFlag(FLAGS_name);
  if (!weft::IsPlainName(options.name, 64)) {
    return Fail("--name must be 1..64 letters, digits, '-', '_' or '.'");
  }
  auto beacon_grace = config->GetInt("mds_beacon_grace", 4);
  if (!beacon_grace.ok()) return Fail(std::string(beacon_grace.status().message()));
  if (*beacon_grace < 1 || *beacon_grace > 60) {
    return Fail("mds_beacon_grace must be within [1, 60] s");
  }
  options.addr = addr;
  options.fsid = *fsid;
  options.lease_ttl_s = absl::GetFlag(FLAGS_lease_ttl_s);
  auto grace = config->GetInt("mon_osd_down_out_interval", 600);
  if (!grace.ok()) return Fail(std::string(grace.status().message()));
  options.down_out_interval_s =
      absl::GetFlag(FLAGS_down_out_interval_s) > 0 ? absl::GetFlag(FLAGS_down_out_interval_s)
                                                    : *grace;
  if (auto status = options.Validate(); !status.ok()) return Fail(std::string(status.message()));
  auto metrics_addr = weft::metrics::ListenAddr(*config, "mds_metrics_port", 0, addr,
                                                absl::GetFlag(FLAGS_metrics));
  if (!metrics_addr.ok()) return Fail(std::string(metrics_addr.status().message()));

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  weft::log::StartProcess("mds." + options.name);

  // A first start fails fast on a wrong address; a restart keeps trying.
  auto etcd = weft::etcd::Client::Connect(*endpoints, absl::Seconds(5));
  for (const bool restarted = std::getenv(kRestartedEnv) != nullptr; !etcd.ok() && restarted;) {
    LOG(WARNING) << "event=etcd_wait status=\"" << etcd.status() << "\"";
    etcd = weft::etcd::Client::Connect(*endpoints, absl::Seconds(5));
  }
  if (!etcd.ok()) return Fail(std::string(etcd.status().message()));
  // Unique per incarnation: OSDs answer a request id they have completed
  // from their log without applying it again, so a restarted MDS reusing
  // "mds.a" with tids from 1 would have its writes silently dropped.
  const std::string osd_client = absl::StrCat("mds.", options.name, ".", getpid(), ".",
                                              absl::ToUnixNanos(absl::Now()));
  // Registered before anything is served or campaigned for: a second
  // daemon of a running one's name stops here.
  weft::pb::MdsAlive self;
  self.set_name(options.name);
  self.set_addr(addr);
  self.set_client(osd_client);
  self.set_started_ms(absl::ToUnixMillis(absl::Now()));
  weft::mds::MdsRegistry registry(etcd->get(), *fsid, self, *beacon_grace);
  auto registered = registry.Register([&original_argv] {
    // Frozen or cut off past the grace: the map manager may have fenced
    // this process and handed its ranks on.
    StartOver(original_argv, "liveness_lease_lost");
  });
  if (!registered.ok()) return Fail(std::string(registered.message()));
  weft::mds::MapManager manager(options, etcd->get());
  // Metrics listen before the election: a bad address stops this MDS before
  // it can win and hold the maps. Series read the daemon only once it is up.
  std::atomic<weft::mds::MdsDaemon*> daemon_ptr{nullptr};
  weft::mds::MdsMetrics metrics(&manager, &daemon_ptr);
  std::unique_ptr<weft::metrics::HttpServer> metrics_server;
  if (!metrics_addr->empty()) {
    auto started = weft::metrics::HttpServer::Start(*metrics_addr, metrics.registry());
    if (!started.ok()) return Fail(std::string(started.status().message()));
    metrics_server = std::move(*started);
  }
  if (auto status = manager.Start(); !status.ok()) return Fail(std::string(status.message()));

  auto daemon_options = weft::mds::DaemonOptions::FromConfig(*config);
  if (!daemon_options.ok()) return Fail(std::string(daemon_options.status().message()));
  daemon_options->name = options.name;
  daemon_options->addr = addr;
  weft::mds::FsMapStore fsmap(&manager, etcd->get(), *fsid);
  if (auto status = fsmap.Start(); !status.ok()) return Fail(std::string(status.message()));
  manager.SetPoolUser([&fsmap](weft::PoolId pool) -> std::string {
    const weft::pb::FsMap map = fsmap.map();  // not a temporary: the loop keeps references
    for (const auto& fs : map.filesystems()) {
      if (fs.metadata_pool() == pool.value()) return fs.name();
      for (uint32_t p : fs.data_pools()) {
        if (p == pool.value()) return fs.name();
      }
    }
    return "";
  });

  weft::mds::ClusterService service(&manager);
  grpc::ServerBuilder builder;
  weft::rpc::ConfigureServer(&builder);
  int port = 0;
  builder.AddListeningPort(addr, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  // The namespace services are registered now and answer UNAVAILABLE until
  // the daemon is up (daemon_ptr).
  std::unique_ptr<weft::mds::MdsDaemon> daemon;
  weft::mds::MdsService mds_service(&daemon_ptr, &metrics);
  weft::mds::FilesystemsService fs_service(&daemon_ptr, &fsmap);
  builder.RegisterService(&mds_service);
  builder.RegisterService(&fs_service);
  auto server = builder.BuildAndStart();
  if (server == nullptr || port == 0) return Fail("cannot listen on " + addr);

  weft::objects::ClientOptions client_options;
  client_options.full_try = true;  // journal and namespace writes, also when full
  client_options.name = osd_client;
  // Its maps come from the map manager in this process.
  auto objects = weft::objects::ObjectClient::Connect(
      client_options, std::make_unique<weft::mds::ManagerMapSource>(&manager));
  if (!objects.ok()) return Fail("object client: " + std::string(objects.status().message()));
  daemon = std::make_unique<weft::mds::MdsDaemon>(*daemon_options, &manager, &fsmap, &registry,
                                                  objects->get());
  manager.SetDeferLeadership([d = daemon.get()] { return d->WouldRatherNotLead(); });
  manager.SetExtraHealth([d = daemon.get()](weft::pb::StatusReply* r) { d->AddHealthChecks(r); });
  daemon->SetRestart(
      [&original_argv](const std::string& reason) { StartOver(original_argv, reason); });
  daemon->Start();
  daemon_ptr.store(daemon.get());
  LOG(INFO) << "event=started name=" << options.name << " addr=" << addr;

  int sig = 0;
  sigwait(&signals, &sig);
  LOG(INFO) << "event=signal sig=" << sig;
  metrics_server.reset();  // no scrape reads the ranks while they stop
  daemon_ptr.store(nullptr);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  manager.SetDeferLeadership(nullptr);
  manager.SetExtraHealth(nullptr);
  daemon->Stop();
  registry.Stop();
  fsmap.Stop();
  manager.Stop();
  return 0;
}
