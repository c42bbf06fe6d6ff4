#include "common/fault/fault.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <random>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/log/log.h"
#include "common/status/status.h"

namespace weft::fault {
namespace {

struct Armed {
  Arming arming;
  int64_t reached = 0;
  int64_t fired = 0;
};

struct Registry {
  absl::Mutex mu;
  absl::flat_hash_map<std::string, Armed> points ABSL_GUARDED_BY(mu);
  std::mt19937_64 rng ABSL_GUARDED_BY(mu){0x5eed};
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: points may fire at exit
  return *r;
}

// How many points are armed: the fast path of every unarmed Fire().
std::atomic<int> armed_count{0};

bool Known(absl::string_view point) {
  const auto& known = KnownPoints();
  return std::find(known.begin(), known.end(), point) != known.end();
}

// One entry of a WEFT_FAULTS list.
absl::Status ParseEntry(absl::string_view entry, std::string* name, Arming* arming) {
  // NAME[=VALUE][@PROBABILITY][*TIMES][+SKIP], the suffixes in this order.
  auto take = [&](char mark, absl::string_view* rest) -> std::optional<absl::string_view> {
    const size_t at = rest->rfind(mark);
    if (at == absl::string_view::npos) return std::nullopt;
    absl::string_view value = rest->substr(at + 1);
    *rest = rest->substr(0, at);
    return value;
  };
  absl::string_view rest = entry;
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("WEFT_FAULTS entry \"", entry, "\": ", what));
  };
  if (auto skip = take('+', &rest); skip && !absl::SimpleAtoi(*skip, &arming->skip)) {
    return bad("+SKIP is not a number");
  }
  if (auto times = take('*', &rest); times && !absl::SimpleAtoi(*times, &arming->times)) {
    return bad("*TIMES is not a number");
  }
  if (auto p = take('@', &rest); p && (!absl::SimpleAtod(*p, &arming->probability) ||
                                       arming->probability < 0 || arming->probability > 1)) {
    return bad("@PROBABILITY must be within [0, 1]");
  }
  if (auto value = take('=', &rest); value && !absl::SimpleAtoi(*value, &arming->value)) {
    return bad("=VALUE is not a number");
  }
  *name = std::string(rest);
  if (!Known(*name)) return bad("no such fault point (common/fault/fault.h lists them)");
  return absl::OkStatus();
}

}  // namespace

const std::vector<absl::string_view>& KnownPoints() {
  static const std::vector<absl::string_view> points = {
      kMdsExitAfterInlineMove, kMdsJournalWriteError, kMdsBugLinkSkipsNlink,
      kOsdEcPartialWrite,      kOsdSlowDiskMs,        kOsdRecoveryDelayMs,
  };
  return points;
}

std::optional<int64_t> Value(absl::string_view point) {
  if (armed_count.load(std::memory_order_relaxed) == 0) return std::nullopt;
  Registry& r = registry();
  absl::MutexLock lock(&r.mu);
  auto it = r.points.find(point);
  if (it == r.points.end()) return std::nullopt;
  Armed& a = it->second;
  if (++a.reached <= a.arming.skip) return std::nullopt;
  if (a.arming.times >= 0 && a.fired >= a.arming.times) return std::nullopt;
  if (a.arming.probability < 1.0 &&
      std::uniform_real_distribution<double>(0.0, 1.0)(r.rng) >= a.arming.probability) {
    return std::nullopt;
  }
  ++a.fired;
  return a.arming.value;
}

bool Fire(absl::string_view point) { return Value(point).has_value(); }

absl::Status Arm(absl::string_view point, Arming arming) {
  if (!Known(point)) {
    return absl::InvalidArgumentError(absl::StrCat("no such fault point: ", point));
  }
  Registry& r = registry();
  absl::MutexLock lock(&r.mu);
  auto [it, added] = r.points.insert_or_assign(std::string(point), Armed{arming});
  if (added) armed_count.fetch_add(1, std::memory_order_relaxed);
  LOG(WARNING) << "event=fault_armed point=" << point << " value=" << arming.value
               << " probability=" << arming.probability << " times=" << arming.times;
  return absl::OkStatus();
}

void Disarm(absl::string_view point) {
  Registry& r = registry();
  absl::MutexLock lock(&r.mu);
  if (r.points.erase(point) > 0) armed_count.fetch_sub(1, std::memory_order_relaxed);
}

void DisarmAll() {
  Registry& r = registry();
  absl::MutexLock lock(&r.mu);
  armed_count.fetch_sub(static_cast<int>(r.points.size()), std::memory_order_relaxed);
  r.points.clear();
}

void Seed(uint64_t seed) {
  Registry& r = registry();
  absl::MutexLock lock(&r.mu);
  r.rng.seed(seed);
}

int64_t Fired(absl::string_view point) {
  Registry& r = registry();
  absl::MutexLock lock(&r.mu);
  auto it = r.points.find(point);
  return it == r.points.end() ? 0 : it->second.fired;
}

absl::Status ArmFromSpec(absl::string_view spec) {
  std::vector<std::pair<std::string, Arming>> parsed;
  for (absl::string_view entry : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    std::string name;
    Arming arming;
    RETURN_IF_ERROR(ParseEntry(absl::StripAsciiWhitespace(entry), &name, &arming));
    parsed.emplace_back(std::move(name), arming);
  }
  for (const auto& [name, arming] : parsed) RETURN_IF_ERROR(Arm(name, arming));
  return absl::OkStatus();
}

absl::Status ArmFromEnvironment() {
  const char* spec = std::getenv("WEFT_FAULTS");  // the one place faults come from outside
  if (spec == nullptr || *spec == '\0') return absl::OkStatus();
  return ArmFromSpec(spec);
}

ScopedFault::ScopedFault(absl::string_view point, Arming arming) : point_(point) {
  absl::Status armed = Arm(point, arming);
  CHECK(armed.ok()) << armed;
}

ScopedFault::~ScopedFault() { Disarm(point_); }

}  // namespace weft::fault
