#include "tests/harness/etcd_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/etcd/etcd_client.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "tests/harness/file_io.h"

namespace weft::testing {
namespace {

constexpr int kStartAttempts = 4;  // Fresh ports each time a bind race is lost.

// Picks `count` distinct free TCP ports on 127.0.0.1 by binding port 0. The
// sockets stay open until all are chosen so the kernel cannot hand out one twice.
// Another process may still take a port before etcd binds it; Start() retries.
absl::StatusOr<std::vector<int>> PickFreePorts(int count) {
  std::vector<int> fds;
  std::vector<int> ports;
  absl::Status status;
  for (int i = 0; i < count && status.ok(); ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      status = ErrnoToStatus(errno, "socket");
      break;
    }
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      status = ErrnoToStatus(errno, "bind 127.0.0.1:0");
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) close(fd);
  RETURN_IF_ERROR(status);
  return ports;
}

}  // namespace

EtcdProcess::EtcdProcess(std::string dir, Options options)
    : dir_(std::move(dir)), options_(std::move(options)) {}

EtcdProcess::~EtcdProcess() { Stop(); }

absl::StatusOr<std::unique_ptr<EtcdProcess>> EtcdProcess::Start(absl::string_view dir) {
  return Start(dir, Options());
}

absl::StatusOr<std::unique_ptr<EtcdProcess>> EtcdProcess::Start(absl::string_view dir,
                                                                Options options) {
  std::unique_ptr<EtcdProcess> etcd(new EtcdProcess(std::string(dir), std::move(options)));
  absl::Status status;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    ASSIGN_OR_RETURN(std::vector<int> ports, PickFreePorts(2));
    etcd->client_port_ = ports[0];
    etcd->peer_port_ = ports[1];
    // A start that failed on a port leaves at most an unusable fresh data dir.
    std::error_code ignored;
    std::filesystem::remove_all(etcd->dir_ + "/etcd.data", ignored);
    status = etcd->SpawnAndWait();
    if (status.ok()) return etcd;
    LOG(WARNING) << "etcd start failed, retrying with new ports attempt=" << attempt
                 << " error=\"" << status.message() << "\"";
  }
  return status;
}

std::string EtcdProcess::Endpoint() const { return absl::StrCat("127.0.0.1:", client_port_); }

std::string EtcdProcess::LogPath() const { return dir_ + "/etcd.log"; }

absl::Status EtcdProcess::SpawnAndWait() {
  RETURN_IF_ERROR(Spawn());
  absl::Status status = WaitReady();
  if (!status.ok()) Stop();
  return status;
}

absl::Status EtcdProcess::Spawn() {
  const std::string client_url = absl::StrCat("http://", Endpoint());
  const std::string peer_url = absl::StrCat("http://127.0.0.1:", peer_port_);
  // Short raft timers: a single member elects itself after one election
  // timeout, on every start; there are no peers for short timers to upset.
  std::vector<std::string> args = {
      options_.binary,
      "--name=weft-test",
      absl::StrCat("--data-dir=", dir_, "/etcd.data"),
      absl::StrCat("--listen-client-urls=", client_url),
      absl::StrCat("--advertise-client-urls=", client_url),
      absl::StrCat("--listen-peer-urls=", peer_url),
      absl::StrCat("--initial-advertise-peer-urls=", peer_url),
      absl::StrCat("--initial-cluster=weft-test=", peer_url),
      "--initial-cluster-state=new",
      "--initial-cluster-token=weft-test",
      "--heartbeat-interval=50",
      "--election-timeout=250",
      "--logger=zap",
      "--log-outputs=stderr",
  };
  // Everything the child needs is prepared here: after fork() in a threaded
  // process only async-signal-safe calls are allowed until exec.
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int log_fd = open(LogPath().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return ErrnoToStatus(errno, absl::StrCat("open ", LogPath()));
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    close(log_fd);
    return ErrnoToStatus(errno, "open /dev/null");
  }
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // The parent died before prctl.
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    syscall(SYS_close_range, 3U, ~0U, 0U);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int fork_errno = errno;
  close(log_fd);
  close(null_fd);
  if (pid < 0) return ErrnoToStatus(fork_errno, "fork etcd");
  setpgid(pid, pid);  // Also from here, so it holds before we signal; may race, harmless.
  pid_ = pid;
  LOG(INFO) << "etcd started pid=" << pid_ << " endpoint=" << Endpoint()
            << " peer_port=" << peer_port_ << " dir=" << dir_;
  return absl::OkStatus();
}

absl::Status EtcdProcess::WaitReady() {
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  std::string last_error;
  while (absl::Now() < deadline) {
    int wstatus = 0;
    pid_t r = waitpid(pid_, &wstatus, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return absl::InternalError(absl::StrCat("etcd exited during start (wait status ", wstatus,
                                              ", log ", LogPath(), "): ", Tail()));
    }
    auto client = etcd::Client::Connect({Endpoint()}, absl::Milliseconds(250));
    if (client.ok()) return absl::OkStatus();
    last_error = std::string(client.status().message());
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("etcd at ", Endpoint(), " not ready after ",
                   absl::FormatDuration(options_.start_timeout), ": ", last_error,
                   "; log: ", Tail()));
}

void EtcdProcess::Stop() {
  if (pid_ <= 0) return;
  if (kill(pid_, SIGKILL) != 0 && errno != ESRCH) {
    LOG(ERROR) << "kill etcd failed pid=" << pid_ << " errno=" << errno;
  }
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  LOG(INFO) << "etcd stopped pid=" << pid_ << " endpoint=" << Endpoint();
  pid_ = -1;
}

absl::Status EtcdProcess::Restart() {
  Stop();
  return SpawnAndWait();
}

std::string EtcdProcess::Tail() const { return LogTail(LogPath(), 3); }

}  // namespace weft::testing
