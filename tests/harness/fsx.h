// fsx: a random-operation exerciser for files on a mounted filesystem, in the
// spirit of the classic fsx (as in xfstests). A seeded PRNG drives pwrite at
// any offset and length (unaligned, across stripe-unit and object boundaries,
// far past EOF to make holes), pread, ftruncate up and down, fallocate (size
// growth, KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE), MAP_SHARED writes
// followed by msync, reads through mmap, fsync/fdatasync, dropping the file's
// clean pages, close and reopen, fstat, and SEEK_DATA/SEEK_HOLE; an
// in-memory model of every file is checked byte for byte after every read,
// its size after every stat, and its zeros under every hole a seek reports.
//
// Written bytes depend on (op index, file offset), so a wrong byte read back
// can be traced to the operation that wrote it ("stale data from op #12").
//
//   FsxOptions o;
//   o.dir = mount->Path("fsx");
//   o.seed = 42;
//   o.ops = 5000;
//   o.boundaries = {64 << 10, 1 << 20};
//   FsxStats stats;
//   absl::Status s = RunFsx(o, &stats);  // !ok(): s.message() is the report
//
// The same seed and options replay the same operations (the filesystem's
// answers aside), so a failure is reproduced by its seed and op count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace weft::testing {

struct FsxStats {
  uint64_t ops = 0;
  uint64_t writes = 0;
  uint64_t reads = 0;
  uint64_t truncates = 0;
  uint64_t map_writes = 0;
  uint64_t map_reads = 0;
  uint64_t syncs = 0;
  uint64_t reopens = 0;
  uint64_t stats = 0;
  uint64_t cache_drops = 0;
  uint64_t holes = 0;  // writes that started past EOF
  uint64_t fallocates = 0;    // every mode, punched holes and zeroed ranges included
  uint64_t unsupported = 0;   // fallocates refused with EOPNOTSUPP (the model unchanged)
  uint64_t streams = 0;
  uint64_t seeks = 0;  // SEEK_DATA and SEEK_HOLE
  uint64_t bytes_written = 0;
  uint64_t bytes_read = 0;  // bytes compared with the model

  // "ops=... writes=... ..." on one line.
  std::string Summary() const;
};

struct FsxOptions {
  // The directory the files are created in (it must exist); files are named
  // "<prefix>.<i>" and replaced if present.
  std::string dir;
  std::string prefix = "fsx";
  int files = 1;
  uint64_t seed = 1;
  uint64_t ops = 1000;
  // Writes and truncates keep every file below this size.
  uint64_t max_file_bytes = 8 << 20;
  // The longest single read, write or mapping.
  uint64_t max_io_bytes = 1 << 20;
  // Offsets and sizes at and next to multiples of these are chosen often:
  // give the stripe unit, object size, object set and EC stripe width.
  std::vector<uint64_t> boundaries;
  // When > 0, now and then (3 ops in 1000) a sequential stream of this many
  // bytes in 1 MiB writes, starting at or before EOF and allowed past
  // `max_file_bytes`: enough to cross a client's write-back thresholds
  // while it writes.
  uint64_t stream_bytes = 0;
  // MAP_SHARED writes (+ msync) and reads through mmap. The file must not be
  // opened with direct_io by the filesystem.
  bool mmap = true;
  // When set, every file is also kept open through this directory (the
  // same directory seen through another mount: another client), and each
  // operation goes through one of the two descriptors and paths at random;
  // the end checks the files through both.
  std::string other_dir;
  // How many of the last operations a failure report lists.
  size_t history = 20;
  // When set, called every `progress_every` operations (for logs).
  uint64_t progress_every = 1000;
  std::function<void(const FsxStats&)> progress;
  // For fsx's own tests: just before this op (past `ops`: before the final
  // check), one byte in the middle of the first file is changed through
  // another descriptor, behind the model's back.
  uint64_t corrupt_before_op = 0;
};

// Runs `options.ops` operations, then reads every file whole, closes, reopens
// and reads it whole again. OK, or an error whose message is the report: the
// seed, the op index, the operation, the offset of the first differing byte
// with expected and actual bytes (and which earlier op wrote the actual ones,
// whether a fresh descriptor reads the same), and the last operations.
// `stats` (may be null) counts what ran, also on failure. Files are left in
// place for a post-mortem.
absl::Status RunFsx(const FsxOptions& options, FsxStats* stats);

}  // namespace weft::testing
