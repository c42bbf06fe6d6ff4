#include "common/caps/cap_bits.h"

namespace weft::caps {

std::string CapString(uint32_t bits) {
  static constexpr const char* kNames[kBitCount] = {"Ls", "As", "Ax", "Fs", "Fr",
                                                    "Fc", "Fw", "Fb", "Fx"};
  std::string out;
  for (int i = 0; i < kBitCount; ++i) {
    if (bits & (1u << i)) out += kNames[i];
  }
  return out.empty() ? "-" : out;
}

}  // namespace weft::caps
