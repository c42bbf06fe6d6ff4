// A real single-member etcd (/usr/bin/etcd) for tests, on free 127.0.0.1 ports.
//
//   ASSIGN_OR_RETURN(auto etcd, EtcdProcess::Start(tmpdir));
//   auto client = weft::etcd::Client::Connect({etcd->Endpoint()}, absl::Seconds(5));
//
// Data lives in <dir>/etcd.data, the server's output in <dir>/etcd.log. The
// process is killed with SIGKILL (by PID) and reaped in Stop() and in the
// destructor. In case the test process dies first, etcd runs with
// PR_SET_PDEATHSIG=SIGKILL; note that this signal follows the *thread* that
// started it: call Start() and Restart() from a thread that outlives etcd (the
// test's main thread). etcd also runs in its own process group, so a terminal's
// Ctrl-C reaches the test process only, and the test tears etcd down itself.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace weft::testing {

class EtcdProcess {
 public:
  struct Options {
    std::string binary = "/usr/bin/etcd";
    // How long a start may take until etcd serves a linearizable read.
    absl::Duration start_timeout = absl::Seconds(15);
  };

  // Starts etcd with its files under `dir` (which must exist) and waits until it
  // answers. Retries with new ports if another process took a chosen port.
  static absl::StatusOr<std::unique_ptr<EtcdProcess>> Start(absl::string_view dir,
                                                            Options options);
  static absl::StatusOr<std::unique_ptr<EtcdProcess>> Start(absl::string_view dir);

  // Kills and reaps etcd if it runs.
  ~EtcdProcess();
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  // "127.0.0.1:PORT", the client endpoint; the same across Restart().
  std::string Endpoint() const;
  // The log file etcd writes to (appended to across restarts).
  std::string LogPath() const;
  // PID of the running etcd, or -1 when stopped.
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }

  // SIGKILL (no clean shutdown: like a crash) and reap. No-op when stopped.
  void Stop();
  // Stop() if running, then start again on the same ports and data directory,
  // and wait until etcd answers. Keys, revisions and leases survive.
  absl::Status Restart();

 private:
  EtcdProcess(std::string dir, Options options);
  // Forks and execs etcd on the current ports; fills pid_.
  absl::Status Spawn();
  // Waits until etcd answers; fails early if the process exits.
  absl::Status WaitReady();
  absl::Status SpawnAndWait();
  std::string Tail() const;  // Last lines of the log, for error messages.

  const std::string dir_;
  const Options options_;
  int client_port_ = 0;
  int peer_port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace weft::testing
