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

// Whether to give free heap memory back (ReleaseFreeHeap): when the heap's
// free memory that is still resident reaches `free_bytes`. `resident` is
// AnonResidentBytes(); `in_use` is HeapInUseBytes(), asked for only when
// `resident` alone allows it (NeedsHeapCount), because glibc's count walks
// every free chunk of every arena under the arena's lock.
inline bool NeedsHeapCount(uint64_t resident, uint64_t free_bytes) {
  return resident >= free_bytes;
}
inline bool ShouldTrim(uint64_t resident, uint64_t in_use, uint64_t free_bytes) {
  return resident >= in_use && resident - in_use >= free_bytes;
}

// Which allocator serves malloc in this process: tcmalloc when the
// executable links it (weft-osd does, see docs/ARCHITECTURE.md, OSD
// memory), else glibc's. Decided once, at run time, so that code linked
// into both kinds of program (the OSD's library, used by tests too) needs
// no build switch.
bool UsesTcmalloc();
// Bytes the heap has handed out and not taken back: tcmalloc's
// generic.current_allocated_bytes, or glibc's mallinfo2 uordblks + hblkhd
// (arenas, and chunks mmapped alone). glibc's free count (fordblks) is not
// used: it keeps counting chunks whose pages an earlier trim gave back.
uint64_t HeapInUseBytes();
// Gives the heap's free pages back to the kernel: tcmalloc's
// ReleaseFreeMemory, or malloc_trim(0).
void ReleaseFreeHeap();
// ReleaseFreeHeap when at least `free_bytes` of free heap are resident
// (NeedsHeapCount, then ShouldTrim); returns whether it released. For a
// daemon's periodic check (the OSD's TrimLoop, the MDS's janitor, the
// client's flush loop).
bool ReleaseFreeHeapOver(uint64_t free_bytes);

}  // namespace weft::memory
