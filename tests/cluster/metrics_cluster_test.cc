// Observability of real daemons: Prometheus series follow the I/O and the
// namespace requests served, an unusable metrics address stops a daemon
// before the cluster sees it, and `weft status` names a slow disk.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <functional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/harness/cluster.h"
#include "tests/harness/fs_caller.h"
#include "tests/harness/fs_fixture.h"
#include "tests/harness/http.h"

namespace weft::testing {
namespace {

std::string Scrape(const std::string& addr) {
  auto r = HttpGet(addr, "/metrics");
  INFO(addr << ": " << r.status());
  REQUIRE(r.ok());
  REQUIRE(r->code == 200);
  return r->body;
}

double Value(const std::string& text, const std::string& series) {
  auto v = MetricValue(text, series);
  INFO(series << ": " << v.status());
  REQUIRE(v.ok());
  return *v;
}

// The sum of `name{osd="N"<rest>}` over the cluster's OSDs.
double OsdSum(Cluster& c, int osds, const std::string& name, const std::string& rest = "") {
  double sum = 0;
  for (int i = 0; i < osds; ++i) {
    const std::string series = absl::StrCat(name, "{osd=\"", c.osd_id(i), "\"", rest, "}");
    sum += Value(Scrape(c.OsdMetricsAddr(i)), series);
  }
  return sum;
}

TEST_CASE("OSD metrics follow the object I/O they served", "[cluster]") {
  // No filesystem: nothing but this test writes to the OSDs, so the counts
  // are exact.
  ClusterOptions options;
  options.metrics = true;
  auto started = Cluster::Start(options);
  INFO(started.status());
  REQUIRE(started.ok());
  Cluster& c = **started;
  constexpr int kOsds = 3;

  // Three 1 MiB writes to a 3x pool: 3 MiB written through primaries, each
  // write copied to two replicas; one read of 1 MiB.
  auto client = c.Client();
  REQUIRE(client != nullptr);
  auto pool = c.CreatePool(*client, "m", 3, 8);
  REQUIRE(pool.ok());
  auto sum = [&](const std::string& name, const std::string& rest = "") {
    return OsdSum(c, kOsds, name, rest);
  };
  const double written = sum("weft_osd_write_bytes_total");
  const double read = sum("weft_osd_read_bytes_total");
  const double subops = sum("weft_osd_subop_latency_seconds_count");
  const double commits = sum("weft_osd_commit_latency_seconds_count");
  const double writes = sum("weft_osd_op_latency_seconds_count", ",op=\"write\"");
  const double reads = sum("weft_osd_op_latency_seconds_count", ",op=\"read\"");
  const std::string data = RandomBytes(1 << 20, 5);
  for (int i = 0; i < 3; ++i) REQUIRE(client->Put(*pool, absl::StrCat("o", i), data).ok());
  REQUIRE(*client->Get(*pool, "o0") == data);
  CHECK(sum("weft_osd_write_bytes_total") - written == 3 << 20);
  CHECK(sum("weft_osd_read_bytes_total") - read == 1 << 20);
  CHECK(sum("weft_osd_op_latency_seconds_count", ",op=\"write\"") - writes == 3);
  CHECK(sum("weft_osd_op_latency_seconds_count", ",op=\"read\"") - reads == 1);
  CHECK(sum("weft_osd_subop_latency_seconds_count") - subops == 6);
  CHECK(sum("weft_osd_commit_latency_seconds_count") - commits == 9);  // 3 copies each
  for (int i = 0; i < kOsds; ++i) {
    const std::string text = Scrape(c.OsdMetricsAddr(i));
    const std::string osd = absl::StrCat("{osd=\"", c.osd_id(i), "\"}");
    CHECK(Value(text, "weft_osd_pgs" + osd) > 0);
    CHECK(Value(text, "weft_osd_map_epoch" + osd) > 0);
    CHECK(Value(text, "weft_osd_objects" + osd) == 3);
    CHECK(Value(text, "weft_osd_stored_bytes" + osd) == 3 << 20);
    CHECK(Value(text, "weft_osd_fs_avail_bytes" + osd) > 0);
    // The harness's reserve is 32 files; the writes took fewer than half.
    CHECK(Value(text, "weft_osd_spare_files" + osd) >= 16);
    CHECK(Value(text, "process_resident_memory_bytes") > 0);
    // The +Inf bucket holds every observation.
    CHECK(Value(text, "weft_osd_subop_latency_seconds_bucket" +
                          absl::StrCat("{osd=\"", c.osd_id(i), "\",le=\"+Inf\"}")) ==
          Value(text, "weft_osd_subop_latency_seconds_count" + osd));
  }
}

TEST_CASE("MDS metrics count namespace requests by operation", "[cluster]") {
  ClusterOptions options;
  options.metrics = true;
  auto c = StartClusterWithFs(options);
  // Namespace requests, counted per operation, errors apart.
  auto meta = c->Meta("fs1");
  REQUIRE(meta != nullptr);
  FsCaller fs(meta.get());
  const std::string before = Scrape(c->MdsMetricsAddr());
  const double creates = Value(before, "weft_mds_request_latency_seconds_count{op=\"create\"}");
  const double lookup_errors = Value(before, "weft_mds_request_errors_total{op=\"lookup\"}");
  for (int i = 0; i < 5; ++i) REQUIRE(fs.Create(fs.root(), absl::StrCat("f", i)).ok());
  REQUIRE(Errno(fs.Lookup(fs.root(), "missing")) == ENOENT);
  const std::string after = Scrape(c->MdsMetricsAddr());
  CHECK(Value(after, "weft_mds_request_latency_seconds_count{op=\"create\"}") - creates == 5);
  CHECK(Value(after, "weft_mds_request_errors_total{op=\"lookup\"}") - lookup_errors == 1);
  CHECK(Value(after, "weft_mds_request_errors_total{op=\"create\"}") == 0);
  CHECK(Value(after, "weft_mds_sessions{fs=\"fs1\"}") >= 1);
  // The cache against its limit (1 GiB by default), and the evictions.
  CHECK(Value(after, "weft_mds_cache_limit_bytes{fs=\"fs1\"}") == 1073741824);
  CHECK(Value(after, "weft_mds_cache_bytes{fs=\"fs1\"}") > 0);
  CHECK(Value(after, "weft_mds_evictions{fs=\"fs1\"}") == 0);
  CHECK(Value(after, "weft_mds_cached_inodes{fs=\"fs1\"}") >= 6);
  CHECK(Value(after, "weft_mds_osdmap_epoch") > 0);
  CHECK(absl::StrContains(after, "# TYPE weft_mds_request_latency_seconds histogram\n"));
}

TEST_CASE("a metrics address that cannot be used stops the daemon with the reason",
          "[cluster]") {
  ClusterOptions options;
  options.metrics = true;
  options.osds = 1;
  auto started = Cluster::Start(options);
  INFO(started.status());
  REQUIRE(started.ok());
  Cluster& c = **started;
  const std::string taken = c.MdsMetricsAddr();  // the running MDS listens there

  c.StopOsd(0);
  for (const std::string& addr : {taken, std::string("not-an-address"), std::string(":99999")}) {
    CommandResult r = RunCommand({BinPath("weft-osd"), "--id", std::to_string(c.osd_id(0)),
                                  "--data", c.OsdDataDir(0), "-c", c.conf_path(), "--metrics",
                                  addr});
    INFO(r.output);
    CHECK(r.code == 1);
    CHECK(absl::StrContains(r.output, "weft-osd: metrics address"));
  }
  CommandResult mds = RunCommand({BinPath("weft-mds"), "--name", "b", "-c", c.conf_path(),
                                  "--addr", absl::StrCat("127.0.0.1:", FreePort()), "--metrics",
                                  taken});
  INFO(mds.output);
  CHECK(mds.code == 1);
  CHECK(absl::StrContains(mds.output, "weft-mds: metrics address"));
  CHECK(absl::StrContains(mds.output, "Address already in use"));

  // Nothing else changed: the OSD comes back on its own address and serves.
  REQUIRE(c.StartOsd(0).ok());
  REQUIRE(c.WaitOsdsUp(1, absl::Seconds(30)).ok());
  CHECK(absl::StrContains(Scrape(c.OsdMetricsAddr(0)), "weft_osd_pgs"));
  CHECK(absl::StrContains(Scrape(c.MdsMetricsAddr()), "weft_mds_osdmap_epoch"));
}

// Polls `weft status` for up to `timeout` until `done` says yes; the last output.
std::string StatusUntil(Cluster& c, const std::function<bool(const std::string&)>& done,
                        absl::Duration timeout = absl::Seconds(30)) {
  const absl::Time deadline = absl::Now() + timeout;
  std::string out;
  do {
    CommandResult r = c.Weft({"status"});
    out = r.output;
    if (r.code == 0 && done(out)) break;
    absl::SleepFor(absl::Milliseconds(300));
  } while (absl::Now() < deadline);
  return out;
}

TEST_CASE("weft status names the OSD whose disk is slow - and forgets it once it is fixed",
          "[cluster]") {
  ClusterOptions options;
  options.osds = 4;
  auto started = Cluster::Start(options);
  INFO(started.status());
  REQUIRE(started.ok());
  Cluster& c = **started;
  auto client = c.Client();
  REQUIRE(client != nullptr);
  auto pool = c.CreatePool(*client, "p", 3, 16);
  REQUIRE(pool.ok());

  // osd 3 comes back on a disk that answers every commit 150 ms late.
  c.StopOsd(3);
  setenv("WEFT_FAULTS", "osd.slow_disk_ms=150", 1);
  const absl::Status restarted = c.StartOsd(3);
  unsetenv("WEFT_FAULTS");
  REQUIRE(restarted.ok());
  REQUIRE(c.WaitClean(absl::Seconds(60)).ok());
  const std::string data = RandomBytes(4096, 3);
  for (int i = 0; i < 40; ++i) REQUIRE(client->Put(*pool, absl::StrCat("o", i), data).ok());

  auto slow = [&](int i) { return absl::StrCat("osd.", c.osd_id(i), "'s disk is slow"); };
  std::string status =
      StatusUntil(c, [&](const std::string& s) { return absl::StrContains(s, slow(3)); });
  INFO(status);
  CHECK(absl::StartsWith(status, "HEALTH_WARN"));
  CHECK(absl::StrContains(status, "[WARN] OSD_SLOW_DISK: " + slow(3)));
  for (int i = 0; i < 3; ++i) CHECK_FALSE(absl::StrContains(status, slow(i)));
  for (int i = 0; i < 40; ++i) REQUIRE(*client->Get(*pool, absl::StrCat("o", i)) == data);

  // Replaced by a healthy disk (the same store, without the delay).
  c.StopOsd(3);
  REQUIRE(c.StartOsd(3).ok());
  REQUIRE(c.WaitClean(absl::Seconds(60)).ok());
  for (int i = 0; i < 40; ++i) REQUIRE(client->Put(*pool, absl::StrCat("n", i), data).ok());
  status = StatusUntil(c, [](const std::string& s) { return !absl::StrContains(s, "is slow"); });
  CHECK_FALSE(absl::StrContains(status, "OSD_SLOW_DISK"));
}

}  // namespace
}  // namespace weft::testing
