// weft-osd's operator new: buffers of 64 KiB or more start on a 4 KiB
// boundary, so that object data (a request's bytes, parsed by protobuf into
// a std::string) can be written with O_DIRECT from where it lies instead of
// through a bounce buffer (osd/store/file_io.cc, WriteDirect). Linked into
// the weft-osd executable only: every `new` in the process, ours and the
// libraries', comes here, and all of it is freed with free().
#include <cstdlib>
#include <new>

namespace {

constexpr std::size_t kAlignFrom = 64 << 10;
constexpr std::size_t kAlign = 4096;

void* Allocate(std::size_t n) noexcept {
  if (n < kAlignFrom) return std::malloc(n == 0 ? 1 : n);
  void* p = nullptr;
  return posix_memalign(&p, kAlign, n) == 0 ? p : nullptr;
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
