#include "common/clock/clock.h"

namespace weft {
namespace {

class RealClock final : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
};

}  // namespace

Clock* Clock::Real() {
  static RealClock* clock = new RealClock();  // never destroyed
  return clock;
}

}  // namespace weft
