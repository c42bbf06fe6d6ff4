// File I/O for tests, through plain syscalls (on a mount or on local disk):
// whole writes and reads that loop over short transfers and EINTR, and
// whole files. No test-framework assertions: every failure is a Status that
// names the call and its errno, so the fsx exerciser and forked RunAs
// children can use them too. Catch2 tests use the REQUIRE wrappers in
// tests/harness/mount_fixture.h.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::testing {

// pwrite of all of `data` at `off`, as many calls as it takes.
absl::Status WriteFully(int fd, uint64_t off, absl::string_view data);

// pread of [off, off+len) into `out`, as many calls as it takes; stops at
// EOF, so `out` is shorter than `len` when the file ends first.
absl::Status ReadFully(int fd, uint64_t off, uint64_t len, std::string* out);

// The whole content of `path` (up to its size at open plus `slack` bytes, so
// that a file longer than it says shows its extra bytes).
absl::StatusOr<std::string> ReadWholeFile(const std::string& path, uint64_t slack = 4096);

// open(O_CREAT|O_WRONLY|O_TRUNC, mode), WriteFully, close (whose error counts:
// a write-back filesystem reports failed writes there).
absl::Status WriteWholeFile(const std::string& path, absl::string_view data, mode_t mode = 0644);

// getxattr(2) of `name` on `path` (values up to 64 KiB).
absl::StatusOr<std::string> GetXattr(const std::string& path, const std::string& name);

// The last `lines` non-empty lines of the file at `path`, joined by " | "
// (empty if it cannot be read): a daemon's log for an error message.
std::string LogTail(const std::string& path, size_t lines);

}  // namespace weft::testing
