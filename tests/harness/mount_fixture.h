// For Catch2 tests through a weft-fuse mount: a cluster with filesystem
// "fs1" mounted (tests/harness/mount.h), and the file I/O of
// tests/harness/file_io.h with REQUIREd success, so that a test reads like
// the syscalls it checks. Header-only because it uses Catch2's assertions:
// include it from tests, never from forked RunAs children (use file_io.h
// there).
#pragma once

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status/status.h"
#include "tests/harness/cluster.h"
#include "tests/harness/file_io.h"
#include "tests/harness/fs_fixture.h"
#include "tests/harness/http.h"
#include "tests/harness/mount.h"

namespace weft::testing {

struct MountFixture {
  // `data` is the data pool of fs1 (3x by default, or EC).
  explicit MountFixture(ClusterOptions options = {}, const DataPoolOptions& data = {})
      : cluster(StartClusterWithFs(std::move(options), data)) {
    Remount();
  }
  // Unmounts, then mounts fs1 with a new weft-fuse process on a new
  // directory: nothing is cached in the kernel or the client any more.
  void Remount() {
    mount.reset();
    auto m = Mount::Start(*cluster, "fs1");
    INFO(m.status());
    REQUIRE(m.ok());
    mount = std::move(*m);
  }
  // The path of `rel` inside the mount.
  std::string P(const std::string& rel) const { return mount->Path(rel); }

  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<Mount> mount;  // declared last: unmounted before the cluster stops
};

// fs1 mounted a second time (`other`, options `other_options`): another
// client, with its own weft-fuse and session, as another host would be.
struct TwoMountFixture : MountFixture {
  explicit TwoMountFixture(ClusterOptions options = {}, const std::string& other_options = "")
      : MountFixture(std::move(options)) {
    auto m = Mount::Start(*cluster, "fs1", other_options);
    INFO(m.status());
    REQUIRE(m.ok());
    other = std::move(*m);
  }
  // The path of `rel` inside the other mount.
  std::string Q(const std::string& rel) const { return other->Path(rel); }
  std::unique_ptr<Mount> other;  // unmounted before the fixture's mount and cluster
};

// What rank 0 of filesystem `fs` reports (`weft fs status`).
inline pb::FsStatusReply FsStatusOf(Cluster& cluster, const std::string& fs = "fs1") {
  auto meta = cluster.Meta(fs);
  REQUIRE(meta != nullptr);
  auto status = meta->FsStatus();
  INFO(status.status());
  REQUIRE(status.ok());
  return *std::move(status);
}

// All of `data` written at `off`.
inline void WriteAll(int fd, const std::string& data, off_t off) {
  const absl::Status s = WriteFully(fd, static_cast<uint64_t>(off), data);
  INFO(s);
  REQUIRE(s.ok());
}

// [off, off+len), shorter if the file ends first.
inline std::string ReadAt(int fd, off_t off, size_t len) {
  std::string out;
  const absl::Status s = ReadFully(fd, static_cast<uint64_t>(off), len, &out);
  INFO(s);
  REQUIRE(s.ok());
  return out;
}

// The whole file, with any bytes past the size it reports.
inline std::string ReadFile(const std::string& path) {
  absl::StatusOr<std::string> data = ReadWholeFile(path);
  INFO(data.status());
  REQUIRE(data.ok());
  return *std::move(data);
}

// Creates or truncates `path` and writes `data`; close must succeed too.
inline void WriteFile(const std::string& path, const std::string& data, mode_t mode = 0644) {
  const absl::Status s = WriteWholeFile(path, data, mode);
  INFO(s);
  REQUIRE(s.ok());
}

// fsync of the file at `path`: close() only starts the write-back, so a
// test that looks at the objects themselves (not through the MDS, which
// recalls it) syncs first.
inline void SyncFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  INFO("open " << path << ": errno " << (fd >= 0 ? 0 : errno));
  REQUIRE(fd >= 0);
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  INFO("fsync " << path << ": errno " << (rc == 0 ? 0 : err));
  REQUIRE(rc == 0);
}

// getxattr(2) of `name` on `path`: its value, or "errno=N" (to compare with
// the errno a check expects).
inline std::string Xattr(const std::string& path, const std::string& name) {
  absl::StatusOr<std::string> v = GetXattr(path, name);
  return v.ok() ? *std::move(v) : absl::StrCat("errno=", StatusToErrno(v.status()));
}

// MDS requests of kind `op` ("lookup", "getattr", ...) served so far, from
// its metrics (ClusterOptions::metrics).
inline double MdsRequests(Cluster& cluster, const std::string& op) {
  auto page = HttpGet(cluster.MdsMetricsAddr(), "/metrics");
  REQUIRE(page.ok());
  auto v = MetricValue(page->body,
                       absl::StrCat("weft_mds_request_latency_seconds_count{op=\"", op, "\"}"));
  return v.ok() ? *v : 0;  // none served yet
}

// stat(2)'s errno for `path` (0: it succeeded).
inline int StatErrno(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? 0 : errno;
}

// lstat(2) of `path` (a symlink itself, not its target).
inline struct stat Lstat(const std::string& path) {
  struct stat st = {};
  const int rc = lstat(path.c_str(), &st);
  INFO("lstat " << path << ": errno " << (rc == 0 ? 0 : errno));
  REQUIRE(rc == 0);
  return st;
}

}  // namespace weft::testing
