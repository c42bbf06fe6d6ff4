// `weft bench POOL write|seq|rand|cleanup`, shaped like `rados bench`: T
// threads each keep one operation in flight for S seconds, then the totals,
// bandwidth, IOPS, average and p99 latency are printed. `write` leaves its
// objects (and a small metadata object naming them) for `seq` and `rand`;
// `cleanup` removes them.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "fuse-client/cli/commands.h"
#include "common/objects/object_client.h"

namespace weft::cli {

absl::StatusOr<std::unique_ptr<objects::ObjectClient>> ConnectClient(const Config& config);

namespace {

constexpr char kMetaObject[] = "weft_bench_meta";

struct Totals {
  std::mutex mu;
  std::vector<double> latencies_s;
  uint64_t bytes = 0;
  uint64_t errors = 0;
  std::string first_error;
};

std::string ObjectName(const std::string& prefix, uint64_t n) {
  return absl::StrCat(prefix, "_object", n);
}

// Object contents: a header naming the object, then a fixed pattern, so that
// reads can verify they got the right object. The pattern is made once: the
// benchmark must measure the cluster, not a byte loop in the client.
class Payloads {
 public:
  explicit Payloads(uint64_t size) : pattern_(size, '\0') {
    for (uint64_t i = 0; i < size; ++i) pattern_[i] = static_cast<char>((i * 131 + 7) & 0xff);
  }
  std::string Make(const std::string& name) const {
    std::string data = pattern_;
    std::memcpy(data.data(), name.data(), HeaderBytes(name));
    return data;
  }
  // Turns `data`, made for `old_name`, into the contents of `name`: a buffer
  // is used again and again as rados bench does, not remade per object.
  void Restamp(const std::string& old_name, const std::string& name, std::string* data) const {
    std::memcpy(data->data(), pattern_.data(), HeaderBytes(old_name));
    std::memcpy(data->data(), name.data(), HeaderBytes(name));
  }
  bool Matches(const std::string& name, const ByteChain& data) const {
    size_t h = HeaderBytes(name);
    return data.size() == pattern_.size() &&
           data.EqualsAt(0, absl::string_view(name).substr(0, h)) &&
           data.EqualsAt(h, absl::string_view(pattern_).substr(h));
  }

 private:
  size_t HeaderBytes(const std::string& name) const {
    return std::min<size_t>(name.size(), pattern_.size());
  }
  std::string pattern_;
};

void Report(const char* what, Totals& t, double seconds, uint64_t block) {
  std::sort(t.latencies_s.begin(), t.latencies_s.end());
  size_t n = t.latencies_s.size();
  double sum = 0;
  for (double l : t.latencies_s) sum += l;
  auto pct = [&](double p) { return n == 0 ? 0.0 : t.latencies_s[std::min(n - 1, size_t(p * n))]; };
  std::printf("Total time run:         %.3f\n", seconds);
  std::printf("Total %s made:      %zu\n", what, n);
  std::printf("Op size:                %lu\n", static_cast<unsigned long>(block));
  std::printf("Bandwidth (MB/sec):     %.2f\n", t.bytes / seconds / 1e6);
  std::printf("Average IOPS:           %.1f\n", n / seconds);
  std::printf("Average Latency(s):     %.6f\n", n ? sum / n : 0.0);
  std::printf("p50 Latency(s):         %.6f\n", pct(0.50));
  std::printf("p99 Latency(s):         %.6f\n", pct(0.99));
  std::printf("Max latency(s):         %.6f\n", n ? t.latencies_s.back() : 0.0);
  std::printf("Min latency(s):         %.6f\n", n ? t.latencies_s.front() : 0.0);
  if (t.errors > 0) {
    std::printf("Errors:                 %lu (first: %s)\n", static_cast<unsigned long>(t.errors),
                t.first_error.c_str());
  }
}

void Record(Totals& t, absl::Duration latency, uint64_t bytes, const absl::Status& status) {
  std::lock_guard<std::mutex> lock(t.mu);
  if (status.ok()) {
    t.latencies_s.push_back(absl::ToDoubleSeconds(latency));
    t.bytes += bytes;
  } else if (t.errors++ == 0) {
    t.first_error = std::string(status.message());
  }
}

}  // namespace

int CmdBench(const Config& config, const Args& args) {
  if (args.positional.size() != 2) {
    std::fputs("usage: weft bench POOL write|seq|rand|cleanup [--seconds S] [--threads T] "
               "[--block-size B] [--max-objects N]\n",
               stderr);
    return 2;
  }
  const std::string mode = args.positional[1];
  auto seconds = args.GetInt("seconds", 10);
  auto threads = args.GetInt("threads", 16);
  auto block = args.GetBytes("block-size", 4ull << 20);
  // write: stop after this many objects too (0: only the time limits).
  auto max_objects = args.GetInt("max-objects", 0);
  if (!max_objects.ok()) return Fail(max_objects.status());
  if (*max_objects < 0) return Fail(absl::InvalidArgumentError("need --max-objects >= 0"));
  if (!seconds.ok()) return Fail(seconds.status());
  if (!threads.ok()) return Fail(threads.status());
  if (!block.ok()) return Fail(block.status());
  // Objects above one request's piece go through Put/Get (several requests).
  constexpr uint64_t kMaxBlockBytes = 128ull << 20;
  const uint64_t piece = objects::ObjectClient::kMaxPieceBytes;
  if (*seconds < 1 || *threads < 1 || *threads > 1024 || *block < 1 ||
      *block > kMaxBlockBytes) {
    return Fail(absl::InvalidArgumentError(
        "need --seconds >= 1, --threads 1..1024, --block-size 1..128M"));
  }
  auto client = ConnectClient(config);
  if (!client.ok()) return Fail(client.status());
  auto pool = (*client)->LookupPool(args.positional[0]);
  if (!pool.ok()) return Fail(pool.status());
  objects::ObjectClient* c = client->get();

  Totals totals;
  std::atomic<uint64_t> next{0};
  const absl::Time start = absl::Now();
  const absl::Time end = start + absl::Seconds(*seconds);
  std::vector<std::thread> workers;

  if (mode == "write") {
    char host[64] = {0};
    gethostname(host, sizeof(host) - 1);
    const std::string prefix = absl::StrCat("benchmark_data_", host, "_", getpid());
    const Payloads payloads(*block);
    for (int i = 0; i < *threads; ++i) {
      workers.emplace_back([&] {
        std::string data, data_name;  // this thread's buffer and whose contents it holds
        std::vector<std::string> spent;
        while (absl::Now() < end) {
          uint64_t n = next++;
          if (*max_objects > 0 && n >= static_cast<uint64_t>(*max_objects)) break;
          std::string name = ObjectName(prefix, n);
          if (data.size() == *block) {
            payloads.Restamp(data_name, name, &data);
          } else {
            data = payloads.Make(name);
          }
          absl::Time t0 = absl::Now();
          absl::Status s;
          if (data.size() > piece) {
            s = c->Put(*pool, name, data);
          } else {
            objects::ObjectOperation op;
            op.WriteFull(std::move(data));
            spent.clear();
            s = c->ExecuteReusing(*pool, name, std::move(op), &spent).status();
            data = spent.empty() ? std::string() : std::move(spent[0]);
          }
          Record(totals, absl::Now() - t0, *block, s);
          data_name = std::move(name);
        }
      });
    }
    for (auto& w : workers) w.join();
    double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
    uint64_t written = std::min<uint64_t>(next, totals.latencies_s.size() + totals.errors);
    auto meta = absl::StrCat(prefix, "\n", written, "\n", *block, "\n");
    absl::Status s = c->Put(*pool, kMetaObject, meta);
    if (!s.ok()) return Fail(s, "bench metadata");
    Report("writes", totals, elapsed, *block);
    return totals.errors == 0 ? 0 : 1;
  }

  auto meta = c->Get(*pool, kMetaObject);
  if (!meta.ok()) {
    if (mode == "cleanup" && absl::IsNotFound(meta.status())) return 0;
    return Fail(meta.status(), "no benchmark objects (run `weft bench POOL write` first)");
  }
  std::vector<std::string> lines = absl::StrSplit(*meta, '\n');
  uint64_t count = 0, size = 0;
  if (lines.size() < 3 || !absl::SimpleAtoi(lines[1], &count) ||
      !absl::SimpleAtoi(lines[2], &size)) {
    return Fail(absl::DataLossError("bad benchmark metadata object"));
  }
  const std::string prefix = lines[0];
  if (mode == "cleanup") {
    for (uint64_t n = 0; n < count; ++n) (void)c->Remove(*pool, ObjectName(prefix, n));
    absl::Status s = c->Remove(*pool, kMetaObject);
    if (!s.ok()) return Fail(s, "cleanup");
    std::printf("removed %lu objects\n", static_cast<unsigned long>(count));
    return 0;
  }
  if (mode != "seq" && mode != "rand") return Fail(absl::InvalidArgumentError("unknown mode"));
  if (count == 0) return Fail(absl::FailedPreconditionError("no objects were written"));
  const bool verify = !args.Has("no-verify");
  const Payloads payloads(size);
  for (int i = 0; i < *threads; ++i) {
    workers.emplace_back([&, i] {
      std::mt19937_64 rng(getpid() * 1000003ull + i);
      while (absl::Now() < end) {
        uint64_t n;
        if (mode == "seq") {
          n = next++;
          if (n >= count) return;  // like rados bench: seq stops after one pass
        } else {
          n = rng() % count;
        }
        std::string name = ObjectName(prefix, n);
        absl::Time t0 = absl::Now();
        absl::StatusOr<ByteChain> got;
        if (size > piece) {
          auto whole = c->Get(*pool, name);
          if (whole.ok()) {
            got = ByteChain(std::move(*whole));
          } else {
            got = whole.status();
          }
        } else {
          objects::ObjectOperation op;
          op.Read(0, size);
          auto r = c->Execute(*pool, name, op);
          if (r.ok()) {
            got = std::move(r->items[0].data);
          } else {
            got = r.status();
          }
        }
        // Latency ends when the data is here; checking it is client work,
        // outside the measurement (as in rados bench).
        absl::Duration latency = absl::Now() - t0;
        absl::Status s = got.status();
        if (s.ok() && verify && !payloads.Matches(name, *got)) {
          s = absl::DataLossError(absl::StrCat(name, " read back different bytes"));
        }
        Record(totals, latency, size, s);
      }
    });
  }
  for (auto& w : workers) w.join();
  Report("reads", totals, absl::ToDoubleSeconds(absl::Now() - start), size);
  return totals.errors == 0 ? 0 : 1;
}

}  // namespace weft::cli
