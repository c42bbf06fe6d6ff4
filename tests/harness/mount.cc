#include "tests/harness/mount.h"

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace weft::testing {

std::string FusermountPath() {
  for (const char* p : {"/usr/bin/fusermount3", "/bin/fusermount3", "/usr/local/bin/fusermount3"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "/usr/bin/fusermount3";
}

bool LazyUnmount(const std::string& dir) {
  return RunCommand({FusermountPath(), "-u", "-z", dir}).code == 0;
}

std::string RunAs(const UserIds& ids, const std::function<std::string()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(fds[0]);
    std::vector<gid_t> groups(ids.groups.begin(), ids.groups.end());
    std::string result;
    if (setgroups(groups.size(), groups.data()) != 0 ||
        setresgid(ids.gid, ids.gid, ids.gid) != 0 || setresuid(ids.uid, ids.uid, ids.uid) != 0) {
      result = "cannot change identity";
    } else {
      umask(022);
      result = fn();
    }
    (void)!write(fds[1], result.data(), result.size());
    _exit(result.empty() ? 0 : 1);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return absl::StrCat("child died: status ", status, " ", out);
  if (WEXITSTATUS(status) != 0 && out.empty()) return "child failed without a reason";
  return out;
}

bool Mount::IsMounted(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields = absl::StrSplit(line, ' ');
    if (fields.size() > 4 && fields[4] == dir) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Mount>> Mount::Start(Cluster& cluster, const std::string& fs,
                                                    const std::string& extra_options,
                                                    const std::string& cgroup_procs) {
  static std::atomic<int> counter{0};
  std::unique_ptr<Mount> m(new Mount());
  const int n = counter.fetch_add(1);
  m->dir_ = absl::StrCat(cluster.dir(), "/mnt", n);
  m->log_path_ = absl::StrCat(cluster.dir(), "/weft-fuse", n, ".log");
  if (mkdir(m->dir_.c_str(), 0755) != 0) return absl::InternalError("mkdir " + m->dir_);
  // The cluster's directory may be private to root: the mount point must be
  // reachable by the unprivileged users of the tests.
  chmod(cluster.dir().c_str(), 0755);
  chmod(m->dir_.c_str(), 0755);
  std::string opts = absl::StrCat("conf=", cluster.conf_path(), ",fs=", fs);
  if (!extra_options.empty()) absl::StrAppend(&opts, ",", extra_options);
  auto p = Process::Spawn({BinPath("weft-fuse"), m->dir_, "-f", "-o", opts}, m->log_path_,
                          cgroup_procs);
  if (!p.ok()) return p.status();
  m->process_ = std::move(*p);
  for (int i = 0; i < 300; ++i) {
    if (IsMounted(m->dir_)) return m;
    if (!m->process_->Running()) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  std::ifstream in(m->log_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return absl::InternalError(absl::StrCat("weft-fuse did not mount ", m->dir_, ": ", ss.str()));
}

Mount::~Mount() {
  if (IsMounted(dir_)) {
    CommandResult r = RunCommand({FusermountPath(), "-u", dir_});
    if (r.code != 0) {
      fprintf(stderr, "fusermount3 -u %s: code %d %s\n", dir_.c_str(), r.code, r.output.c_str());
      LazyUnmount(dir_);
    }
  }
  if (process_) {
    // Normally it exits by itself once unmounted, after writing back what
    // closed files still buffer (close does not wait for it).
    for (int i = 0; i < 600 && process_->Running(); ++i) absl::SleepFor(absl::Milliseconds(100));
    if (process_->Running()) process_->Kill(SIGKILL);
    process_->Wait();
  }
  if (IsMounted(dir_)) LazyUnmount(dir_);
  rmdir(dir_.c_str());
}

}  // namespace weft::testing
