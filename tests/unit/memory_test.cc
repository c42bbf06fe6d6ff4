// common/memory: the resident size, and when an OSD gives freed heap back.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "common/memory/memory.h"

namespace weft::memory {

TEST_CASE("resident bytes grow with memory touched", "[unit]") {
  const uint64_t before = ResidentBytes();
  const uint64_t anon_before = AnonResidentBytes();
  REQUIRE(before > 0);
  REQUIRE(anon_before > 0);
  REQUIRE(anon_before <= before);
  constexpr size_t kTouched = 64u << 20;
  std::unique_ptr<char[]> block(new char[kTouched]);
  std::memset(block.get(), 1, kTouched);
  const uint64_t after = ResidentBytes();
  REQUIRE(after >= before + kTouched / 2);
  REQUIRE(AnonResidentBytes() >= anon_before + kTouched / 2);
  REQUIRE(block[kTouched - 1] == 1);
}

TEST_CASE("trim only when the free resident heap reaches the threshold", "[unit]") {
  constexpr uint64_t kMiB = 1u << 20;
  // Below the threshold in all, nothing can be free enough: no heap count.
  REQUIRE_FALSE(NeedsHeapCount(255 * kMiB, 256 * kMiB));
  REQUIRE(NeedsHeapCount(256 * kMiB, 256 * kMiB));
  // Resident minus in use is what a trim could give back.
  REQUIRE_FALSE(ShouldTrim(400 * kMiB, 300 * kMiB, 256 * kMiB));
  REQUIRE(ShouldTrim(600 * kMiB, 300 * kMiB, 256 * kMiB));
  REQUIRE(ShouldTrim(556 * kMiB, 300 * kMiB, 256 * kMiB));
  // More in use than resident (pages never touched): nothing to give back.
  REQUIRE_FALSE(ShouldTrim(100 * kMiB, 300 * kMiB, 0));
}

// The pointer escapes, so the compiler keeps the allocation.
char* volatile g_escaped = nullptr;

// Built twice: memory_test runs on glibc's malloc, memory_tcmalloc_test on
// tcmalloc as weft-osd does (tests/CMakeLists.txt).
TEST_CASE("the heap counts what it hands out and gives free memory back", "[unit]") {
#ifdef WEFT_TEST_TCMALLOC
  REQUIRE(UsesTcmalloc());
#else
  REQUIRE_FALSE(UsesTcmalloc());
#endif
  constexpr uint64_t kBlock = 64u << 20;
  const uint64_t before = HeapInUseBytes();
  char* block = static_cast<char*>(std::malloc(kBlock));
  REQUIRE(block != nullptr);
  g_escaped = block;
  std::memset(block, 1, kBlock);
  REQUIRE(HeapInUseBytes() >= before + kBlock);
  const uint64_t resident_in_use = AnonResidentBytes();
  std::free(block);
  g_escaped = nullptr;
  REQUIRE(HeapInUseBytes() < before + kBlock / 2);
  ReleaseFreeHeap();
  // glibc unmapped the block at free (it is above the mmap threshold);
  // tcmalloc kept its pages until the release.
  REQUIRE(AnonResidentBytes() + kBlock / 2 <= resident_in_use);
}

}  // namespace weft::memory
