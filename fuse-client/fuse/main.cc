// weft-fuse: mounts a Weft filesystem through the FUSE low-level API.
//
//   weft-fuse MOUNTPOINT -o conf=FILE,fs=NAME[,subdir=/path][,log=FILE] [-f] [-d]
//
// allow_other is on by default (every local user works under their own
// identity, checked by the MDS). Without -f the process detaches, but only
// after the mount is up: the parent waits on a pipe and exits non-zero with
// the child's one-line reason if anything failed, so a failed mount never
// leaves a half-mounted directory. The fork happens before any gRPC thread
// exists. Logs go to log=FILE (default /tmp/weft-fuse.<fs>.log when
// detached, stderr with -f).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/config/config.h"
#include "common/log/log.h"
#include "fuse-client/fuse/fuse_ops.h"

namespace weft::fuse {
namespace {

struct MountOptions {
  char* conf = nullptr;
  char* fs = nullptr;
  char* subdir = nullptr;
  char* log = nullptr;
};

const fuse_opt kOptSpecs[] = {
    {"conf=%s", offsetof(MountOptions, conf), 0},
    {"fs=%s", offsetof(MountOptions, fs), 0},
    {"subdir=%s", offsetof(MountOptions, subdir), 0},
    {"log=%s", offsetof(MountOptions, log), 0},
    FUSE_OPT_END,
};

// Where the one-line failure reason goes: stderr, or the waiting parent.
int g_report_fd = -1;
bool g_log_to_file = false;  // else the log line would repeat the reason on stderr

[[noreturn]] void Fail(const std::string& reason) {
  std::string line = absl::StrCat("weft-fuse: ", reason, "\n");
  if (g_log_to_file) LOG(ERROR) << "mount_failed reason=\"" << reason << "\"";
  if (g_report_fd >= 0) {
    (void)!write(g_report_fd, line.data(), line.size());
  } else {
    fputs(line.c_str(), stderr);
  }
  _exit(1);
}

void ReportMounted() {
  if (g_report_fd < 0) return;
  (void)!write(g_report_fd, "", 1);  // a single NUL byte: mounted
  close(g_report_fd);
  g_report_fd = -1;
}

// Forks; the parent waits for the child to mount (or fail) and exits.
void Detach() {
  int fds[2];
  if (pipe(fds) != 0) Fail(absl::StrCat("pipe: ", strerror(errno)));
  pid_t pid = fork();
  if (pid < 0) Fail(absl::StrCat("fork: ", strerror(errno)));
  if (pid > 0) {
    close(fds[1]);
    std::string msg;
    char buf[512];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof(buf))) > 0) msg.append(buf, n);
    if (msg.size() == 1 && msg[0] == '\0') _exit(0);
    if (msg.empty()) msg = "weft-fuse: exited before mounting\n";
    fputs(msg.c_str(), stderr);
    _exit(1);
  }
  close(fds[0]);
  g_report_fd = fds[1];
  setsid();
  (void)!chdir("/");
  int null_fd = open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    dup2(null_fd, 0);
    dup2(null_fd, 1);
    if (null_fd > 2) close(null_fd);
  }
}

void RedirectLog(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (fd < 0) Fail(absl::StrCat("cannot open log ", path, ": ", strerror(errno)));
  dup2(fd, 2);
  close(fd);
  g_log_to_file = true;
}

client::FileSystemClientOptions ClientOptions(const MountOptions& mo) {
  if (mo.conf == nullptr) Fail("missing -o conf=FILE");
  if (mo.fs == nullptr) Fail("missing -o fs=NAME");
  auto config = Config::Load(mo.conf);
  if (!config.ok()) Fail(std::string(config.status().message()));
  auto mds = config->MdsAddresses();
  if (!mds.ok()) Fail(std::string(mds.status().message()));
  client::FileSystemClientOptions options;
  options.mds_addrs = *mds;
  options.fs = mo.fs;
  absl::Status valid = options.Validate();
  if (!valid.ok()) Fail(std::string(valid.message()));
  return options;
}

int Run(int argc, char** argv) {
  fuse_args args = FUSE_ARGS_INIT(argc, argv);
  MountOptions mo;
  if (fuse_opt_parse(&args, &mo, kOptSpecs, nullptr) != 0) Fail("bad options");
  fuse_cmdline_opts cmd = {};
  if (fuse_parse_cmdline(&args, &cmd) != 0) Fail("bad command line");
  if (cmd.show_help || cmd.show_version) {
    printf("usage: weft-fuse MOUNTPOINT -o conf=FILE,fs=NAME[,subdir=/path][,log=FILE] [-f]\n");
    return 0;
  }
  if (cmd.mountpoint == nullptr) Fail("no mountpoint given");
  const client::FileSystemClientOptions options = ClientOptions(mo);
  fuse_opt_add_arg(&args, "-oallow_other");
  fuse_opt_add_arg(&args, absl::StrCat("-ofsname=weft:", options.fs).c_str());
  fuse_opt_add_arg(&args, "-osubtype=weft");

  // The session first: it rejects unknown options before anything is mounted.
  MountContext ctx;
  fuse_session* se = fuse_session_new(&args, &Operations(), sizeof(fuse_lowlevel_ops), &ctx);
  if (se == nullptr) Fail("invalid mount options (see the line above)");

  if (!cmd.foreground) Detach();
  std::string log_path = mo.log != nullptr ? mo.log : "";
  if (log_path.empty() && !cmd.foreground) log_path = absl::StrCat("/tmp/weft-fuse.", options.fs, ".log");
  if (!log_path.empty()) RedirectLog(log_path);
  log::SetProgramTag(absl::StrCat("fuse.", options.fs));

  auto fs = client::FileSystemClient::Connect(options);
  if (!fs.ok()) Fail(absl::StrCat("cannot reach filesystem ", options.fs, ": ", fs.status().message()));
  ctx.fs = fs->get();
  ctx.base_ino = (*fs)->root();
  if (mo.subdir != nullptr) {
    auto base = (*fs)->ResolvePath(mo.subdir);
    if (!base.ok()) Fail(absl::StrCat("subdir ", mo.subdir, ": ", base.status().message()));
    if (!S_ISDIR(base->mode())) Fail(absl::StrCat("subdir ", mo.subdir, " is not a directory"));
    ctx.base_ino = base->ino();
  }

  if (fuse_set_signal_handlers(se) != 0) Fail("cannot set signal handlers");
  if (fuse_session_mount(se, cmd.mountpoint) != 0) {
    Fail(absl::StrCat("cannot mount on ", cmd.mountpoint));
  }
  LOG(INFO) << "mounted fs=" << options.fs << " mountpoint=" << cmd.mountpoint
            << " base_ino=" << ctx.base_ino;
  ReportMounted();

  fuse_loop_config loop = {};
  loop.clone_fd = cmd.clone_fd;
  loop.max_idle_threads = cmd.max_idle_threads;
  int rc = cmd.singlethread ? fuse_session_loop(se) : fuse_session_loop_mt(se, &loop);

  LOG(INFO) << "unmounting mountpoint=" << cmd.mountpoint << " rc=" << rc;
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  fs->reset();  // releases open files, closes the session
  free(cmd.mountpoint);
  fuse_opt_free_args(&args);
  return rc == 0 ? 0 : 1;
}

}  // namespace
}  // namespace weft::fuse

int main(int argc, char** argv) { return weft::fuse::Run(argc, argv); }
