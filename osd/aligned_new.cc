// weft-osd's operator new: buffers of 64 KiB or more start on a 4 KiB
// boundary, so that object data (a request's bytes, parsed by protobuf into
// a std::string) can be written with O_DIRECT from where it lies instead of
// through a bounce buffer (osd/store/file_io.cc, WriteDirect). Buffers of
// 2 MiB or more start on a 2 MiB boundary and ask for transparent huge pages:
// the kernel cuts an O_DIRECT request wherever the buffer's physical pages
// are not contiguous, and on this machine's virtual disk a 4 MiB read from
// 4 KiB pages went out as about three requests, from huge pages as one, and
// the disk served 16 readers a third more bytes per second (1.0 against 1.4
// GiB/s; docs/ARCHITECTURE.md, Local store). Linked into the weft-osd
// executable only: every `new` in the process, ours and the libraries', comes
// here, and all of it is freed with free().
#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace {

constexpr std::size_t kAlignFrom = 64 << 10;
constexpr std::size_t kAlign = 4096;
constexpr std::size_t kHugePage = 2 << 20;

void* Allocate(std::size_t n) noexcept {
  if (n < kAlignFrom) return std::malloc(n == 0 ? 1 : n);
  void* p = nullptr;
  if (n < kHugePage) return posix_memalign(&p, kAlign, n) == 0 ? p : nullptr;
  if (posix_memalign(&p, kHugePage, n) != 0) return nullptr;
  // Advice only: pages already present stay as they are until the kernel's
  // khugepaged merges them, and a kernel without THP ignores it.
  ::madvise(p, n / kHugePage * kHugePage, MADV_HUGEPAGE);
  return p;
}

void* AllocateOrThrow(std::size_t n) {
  void* p = Allocate(n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

void* operator new(std::size_t n) { return AllocateOrThrow(n); }
void* operator new[](std::size_t n) { return AllocateOrThrow(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return Allocate(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return Allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
