// What one open directory has read from the MDS that the kernel has not
// taken yet. A READDIR asks the MDS for a page of entries and replies with
// as many as fit the kernel's buffer; the kernel's next READDIR continues at
// the offset of the last one it took. Keeping the rest of the page (and
// whether it ends the directory) answers that next READDIR without asking
// again, and the READDIR after the last entry, which every listing ends
// with, costs nothing. Kept entries are used only at the very offset they
// continue from (a seekdir or rewinddir elsewhere asks the MDS afresh) and
// only while younger than `max_age`: their attributes go to the kernel as
// fresh ones.
//
// Nor is a page used once the directory changed since it was fetched: a
// change through this mount, or a revoke of the directory's lease (another
// mount's change), moves the directory's count in DirChanges, and a page
// fetched under another count is not used. POSIX leaves unspecified
// whether readdir shows a name added or removed after the last opendir or
// rewinddir, so only what a lease does not cover (another mount's change
// while this one holds no lease) may be missed, for at most `max_age`.
//
//   DirChanges changes;             // one per mount
//   DirStream s(absl::Seconds(1));  // one per open directory
//   const uint64_t count = changes.Of(dir);  // before asking the MDS
//   ...fetch a page, give the kernel "." and ".." and what fits...
//   s.Keep(/*off=*/2, std::move(rest), fetched, count);
//   if (auto kept = s.Take(2, now, changes.Of(dir))) ...  // no MDS call
//
// Thread-safe (the kernel sends one READDIR of an open directory at a time).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "fuse-client/lib/file_system_client.h"

namespace weft::client {

// Changes per directory, counted in a fixed table by a hash of the inode
// (two directories may share a count: a page is then dropped for nothing).
class DirChanges {
 public:
  void Bump(uint64_t dir) { Slot(dir).fetch_add(1, std::memory_order_acq_rel); }
  uint64_t Of(uint64_t dir) { return Slot(dir).load(std::memory_order_acquire); }

 private:
  static constexpr int kSlotBits = 12;
  // Fibonacci hashing: the top bits of the inode times 2^64 / phi.
  std::atomic<uint64_t>& Slot(uint64_t dir) {
    return slots_[(dir * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits)];
  }
  std::array<std::atomic<uint64_t>, size_t{1} << kSlotBits> slots_{};
};

class DirStream {
 public:
  struct Kept {
    DirPage page;
    absl::Time fetched;  // when it came from the MDS
    uint64_t changes = 0;  // DirChanges::Of its directory before it was fetched
  };

  explicit DirStream(absl::Duration max_age) : max_age_(max_age) {}

  // `rest` continues the directory at kernel offset `off` (what follows the
  // entry the kernel took last); `fetched` is when it came from the MDS,
  // `changes` the directory's count taken before it was asked for.
  // Replaces what was kept.
  void Keep(uint64_t off, DirPage rest, absl::Time fetched, uint64_t changes);
  // What was kept, if it continues at `off`, is young enough at `now` and
  // the directory's count is still `changes`; forgotten either way.
  std::optional<Kept> Take(uint64_t off, absl::Time now, uint64_t changes);

 private:
  const absl::Duration max_age_;
  absl::Mutex mu_;
  std::optional<Kept> kept_ ABSL_GUARDED_BY(mu_);
  uint64_t off_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace weft::client
