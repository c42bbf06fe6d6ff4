#include "tests/harness/cluster.h"

#include <grpcpp/generic/generic_stub.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/fs/mds_roles.h"
#include "common/log/log.h"
#include "common/placement/placement.h"
#include "common/status/status.h"
#include "tests/harness/file_io.h"

namespace weft::testing {

std::string BinPath(const std::string& name) { return absl::StrCat(WEFT_BIN_DIR, "/", name); }

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// --- Process -------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Process>> Process::Spawn(const std::vector<std::string>& argv,
                                                        const std::string& log_path,
                                                        const std::string& cgroup_procs) {
  // Everything the child needs is prepared here: after fork() in a threaded
  // process only async-signal-safe calls are allowed until exec.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return ErrnoToStatus(errno, absl::StrCat("open ", log_path));
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    close(log_fd);
    return ErrnoToStatus(errno, "open /dev/null");
  }
  int cgroup_fd = -1;
  if (!cgroup_procs.empty()) {
    cgroup_fd = open(cgroup_procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (cgroup_fd < 0) {
      const int err = errno;
      close(log_fd);
      close(null_fd);
      return ErrnoToStatus(err, absl::StrCat("open ", cgroup_procs));
    }
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    // "0" moves the writer itself: every socket it opens is the group's.
    if (cgroup_fd >= 0 && write(cgroup_fd, "0", 1) != 1) _exit(126);
    setpgid(0, 0);
    dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    // Nothing else of the test's: a daemon holding a file of a mount (a
    // test's open descriptor) would keep its unmount busy.
    syscall(SYS_close_range, 3U, ~0U, 0U);
    execv(args[0], args.data());
    _exit(127);
  }
  const int fork_errno = errno;
  close(log_fd);
  close(null_fd);
  if (cgroup_fd >= 0) close(cgroup_fd);
  if (pid < 0) return ErrnoToStatus(fork_errno, "fork");
  auto p = std::make_unique<Process>();
  p->pid_ = pid;
  return p;
}

Process::~Process() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    Wait();
  }
}

bool Process::Running() {
  if (reaped_) return false;
  pid_t r = waitpid(pid_, &status_, WNOHANG);
  if (r == pid_) reaped_ = true;
  return !reaped_;
}

void Process::Kill(int sig) {
  if (!reaped_) kill(pid_, sig);
}

int Process::Wait() {
  if (!reaped_) {
    while (waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
  }
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  if (WIFSIGNALED(status_)) return 128 + WTERMSIG(status_);
  return -1;
}

CommandResult RunCommand(const std::vector<std::string>& argv) {
  char path[] = "/tmp/weft-cmd-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  CommandResult result;
  auto p = Process::Spawn(argv, path);
  if (p.ok()) result.code = (*p)->Wait();
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  result.output = ss.str();
  unlink(path);
  return result;
}

// --- Cluster -------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Cluster>> Cluster::Start(ClusterOptions options) {
  std::unique_ptr<Cluster> c(new Cluster(std::move(options)));
  RETURN_IF_ERROR(c->Boot());
  return c;
}

absl::Status Cluster::Boot() {
  char tmpl[] = "/tmp/weft-test-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return ErrnoToStatus(errno, "mkdtemp");
  dir_ = tmpl;
  ASSIGN_OR_RETURN(etcd_, EtcdProcess::Start(dir_));
  for (int i = 0; i < std::max(1, options_.mds); ++i) {
    mds_addrs_.push_back(absl::StrCat("127.0.0.1:", FreePort()));
  }
  mds_.resize(mds_addrs_.size());
  if (options_.metrics) {
    mds_metrics_addr_ = absl::StrCat("127.0.0.1:", FreePort());
    for (int i = 0; i < options_.osds; ++i) {
      osd_metrics_addrs_.push_back(absl::StrCat("127.0.0.1:", FreePort()));
    }
  }
  conf_path_ = dir_ + "/weft.conf";
  {
    std::ofstream conf(conf_path_);
    conf << "fsid = test-" << getpid() << "-" << absl::ToUnixMicros(absl::Now()) << "\n"
         << "etcd = " << etcd_->Endpoint() << "\n"
         << "mds = " << absl::StrJoin(mds_addrs_, ", ") << "\n"
         // As the leadership TTL below: a killed MDS's name is free again,
         // and its rank handed on, within 3 s.
         << "mds_beacon_grace = 3\n"
         << "osd_lease_ttl_s = " << options_.osd_lease_ttl_s << "\n"
         << "osd_stats_interval_ms = 500\n"
         // A small reserve: every test cluster's files are removed at its end,
         // and ext4 without a journal makes creates dear after mass removals.
         << "osd_spare_reserve_files = 32\n"
         << "mon_osd_down_out_interval = " << options_.down_out_interval_s << "\n";
    if (options_.fs_object_bytes != 0) {
      conf << "fs_default_object_size = " << options_.fs_object_bytes << "\n";
    }
    if (options_.fs_stripe_unit_bytes != 0) {
      conf << "fs_default_stripe_unit = " << options_.fs_stripe_unit_bytes << "\n";
    }
    if (options_.fs_stripe_count != 0) {
      conf << "fs_default_stripe_count = " << options_.fs_stripe_count << "\n";
    }
    for (const std::string& line : options_.extra_conf) conf << line << "\n";
  }
  CommandResult init = Weft({"cluster", "init", "--failure-domain", options_.failure_domain});
  if (init.code != 0) return absl::InternalError("weft cluster init: " + init.output);
  for (int i = 0; i < mds_count(); ++i) RETURN_IF_ERROR(StartMds(i));
  for (int i = 0; i < options_.osds; ++i) RETURN_IF_ERROR(AddOsd().status());
  return WaitOsdsUp(options_.osds, absl::Seconds(30));
}

absl::StatusOr<int> Cluster::AddOsd() {
  const int i = static_cast<int>(osd_ids_.size());
  CommandResult created = Weft({"osd", "create", "--host", absl::StrCat("host", i)});
  int id = -1;
  if (created.code != 0 || !absl::SimpleAtoi(absl::StripAsciiWhitespace(created.output), &id)) {
    return absl::InternalError("weft osd create: " + created.output);
  }
  osd_ids_.push_back(id);
  osds_.emplace_back();
  CommandResult mkfs = RunCommand({BinPath("weft-osd"), "--mkfs", "--id", std::to_string(id),
                                   "--data", OsdDataDir(i), "-c", conf_path_});
  if (mkfs.code != 0) return absl::InternalError("weft-osd --mkfs: " + mkfs.output);
  RETURN_IF_ERROR(StartOsd(i));
  return i;
}

Cluster::~Cluster() {
  for (auto& osd : osds_) osd.reset();
  for (auto& mds : mds_) mds.reset();
  etcd_.reset();
  const char* keep = std::getenv("WEFT_KEEP_TEST_DIR");
  if (!dir_.empty() && (keep == nullptr || *keep == '\0')) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

absl::Status Cluster::StartMds(int i) {
  mds_.at(i).reset();
  std::vector<std::string> argv = {BinPath("weft-mds"), "--name", MdsName(i), "-c", conf_path_,
                                   "--addr", mds_addrs_.at(i), "--lease_ttl_s", "3"};
  if (i == 0 && !mds_metrics_addr_.empty()) {
    argv.insert(argv.end(), {"--metrics", mds_metrics_addr_});
  }
  const std::vector<std::string>& groups = options_.mds_cgroup_procs;
  const std::string group = i < static_cast<int>(groups.size()) ? groups[i] : "";
  ASSIGN_OR_RETURN(mds_[i], Process::Spawn(argv, MdsLogPath(i), group));
  // The MDS answers once it has read the map.
  CommandResult ls;
  for (int n = 0; n < 100; ++n) {
    ls = Weft({"osd", "ls"});
    if (ls.code == 0) return absl::OkStatus();
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::InternalError(absl::StrCat("weft-mds did not come up: ", ls.output,
                                          "; its log: ", LogTail(MdsLogPath(i), 5)));
}

void Cluster::KillMds(int i) { (void)SignalMds(SIGKILL, i); }

int Cluster::SignalMds(int sig, int i) {
  if (!mds_.at(i)) return -1;
  mds_[i]->Kill(sig);
  return mds_[i]->Wait();
}

void Cluster::SendMds(int sig, int i) {
  if (mds_.at(i)) mds_[i]->Kill(sig);
}

void Cluster::StopMds(int i) {
  if (mds_.at(i)) {
    mds_[i]->Kill(SIGTERM);
    mds_[i]->Wait();
  }
}

bool Cluster::MdsRunning(int i) { return mds_.at(i) && mds_[i]->Running(); }

int Cluster::ActiveMds(const std::string& fs, uint32_t rank) {
  client::FsAdmin admin(mds_addrs_, 5000);
  auto map = admin.FsList();
  if (!map.ok()) return -1;
  for (const pb::FsInfo& info : map->filesystems()) {
    if (info.name() != fs) continue;
    for (int i = 0; i < mds_count(); ++i) {
      if (fs::RankOf(info, rank).name() == MdsName(i)) return i;
    }
  }
  return -1;
}

bool Cluster::FsStatusUntil(const std::string& fs,
                            const std::function<bool(const std::string&)>& ok,
                            absl::Duration timeout, std::string* last) {
  const absl::Time deadline = absl::Now() + timeout;
  do {
    CommandResult r = Weft({"fs", "status", fs});
    *last = r.output;
    if (r.code == 0 && ok(r.output)) return true;
    absl::SleepFor(absl::Milliseconds(200));
  } while (absl::Now() < deadline);
  return false;
}

absl::Status Cluster::RestartAll(bool crash, absl::Duration timeout) {
  // The MDS first: an orderly MDS flushes its journal and cache to the OSDs.
  const absl::Time stop_start = absl::Now();
  for (int i = 0; i < mds_count(); ++i) {
    if (crash) {
      KillMds(i);
    } else {
      StopMds(i);
    }
  }
  const absl::Duration mds_stop = absl::Now() - stop_start;
  for (int i = 0; i < static_cast<int>(osds_.size()); ++i) {
    if (crash) {
      KillOsd(i);
    } else {
      StopOsd(i);
    }
  }
  LOG(INFO) << "event=restart_all crash=" << crash << " mds_stop=" << mds_stop
            << " osds_stop=" << (absl::Now() - stop_start - mds_stop);
  RETURN_IF_ERROR(etcd_->Restart());  // etcd only stops with SIGKILL
  for (int i = 0; i < mds_count(); ++i) RETURN_IF_ERROR(StartMds(i));
  for (int i = 0; i < static_cast<int>(osds_.size()); ++i) RETURN_IF_ERROR(StartOsd(i));
  const absl::Time deadline = absl::Now() + timeout;
  RETURN_IF_ERROR(WaitOsdsUp(static_cast<int>(osds_.size()), deadline - absl::Now()));
  return WaitClean(deadline - absl::Now());
}

absl::Status Cluster::CreateFs(const std::string& name, const std::string& data_pool) {
  std::string data = data_pool;
  for (const std::string& pool : {name + "_meta", name + "_data"}) {
    if (pool == name + "_data" && !data_pool.empty()) continue;
    CommandResult r = Weft({"pool", "create", pool, "--size", "3", "--pg-num", "16"});
    if (r.code != 0) return absl::InternalError("weft pool create: " + r.output);
  }
  if (data.empty()) data = name + "_data";
  RETURN_IF_ERROR(WaitClean(absl::Seconds(30)));
  CommandResult r = Weft({"fs", "new", name, "--metadata-pool", name + "_meta", "--data-pool", data});
  if (r.code != 0) return absl::InternalError("weft fs new: " + r.output);
  return absl::OkStatus();
}

absl::Status Cluster::AddDataPool(const std::string& fs, const std::string& pool,
                                  const std::vector<std::string>& create_args) {
  std::vector<std::string> create = {"pool", "create", pool};
  create.insert(create.end(), create_args.begin(), create_args.end());
  CommandResult r = Weft(create);
  if (r.code != 0) return absl::InternalError("weft pool create: " + r.output);
  RETURN_IF_ERROR(WaitClean(absl::Seconds(60)));
  r = Weft({"fs", "add-data-pool", fs, pool});
  if (r.code != 0) return absl::InternalError("weft fs add-data-pool: " + r.output);
  return absl::OkStatus();
}

absl::Status Cluster::CreateFs(const std::string& name, const DataPoolOptions& data) {
  const std::string pool = name + "_data";
  std::vector<std::string> args = {"pool", "create", pool, "--pg-num", std::to_string(data.pg_num)};
  if (data.ec_k > 0) {
    args.insert(args.end(), {"--ec", absl::StrCat(data.ec_k, "+", data.ec_m)});
    if (data.ec_chunk_bytes != 0) {
      args.insert(args.end(), {"--chunk-size", std::to_string(data.ec_chunk_bytes)});
    }
  } else {
    args.insert(args.end(), {"--size", std::to_string(data.size)});
  }
  if (!data.failure_domain.empty()) {
    args.insert(args.end(), {"--failure-domain", data.failure_domain});
  }
  CommandResult r = Weft(args);
  if (r.code != 0) return absl::InternalError("weft pool create: " + r.output);
  return CreateFs(name, pool);
}

std::unique_ptr<client::MetaClient> Cluster::Meta(const std::string& fs) {
  client::MetaClientOptions options;
  options.mds_addrs = mds_addrs();
  options.fs = fs;
  options.op_timeout_ms = 60000;
  auto c = client::MetaClient::Connect(options);
  return c.ok() ? std::move(*c) : nullptr;
}

std::string Cluster::OsdDataDir(int i) const { return absl::StrCat(dir_, "/osd.", i); }

CommandResult Cluster::Weft(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {BinPath("weft"), "-c", conf_path_};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

absl::Status Cluster::StartOsd(int i) {
  if (osds_.at(i) && osds_[i]->Running()) return absl::OkStatus();
  int id = osd_ids_.at(i);
  std::vector<std::string> argv = {BinPath("weft-osd"), "--id", std::to_string(id), "--data",
                                   OsdDataDir(i), "-c", conf_path_, "--host",
                                   absl::StrCat("host", i)};
  if (i < static_cast<int>(osd_metrics_addrs_.size())) {
    argv.insert(argv.end(), {"--metrics", osd_metrics_addrs_[i]});
  }
  ASSIGN_OR_RETURN(osds_[i], Process::Spawn(argv, OsdLogPath(i)));
  return absl::OkStatus();
}

void Cluster::KillOsd(int i) { (void)SignalOsd(i, SIGKILL); }

int Cluster::SignalOsd(int i, int sig) {
  if (!osds_.at(i)) return -1;
  osds_[i]->Kill(sig);
  return osds_[i]->Wait();
}

std::string Cluster::OsdLogPath(int i) const {
  return absl::StrCat(dir_, "/osd.", osd_ids_.at(i), ".log");
}

void Cluster::StopOsd(int i) {
  if (!osds_.at(i)) return;
  osds_[i]->Kill(SIGTERM);
  osds_[i]->Wait();
}

bool Cluster::OsdRunning(int i) { return osds_.at(i) && osds_[i]->Running(); }

absl::Status Cluster::WaitOsdsUp(int n, absl::Duration timeout) {
  auto admin = Admin();
  absl::Time deadline = absl::Now() + timeout;
  std::string last;
  while (absl::Now() < deadline) {
    auto st = admin->Status();
    if (st.ok() && static_cast<int>(st->osds_up()) >= n) return absl::OkStatus();
    last = st.ok() ? absl::StrCat(st->osds_up(), " up") : std::string(st.status().message());
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::DeadlineExceededError(absl::StrCat("OSDs not up in time: ", last));
}

absl::Status Cluster::WaitClean(absl::Duration timeout) {
  auto admin = Admin();
  absl::Time deadline = absl::Now() + timeout;
  std::string last;
  while (absl::Now() < deadline) {
    auto st = admin->Status();
    if (st.ok()) {
      // Every copy in place: "active+clean", also while a scrub runs or
      // after one found damage (+scrubbing, +inconsistent: what scrub
      // tests look at themselves).
      uint32_t clean = 0;
      for (const auto& [state, count] : st->pg_states()) {
        if (state == "active+clean" || state.rfind("active+clean+", 0) == 0) clean += count;
      }
      if (clean == st->pgs()) return absl::OkStatus();
      last.clear();
      for (const auto& [state, count] : st->pg_states()) absl::StrAppend(&last, count, " ", state, " ");
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  return absl::DeadlineExceededError(absl::StrCat("PGs not clean in time: ", last));
}

absl::StatusOr<PoolId> Cluster::CreatePool(objects::ObjectClient& client, const std::string& name,
                                           int size, int pg_num) {
  CommandResult r = Weft({"pool", "create", name, "--size", std::to_string(size), "--pg-num",
                          std::to_string(pg_num)});
  if (r.code != 0) return absl::InternalError("weft pool create: " + r.output);
  return WaitPool(client, name, absl::Seconds(30));
}

absl::StatusOr<PoolId> Cluster::WaitPool(objects::ObjectClient& client, const std::string& name,
                                         absl::Duration clean_timeout) {
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  absl::StatusOr<PoolId> pool = client.LookupPool(name);
  while (!pool.ok() && absl::Now() < deadline) {
    client.WaitNewer(client.map()->epoch, absl::Milliseconds(250));
    pool = client.LookupPool(name);
  }
  RETURN_IF_ERROR(pool.status());
  RETURN_IF_ERROR(WaitClean(clean_timeout));
  return pool;
}

bool WaitForMap(objects::ObjectClient& client, absl::Duration timeout,
                const std::function<bool(const OsdMap&)>& pred) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (pred(*client.map())) return true;
    client.WaitNewer(client.map()->epoch, absl::Milliseconds(200));
  }
  return pred(*client.map());
}

absl::Status EveryCopyMatches(objects::ObjectClient& client, PoolId pool,
                              const std::map<std::string, std::string>& objects, size_t size) {
  auto map = client.map();
  const PoolInfo* info = map->FindPool(pool);
  if (info == nullptr) return absl::NotFoundError(absl::StrCat("no pool ", pool.value()));
  for (const auto& [name, data] : objects) {
    const auto acting =
        placement::MapPg(*map, *info, placement::ObjectToPgSeed(name, info->pg_num)).acting;
    if (size != 0 && acting.size() != size) {
      return absl::FailedPreconditionError(
          absl::StrCat(name, ": ", acting.size(), " acting members, not ", size));
    }
    for (OsdId osd : acting) {
      auto got = client.GetFrom(pool, name, osd);
      if (!got.ok()) return Annotate(got.status(), absl::StrCat(name, " on osd.", osd.value()));
      if (*got != data) {
        return absl::DataLossError(absl::StrCat(name, " on osd.", osd.value(), ": ", got->size(),
                                                " bytes, not the ", data.size(), " written"));
      }
    }
  }
  return absl::OkStatus();
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = rng();
    std::memcpy(s.data() + i, &v, std::min<size_t>(8, n - i));
  }
  return s;
}

std::unique_ptr<objects::ObjectClient> Cluster::Client() {
  objects::ClientOptions options;
  options.mds_addrs = mds_addrs();
  options.op_timeout_ms = 60000;
  auto c = objects::ObjectClient::Connect(options);
  return c.ok() ? std::move(*c) : nullptr;
}

std::unique_ptr<client::AdminClient> Cluster::Admin() {
  return std::make_unique<client::AdminClient>(mds_addrs());
}

RawReply CallRaw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                 const std::string& body, absl::Duration timeout) {
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  grpc::Slice slice(body);
  grpc::ByteBuffer request(&slice, 1), response;
  auto call = stub.PrepareUnaryCall(&ctx, method, request, &cq);
  call->StartCall();
  RawReply reply;
  call->Finish(&response, &reply.status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  std::vector<grpc::Slice> slices;
  if (reply.status.ok() && response.Dump(&slices).ok()) {
    for (const auto& piece : slices) {
      reply.body.append(reinterpret_cast<const char*>(piece.begin()), piece.size());
    }
  }
  return reply;
}

}  // namespace weft::testing
