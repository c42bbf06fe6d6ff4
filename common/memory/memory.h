// What this process holds in memory, and giving freed heap back to the kernel.
#pragma once

#include <cstdint>

namespace weft::memory {

// Resident bytes of this process (/proc/self/statm, VmRSS); 0 if unreadable.
// Cheap: one small read, no lock shared with the allocator.
uint64_t ResidentBytes();
// The part of it that is not file pages (LevelDB maps its tables): the heap,
// stacks and other anonymous memory.
uint64_t AnonResidentBytes();

// Whether to call malloc_trim: when the heap's free memory that is still
// resident reaches `free_bytes`. `resident` is AnonResidentBytes(); `in_use`
// is what the heap has handed out (mallinfo2's uordblks plus hblkhd), asked
// for only when `resident` alone allows it (NeedsHeapCount), because
// mallinfo2 walks every free chunk of every arena under the arena's lock.
// Its own free count (fordblks) is not used: it keeps counting chunks whose
// pages an earlier trim already gave back.
inline bool NeedsHeapCount(uint64_t resident, uint64_t free_bytes) {
  return resident >= free_bytes;
}
inline bool ShouldTrim(uint64_t resident, uint64_t in_use, uint64_t free_bytes) {
  return resident >= in_use && resident - in_use >= free_bytes;
}

}  // namespace weft::memory
