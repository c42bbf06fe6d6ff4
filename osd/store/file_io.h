// The object store's only door to the file system, so that tests can replace
// it (fault_file_io.h drops unsynced data and injects crashes, the way LevelDB's
// db/fault_injection_test.cc wraps its Env).
//
// Durability contract the store relies on, and that every implementation models:
//  - RandomFile::Sync() makes the file's data and size durable (fdatasync).
//  - A new directory entry (a created or removed file) is durable only after
//    SyncDir() of its directory.
//  - Nothing else is durable. After power loss, unsynced writes may be lost,
//    kept, or kept in part (torn at sector granularity).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/bytes/string_pool.h"

namespace weft::osd {

// An open file for positioned I/O. Not thread-safe for concurrent use of one
// handle; the store opens one handle per operation.
class RandomFile {
 public:
  virtual ~RandomFile() = default;
  // Reads up to `n` bytes at `offset` into `*out` (resized to what was read);
  // short only at end of file.
  virtual absl::Status Read(uint64_t offset, size_t n, std::string* out) = 0;
  // Writes all of `data` at `offset`, extending the file (with a zero-filled
  // hole) if needed.
  virtual absl::Status Write(uint64_t offset, absl::string_view data) = 0;
  // Sets the file size; growth reads as zeros.
  virtual absl::Status Truncate(uint64_t size) = 0;
  // A hint that [offset, offset + length) past the end is about to be
  // written: the file system may allocate it now, in one piece. Changes
  // neither the size nor what reads return; does nothing where unsupported,
  // and a failure is left for the write itself to report.
  virtual void Preallocate(uint64_t offset, uint64_t length) = 0;
  // Makes data and size durable (fdatasync).
  virtual absl::Status Sync() = 0;
  virtual absl::StatusOr<uint64_t> Size() = 0;
};

enum class OpenMode {
  kRead,       // existing file, read-only
  kReadWrite,  // existing file
  kCreate,     // new file, read-write; AlreadyExists if the path exists
  kRewrite,    // existing file, read-write, about to be written whole like a
               // new one (so it may bypass the page cache as kCreate does)
};

enum class FileType { kFile, kDirectory, kOther };

struct FsSpace {
  uint64_t total_bytes = 0;
  uint64_t avail_bytes = 0;
  // The file system's device (st_dev): OSDs of one host sharing it count
  // its space once.
  uint64_t device = 0;
};

class FileIo {
 public:
  virtual ~FileIo() = default;
  // NotFound if the path does not exist (kRead, kReadWrite).
  virtual absl::StatusOr<std::unique_ptr<RandomFile>> OpenFile(const std::string& path,
                                                               OpenMode mode) = 0;
  // NotFound if absent.
  virtual absl::Status RemoveFile(const std::string& path) = 0;
  // The parent must exist; AlreadyExists if the path exists.
  virtual absl::Status CreateDir(const std::string& path) = 0;
  // Makes the entries of directory `path` (creations, removals) durable.
  virtual absl::Status SyncDir(const std::string& path) = 0;
  // Names (not paths) of the entries of a directory, without "." and "..".
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) = 0;
  // NotFound if the path does not exist.
  virtual absl::StatusOr<FileType> Stat(const std::string& path) = 0;
  virtual absl::StatusOr<FsSpace> StatFs(const std::string& path) = 0;
};

// The process-wide POSIX implementation (never deleted).
FileIo* PosixFileIo();

// Large read buffers kept for reuse (never deleted): the POSIX files read
// into them, and weft-osd gives them back once a reply carrying one is sent
// (osd/osd_service.cc). Strings of 1-16 MiB, 64 MiB in all.
StringPool& ReadBuffers();

}  // namespace weft::osd
