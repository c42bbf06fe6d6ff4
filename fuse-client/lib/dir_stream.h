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
// POSIX leaves unspecified whether readdir shows a name added or removed
// after the last opendir or rewinddir, so an end of directory kept for
// `max_age` is allowed to miss a name created meanwhile.
//
//   DirStream s(absl::Seconds(1));
//   s.Keep(/*off=*/2, std::move(page), now);  // the kernel took "." and ".."
//   if (std::optional<DirStream::Kept> rest = s.Take(2, now)) ...  // no MDS call
//
// Thread-safe (the kernel sends one READDIR of an open directory at a time).
#pragma once

#include <cstdint>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "fuse-client/lib/file_system_client.h"

namespace weft::client {

class DirStream {
 public:
  struct Kept {
    DirPage page;
    absl::Time fetched;  // when it came from the MDS
  };

  explicit DirStream(absl::Duration max_age) : max_age_(max_age) {}

  // `rest` continues the directory at kernel offset `off` (what follows the
  // entry the kernel took last); `fetched` is when it came from the MDS.
  // Replaces what was kept.
  void Keep(uint64_t off, DirPage rest, absl::Time fetched);
  // What was kept, if it continues at `off` and is young enough at `now`;
  // forgotten either way.
  std::optional<Kept> Take(uint64_t off, absl::Time now);

 private:
  const absl::Duration max_age_;
  absl::Mutex mu_;
  std::optional<Kept> kept_ ABSL_GUARDED_BY(mu_);
  uint64_t off_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace weft::client
