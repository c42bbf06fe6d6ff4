#include "common/memory/memory.h"

#include <unistd.h>

#include <fstream>
#include <utility>

namespace weft::memory {

namespace {

// statm's second and third fields, in bytes: resident, and resident shared
// (file pages and shared memory).
std::pair<uint64_t, uint64_t> Statm() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0, shared = 0;
  statm >> size >> resident >> shared;
  if (!statm) return {0, 0};
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return {resident * page, shared * page};
}

}  // namespace

uint64_t ResidentBytes() { return Statm().first; }

uint64_t AnonResidentBytes() {
  const auto [resident, shared] = Statm();
  return resident >= shared ? resident - shared : 0;
}

}  // namespace weft::memory
