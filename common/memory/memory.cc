#include "common/memory/memory.h"

#include <malloc.h>
#include <unistd.h>

#include <fstream>
#include <utility>

#include "common/log/log.h"

// tcmalloc's C interface (gperftools/malloc_extension_c.h), declared weak:
// null unless the executable links tcmalloc.
extern "C" {
int MallocExtension_GetNumericProperty(const char* property, size_t* value)
    __attribute__((weak));
void MallocExtension_ReleaseFreeMemory() __attribute__((weak));
}

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

bool UsesTcmalloc() {
  return MallocExtension_GetNumericProperty != nullptr &&
         MallocExtension_ReleaseFreeMemory != nullptr;
}

uint64_t HeapInUseBytes() {
  if (UsesTcmalloc()) {
    size_t bytes = 0;
    if (MallocExtension_GetNumericProperty("generic.current_allocated_bytes", &bytes) == 0) {
      return 0;
    }
    return bytes;
  }
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

void ReleaseFreeHeap() {
  if (UsesTcmalloc()) {
    MallocExtension_ReleaseFreeMemory();
  } else {
    malloc_trim(0);
  }
}

bool ReleaseFreeHeapOver(uint64_t free_bytes) {
  // glibc's mallinfo2 every second took 6% of the OSDs' CPU during an
  // untar (perf), with nothing to trim: it is asked only when RSS allows it.
  const uint64_t resident = AnonResidentBytes();
  if (!NeedsHeapCount(resident, free_bytes)) return false;
  const uint64_t in_use = HeapInUseBytes();
  if (!ShouldTrim(resident, in_use, free_bytes)) return false;
  ReleaseFreeHeap();
  VLOG(1) << "event=memory_trim resident_bytes=" << resident << " in_use_bytes=" << in_use;
  return true;
}

}  // namespace weft::memory
