#include "common/metrics/metrics.h"

#include <dirent.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/memory/memory.h"

namespace weft::metrics {
namespace {

// Integers (the common case) print without an exponent; other values with
// the fewest digits that read back as the same double.
std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrFormat("%.0f", v);
  for (int digits = 15; digits < 17; ++digits) {  // the shortest that reads back
    std::string s = absl::StrFormat("%.*g", digits, v);
    if (std::strtod(s.c_str(), nullptr) == v) return s;
  }
  return absl::StrFormat("%.17g", v);
}

// The exposition format escapes backslash and newline in help texts, and
// the double quote too in label values.
std::string Escape(absl::string_view text, bool quote) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string Braced(absl::string_view labels, absl::string_view extra = "") {
  if (labels.empty() && extra.empty()) return "";
  if (labels.empty()) return absl::StrCat("{", extra, "}");
  if (extra.empty()) return absl::StrCat("{", labels, "}");
  return absl::StrCat("{", labels, ",", extra, "}");
}

}  // namespace

std::vector<double> LatencyBounds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
          0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5, 5, 10};
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::Observe(double seconds) {
  if (!(seconds >= 0)) seconds = 0;  // a clock step back, or NaN
  size_t i = 0;
  while (i < bounds_.size() && seconds > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(std::llround(seconds * 1e9)),
                    std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Take() const {
  Snapshot s;
  s.cumulative.reserve(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(total);
  }
  s.count = total;
  s.sum = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
  return s;
}

double Quantile(const Histogram& h, const Histogram::Snapshot& before,
                const Histogram::Snapshot& after, double q) {
  const std::vector<double>& bounds = h.bounds();
  const uint64_t total = after.count - before.count;
  if (total == 0) return -1;
  const double rank = q * static_cast<double>(total);
  uint64_t below = 0;  // observations in the buckets before i
  for (size_t i = 0; i <= bounds.size(); ++i) {
    const uint64_t upto = after.cumulative[i] - before.cumulative[i];
    if (static_cast<double>(upto) < rank) {
      below = upto;
      continue;
    }
    if (i == bounds.size()) return bounds.empty() ? 0 : bounds.back();
    const double lower = i == 0 ? 0 : bounds[i - 1];
    const double in_bucket = static_cast<double>(upto - below);
    return lower + (bounds[i] - lower) * (rank - static_cast<double>(below)) / in_bucket;
  }
  return bounds.empty() ? 0 : bounds.back();
}

std::string Label(absl::string_view key, absl::string_view value) {
  return absl::StrCat(key, "=\"", Escape(value, /*quote=*/true), "\"");
}

void Registry::AddCounter(std::string name, std::string help, std::string labels, Value value) {
  Series series;
  series.labels = std::move(labels);
  series.value = std::move(value);
  Add(std::move(name), std::move(help), Type::kCounter, std::move(series));
}

void Registry::AddGauge(std::string name, std::string help, std::string labels, Value value) {
  Series series;
  series.labels = std::move(labels);
  series.value = std::move(value);
  Add(std::move(name), std::move(help), Type::kGauge, std::move(series));
}

void Registry::AddGaugeTable(std::vector<Column> columns, Rows rows) {
  auto table = std::make_shared<const Table>(Table{std::move(rows)});
  for (size_t i = 0; i < columns.size(); ++i) {
    Series series;
    series.table = table;
    series.column = i;
    Add(std::move(columns[i].name), std::move(columns[i].help), Type::kGauge, std::move(series));
  }
}

void Registry::AddHistogram(std::string name, std::string help, std::string labels,
                            const Histogram* histogram) {
  Series series;
  series.labels = std::move(labels);
  series.histogram = histogram;
  Add(std::move(name), std::move(help), Type::kHistogram, std::move(series));
}

void Registry::Add(std::string name, std::string help, Type type, Series series) {
  absl::MutexLock lock(&mu_);
  for (Family& f : families_) {
    if (f.name == name) {
      f.series.push_back(std::move(series));
      return;
    }
  }
  families_.push_back(Family{std::move(name), std::move(help), type, {std::move(series)}});
}

std::string Registry::Render() const {
  std::vector<Family> families;
  {
    absl::MutexLock lock(&mu_);
    families = families_;  // value functions run without the lock
  }
  std::map<const Table*, std::vector<Row>> rows;  // each table read once
  std::string out;
  for (const Family& f : families) {
    const char* type = f.type == Type::kCounter ? "counter"
                       : f.type == Type::kGauge ? "gauge"
                                                : "histogram";
    absl::StrAppend(&out, "# HELP ", f.name, " ", Escape(f.help, /*quote=*/false), "\n# TYPE ",
                    f.name, " ", type, "\n");
    for (const Series& s : f.series) {
      if (s.table != nullptr) {
        auto [it, fresh] = rows.try_emplace(s.table.get());
        if (fresh) it->second = s.table->rows();
        for (const Row& row : it->second) {
          if (s.column >= row.values.size()) continue;
          absl::StrAppend(&out, f.name, Braced(row.labels), " ", Number(row.values[s.column]),
                          "\n");
        }
        continue;
      }
      if (f.type != Type::kHistogram) {
        absl::StrAppend(&out, f.name, Braced(s.labels), " ", Number(s.value()), "\n");
        continue;
      }
      const Histogram::Snapshot snap = s.histogram->Take();
      const std::vector<double>& bounds = s.histogram->bounds();
      for (size_t i = 0; i <= bounds.size(); ++i) {
        const std::string le =
            i < bounds.size() ? Label("le", Number(bounds[i])) : Label("le", "+Inf");
        absl::StrAppend(&out, f.name, "_bucket", Braced(s.labels, le), " ", snap.cumulative[i],
                        "\n");
      }
      absl::StrAppend(&out, f.name, "_sum", Braced(s.labels), " ", Number(snap.sum), "\n");
      absl::StrAppend(&out, f.name, "_count", Braced(s.labels), " ", snap.count, "\n");
    }
  }
  return out;
}

namespace {

// Field `n` of /proc/self/stat (1-based, as proc(5) numbers them; the
// command name, field 2, may hold spaces, so fields count from its ')').
double StatField(int n) {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  const size_t close = line.rfind(')');
  if (close == std::string::npos || n < 3) return 0;
  std::istringstream rest(line.substr(close + 2));
  std::string f;
  for (int i = 3; rest >> f; ++i) {
    if (i == n) return std::strtod(f.c_str(), nullptr);
  }
  return 0;
}

double BootTime() {
  std::ifstream in("/proc/stat");
  std::string key;
  double value;
  while (in >> key) {
    if (key == "btime" && in >> value) return value;
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace

void AddProcessMetrics(Registry* registry) {
  registry->AddCounter("process_cpu_seconds_total", "User and system CPU time spent in seconds.",
                       "", [] {
                         timespec ts{};
                         clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
                         return static_cast<double>(ts.tv_sec) + ts.tv_nsec / 1e9;
                       });
  registry->AddGauge("process_resident_memory_bytes", "Resident memory size in bytes.", "",
                     [] { return static_cast<double>(memory::ResidentBytes()); });
  registry->AddGauge("process_open_fds", "Number of open file descriptors.", "", [] {
    double n = 0;
    if (DIR* d = opendir("/proc/self/fd")) {
      while (readdir(d) != nullptr) ++n;
      closedir(d);
      n -= 3;  // ".", ".." and the directory's own descriptor
    }
    return n;
  });
  const double start = BootTime() + StatField(22) / static_cast<double>(sysconf(_SC_CLK_TCK));
  registry->AddGauge("process_start_time_seconds",
                     "Start time of the process since unix epoch in seconds.", "",
                     [start] { return start; });
}

}  // namespace weft::metrics
