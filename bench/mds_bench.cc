// weft-mdbench: the shared metadata workload (../shared/anchors/bench/mdbench.c)
// run against the Weft MDS through the client library's gRPC API (there is no
// mount yet), so that bench/mds_bench.sh reads Weft's and Ceph's outputs alike.
//
//   weft-mdbench -c CONF --fs NAME [--threads 4] [--files 5000] [--shared] [--dir NAME]
//   weft-mdbench -c CONF --fs NAME --create-only N [--threads 4] [--dir NAME]
//
// THREADS threads, thread t on FILES files f.<t>.<i>, in DIR/t<t> (private) or
// all in DIR/shared (--shared); DIR is a directory under the filesystem's root
// (default mdbench.<pid>). Every phase starts on a barrier across the threads
// and is timed from the barrier that starts it to the barrier that ends it:
//   create   create{exclusive}: an empty regular file      (mdbench: open(O_CREAT|O_EXCL), close)
//   stat     lookup{parent, name}, which returns the attrs (mdbench: stat)
//   readdir  every entry of the directory, kReaddirPage a page; with --shared
//            only thread 0 lists, as in mdbench.c       (mdbench: opendir, readdir*)
//   unlink   unlink{parent, name}                          (mdbench: unlink)
// Output, one line per phase as mdbench.c prints it:
//   <phase> <ops> <seconds> <ops_per_s>
// where readdir's ops are the directories listed. The directories are removed
// at the end. Each request is one MDS round trip; through a mount the kernel
// adds its own (a create is lookup + create + release there).
//
// --create-only N: N files f.<t>.<i> in the one directory DIR (split over the
// threads) and nothing else, no cleanup: the memory test of
// `mds_bench.sh MILLION=1`. Prints "create <ops> <seconds> <ops_per_s>", then
// the MDS's resident set as its FsStatus reports it (MiB, the whole weft-mds
// process), before, after, and the highest of one sample a second:
//   mds_rss_mib_before <v>   mds_rss_mib <v>   mds_rss_mib_peak <v>
//   mds_cached_inodes <n>    mds_journal_mib <v>
//
// All threads share one MetaClient, i.e. one MDS session, as mdbench's threads
// share one mount. Any failed request stops the run: the first error is
// printed and the exit status is 1.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/config/config.h"
#include "common/status/status.h"
#include "fuse-client/lib/meta_client.h"

ABSL_FLAG(std::string, conf, "", "config file (default $WEFT_CONF or /etc/weft/weft.conf)");
ABSL_FLAG(std::string, fs, "", "filesystem name");
ABSL_FLAG(int32_t, threads, 4, "client threads");
ABSL_FLAG(int32_t, files, 5000, "files per thread");
ABSL_FLAG(bool, shared, false, "all threads in one shared directory");
ABSL_FLAG(std::string, dir, "",
          "working directory under the root (default mdbench.<pid> or create.<pid>)");
ABSL_FLAG(int64_t, create_only, 0, "create this many files in one directory, then report MDS RSS");

namespace weft::bench {
namespace {

constexpr uint32_t kReaddirPage = 1024;
constexpr int32_t kThreadsMax = 1024;              // mdbench.c's limit
constexpr int32_t kFilesPerThreadMax = 100000000;
constexpr int64_t kCreateOnlyMax = 1000000000;
constexpr double kMiB = 1048576.0;

struct BenchOptions {
  std::string conf;
  std::string fs;
  int32_t threads = 4;
  int32_t files_per_thread = 5000;
  bool shared = false;
  std::string dir;
  int64_t create_only = 0;  // 0: the four phases

  absl::Status Validate() const {
    if (fs.empty()) return absl::InvalidArgumentError("--fs is required");
    if (threads < 1 || threads > kThreadsMax) {
      return absl::InvalidArgumentError(
          absl::StrCat("--threads must be within [1, ", kThreadsMax, "]"));
    }
    if (files_per_thread < 1 || files_per_thread > kFilesPerThreadMax) {
      return absl::InvalidArgumentError("--files must be within [1, 100000000]");
    }
    if (create_only < 0 || create_only > kCreateOnlyMax) {
      return absl::InvalidArgumentError("--create-only must be within [0, 1000000000]");
    }
    if (dir.empty() || dir.find('/') != std::string::npos || dir == "." || dir == "..") {
      return absl::InvalidArgumentError("--dir must be one path component");
    }
    return absl::OkStatus();
  }
};

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string FileName(int thread, int64_t i) { return absl::StrCat("f.", thread, ".", i); }

// The namespace calls the benchmark makes: one MDS request each.
class Namespace {
 public:
  explicit Namespace(client::MetaClient* meta) : meta_(meta) {}

  // mkdir, or the existing directory's ino when `may_exist` and it exists.
  absl::StatusOr<uint64_t> Mkdir(uint64_t parent, const std::string& name, bool may_exist) {
    pb::MetaRequest r;
    r.mutable_mkdir()->set_parent(parent);
    r.mutable_mkdir()->set_name(name);
    r.mutable_mkdir()->set_mode(S_IFDIR | 0755);
    auto reply = meta_->Call(std::move(r));
    if (reply.ok()) return reply->attr().ino();
    if (!may_exist || !IsExists(reply.status())) return reply.status();
    ASSIGN_OR_RETURN(pb::Attr attr, Lookup(parent, name));
    if (!S_ISDIR(attr.mode())) {
      return ErrnoError(absl::StatusCode::kFailedPrecondition, ENOTDIR, name);
    }
    return attr.ino();
  }

  absl::Status Create(uint64_t parent, const std::string& name) {
    pb::MetaRequest r;
    pb::CreateOp* op = r.mutable_create();
    op->set_parent(parent);
    op->set_name(name);
    op->set_mode(S_IFREG | 0644);
    op->set_exclusive(true);
    return meta_->Call(std::move(r)).status();
  }

  absl::StatusOr<pb::Attr> Lookup(uint64_t parent, const std::string& name) {
    pb::MetaRequest r;
    r.mutable_lookup()->set_parent(parent);
    r.mutable_lookup()->set_name(name);
    auto reply = meta_->Call(std::move(r));
    if (!reply.ok()) return reply.status();
    return reply->attr();
  }

  // The number of entries in directory `ino`, paging by the last cookie.
  absl::StatusOr<int64_t> CountEntries(uint64_t ino) {
    int64_t count = 0;
    uint64_t cookie = 0;
    for (;;) {
      pb::MetaRequest r;
      r.mutable_readdir()->set_ino(ino);
      r.mutable_readdir()->set_cookie(cookie);
      r.mutable_readdir()->set_max_entries(kReaddirPage);
      auto reply = meta_->Call(std::move(r));
      if (!reply.ok()) return reply.status();
      count += reply->entries_size();
      if (reply->eof() || reply->entries().empty()) return count;
      cookie = reply->entries(reply->entries_size() - 1).cookie();
    }
  }

  absl::Status Unlink(uint64_t parent, const std::string& name) {
    pb::MetaRequest r;
    r.mutable_unlink()->set_parent(parent);
    r.mutable_unlink()->set_name(name);
    return meta_->Call(std::move(r)).status();
  }

  absl::Status Rmdir(uint64_t parent, const std::string& name) {
    pb::MetaRequest r;
    r.mutable_rmdir()->set_parent(parent);
    r.mutable_rmdir()->set_name(name);
    return meta_->Call(std::move(r)).status();
  }

 private:
  client::MetaClient* const meta_;
};

// The first error any thread met; the others stop at their next request.
class FirstError {
 public:
  void Record(const absl::Status& status, const std::string& what) {
    absl::MutexLock lock(&mu_);
    if (status_.ok()) status_ = Annotate(status, what);
    failed_.store(true, std::memory_order_relaxed);
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  absl::Status status() {
    absl::MutexLock lock(&mu_);
    return status_;
  }

 private:
  absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};
};

enum Phase { kCreate = 0, kStat, kReaddir, kUnlink, kPhases };
constexpr const char* kPhaseNames[kPhases] = {"create", "stat", "readdir", "unlink"};

// The four phases of mdbench.c over directories made beforehand.
class PhaseRunner {
 public:
  PhaseRunner(const BenchOptions& options, Namespace* ns, std::vector<uint64_t> dir_of_thread)
      : options_(options), ns_(ns), dir_of_thread_(std::move(dir_of_thread)),
        barrier_(options.threads) {}

  // Runs every phase on every thread; fills start_s_/end_s_.
  void Run() {
    std::vector<std::thread> threads;
    for (int t = 0; t < options_.threads; ++t) threads.emplace_back([this, t] { Worker(t); });
    for (std::thread& th : threads) th.join();
  }

  void Print() const {
    for (int ph = 0; ph < kPhases; ++ph) {
      const double s = end_s_[ph] - start_s_[ph];
      const int64_t ops = ph == kReaddir ? (options_.shared ? 1 : options_.threads)
                                         : int64_t{options_.threads} * options_.files_per_thread;
      std::printf("%s %ld %.3f %.1f\n", kPhaseNames[ph], ops, s, ops / s);
    }
  }

  FirstError& error() { return error_; }

 private:
  void Worker(int t) {
    for (int ph = 0; ph < kPhases; ++ph) {
      // Two barriers around thread 0 reading the clock, as in mdbench.c.
      barrier_.arrive_and_wait();
      if (t == 0) start_s_[ph] = NowSeconds();
      barrier_.arrive_and_wait();
      RunPhase(static_cast<Phase>(ph), t);
      barrier_.arrive_and_wait();
      if (t == 0) end_s_[ph] = NowSeconds();
    }
  }

  void RunPhase(Phase ph, int t) {
    const uint64_t dir = dir_of_thread_[t];
    if (ph == kReaddir) {
      if (options_.shared && t != 0) return;
      if (error_.failed()) return;
      const int64_t want = options_.shared ? int64_t{options_.threads} * options_.files_per_thread
                                           : options_.files_per_thread;
      auto n = ns_->CountEntries(dir);
      if (!n.ok()) {
        error_.Record(n.status(), absl::StrCat("readdir of thread ", t, "'s directory"));
      } else if (*n != want) {
        error_.Record(absl::DataLossError(absl::StrCat("listed ", *n, " entries, created ", want)),
                      absl::StrCat("readdir of thread ", t, "'s directory"));
      }
      return;
    }
    for (int i = 0; i < options_.files_per_thread && !error_.failed(); ++i) {
      const std::string name = FileName(t, i);
      absl::Status status;
      if (ph == kCreate) status = ns_->Create(dir, name);
      if (ph == kStat) status = ns_->Lookup(dir, name).status();
      if (ph == kUnlink) status = ns_->Unlink(dir, name);
      if (!status.ok()) error_.Record(status, absl::StrCat(kPhaseNames[ph], " ", name));
    }
  }

  const BenchOptions& options_;
  Namespace* const ns_;
  const std::vector<uint64_t> dir_of_thread_;
  std::barrier<> barrier_;
  FirstError error_;
  // Written by thread 0 only, read after the join.
  double start_s_[kPhases] = {};
  double end_s_[kPhases] = {};
};

int Fail(const absl::Status& status, const std::string& what) {
  std::fprintf(stderr, "weft-mdbench: %s: %s\n", what.c_str(), status.ToString().c_str());
  return 1;
}

// The four phases in DIR/t<N> or DIR/shared, then the directories removed.
int RunPhases(const BenchOptions& options, client::MetaClient* meta) {
  Namespace ns(meta);
  auto top = ns.Mkdir(meta->root(), options.dir, /*may_exist=*/true);
  if (!top.ok()) return Fail(top.status(), absl::StrCat("mkdir ", options.dir));
  std::vector<std::string> names;
  std::vector<uint64_t> dir_of_thread;
  for (int t = 0; t < options.threads; ++t) {
    if (options.shared && t > 0) {
      dir_of_thread.push_back(dir_of_thread[0]);
      continue;
    }
    names.push_back(options.shared ? "shared" : absl::StrCat("t", t));
    auto ino = ns.Mkdir(*top, names.back(), /*may_exist=*/true);
    if (!ino.ok()) {
      return Fail(ino.status(), absl::StrCat("mkdir ", options.dir, "/", names.back()));
    }
    dir_of_thread.push_back(*ino);
  }
  PhaseRunner runner(options, &ns, std::move(dir_of_thread));
  runner.Run();
  absl::Status status = runner.error().status();
  if (!status.ok()) return Fail(status, "run");
  runner.Print();
  std::fflush(stdout);
  for (const std::string& name : names) {
    status = ns.Rmdir(*top, name);
    if (!status.ok()) return Fail(status, absl::StrCat("rmdir ", options.dir, "/", name));
  }
  status = ns.Rmdir(meta->root(), options.dir);
  if (!status.ok() && !IsNotEmpty(status)) {
    return Fail(status, absl::StrCat("rmdir ", options.dir));
  }
  return 0;
}

// Samples the MDS's RSS once a second until stopped; keeps the highest.
class RssSampler {
 public:
  explicit RssSampler(client::MetaClient* meta) : meta_(meta) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~RssSampler() { Stop(); }

  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    if (thread_.joinable()) thread_.join();
  }
  uint64_t peak_bytes() {
    absl::MutexLock lock(&mu_);
    return peak_bytes_;
  }

 private:
  void Loop() {
    for (;;) {
      auto status = meta_->FsStatus();  // no RPC under the lock
      absl::MutexLock lock(&mu_);
      if (status.ok()) peak_bytes_ = std::max<uint64_t>(peak_bytes_, status->rss_bytes());
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Seconds(1))) return;
    }
  }

  client::MetaClient* const meta_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t peak_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

// --create-only N: N creates in DIR over the threads, and the MDS's RSS.
int RunCreateOnly(const BenchOptions& options, client::MetaClient* meta) {
  Namespace ns(meta);
  auto before = meta->FsStatus();
  if (!before.ok()) return Fail(before.status(), "fs status");
  auto dir = ns.Mkdir(meta->root(), options.dir, /*may_exist=*/false);
  if (!dir.ok()) return Fail(dir.status(), absl::StrCat("mkdir ", options.dir));
  RssSampler sampler(meta);
  FirstError error;
  std::atomic<int64_t> done{0};
  const double start_s = NowSeconds();
  std::vector<std::thread> threads;
  for (int t = 0; t < options.threads; ++t) {
    threads.emplace_back([&, t] {
      // Thread t creates the i with i % threads == t.
      for (int64_t i = t; i < options.create_only && !error.failed(); i += options.threads) {
        absl::Status status = ns.Create(*dir, FileName(t, i));
        if (!status.ok()) error.Record(status, absl::StrCat("create ", FileName(t, i)));
        const int64_t n = done.fetch_add(1) + 1;
        if (n % 100000 == 0) {
          std::fprintf(stderr, "weft-mdbench: %ld files created, %.0f s\n", n,
                       NowSeconds() - start_s);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  const double elapsed_s = NowSeconds() - start_s;
  sampler.Stop();
  if (!error.status().ok()) return Fail(error.status(), "run");
  auto after = meta->FsStatus();
  if (!after.ok()) return Fail(after.status(), "fs status");
  const uint64_t peak = std::max({sampler.peak_bytes(), before->rss_bytes(), after->rss_bytes()});
  std::printf("create %ld %.3f %.1f\n", options.create_only, elapsed_s,
              options.create_only / elapsed_s);
  std::printf("mds_rss_mib_before %.1f\n", before->rss_bytes() / kMiB);
  std::printf("mds_rss_mib %.1f\n", after->rss_bytes() / kMiB);
  std::printf("mds_rss_mib_peak %.1f\n", peak / kMiB);
  std::printf("mds_cached_inodes %lu\n", after->cached_inodes());
  std::printf("mds_journal_mib %.1f\n", after->journal_bytes() / kMiB);
  return 0;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "weft-mdbench -c CONF --fs NAME [--threads 4] [--files 5000] [--shared] [--dir NAME]\n"
      "       weft-mdbench -c CONF --fs NAME --create-only N [--threads 4] [--dir NAME]");
  // -c is --conf, and --create-only is Abseil's --create_only.
  std::vector<std::string> spelled;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-c") a = "--conf";
    if (a.rfind("--", 0) == 0) {
      for (size_t j = 2; j < a.size() && a[j] != '='; ++j) {
        if (a[j] == '-') a[j] = '_';
      }
    }
    spelled.push_back(std::move(a));
  }
  std::vector<char*> args;
  for (std::string& a : spelled) args.push_back(a.data());
  absl::ParseCommandLine(static_cast<int>(args.size()), args.data());

  weft::bench::BenchOptions options;
  options.conf = absl::GetFlag(FLAGS_conf);
  options.fs = absl::GetFlag(FLAGS_fs);
  options.threads = absl::GetFlag(FLAGS_threads);
  options.files_per_thread = absl::GetFlag(FLAGS_files);
  options.shared = absl::GetFlag(FLAGS_shared);
  options.create_only = absl::GetFlag(FLAGS_create_only);
  options.dir = absl::GetFlag(FLAGS_dir);
  if (options.dir.empty()) {
    options.dir = absl::StrCat(options.create_only > 0 ? "create" : "mdbench", ".", getpid());
  }
  if (auto status = options.Validate(); !status.ok()) return weft::bench::Fail(status, "options");

  auto config = weft::Config::Load(weft::Config::DefaultPath(options.conf));
  if (!config.ok()) return weft::bench::Fail(config.status(), "config");
  auto mds = config->MdsAddresses();
  if (!mds.ok()) return weft::bench::Fail(mds.status(), "config");
  weft::client::MetaClientOptions meta_options;
  meta_options.mds_addrs = *mds;
  meta_options.fs = options.fs;
  auto meta = weft::client::MetaClient::Connect(meta_options);
  if (!meta.ok()) return weft::bench::Fail(meta.status(), "connect");
  return options.create_only > 0 ? weft::bench::RunCreateOnly(options, meta->get())
                                 : weft::bench::RunPhases(options, meta->get());
}
