// common/metrics: the exposition text, histograms, and the HTTP server
// against real sockets, including requests it must refuse.
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/config/config.h"
#include "common/metrics/http_server.h"
#include "common/metrics/metrics.h"
#include "tests/harness/http.h"

namespace weft::metrics {
namespace {

using testing::HttpExchange;
using testing::HttpGet;
using testing::MetricValue;
using testing::ParseHttp;

TEST_CASE("the registry renders families once with their series in order", "[unit]") {
  Registry r;
  std::atomic<uint64_t> reads{7};
  r.AddCounter("weft_reads_total", "Reads.\nSecond line \\ here", Label("osd", "1"),
               [&] { return static_cast<double>(reads.load()); });
  r.AddGauge("weft_fill", "Fill.", "", [] { return 0.25; });
  r.AddCounter("weft_reads_total", "ignored: the family has its help", Label("osd", "2"),
               [] { return 3.0; });
  int table_reads = 0;
  r.AddGaugeTable({{"weft_sessions", "Sessions."}, {"weft_inodes", "Inodes."}}, [&] {
    ++table_reads;
    return std::vector<Registry::Row>{{Label("fs", "a"), {2, 10}}, {Label("fs", "b"), {0, 1}}};
  });
  reads = 9;  // read when rendered, not when added
  REQUIRE(r.Render() ==
          "# HELP weft_reads_total Reads.\\nSecond line \\\\ here\n"
          "# TYPE weft_reads_total counter\n"
          "weft_reads_total{osd=\"1\"} 9\n"
          "weft_reads_total{osd=\"2\"} 3\n"
          "# HELP weft_fill Fill.\n"
          "# TYPE weft_fill gauge\n"
          "weft_fill 0.25\n"
          "# HELP weft_sessions Sessions.\n"
          "# TYPE weft_sessions gauge\n"
          "weft_sessions{fs=\"a\"} 2\n"
          "weft_sessions{fs=\"b\"} 0\n"
          "# HELP weft_inodes Inodes.\n"
          "# TYPE weft_inodes gauge\n"
          "weft_inodes{fs=\"a\"} 10\n"
          "weft_inodes{fs=\"b\"} 1\n");
  REQUIRE(table_reads == 1);  // once per scrape for all its columns
}

TEST_CASE("label values are escaped", "[unit]") {
  REQUIRE(Label("fs", "a\"b\\c\nd") == "fs=\"a\\\"b\\\\c\\nd\"");
  REQUIRE(Label("fs", "caf\xe9") == "fs=\"caf\xe9\"");  // bytes pass through
}

TEST_CASE("a histogram counts into cumulative buckets with a sum", "[unit]") {
  Histogram h({0.001, 0.01, 0.1});
  h.Observe(0.0005);
  h.Observe(0.001);  // a bound is inclusive: le="0.001"
  h.Observe(0.05);
  h.Observe(3);
  h.Observe(-1);  // a clock step back counts as zero
  Histogram::Snapshot s = h.Take();
  REQUIRE(s.cumulative == std::vector<uint64_t>{3, 3, 4, 5});
  REQUIRE(s.count == 5);
  REQUIRE(s.sum == Approx(3.0515));

  Registry r;
  r.AddHistogram("weft_lat_seconds", "Latency.", Label("op", "read"), &h);
  REQUIRE(r.Render() ==
          "# HELP weft_lat_seconds Latency.\n"
          "# TYPE weft_lat_seconds histogram\n"
          "weft_lat_seconds_bucket{op=\"read\",le=\"0.001\"} 3\n"
          "weft_lat_seconds_bucket{op=\"read\",le=\"0.01\"} 3\n"
          "weft_lat_seconds_bucket{op=\"read\",le=\"0.1\"} 4\n"
          "weft_lat_seconds_bucket{op=\"read\",le=\"+Inf\"} 5\n"
          "weft_lat_seconds_sum{op=\"read\"} 3.0515\n"
          "weft_lat_seconds_count{op=\"read\"} 5\n");
}

TEST_CASE("quantiles between two snapshots interpolate inside their bucket", "[unit]") {
  Histogram h({0.001, 0.01, 0.1});
  const Histogram::Snapshot empty = h.Take();
  REQUIRE(Quantile(h, empty, h.Take(), 0.5) == -1);
  for (int i = 0; i < 90; ++i) h.Observe(0.0005);  // old history
  const Histogram::Snapshot base = h.Take();
  for (int i = 0; i < 10; ++i) h.Observe(0.005);  // (0.001, 0.01]
  for (int i = 0; i < 10; ++i) h.Observe(0.05);   // (0.01, 0.1]
  const Histogram::Snapshot now = h.Take();
  // Only the 20 observations since `base`: the median is the 10th, at the
  // top of the second bucket; the 0.75-quantile half-way into the third.
  REQUIRE(Quantile(h, base, now, 0.5) == Approx(0.01));
  REQUIRE(Quantile(h, base, now, 0.75) == Approx(0.055));
  REQUIRE(Quantile(h, empty, now, 0.5) == Approx(0.001 * 55 / 90));  // rank 55 of 110
  h.Observe(7);
  h.Observe(8);
  h.Observe(9);
  const Histogram::Snapshot after = h.Take();
  REQUIRE(Quantile(h, now, after, 0.5) == 0.1);  // in +Inf: the largest bound
}

TEST_CASE("histograms take observations from many threads", "[unit]") {
  Histogram h;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) h.Observe(absl::Microseconds(i % 300));
    });
  }
  for (auto& t : threads) t.join();
  Histogram::Snapshot s = h.Take();
  REQUIRE(s.count == 40000);
  REQUIRE(s.cumulative.back() == 40000);
  REQUIRE(s.sum == Approx(4 * 10000 * 149.5e-6).epsilon(0.01));
}

TEST_CASE("process metrics read this process", "[unit]") {
  Registry r;
  AddProcessMetrics(&r);
  const std::string text = r.Render();
  auto rss = MetricValue(text, "process_resident_memory_bytes");
  REQUIRE(rss.ok());
  REQUIRE(*rss > 1 << 20);
  auto fds = MetricValue(text, "process_open_fds");
  REQUIRE(fds.ok());
  REQUIRE(*fds >= 3);
  auto start = MetricValue(text, "process_start_time_seconds");
  REQUIRE(start.ok());
  const double now = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  REQUIRE(*start <= now + 1);
  REQUIRE(*start > now - 24 * 3600 * 365);
  REQUIRE(MetricValue(text, "process_cpu_seconds_total").ok());
}

struct Served {
  Registry registry;
  std::atomic<uint64_t> scrapes{0};
  std::unique_ptr<HttpServer> server;

  explicit Served(absl::Duration io_timeout = absl::Seconds(2)) {
    registry.AddCounter("weft_scrapes_total", "Scrapes.", "",
                        [this] { return static_cast<double>(++scrapes); });
    auto started = HttpServer::Start("127.0.0.1:0", &registry, io_timeout);
    REQUIRE(started.ok());
    server = std::move(*started);
  }
};

TEST_CASE("GET /metrics answers the registry's text", "[unit]") {
  Served s;
  REQUIRE(absl::StartsWith(s.server->addr(), "127.0.0.1:"));
  REQUIRE(s.server->addr() != "127.0.0.1:0");
  for (int i = 1; i <= 3; ++i) {
    auto r = HttpGet(s.server->addr(), "/metrics");
    REQUIRE(r.ok());
    REQUIRE(r->code == 200);
    REQUIRE(absl::StrContains(r->headers, "Content-Type: text/plain; version=0.0.4"));
    REQUIRE(absl::StrContains(r->headers, absl::StrCat("Content-Length: ", r->body.size())));
    REQUIRE(MetricValue(r->body, "weft_scrapes_total").value() == i);
  }
  auto q = HttpGet(s.server->addr(), "/metrics?name[]=x");  // query strings are ignored
  REQUIRE(q.ok());
  REQUIRE(q->code == 200);
  auto head = HttpExchange(s.server->addr(), "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  REQUIRE(head.ok());
  auto parsed = ParseHttp(*head);
  REQUIRE(parsed.ok());
  REQUIRE(parsed->code == 200);
  REQUIRE(parsed->body.empty());
}

TEST_CASE("bad requests get their 4xx and the server keeps serving", "[unit]") {
  Served s;
  const std::string addr = s.server->addr();
  auto code = [&](const std::string& request) {
    auto raw = HttpExchange(addr, request);
    REQUIRE(raw.ok());
    auto r = ParseHttp(*raw);
    REQUIRE(r.ok());
    return r->code;
  };
  REQUIRE(code("GET /nothing HTTP/1.0\r\n\r\n") == 404);
  REQUIRE(code("POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n") == 405);
  REQUIRE(code("DELETE /metrics HTTP/1.1\r\n\r\n") == 405);
  REQUIRE(code("GET\r\n\r\n") == 400);
  REQUIRE(code("GET metrics HTTP/1.0\r\n\r\n") == 400);
  const char junk[] = "\x16\x03\x01\x02\x00 binary junk\r\n\r\n";  // a TLS hello, say
  REQUIRE(code(std::string(junk, sizeof(junk) - 1)) == 400);
  REQUIRE(code(std::string(20000, 'A')) == 431);
  // A client that closes before a whole request gets nothing and harms nothing.
  auto partial = HttpExchange(addr, "GET /metr");
  REQUIRE(partial.ok());
  REQUIRE(partial->empty());
  auto r = HttpGet(addr, "/metrics");
  REQUIRE(r.ok());
  REQUIRE(r->code == 200);
}

TEST_CASE("a silent client is dropped after the timeout", "[unit]") {
  Served s(absl::Milliseconds(300));
  const std::string addr = s.server->addr();
  absl::StatusOr<std::string> silent_got;
  std::thread silent(
      [&] { silent_got = HttpExchange(addr, "", absl::Seconds(10), /*keep_open=*/true); });
  absl::SleepFor(absl::Milliseconds(50));
  const absl::Time start = absl::Now();
  auto r = HttpGet(addr, "/metrics");  // waits its turn behind the silent one
  REQUIRE(r.ok());
  REQUIRE(r->code == 200);
  REQUIRE(absl::Now() - start < absl::Seconds(5));
  silent.join();
  REQUIRE(silent_got.ok());
  REQUIRE(silent_got->empty());  // closed by the server, unanswered
}

TEST_CASE("a daemon's metrics address: the flag - else the config port on its own host",
          "[unit]") {
  auto config = [](const std::string& text) {
    auto c = Config::Parse(text, "test");
    REQUIRE(c.ok());
    return *c;
  };
  const Config none = config("");
  REQUIRE(ListenAddr(none, "osd_metrics_port", 2, "10.0.0.5:0", "").value() == "");
  REQUIRE(ListenAddr(none, "osd_metrics_port", 2, "10.0.0.5:0", "1.2.3.4:9").value() ==
          "1.2.3.4:9");
  const Config set = config("osd_metrics_port = 9301\nmds_metrics_port = 0\n");
  REQUIRE(ListenAddr(set, "osd_metrics_port", 2, "10.0.0.5:0", "").value() == "10.0.0.5:9303");
  REQUIRE(ListenAddr(set, "osd_metrics_port", 0, "[::1]:6800", "").value() == "[::1]:9301");
  REQUIRE(ListenAddr(set, "osd_metrics_port", 2, "10.0.0.5:0", "127.0.0.1:1").value() ==
          "127.0.0.1:1");  // the flag wins
  REQUIRE(ListenAddr(set, "mds_metrics_port", 0, "10.0.0.1:6789", "").value() == "");
  for (const char* bad : {"osd_metrics_port = 65535\n", "osd_metrics_port = -1\n",
                          "osd_metrics_port = http\n"}) {
    auto addr = ListenAddr(config(bad), "osd_metrics_port", 3, "10.0.0.5:0", "");
    INFO(bad);
    REQUIRE_FALSE(addr.ok());
    REQUIRE(absl::StrContains(addr.status().message(), "osd_metrics_port"));
  }
}

TEST_CASE("bad listen addresses are refused with the reason", "[unit]") {
  Registry r;
  for (const char* addr : {"nohostport", "127.0.0.1:99999", "127.0.0.1:http", ":"}) {
    auto s = HttpServer::Start(addr, &r);
    INFO(addr);
    REQUIRE_FALSE(s.ok());
    REQUIRE(absl::StrContains(s.status().message(), "metrics address"));
  }
  auto first = HttpServer::Start("127.0.0.1:0", &r);
  REQUIRE(first.ok());
  auto taken = HttpServer::Start((*first)->addr(), &r);
  REQUIRE_FALSE(taken.ok());
  REQUIRE(absl::StrContains(taken.status().message(), "Address already in use"));
}

}  // namespace
}  // namespace weft::metrics
