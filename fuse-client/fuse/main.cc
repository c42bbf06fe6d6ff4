// weft-fuse: mounts a Weft filesystem through the FUSE low-level API.
//
//   weft-fuse MOUNTPOINT -o fs=NAME[,conf=FILE][,subdir=/path][,log=FILE][,locks=local] [-f] [-d]
//   mount -t fuse.weft NAME[:/path] MOUNTPOINT -o conf=FILE     (see mount_helper.h)
//
// conf= defaults to $WEFT_CONF, else /etc/weft/weft.conf. allow_other is on
// by default (every local user works under their own identity, checked by
// the MDS). Without -f the process detaches, but only after the mount is
// up: the parent waits on a pipe and exits non-zero with the child's
// one-line reason if anything failed, so a failed mount never leaves a
// half-mounted directory. The fork happens before any gRPC thread exists.
// Logs go to log=FILE; detached, the default is
// /var/log/weft/weft-fuse.<fs>.log for root, else /tmp/weft-fuse.<fs>.log;
// stderr with -f. locks=cluster (the default) takes POSIX and flock locks
// through the MDS, so that they exclude processes on every mount;
// locks=local leaves them to this host's kernel.
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/config/config.h"
#include "common/log/log.h"
#include "fuse-client/fuse/dev_io.h"
#include "fuse-client/fuse/fuse_ops.h"
#include "fuse-client/fuse/mount_helper.h"
#include "fuse-client/lib/client_config.h"

namespace weft::fuse {
namespace {

struct MountOptions {
  char* conf = nullptr;
  char* fs = nullptr;
  char* subdir = nullptr;
  char* log = nullptr;
  int direct_writes = 1;
  char* locks = nullptr;  // cluster (default) or local
  char* recover_session = nullptr;  // no (default) or clean
  client::FileSystemClientOptions::Atime atime = client::FileSystemClientOptions::Atime::kRelatime;
  bool diratime = true;
};

// mount(8)'s atime options; the last of them wins, as in mount(8). libfuse
// 3.14 knows only atime and noatime (it passes them on to the kernel, so
// that /proc/mounts shows them) and refuses the others: those stop here.
enum AtimeKey {
  kKeyAtime = 1,
  kKeyNoatime,
  kKeyRelatime,
  kKeyStrictatime,
  kKeyNodiratime,
  kKeyDiratime,
  kKeyLazytime,  // times are written lazily anyway: accepted, nothing to do
};

const fuse_opt kOptSpecs[] = {
    {"conf=%s", offsetof(MountOptions, conf), 0},
    {"fs=%s", offsetof(MountOptions, fs), 0},
    {"subdir=%s", offsetof(MountOptions, subdir), 0},
    {"log=%s", offsetof(MountOptions, log), 0},
    {"direct_writes=%d", offsetof(MountOptions, direct_writes), 0},
    {"locks=%s", offsetof(MountOptions, locks), 0},
    {"recover_session=%s", offsetof(MountOptions, recover_session), 0},
    FUSE_OPT_KEY("noatime", kKeyNoatime),
    FUSE_OPT_KEY("atime", kKeyAtime),
    FUSE_OPT_KEY("relatime", kKeyRelatime),
    FUSE_OPT_KEY("nostrictatime", kKeyRelatime),
    FUSE_OPT_KEY("strictatime", kKeyStrictatime),
    FUSE_OPT_KEY("norelatime", kKeyStrictatime),
    FUSE_OPT_KEY("nodiratime", kKeyNodiratime),
    FUSE_OPT_KEY("diratime", kKeyDiratime),
    FUSE_OPT_KEY("lazytime", kKeyLazytime),
    FUSE_OPT_KEY("nolazytime", kKeyLazytime),
    FUSE_OPT_END,
};

// Notes an atime option; keeps for libfuse (1) what it knows, and every
// option that is not one of these.
int NoteOption(void* data, const char*, int key, fuse_args*) {
  auto* mo = static_cast<MountOptions*>(data);
  using Atime = client::FileSystemClientOptions::Atime;
  switch (key) {
    case kKeyAtime: mo->atime = Atime::kRelatime; return 1;
    case kKeyNoatime: mo->atime = Atime::kNone; return 1;
    case kKeyRelatime: mo->atime = Atime::kRelatime; return 0;
    case kKeyStrictatime: mo->atime = Atime::kStrict; return 0;
    case kKeyNodiratime: mo->diratime = false; return 0;
    case kKeyDiratime: mo->diratime = true; return 0;
    case kKeyLazytime: return 0;
    default: return 1;
  }
}

// Where the one-line failure reason goes: stderr, or the waiting parent.
int g_report_fd = -1;
bool g_log_to_file = false;  // else the log line would repeat the reason on stderr

// libfuse's own messages ("fuse: unknown option(s): ..."): until the mount
// is up they are kept and become part of the one-line failure reason;
// afterwards they go to the log. libfuse writes a line in several calls, so
// pieces wait in g_fuse_pending until their newline comes.
absl::Mutex g_fuse_log_mu;
std::string g_fuse_pending ABSL_GUARDED_BY(g_fuse_log_mu);
std::string g_fuse_messages ABSL_GUARDED_BY(g_fuse_log_mu);
std::atomic<bool> g_mounted{false};

void FuseLog(fuse_log_level level, const char* fmt, va_list ap) {
  char buf[1024];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  std::vector<std::string> lines;  // complete ones, logged after the lock
  {
    absl::MutexLock lock(&g_fuse_log_mu);
    g_fuse_pending.append(buf);
    for (size_t nl; (nl = g_fuse_pending.find('\n')) != std::string::npos;) {
      std::string line(absl::StripAsciiWhitespace(g_fuse_pending.substr(0, nl)));
      g_fuse_pending.erase(0, nl + 1);
      if (line.empty()) continue;
      if (g_mounted) {
        lines.push_back(std::move(line));
      } else if (level <= FUSE_LOG_ERR) {
        absl::StrAppend(&g_fuse_messages, g_fuse_messages.empty() ? "" : "; ", line);
      }
    }
  }
  for (const std::string& line : lines) {
    if (level <= FUSE_LOG_ERR) {
      LOG(WARNING) << "libfuse msg=\"" << line << "\"";
    } else {
      LOG(INFO) << "libfuse msg=\"" << line << "\"";  // -d
    }
  }
}

// `what`, with libfuse's explanation when it gave one.
std::string WithFuseMessages(const std::string& what) {
  absl::MutexLock lock(&g_fuse_log_mu);
  std::string messages = g_fuse_messages;
  absl::StrAppend(&messages, messages.empty() || g_fuse_pending.empty() ? "" : "; ",
                  absl::StripAsciiWhitespace(g_fuse_pending));
  return messages.empty() ? what : absl::StrCat(what, ": ", messages);
}

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

// Where a detached mount logs unless log= says.
std::string DefaultLogPath(const std::string& fs) {
  if (geteuid() == 0) {
    mkdir("/var/log/weft", 0755);
    if (access("/var/log/weft", W_OK) == 0) {
      return absl::StrCat("/var/log/weft/weft-fuse.", fs, ".log");
    }
  }
  return absl::StrCat("/tmp/weft-fuse.", fs, ".log");
}

client::FileSystemClientOptions ClientOptions(const MountOptions& mo) {
  if (mo.fs == nullptr) Fail("missing -o fs=NAME");
  auto config = Config::Load(Config::DefaultPath(mo.conf != nullptr ? mo.conf : ""));
  if (!config.ok()) Fail(std::string(config.status().message()));
  auto mds = config->MdsAddresses();
  if (!mds.ok()) Fail(std::string(mds.status().message()));
  client::FileSystemClientOptions options;
  options.mds_addrs = *mds;
  options.fs = mo.fs;
  options.atime = mo.atime;
  options.diratime = mo.diratime;
  const std::string recover = mo.recover_session != nullptr ? mo.recover_session : "no";
  if (recover != "no" && recover != "clean") {
    Fail(absl::StrCat("bad option recover_session=", recover, ": no or clean"));
  }
  options.recover_session = recover == "clean";
  absl::Status tuned = client::ApplyClientConfig(*config, &options);
  if (!tuned.ok()) Fail(std::string(tuned.message()));
  absl::Status valid = options.Validate();
  if (!valid.ok()) Fail(std::string(valid.message()));
  return options;
}

int Run(int argc, char** argv) {
  fuse_args args = FUSE_ARGS_INIT(argc, argv);
  MountOptions mo;
  fuse_set_log_func(FuseLog);
  if (fuse_opt_parse(&args, &mo, kOptSpecs, NoteOption) != 0) Fail(WithFuseMessages("bad options"));
  fuse_cmdline_opts cmd = {};
  if (fuse_parse_cmdline(&args, &cmd) != 0) Fail(WithFuseMessages("bad command line"));
  if (cmd.show_help || cmd.show_version) {
    printf("usage: weft-fuse MOUNTPOINT -o fs=NAME[,conf=FILE][,subdir=/path][,log=FILE]"
           "[,locks=local][,recover_session=clean] [-f]\n"
           "       mount -t fuse.weft NAME[:/path] MOUNTPOINT [-o conf=FILE,...]\n");
    return 0;
  }
  if (cmd.mountpoint == nullptr) Fail("no mountpoint given");
  const client::FileSystemClientOptions options = ClientOptions(mo);
  fuse_opt_add_arg(&args, "-oallow_other");
  fuse_opt_add_arg(&args, absl::StrCat("-ofsname=weft:", options.fs).c_str());
  fuse_opt_add_arg(&args, "-osubtype=weft");

  // The session first: it rejects unknown options before anything is mounted.
  MountContext ctx;
  ctx.want_direct_writes = mo.direct_writes != 0;
  const std::string locks = mo.locks != nullptr ? mo.locks : "cluster";
  if (locks != "cluster" && locks != "local") {
    Fail(absl::StrCat("bad option locks=", locks, ": cluster or local"));
  }
  ctx.want_cluster_locks = locks == "cluster";
  fuse_session* se = fuse_session_new(&args, &Operations(), sizeof(fuse_lowlevel_ops), &ctx);
  if (se == nullptr) Fail(WithFuseMessages("invalid mount options"));
  ctx.se = se;

  if (!cmd.foreground) Detach();
  std::string log_path = mo.log != nullptr ? mo.log : "";
  if (log_path.empty() && !cmd.foreground) log_path = DefaultLogPath(options.fs);
  if (!log_path.empty()) RedirectLog(log_path);
  log::StartProcess(absl::StrCat("fuse.", options.fs));

  auto fs = client::FileSystemClient::Connect(options);
  if (!fs.ok()) {
    Fail(absl::StrCat("cannot reach filesystem ", options.fs, ": ", fs.status().message()));
  }
  ctx.fs = fs->get();
  const char* subdir = mo.subdir != nullptr ? mo.subdir : "/";
  auto base = (*fs)->ResolvePath(subdir);
  if (!base.ok()) Fail(absl::StrCat("subdir ", subdir, ": ", base.status().message()));
  if (!S_ISDIR(base->mode)) Fail(absl::StrCat("subdir ", subdir, " is not a directory"));
  ctx.base_ino = base->ino;
  ctx.expirer = std::make_unique<ThreadPool>("fuse-expire", 2, 65536);
  ctx.trimmer = std::make_unique<ThreadPool>("fuse-trim", 1, 1024);
  ctx.lock_waits = std::make_unique<LockWaits>();
  (*fs)->SetDirRevoked([&ctx](uint64_t dir) { OnDirRevoked(ctx, dir); });
  (*fs)->SetAttrsRevoked([&ctx](uint64_t ino) { OnAttrsRevoked(ctx, ino); });
  (*fs)->SetCapsGivenBack([&ctx](std::vector<uint64_t> inos) {
    OnCapsGivenBack(ctx, std::move(inos));
  });
  (*fs)->SetDataInvalidated([&ctx](uint64_t ino, uint64_t size, const std::string& tail) {
    OnDataInvalidated(ctx, ino, size, tail);
  });
  // The kernel holds its root for the whole mount without ever looking it
  // up: held here too, its attributes are cached like any other directory's
  // (whether every caller may search it decides what the kernel keeps).
  (*fs)->Remember(*base);

  if (fuse_set_signal_handlers(se) != 0) Fail("cannot set signal handlers");
  if (fuse_session_mount(se, cmd.mountpoint) != 0) {
    Fail(WithFuseMessages(absl::StrCat("cannot mount on ", cmd.mountpoint)));
  }
  g_mounted = true;
  // Before the loop: the hooks must see the INIT request and its reply.
  if (!InstallDevIo(se)) LOG(WARNING) << "event=no_dev_io direct_writes=0";
  LOG(INFO) << "mounted fs=" << options.fs << " mountpoint=" << cmd.mountpoint
            << " base_ino=" << ctx.base_ino;
  ReportMounted();

  fuse_loop_config loop = {};
  loop.clone_fd = cmd.clone_fd;
  loop.max_idle_threads = cmd.max_idle_threads;
  int rc = cmd.singlethread ? fuse_session_loop(se) : fuse_session_loop_mt(se, &loop);

  LOG(INFO) << "unmounting mountpoint=" << cmd.mountpoint << " rc=" << rc;
  (*fs)->SetDirRevoked(nullptr);
  (*fs)->SetAttrsRevoked(nullptr);
  (*fs)->SetCapsGivenBack(nullptr);
  ctx.trimmer->Cancel();  // nothing to trim in a kernel that unmounts
  ctx.trimmer.reset();
  ctx.expirer.reset();  // notifies the session: before it goes
  ctx.lock_waits.reset();  // waiting lock requests answer EINTR: before it goes
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

int main(int argc, char** argv) {
  // Data buffers are allocated and freed by many threads (FUSE workers,
  // flushes, readahead, one thread per object in flight); glibc's default of
  // 8 arenas per core keeps freed buffers per thread and the client's RSS
  // grew to ~850 MiB in bench/fs_bench.sh. Few arenas keep it near what is
  // actually buffered.
  mallopt(M_ARENA_MAX, 2);
  // gRPC's default epoll1 engine lets one thread of the process poll for
  // every call: the threads parked on the lease and map streams took each
  // MDS reply off the socket and woke the FUSE thread that made the call,
  // two wakeups where one does. With "poll" a caller polls its own
  // connection (the streams have theirs): 5-6 voluntary context switches
  // per file create instead of 8, ~10% less client CPU, 6-9% more creates/s
  // with the CPUs contended (docs/ARCHITECTURE.md, "Client threads"). An
  // explicit GRPC_POLL_STRATEGY wins.
  setenv("GRPC_POLL_STRATEGY", "poll", /*overwrite=*/0);
  if (argc < 1 || !weft::fuse::IsMountHelperName(argv[0])) return weft::fuse::Run(argc, argv);
  // Started by mount(8) as mount.fuse.weft or mount.weft: translate its
  // arguments into ours, then mount as usual.
  auto command = weft::fuse::TranslateMountArgs(std::vector<std::string>(argv + 1, argv + argc));
  if (!command.ok()) {
    fprintf(stderr, "%s: %s\n", argv[0], std::string(command.status().message()).c_str());
    return 1;
  }
  if (command->fake) return 0;
  std::vector<char*> args = {argv[0]};
  for (std::string& a : command->args) args.push_back(a.data());
  args.push_back(nullptr);
  return weft::fuse::Run(static_cast<int>(args.size()) - 1, args.data());
}
