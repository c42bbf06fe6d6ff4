#include "tests/harness/net_cut.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status/status.h"
#include "tests/harness/cluster.h"

namespace weft::testing {
namespace {

// Where cgroup2 is mounted ("" when it is not).
std::string Cgroup2Mount() {
  std::ifstream in("/proc/mounts");
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    if (f.size() >= 3 && f[2] == "cgroup2") return f[1];
  }
  return "";
}

std::string NftPath() {
  for (const char* p : {"/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

}  // namespace

NetCut::NetCut() {
  static std::atomic<int> counter{0};
  const int n = counter.fetch_add(1);
  const std::string name = absl::StrCat("weft-cut-", getpid(), "-", n);
  table_ = absl::StrCat("weft_cut_", getpid(), "_", n);
  const std::string mount = Cgroup2Mount();
  if (mount.empty()) {
    available_ = absl::UnavailableError("no cgroup2 mount in /proc/mounts");
    return;
  }
  if (NftPath().empty()) {
    available_ = absl::UnavailableError("no nft (Debian package nftables)");
    return;
  }
  dir_ = absl::StrCat(mount, "/", name);
  procs_ = dir_ + "/cgroup.procs";
  root_procs_ = mount + "/cgroup.procs";
  if (mkdir(dir_.c_str(), 0755) != 0) {
    available_ = ErrnoToStatus(errno, "mkdir " + dir_);
    dir_.clear();
    return;
  }
  // nft names a cgroup by its path under /sys/fs/cgroup, wherever cgroup2
  // is mounted below it (Debian's hybrid layout: /sys/fs/cgroup/unified).
  const std::string base = "/sys/fs/cgroup";
  if (dir_.compare(0, base.size() + 1, base + "/") != 0) {
    available_ = absl::UnavailableError("cgroup2 is mounted at " + mount + ", not under " + base);
    return;
  }
  const std::string path = dir_.substr(base.size() + 1);
  constexpr int kLevel = 1;  // the group is a child of the v2 root
  available_ = Nft(absl::StrCat(
      "add table inet ", table_, "\n",  //
      "add chain inet ", table_, " out { type filter hook output priority 0; }\n",
      "add chain inet ", table_, " in { type filter hook input priority 0; }\n"));
  // The rules' text, kept for Cut(): checked now, so that Available() says
  // whether cutting works here.
  if (available_.ok()) {
    rules_ = absl::StrCat("add rule inet ", table_, " out socket cgroupv2 level ", kLevel, " \"",
                          path, "\" drop\n", "add rule inet ", table_,
                          " in socket cgroupv2 level ", kLevel, " \"", path, "\" drop\n");
    available_ = Nft(absl::StrCat("flush chain inet ", table_, " out\n", rules_,
                                  "flush chain inet ", table_, " out\n", "flush chain inet ",
                                  table_, " in\n"));
  }
}

NetCut::~NetCut() {
  (void)Nft(absl::StrCat("delete table inet ", table_, "\n"));
  if (dir_.empty()) return;
  // Whatever still runs in the group goes back to the root group first:
  // a group with processes cannot be removed.
  std::ifstream in(procs_);
  std::string pid;
  while (std::getline(in, pid)) {
    std::ofstream out(root_procs_);
    out << pid << "\n";
  }
  rmdir(dir_.c_str());
}

absl::Status NetCut::Nft(const std::string& script) {
  const std::string file = absl::StrCat("/tmp/", table_, ".nft");
  {
    std::ofstream out(file);
    out << script;
  }
  CommandResult r = RunCommand({NftPath(), "-f", file});
  unlink(file.c_str());
  if (r.code != 0) return absl::UnavailableError(absl::StrCat("nft -f: ", r.output));
  return absl::OkStatus();
}

absl::Status NetCut::Cut() {
  RETURN_IF_ERROR(available_);
  RETURN_IF_ERROR(Nft(rules_));
  cut_ = true;
  return absl::OkStatus();
}

absl::Status NetCut::Heal() {
  if (!cut_) return absl::OkStatus();
  RETURN_IF_ERROR(Nft(absl::StrCat("flush chain inet ", table_, " out\n", "flush chain inet ",
                                   table_, " in\n")));
  cut_ = false;
  return absl::OkStatus();
}

}  // namespace weft::testing
