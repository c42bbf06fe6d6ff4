// weft-mds: the metadata server. At this stage it runs the map manager: it
// follows the cluster map and serves it to clients, and the instance elected
// through etcd manages it (OSD up/down/out, pools, admin commands).
//
//   weft-mds --name a [-c weft.conf] [--addr 127.0.0.1:6789]
#include <signal.h>
#include <unistd.h>

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

}  // namespace

int main(int argc, char** argv) {
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

  auto etcd = weft::etcd::Client::Connect(*endpoints, absl::Seconds(5));
  if (!etcd.ok()) return Fail(std::string(etcd.status().message()));
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
  // Unique per incarnation: OSDs answer a request id they have completed
  // from their log without applying it again, so a restarted MDS reusing
  // "mds.a" with tids from 1 would have its writes silently dropped.
  client_options.name = absl::StrCat("mds.", options.name, ".", getpid(), ".",
                                     absl::ToUnixNanos(absl::Now()));
  // Its maps come from the map manager in this process.
  auto objects = weft::objects::ObjectClient::Connect(
      client_options, std::make_unique<weft::mds::ManagerMapSource>(&manager));
  if (!objects.ok()) return Fail("object client: " + std::string(objects.status().message()));
  daemon = std::make_unique<weft::mds::MdsDaemon>(*daemon_options, &manager, &fsmap,
                                                  objects->get());
  daemon->Start();
  daemon_ptr.store(daemon.get());
  LOG(INFO) << "event=started name=" << options.name << " addr=" << addr;

  int sig = 0;
  sigwait(&signals, &sig);
  LOG(INFO) << "event=signal sig=" << sig;
  metrics_server.reset();  // no scrape reads the ranks while they stop
  daemon_ptr.store(nullptr);
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  daemon->Stop();
  fsmap.Stop();
  manager.Stop();
  return 0;
}
