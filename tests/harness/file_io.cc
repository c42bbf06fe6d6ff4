#include "tests/harness/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status/status.h"

namespace weft::testing {

absl::Status WriteFully(int fd, uint64_t off, absl::string_view data) {
  uint64_t done = 0;
  while (done < data.size()) {
    ssize_t n = pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(off + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, absl::StrCat("pwrite at ", off + done));
    if (n == 0) return absl::InternalError(absl::StrCat("pwrite at ", off + done, " wrote nothing"));
    done += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::Status ReadFully(int fd, uint64_t off, uint64_t len, std::string* out) {
  out->assign(len, '\0');
  uint64_t done = 0;
  while (done < len) {
    ssize_t n = pread(fd, out->data() + done, len - done, static_cast<off_t>(off + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoToStatus(errno, absl::StrCat("pread at ", off + done));
    if (n == 0) break;
    done += static_cast<uint64_t>(n);
  }
  out->resize(done);
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, uint64_t slack) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, absl::StrCat("open ", path));
  struct stat st;
  absl::Status status;
  std::string out;
  if (fstat(fd, &st) != 0) {
    status = ErrnoToStatus(errno, absl::StrCat("fstat ", path));
  } else {
    status = Annotate(ReadFully(fd, 0, static_cast<uint64_t>(st.st_size) + slack, &out), path);
  }
  close(fd);
  if (!status.ok()) return status;
  return out;
}

absl::Status WriteWholeFile(const std::string& path, absl::string_view data, mode_t mode) {
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoToStatus(errno, absl::StrCat("open ", path));
  absl::Status status = Annotate(WriteFully(fd, 0, data), path);
  if (close(fd) != 0 && status.ok()) status = ErrnoToStatus(errno, absl::StrCat("close ", path));
  return status;
}

absl::StatusOr<std::string> GetXattr(const std::string& path, const std::string& name) {
  std::string buf(65536, '\0');
  const ssize_t n = getxattr(path.c_str(), name.c_str(), buf.data(), buf.size());
  if (n < 0) return ErrnoToStatus(errno, absl::StrCat("getxattr ", path, " ", name));
  buf.resize(n);
  return buf;
}

std::string LogTail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::vector<std::string> all = absl::StrSplit(buffer.str(), '\n', absl::SkipEmpty());
  if (all.size() > lines) all.erase(all.begin(), all.end() - static_cast<ptrdiff_t>(lines));
  return absl::StrJoin(all, " | ");
}

}  // namespace weft::testing
