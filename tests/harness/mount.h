// A weft-fuse mount for tests: starts `weft-fuse DIR -f -o conf=,fs=,log=`
// against a Cluster on a fresh directory inside the cluster's directory,
// waits until the kernel shows the mount, and in its destructor — also when a
// test assertion fails — unmounts (fusermount3 -u, then -u -z), kills the
// process by PID and removes the directory.
#pragma once

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "tests/harness/cluster.h"

namespace weft::testing {

class Mount {
 public:
  // `extra_options` are appended to -o (e.g. "subdir=/a"); `cgroup_procs`
  // as Process::Spawn's (a NetCut's group).
  static absl::StatusOr<std::unique_ptr<Mount>> Start(Cluster& cluster, const std::string& fs,
                                                      const std::string& extra_options = "",
                                                      const std::string& cgroup_procs = "");
  ~Mount();

  const std::string& dir() const { return dir_; }
  std::string Path(const std::string& rel) const { return dir_ + "/" + rel; }
  const std::string& log_path() const { return log_path_; }
  pid_t pid() const { return process_ ? process_->pid() : -1; }
  Process* process() { return process_.get(); }

  // Whether the kernel lists `dir` as a mount point.
  static bool IsMounted(const std::string& dir);

 private:
  Mount() = default;
  std::string dir_;
  std::string log_path_;
  std::unique_ptr<Process> process_;
};

// The absolute path of fusermount3 (Process::Spawn does not search PATH).
std::string FusermountPath();
// `fusermount3 -u -z dir`; true if it succeeded.
bool LazyUnmount(const std::string& dir);

// Who a child runs as in RunAs.
struct UserIds {
  uint32_t uid = 1000;
  uint32_t gid = 1000;
  std::vector<uint32_t> groups;  // supplementary
};

// Runs `fn` in a forked child under `ids` (setgroups, setresgid, setresuid,
// umask 022), so that the kernel, and through it the MDS, see that caller.
// `fn` returns "" on success or a description of what failed, which the
// child sends back through a pipe. Returns "" when the child succeeded, else
// that description (or why the child could not change identity or died).
// The child must not use Catch2 assertions: use USER_CHECK.
std::string RunAs(const UserIds& ids, const std::function<std::string()>& fn);

// In a RunAs child: returns the failed condition with its line and errno.
//   CHECK(RunAs(user, [&]() -> std::string {
//     USER_CHECK(open(path, O_RDONLY) < 0 && errno == EACCES);
//     return "";
//   }) == "");
#define USER_CHECK(cond)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      return absl::StrCat("line ", __LINE__, ": ", #cond, " (errno ", errno, " ",     \
                          strerror(errno), ")");                                       \
    }                                                                                  \
  } while (0)

}  // namespace weft::testing
