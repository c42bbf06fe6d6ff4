// Striped data I/O of one file: file ranges split into object extents by the
// layout (common/striping) and sent to the objects in parallel, bounded by an
// in-flight byte budget shared by every caller of one StripedIo.
//
// Holes read as zeros: a missing object, or bytes past an object's end, are
// zeros up to the length the caller asks for (the caller clamps to the file
// size). Nothing is buffered here: buffering is FileCache's (file_cache.h).
//
// Thread-safe. No lock is held across I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/striping/striping.h"
#include "common/objects/extent_map.h"
#include "common/objects/objects.h"
#include "proto/common.pb.h"

namespace weft::objects {

// Where a file's data lives.
struct FileData {
  uint64_t ino = 0;
  striping::Layout layout;
  PoolId pool;
};
// Inode `ino`'s data by its layout as the MDS keeps it; EINVAL for a layout
// that striping cannot use.
absl::StatusOr<FileData> FileDataOf(uint64_t ino, const pb::FileLayout& layout);
absl::StatusOr<FileData> FileDataOf(uint64_t ino, const striping::Layout& layout, PoolId pool);

class StripedIo {
 public:
  // `threads_max` objects are read or written at once, each on a thread of
  // its own; 1 runs every request on the caller's thread, one after the
  // other (the simulation of tests/sim: no threads, a fixed order).
  StripedIo(Objects* objects, uint64_t inflight_bytes_max, size_t threads_max = 16)
      : objects_(objects), inflight_bytes_max_(inflight_bytes_max), threads_max_(threads_max) {}

  // Reads file bytes [offset, offset+length); holes are zeros. Returns exactly
  // `length` bytes or an error.
  absl::StatusOr<std::string> Read(const FileData& file, uint64_t offset, uint64_t length);
  // Writes `data` at `offset`. All of it is on the OSDs when this returns OK;
  // on error some objects may have been written (POSIX allows a torn write).
  absl::Status Write(const FileData& file, uint64_t offset, absl::string_view data);
  // Writes every extent of `extents` (a flush of buffered writes): one
  // request per object touched, all objects in parallel. Adds to
  // `*allocated_delta` (if given) how much the objects' logical sizes grew,
  // also for the objects written when another failed.
  absl::Status WriteExtents(const FileData& file, const ExtentMap& extents,
                            int64_t* allocated_delta = nullptr);
  // Removes or trims the objects that hold bytes in [new_size, old_size).
  absl::Status Trim(const FileData& file, uint64_t old_size, uint64_t new_size);
  // fallocate's PUNCH_HOLE: removes every object of each object set lying
  // wholly inside file bytes [offset, end), whose bytes then read as zeros
  // and cost nothing. Returns the file range of those sets ([x, x) when
  // none) and adds to `*allocated_delta` what the removed objects held
  // (a negative number; also for the objects removed when another failed).
  absl::StatusOr<std::pair<uint64_t, uint64_t>> RemoveWholeSets(const FileData& file,
                                                                uint64_t offset, uint64_t end,
                                                                int64_t* allocated_delta);
  // lseek(2)'s SEEK_DATA (`hole` false) or SEEK_HOLE (true) from `offset`
  // in a file of `size` bytes (offset < size; the caller flushed what it
  // buffers). Data is every object's bytes up to its end; a missing object
  // and what lies past an object's end are holes (a hole inside an object
  // is data, as POSIX allows). Objects are looked at (STAT) one by one, at
  // most `max_objects`; past that the rest of the file counts as data.
  // SEEK_DATA with no data left: ENXIO.
  absl::StatusOr<uint64_t> Seek(const FileData& file, uint64_t size, uint64_t offset, bool hole,
                                size_t max_objects = 256);

 private:
  // Runs `jobs` in parallel (one thread each), each first taking its byte
  // count from the budget; returns the first error.
  absl::Status WriteRanges(const FileData& file,
                           const std::vector<std::pair<uint64_t, absl::string_view>>& ranges,
                           int64_t* allocated_delta);
  // Truncates object `objno` to `keep_bytes`, or removes it at 0; returns
  // how its logical size changed (0 when it did not exist).
  absl::StatusOr<int64_t> CutObject(const FileData& file, uint64_t objno, uint64_t keep_bytes);
  absl::Status RunParallel(std::vector<std::pair<uint64_t, std::function<absl::Status()>>> jobs);
  void Acquire(uint64_t bytes);
  void ReleaseBudget(uint64_t bytes);

  // The OSD's limit on operations in one request (osd/pg/object_ops.h).
  static constexpr size_t kMaxWritesPerRequest = 256;

  Objects* const objects_;
  const uint64_t inflight_bytes_max_;
  const size_t threads_max_;
  absl::Mutex mu_;
  uint64_t inflight_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace weft::objects
