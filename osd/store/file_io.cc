#include "osd/store/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/status/status.h"

namespace weft::osd {
namespace {

class PosixFile final : public RandomFile {
 public:
  PosixFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixFile() override { ::close(fd_); }

  absl::Status Read(uint64_t offset, size_t n, std::string* out) override {
    out->resize(n);
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, out->data() + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, absl::StrCat("pread ", path_));
      }
      if (r == 0) break;  // end of file
      done += static_cast<size_t>(r);
    }
    out->resize(done);
    return absl::OkStatus();
  }

  absl::Status Write(uint64_t offset, absl::string_view data) override {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t r = ::pwrite(fd_, data.data() + done, data.size() - done,
                           static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, absl::StrCat("pwrite ", path_));
      }
      done += static_cast<size_t>(r);
    }
    return absl::OkStatus();
  }

  absl::Status Truncate(uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return ErrnoToStatus(errno, absl::StrCat("ftruncate ", path_));
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (::fdatasync(fd_) != 0) return ErrnoToStatus(errno, absl::StrCat("fdatasync ", path_));
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Size() override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoToStatus(errno, absl::StrCat("fstat ", path_));
    return static_cast<uint64_t>(st.st_size);
  }

 private:
  const std::string path_;
  const int fd_;
};

class PosixFileIoImpl final : public FileIo {
 public:
  absl::StatusOr<std::unique_ptr<RandomFile>> OpenFile(const std::string& path,
                                                       OpenMode mode) override {
    int flags = O_CLOEXEC;
    switch (mode) {
      case OpenMode::kRead: flags |= O_RDONLY; break;
      case OpenMode::kReadWrite: flags |= O_RDWR; break;
      case OpenMode::kCreate: flags |= O_RDWR | O_CREAT | O_EXCL; break;
    }
    int fd;
    do {
      fd = ::open(path.c_str(), flags, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return ErrnoToStatus(errno, absl::StrCat("open ", path));
    return std::unique_ptr<RandomFile>(new PosixFile(path, fd));
  }

  absl::Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return ErrnoToStatus(errno, absl::StrCat("unlink ", path));
    return absl::OkStatus();
  }

  absl::Status CreateDir(const std::string& path) override {
    if (::mkdir(path.c_str(), 0755) != 0) {
      return ErrnoToStatus(errno, absl::StrCat("mkdir ", path));
    }
    return absl::OkStatus();
  }

  absl::Status SyncDir(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoToStatus(errno, absl::StrCat("open dir ", path));
    absl::Status status;
    if (::fsync(fd) != 0) status = ErrnoToStatus(errno, absl::StrCat("fsync dir ", path));
    ::close(fd);
    return status;
  }

  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return ErrnoToStatus(errno, absl::StrCat("opendir ", path));
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* entry = ::readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    const int err = errno;
    ::closedir(dir);
    if (err != 0) return ErrnoToStatus(err, absl::StrCat("readdir ", path));
    return names;
  }

  absl::StatusOr<FileType> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, absl::StrCat("stat ", path));
    if (S_ISDIR(st.st_mode)) return FileType::kDirectory;
    if (S_ISREG(st.st_mode)) return FileType::kFile;
    return FileType::kOther;
  }

  absl::StatusOr<FsSpace> StatFs(const std::string& path) override {
    struct statvfs st;
    if (::statvfs(path.c_str(), &st) != 0) {
      return ErrnoToStatus(errno, absl::StrCat("statvfs ", path));
    }
    FsSpace space;
    space.total_bytes = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
    space.avail_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    return space;
  }
};

}  // namespace

FileIo* PosixFileIo() {
  static FileIo* const io = new PosixFileIoImpl();
  return io;
}

}  // namespace weft::osd
