#include "osd/store/file_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status/status.h"

namespace weft::osd {
namespace {

class PosixFile final : public RandomFile {
 public:
  PosixFile(std::string path, int fd, bool direct)
      : path_(std::move(path)), fd_(fd), direct_(direct) {}
  ~PosixFile() override {
    ::close(fd_);
    if (direct_read_fd_ >= 0) ::close(direct_read_fd_);
  }

  absl::Status Read(uint64_t offset, size_t n, std::string* out) override {
    if (n >= kDirectReadMin) {
      absl::Status status = ReadDirect(offset, n, out);
      if (!absl::IsUnimplemented(status)) return status;
    }
    RETURN_IF_ERROR(LeaveDirect());
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
    if (direct_ && offset % kDirectAlign == 0) return WriteDirect(offset, data);
    RETURN_IF_ERROR(LeaveDirect());
    return WriteAll(offset, data.data(), data.size());
  }

  absl::Status Truncate(uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return ErrnoToStatus(errno, absl::StrCat("ftruncate ", path_));
    }
    return absl::OkStatus();
  }

  // Written in 1 MiB pieces among the other OSDs' writes, a 4 MiB object
  // took three extents on ext4, and its read three disk requests instead of
  // one (on a spinning disk, two more seeks).
  void Preallocate(uint64_t offset, uint64_t length) override {
    if (length == 0) return;
    int r;
    do {
      r = ::fallocate(fd_, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                      static_cast<off_t>(length));
    } while (r != 0 && errno == EINTR);
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
  static constexpr size_t kDirectAlign = 4096;
  static size_t RoundUp(size_t n) { return (n + kDirectAlign - 1) / kDirectAlign * kDirectAlign; }

  absl::Status WriteAll(uint64_t offset, const char* data, size_t n) {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pwrite(fd_, data + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoToStatus(errno, absl::StrCat("pwrite ", path_));
      }
      done += static_cast<size_t>(r);
    }
    return absl::OkStatus();
  }

  // O_DIRECT needs aligned memory, offsets and lengths. Data in aligned
  // memory (weft-osd allocates large buffers aligned: osd/aligned_new.cc) is
  // written from where it lies, all but its last partial block; the rest
  // goes through an aligned buffer, its tail padded with zeros (the writer
  // truncates the file to the object's size afterwards). The copy costs far
  // less than the page-cache copy it replaces, which dominated the OSD's CPU.
  absl::Status WriteDirect(uint64_t offset, absl::string_view data) {
    // The bytes from `done` on, buffered: the file system refuses O_DIRECT
    // after all (EINVAL), or a padded piece would come before more data.
    auto buffered_from = [&](size_t done) -> absl::Status {
      RETURN_IF_ERROR(LeaveDirect());
      return WriteAll(offset + done, data.data() + done, data.size() - done);
    };
    size_t done = 0;
    if (reinterpret_cast<uintptr_t>(data.data()) % kDirectAlign == 0) {
      const size_t whole = data.size() / kDirectAlign * kDirectAlign;
      if (whole > 0) {
        absl::Status status = WriteAll(offset, data.data(), whole);
        if (absl::IsInvalidArgument(status)) return buffered_from(0);
        RETURN_IF_ERROR(status);
        done = whole;
      }
      if (done == data.size()) return absl::OkStatus();
    }
    AlignedBuffer buffer;  // per call: per-thread buffers multiplied by gRPC's threads
    constexpr size_t kMaxPiece = 4 << 20;
    if (!buffer.Reserve(std::min(kMaxPiece, RoundUp(data.size() - done)))) {
      return absl::ResourceExhaustedError("cannot allocate an aligned write buffer");
    }
    while (done < data.size()) {
      size_t n = std::min(kMaxPiece, data.size() - done);
      size_t padded = (n + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
      std::memcpy(buffer.data, data.data() + done, n);
      std::memset(buffer.data + n, 0, padded - n);
      absl::Status status = WriteAll(offset + done, buffer.data, padded);
      if (absl::IsInvalidArgument(status)) return buffered_from(done);
      RETURN_IF_ERROR(status);
      done += n;
      if (n != padded && done < data.size()) return buffered_from(done);
    }
    return absl::OkStatus();
  }

  absl::Status LeaveDirect() {
    if (!direct_) return absl::OkStatus();
    int flags = ::fcntl(fd_, F_GETFL);
    if (flags < 0 || ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT) != 0) {
      return ErrnoToStatus(errno, absl::StrCat("fcntl ", path_));
    }
    direct_ = false;
    return absl::OkStatus();
  }

  struct AlignedBuffer {
    char* data = nullptr;
    size_t size = 0;
    ~AlignedBuffer() { std::free(data); }
    bool Reserve(size_t n) {
      if (size >= n) return true;
      std::free(data);
      data = nullptr;
      size = 0;
      void* p = nullptr;
      if (posix_memalign(&p, kDirectAlign, n) != 0) return false;
      data = static_cast<char*>(p);
      size = n;
      return true;
    }
  };

  // Large reads bypass the page cache too, through a second descriptor opened
  // with O_DIRECT (the kernel writes back dirty cached pages of the range
  // first, so buffered writes are seen). Copying from the page cache in the
  // kernel cost nearly half the OSD's CPU on sequential reads; the aligned
  // read and one user-space copy cost a fraction. Unimplemented = use the
  // buffered path (no O_DIRECT on this filesystem).
  absl::Status ReadDirect(uint64_t offset, size_t n, std::string* out) {
    if (direct_read_fd_ == -2) return absl::UnimplementedError("no O_DIRECT");
    if (direct_read_fd_ < 0) {
      direct_read_fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
      if (direct_read_fd_ < 0) {
        direct_read_fd_ = -2;
        return absl::UnimplementedError("no O_DIRECT");
      }
    }
    if (offset % kDirectAlign == 0) {
      absl::Status status = ReadDirectInPlace(offset, n, out);
      if (!absl::IsUnimplemented(status)) return status;
    }
    AlignedBuffer buffer;  // per call, as in WriteDirect
    constexpr size_t kPiece = 4 << 20;
    if (!buffer.Reserve(std::min(kPiece, RoundUp(n)) + 2 * kDirectAlign)) {
      return absl::ResourceExhaustedError("cannot allocate an aligned read buffer");
    }
    // Appended piece by piece: resize() would first zero all n bytes that the
    // copies overwrite (a memset of every read, 5% of the CPU of a 4 MiB read
    // workload).
    out->clear();
    out->reserve(n);
    size_t done = 0;
    while (done < n) {
      const uint64_t want = offset + done;
      const uint64_t start = want / kDirectAlign * kDirectAlign;
      const size_t skip = want - start;
      const size_t len = std::min(kPiece, n - done);
      const size_t span = (skip + len + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
      ssize_t r;
      do {
        r = ::pread(direct_read_fd_, buffer.data, span, static_cast<off_t>(start));
      } while (r < 0 && errno == EINTR);
      if (r < 0) {
        if (errno == EINVAL && done == 0) {
          direct_read_fd_ = -2;  // refused after all: buffered from now on
          return absl::UnimplementedError("O_DIRECT refused");
        }
        return ErrnoToStatus(errno, absl::StrCat("pread ", path_));
      }
      if (static_cast<size_t>(r) <= skip) break;  // end of file
      const size_t got = std::min(len, static_cast<size_t>(r) - skip);
      out->append(buffer.data + skip, got);
      done += got;
      if (got < len) break;  // end of file
    }
    return absl::OkStatus();
  }

  // Reads straight into a string from ReadBuffers() when its buffer is
  // aligned (weft-osd's operator new aligns large buffers,
  // osd/aligned_new.cc): a reused one needs no zero-fill (std::string has no
  // uninitialized resize before C++23); a new one is zero-filled first, half
  // of the bounce buffer's copy. Whatever the buffer held past the bytes read
  // is cut off. Unimplemented when the buffer is not aligned, before any read.
  absl::Status ReadDirectInPlace(uint64_t offset, size_t n, std::string* out) {
    const size_t span = RoundUp(n);
    std::string buffer = ReadBuffers().Take(span);
    if (reinterpret_cast<uintptr_t>(buffer.data()) % kDirectAlign != 0) {
      ReadBuffers().Give(std::move(buffer));
      return absl::UnimplementedError("unaligned string buffer");
    }
    size_t done = 0;
    while (done < span) {
      ssize_t r = ::pread(direct_read_fd_, buffer.data() + done, span - done,
                          static_cast<off_t>(offset + done));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        const int error = errno;
        ReadBuffers().Give(std::move(buffer));
        // Refused: the bounce buffer's path tries and decides.
        if (error == EINVAL && done == 0) return absl::UnimplementedError("O_DIRECT refused");
        return ErrnoToStatus(error, absl::StrCat("pread ", path_));
      }
      done += static_cast<size_t>(r);
      if (r == 0 || done % kDirectAlign != 0) break;  // end of file
    }
    buffer.resize(std::min(done, n));  // only the bytes just read
    ReadBuffers().Give(std::move(*out));
    *out = std::move(buffer);
    return absl::OkStatus();
  }

  static constexpr size_t kDirectReadMin = 128 << 10;

  const std::string path_;
  const int fd_;
  bool direct_;  // new files are written with O_DIRECT while writes stay aligned
  int direct_read_fd_ = -1;  // -1 not opened yet, -2 O_DIRECT unavailable
};

class PosixFileIoImpl final : public FileIo {
 public:
  absl::StatusOr<std::unique_ptr<RandomFile>> OpenFile(const std::string& path,
                                                       OpenMode mode) override {
    int flags = O_CLOEXEC;
    switch (mode) {
      case OpenMode::kRead: flags |= O_RDONLY; break;
      case OpenMode::kReadWrite:
      case OpenMode::kRewrite: flags |= O_RDWR; break;
      case OpenMode::kCreate: flags |= O_RDWR | O_CREAT | O_EXCL; break;
    }
    // A new (or recycled) file is written once, whole: bypass the page cache
    // (O_DIRECT), as copying into it cost more CPU than everything else on the
    // write path. Filesystems without O_DIRECT (tmpfs) get a plain file.
    bool direct = mode == OpenMode::kCreate || mode == OpenMode::kRewrite;
    int fd;
    do {
      fd = ::open(path.c_str(), flags | (direct ? O_DIRECT : 0), 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0 && direct && errno == EINVAL) {
      direct = false;
      do {
        fd = ::open(path.c_str(), flags, 0644);
      } while (fd < 0 && errno == EINTR);
    }
    if (fd < 0) return ErrnoToStatus(errno, absl::StrCat("open ", path));
    return std::unique_ptr<RandomFile>(new PosixFile(path, fd, direct));
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
    struct stat dir;
    if (::stat(path.c_str(), &dir) == 0) space.device = static_cast<uint64_t>(dir.st_dev);
    return space;
  }
};

}  // namespace

FileIo* PosixFileIo() {
  static FileIo* const io = new PosixFileIoImpl();
  return io;
}

StringPool& ReadBuffers() {
  static StringPool* const pool = new StringPool(1 << 20, 16 << 20, 64 << 20);
  return *pool;
}

}  // namespace weft::osd
