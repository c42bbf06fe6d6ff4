// Prometheus text metrics: histograms, a registry of series read when
// scraped, and the exposition format (version 0.0.4).
//
// A daemon keeps its counters where they already are (atomics of its own)
// and registers a function that reads each one; only latency histograms live
// here. Rendering reads every series once, without locks held by the
// registry while a value function runs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace weft::metrics {

// Upper bounds, in seconds, for request and disk latencies: 100 us to 10 s.
std::vector<double> LatencyBounds();

// A histogram of observations in seconds over fixed ascending upper bounds.
// Observe is lock-free; a scrape may see a count and a sum a few
// observations apart, as Prometheus client libraries allow.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds = LatencyBounds());

  void Observe(double seconds);
  void Observe(absl::Duration d) { Observe(absl::ToDoubleSeconds(d)); }

  struct Snapshot {
    std::vector<uint64_t> cumulative;  // per bound, then +Inf
    uint64_t count = 0;
    double sum = 0;
  };
  Snapshot Take() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<uint64_t> sum_ns_{0};
};

// The q-quantile (0 < q < 1), in seconds, of what `h` observed between two
// of its snapshots, interpolated linearly inside the bucket that holds it as
// Prometheus's histogram_quantile does (a quantile in the +Inf bucket is
// the largest bound); -1 when nothing was observed in between.
double Quantile(const Histogram& h, const Histogram::Snapshot& before,
                const Histogram::Snapshot& after, double q);

// Times a scope into a histogram.
class ScopedTimer {
 public:
  explicit ScopedTimer(Histogram* h) : h_(h), start_(absl::Now()) {}
  ~ScopedTimer() { h_->Observe(absl::Now() - start_); }
  ScopedTimer(const ScopedTimer&) = delete;
  ScopedTimer& operator=(const ScopedTimer&) = delete;

 private:
  Histogram* h_;
  absl::Time start_;
};

// `key="value"` with the value escaped as the exposition format requires.
std::string Label(absl::string_view key, absl::string_view value);

// The series a daemon exposes. Families are rendered in the order their
// first series was added; a family's type and help come from that series.
// Names and label keys are the caller's constants ([a-zA-Z_:][a-zA-Z0-9_:]*),
// label values go through Label().
class Registry {
 public:
  using Value = std::function<double()>;

  // `labels` is empty or a comma-separated list of Label()s.
  void AddCounter(std::string name, std::string help, std::string labels, Value value);
  void AddGauge(std::string name, std::string help, std::string labels, Value value);
  // Gauge families whose series are known only when scraped (one per
  // filesystem, say), read together: `rows` returns, per series, its labels
  // and one value per column; each column is a family. `rows` runs once per
  // scrape for all the columns.
  struct Column {
    std::string name;
    std::string help;
  };
  struct Row {
    std::string labels;
    std::vector<double> values;  // one per column
  };
  using Rows = std::function<std::vector<Row>()>;
  void AddGaugeTable(std::vector<Column> columns, Rows rows);
  // `histogram` must outlive the registry.
  void AddHistogram(std::string name, std::string help, std::string labels,
                    const Histogram* histogram);

  // The exposition text of every series.
  std::string Render() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Table {
    Rows rows;
  };
  // One of: a value, a histogram, or a column of a table.
  struct Series {
    std::string labels;
    Value value;
    const Histogram* histogram = nullptr;
    std::shared_ptr<const Table> table;
    size_t column = 0;
  };
  struct Family {
    std::string name;
    std::string help;
    Type type;
    std::vector<Series> series;
  };
  void Add(std::string name, std::string help, Type type, Series series);

  mutable absl::Mutex mu_;
  std::vector<Family> families_ ABSL_GUARDED_BY(mu_);
};

// process_cpu_seconds_total, process_resident_memory_bytes,
// process_open_fds and process_start_time_seconds, read from /proc/self.
void AddProcessMetrics(Registry* registry);

}  // namespace weft::metrics
