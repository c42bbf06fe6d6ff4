#include "tests/harness/fsx.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "tests/harness/file_io.h"

namespace weft::testing {
namespace {

constexpr uint64_t kPage = 4096;

uint64_t Mix(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The byte that operation `op` writes at file offset `off`.
uint8_t PatternByte(uint64_t op, uint64_t off) {
  return static_cast<uint8_t>(Mix(op * 0x100000001b3ull ^ (off >> 3)) >> ((off & 7) * 8));
}

std::string Hex(absl::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes) absl::StrAppendFormat(&out, "%02x", c);
  return out;
}

std::string ErrnoText(int err) { return absl::StrCat(strerror(err), " (errno ", err, ")"); }

// SIGBUS/SIGSEGV while touching a mapping (an I/O error on a page fault, or
// a mapping cut short) is reported as a failure instead of killing the test.
thread_local sigjmp_buf* t_fault_jmp = nullptr;

void OnFault(int sig) {
  if (t_fault_jmp != nullptr) siglongjmp(*t_fault_jmp, sig);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Copies `len` bytes; returns 0, or the signal that interrupted the copy.
int GuardedCopy(void* dst, const void* src, size_t len) {
  struct sigaction sa = {};
  struct sigaction old_bus;
  struct sigaction old_segv;
  sa.sa_handler = OnFault;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGBUS, &sa, &old_bus);
  sigaction(SIGSEGV, &sa, &old_segv);
  sigjmp_buf jmp;
  int sig = sigsetjmp(jmp, 1);
  if (sig == 0) {
    t_fault_jmp = &jmp;
    memcpy(dst, src, len);
  }
  t_fault_jmp = nullptr;
  sigaction(SIGBUS, &old_bus, nullptr);
  sigaction(SIGSEGV, &old_segv, nullptr);
  return sig;
}

class Fsx {
 public:
  Fsx(const FsxOptions& options, FsxStats* stats) : o_(options), stats_(*stats), rng_(options.seed) {
    if (o_.boundaries.empty()) o_.boundaries = {kPage, 64 << 10};
    o_.max_io_bytes = std::max<uint64_t>(1, std::min(o_.max_io_bytes, o_.max_file_bytes));
  }
  ~Fsx() {
    for (File& f : files_) {
      if (f.fd >= 0) close(f.fd);
      if (f.fd2 >= 0) close(f.fd2);
    }
  }

  absl::Status Run();

 private:
  struct File {
    std::string name;
    std::string path;
    int fd = -1;
    std::string model;  // the bytes the file must hold
    std::string path2;  // through FsxOptions::other_dir
    int fd2 = -1;
  };
  struct Written {  // for tracing a wrong byte to the op that wrote it
    uint64_t op;
    int file;
    uint64_t off;
    uint64_t len;
  };
  enum class Op {
    kWrite, kRead, kTruncate, kMapWrite, kMapRead, kSync, kReopen, kStat, kDrop, kStream,
    kFallocate, kSeek
  };

  absl::Status Step();
  absl::Status StepOn(File& f);
  Op PickOp();
  uint64_t Uniform(uint64_t lo, uint64_t hi) {  // inclusive; lo when hi < lo
    return hi <= lo ? lo : std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
  }
  bool Chance(int percent) { return Uniform(0, 99) < static_cast<uint64_t>(percent); }
  uint64_t NearBoundary();
  uint64_t PickOffset(uint64_t size, bool write);
  uint64_t PickLength();
  uint64_t PickTruncateSize(uint64_t size);
  // A range inside [0, size) for a mapping (mappings cannot grow a file),
  // and the page-aligned mapping that covers it.
  struct MapRange {
    uint64_t off;
    uint64_t len;
    uint64_t start;    // of the mapping
    uint64_t map_len;  // from `start` to off + len
  };
  MapRange PickMapRange(uint64_t size);
  std::string Pattern(uint64_t off, uint64_t len) const;
  void Apply(File& f, uint64_t off, absl::string_view data);

  absl::Status DoWrite(File& f);
  absl::Status DoStream(File& f);
  absl::Status DoRead(File& f);
  absl::Status DoTruncate(File& f);
  absl::Status DoFallocate(File& f);
  absl::Status DoMapWrite(File& f);
  absl::Status DoMapRead(File& f);
  absl::Status DoSync(File& f);
  absl::Status DoReopen(File& f);
  absl::Status DoStat(File& f, bool by_path);
  absl::Status DoDrop(File& f);
  absl::Status DoSeek(File& f);

  absl::Status Open(File& f, int flags);
  absl::Status CheckSize(File& f, uint64_t size, const char* how);
  absl::Status Compare(File& f, uint64_t off, uint64_t len, const std::string& got,
                       const char* how);
  absl::Status VerifyWhole(File& f, const char* when);
  std::string Origin(const File& f, uint64_t off, absl::string_view got) const;
  std::string BoundaryOffsets(uint64_t at) const;
  std::string Reread(const File& f, uint64_t off, uint64_t len, uint64_t at) const;
  void Note(std::string what);
  absl::Status Fail(const std::string& what);
  void Corrupt(const File& f);

  FsxOptions o_;
  FsxStats& stats_;
  std::mt19937_64 rng_;
  std::vector<File> files_;
  std::vector<Written> written_;
  std::deque<std::string> history_;
  uint64_t op_ = 0;  // the index of the running operation
  std::string current_;
};

// ---- choices

Fsx::Op Fsx::PickOp() {
  struct Weighted {
    Op op;
    int weight;
  };
  static constexpr Weighted kOps[] = {
      {Op::kWrite, 28}, {Op::kRead, 26},   {Op::kTruncate, 7}, {Op::kMapWrite, 8},
      {Op::kMapRead, 6}, {Op::kSync, 4},   {Op::kReopen, 5},   {Op::kStat, 8},
      {Op::kDrop, 4},    {Op::kFallocate, 4}, {Op::kSeek, 3},
  };
  int total = 0;
  for (const Weighted& w : kOps) total += w.weight;
  int r = static_cast<int>(Uniform(0, total - 1));
  for (const Weighted& w : kOps) {
    if (r < w.weight) return w.op;
    r -= w.weight;
  }
  return Op::kRead;
}

// A multiple of a boundary, or a few bytes either side of one.
uint64_t Fsx::NearBoundary() {
  const uint64_t b = o_.boundaries[Uniform(0, o_.boundaries.size() - 1)];
  uint64_t off = Uniform(0, o_.max_file_bytes / b) * b;
  if (Chance(50)) {
    const uint64_t delta = Uniform(1, 3);
    off = Chance(50) && off >= delta ? off - delta : off + delta;
  }
  return std::min(off, o_.max_file_bytes - 1);
}

uint64_t Fsx::PickOffset(uint64_t size, bool write) {
  const uint64_t r = Uniform(0, 99);
  uint64_t off;
  if (r < 30) {
    off = Uniform(0, size);
  } else if (r < 60) {
    off = NearBoundary();
  } else if (r < 70) {  // around EOF
    const uint64_t delta = Uniform(0, 3);
    off = Chance(50) && size >= delta ? size - delta : size + delta;
  } else if (r < 80) {
    off = Uniform(0, size) / kPage * kPage;
  } else if (write) {  // far past EOF: a hole
    off = Uniform(size, o_.max_file_bytes - 1);
  } else {
    off = Uniform(0, size + o_.max_io_bytes);
  }
  return std::min(off, o_.max_file_bytes - 1);
}

uint64_t Fsx::PickLength() {
  const uint64_t r = Uniform(0, 99);
  uint64_t len;
  if (r < 35) {
    len = Uniform(1, 64);
  } else if (r < 65) {
    len = Uniform(65, 16 << 10);
  } else if (r < 85) {
    len = Uniform(16 << 10, std::max<uint64_t>(16 << 10, o_.max_io_bytes));
  } else {  // a boundary's length, maybe a byte off
    const uint64_t b = o_.boundaries[Uniform(0, o_.boundaries.size() - 1)];
    len = b * Uniform(1, 2) + Uniform(0, 2);
    if (len > 1) len -= 1;
  }
  return std::clamp<uint64_t>(len, 1, o_.max_io_bytes);
}

uint64_t Fsx::PickTruncateSize(uint64_t size) {
  const uint64_t r = Uniform(0, 99);
  const uint64_t b = o_.boundaries[Uniform(0, o_.boundaries.size() - 1)];
  uint64_t to;
  if (r < 10) {
    to = 0;
  } else if (r < 35) {  // down, anywhere
    to = Uniform(0, size);
  } else if (r < 60) {  // at a boundary
    to = Uniform(0, o_.max_file_bytes / b) * b;
  } else if (r < 75) {  // inside a unit
    to = Uniform(0, o_.max_file_bytes / b) * b + Uniform(1, b - 1);
  } else if (r < 90) {  // up
    to = Uniform(size, o_.max_file_bytes);
  } else {
    const uint64_t delta = Uniform(1, 3);
    to = Chance(50) && size >= delta ? size - delta : size + delta;
  }
  return std::min(to, o_.max_file_bytes);
}

Fsx::MapRange Fsx::PickMapRange(uint64_t size) {
  MapRange r;
  r.off = std::min(PickOffset(size, false), size - 1);
  r.len = std::min(PickLength(), size - r.off);
  r.start = r.off / kPage * kPage;
  r.map_len = r.off + r.len - r.start;
  return r;
}

std::string Fsx::Pattern(uint64_t off, uint64_t len) const {
  std::string data(len, '\0');
  for (uint64_t i = 0; i < len; ++i) data[i] = static_cast<char>(PatternByte(op_, off + i));
  return data;
}

void Fsx::Apply(File& f, uint64_t off, absl::string_view data) {
  if (f.model.size() < off + data.size()) f.model.resize(off + data.size(), '\0');
  f.model.replace(off, data.size(), data.data(), data.size());
  written_.push_back({op_, static_cast<int>(&f - files_.data()), off, data.size()});
  stats_.bytes_written += data.size();
}

// ---- the run

absl::Status Fsx::Run() {
  for (int i = 0; i < o_.files; ++i) {
    File f;
    f.name = absl::StrCat(o_.prefix, ".", i);
    f.path = absl::StrCat(o_.dir, "/", f.name);
    if (!o_.other_dir.empty()) f.path2 = absl::StrCat(o_.other_dir, "/", f.name);
    files_.push_back(std::move(f));
  }
  for (File& f : files_) {
    current_ = absl::StrCat("create ", f.name);
    if (absl::Status s = Open(f, O_RDWR | O_CREAT | O_TRUNC); !s.ok()) return s;
    if (!f.path2.empty()) {
      f.fd2 = open(f.path2.c_str(), O_RDWR | O_CLOEXEC);
      if (f.fd2 < 0) return Fail(absl::StrCat("open ", f.path2, ": ", ErrnoText(errno)));
    }
  }
  for (op_ = 1; op_ <= o_.ops; ++op_) {
    if (op_ == o_.corrupt_before_op) Corrupt(files_[0]);
    if (absl::Status s = Step(); !s.ok()) return s;
    stats_.ops++;
    if (o_.progress && o_.progress_every != 0 && op_ % o_.progress_every == 0) o_.progress(stats_);
  }
  if (o_.corrupt_before_op > o_.ops) Corrupt(files_[0]);
  // Everything once more, through the current descriptor and a fresh one.
  for (File& f : files_) {
    Note(absl::StrCat("final check ", f.name, " size=", f.model.size()));
    if (f.fd2 >= 0) {
      std::swap(f.fd, f.fd2);
      std::swap(f.path, f.path2);
      absl::Status s = VerifyWhole(f, "at the end, through the other mount");
      std::swap(f.fd, f.fd2);
      std::swap(f.path, f.path2);
      if (!s.ok()) return s;
      if (close(f.fd2) != 0) return Fail(absl::StrCat("final close: ", ErrnoText(errno)));
      f.fd2 = -1;
    }
    if (absl::Status s = VerifyWhole(f, "at the end"); !s.ok()) return s;
    if (absl::Status s = DoReopen(f); !s.ok()) return s;
    if (absl::Status s = VerifyWhole(f, "at the end after reopening"); !s.ok()) return s;
    if (close(f.fd) != 0) return Fail(absl::StrCat("final close: ", ErrnoText(errno)));
    f.fd = -1;
  }
  return absl::OkStatus();
}

absl::Status Fsx::Step() {
  File& f = files_[Uniform(0, files_.size() - 1)];
  // Through the other mount, now and then: the same file, another client.
  if (f.fd2 >= 0 && Chance(50)) {
    std::swap(f.fd, f.fd2);
    std::swap(f.path, f.path2);
    Note(absl::StrCat("(through ", o_.other_dir, ")"));
    absl::Status s = StepOn(f);
    std::swap(f.fd, f.fd2);
    std::swap(f.path, f.path2);
    return s;
  }
  return StepOn(f);
}

absl::Status Fsx::StepOn(File& f) {
  Op op = o_.stream_bytes > 0 && Chance(1) && Chance(30) ? Op::kStream : PickOp();
  if (!o_.mmap && op == Op::kMapWrite) op = Op::kWrite;
  if (!o_.mmap && op == Op::kMapRead) op = Op::kRead;
  switch (op) {
    case Op::kWrite: return DoWrite(f);
    case Op::kRead: return DoRead(f);
    case Op::kTruncate: return DoTruncate(f);
    case Op::kFallocate: return DoFallocate(f);
    case Op::kMapWrite: return DoMapWrite(f);
    case Op::kMapRead: return DoMapRead(f);
    case Op::kSync: return DoSync(f);
    case Op::kReopen: return DoReopen(f);
    case Op::kStat: return DoStat(f, Chance(30));
    case Op::kDrop: return DoDrop(f);
    case Op::kStream: return DoStream(f);
    case Op::kSeek: return DoSeek(f);
  }
  return absl::OkStatus();
}

// ---- operations

absl::Status Fsx::DoWrite(File& f) {
  const uint64_t size = f.model.size();
  const uint64_t off = PickOffset(size, true);
  const uint64_t len = std::min(PickLength(), o_.max_file_bytes - off);
  Note(absl::StrFormat("write %s off=%#x len=%#x end=%#x%s", f.name, off, len, off + len,
                       off > size ? " (hole before)" : ""));
  const std::string data = Pattern(off, len);
  if (absl::Status s = WriteFully(f.fd, off, data); !s.ok()) return Fail(std::string(s.message()));
  if (off > size) stats_.holes++;
  Apply(f, off, data);
  stats_.writes++;
  return absl::OkStatus();
}

absl::Status Fsx::DoStream(File& f) {
  constexpr uint64_t kPiece = 1 << 20;
  const uint64_t off = Uniform(0, f.model.size());
  const uint64_t len = o_.stream_bytes;
  Note(absl::StrFormat("stream %s off=%#x len=%#x end=%#x in 1 MiB writes", f.name, off, len,
                       off + len));
  const std::string data = Pattern(off, len);
  for (uint64_t done = 0; done < len; done += kPiece) {
    const absl::string_view piece = absl::string_view(data).substr(done, kPiece);
    if (absl::Status s = WriteFully(f.fd, off + done, piece); !s.ok()) {
      return Fail(absl::StrFormat("at %#x: %s", off + done, s.message()));
    }
  }
  Apply(f, off, data);
  stats_.streams++;
  return absl::OkStatus();
}

absl::Status Fsx::DoRead(File& f) {
  const uint64_t size = f.model.size();
  uint64_t off = PickOffset(size, false);
  uint64_t len = PickLength();
  if (Chance(5)) {  // the whole file
    off = 0;
    len = std::max<uint64_t>(size, 1);
  }
  Note(absl::StrFormat("read %s off=%#x len=%#x end=%#x (size %#x)", f.name, off, len, off + len,
                       size));
  std::string got;
  if (absl::Status s = ReadFully(f.fd, off, len, &got); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  stats_.reads++;
  return Compare(f, off, len, got, "pread");
}

absl::Status Fsx::DoTruncate(File& f) {
  const uint64_t size = f.model.size();
  const uint64_t to = PickTruncateSize(size);
  Note(absl::StrFormat("ftruncate %s %#x -> %#x (%s)", f.name, size, to,
                       to < size ? "down" : to > size ? "up" : "same"));
  if (ftruncate(f.fd, static_cast<off_t>(to)) != 0) {
    return Fail(absl::StrCat("ftruncate: ", ErrnoText(errno)));
  }
  f.model.resize(to, '\0');
  stats_.truncates++;
  return CheckSize(f, to, "fstat after ftruncate");
}

// fallocate in one of the modes a filesystem is asked for most: plain (the
// size grows to cover the range), KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE and
// ZERO_RANGE with or without KEEP_SIZE. A mode refused with EOPNOTSUPP is
// counted and changes nothing.
absl::Status Fsx::DoFallocate(File& f) {
  static constexpr struct {
    int mode;
    const char* name;
  } kModes[] = {{0, "plain"},
                {FALLOC_FL_KEEP_SIZE, "keep_size"},
                {FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, "punch_hole"},
                {FALLOC_FL_ZERO_RANGE, "zero_range"},
                {FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, "zero_range|keep_size"}};
  const auto& m = kModes[Uniform(0, std::size(kModes) - 1)];
  const uint64_t size = f.model.size();
  const uint64_t off = std::min(PickOffset(size, true), o_.max_file_bytes - 1);
  const uint64_t len = std::max<uint64_t>(1, std::min(PickLength(), o_.max_file_bytes - off));
  Note(absl::StrFormat("fallocate %s %s off=%#x len=%#x end=%#x (size %#x)", f.name, m.name, off,
                       len, off + len, size));
  stats_.fallocates++;
  if (fallocate(f.fd, m.mode, static_cast<off_t>(off), static_cast<off_t>(len)) != 0) {
    if (errno == EOPNOTSUPP) {
      stats_.unsupported++;
      return absl::OkStatus();
    }
    return Fail(absl::StrCat("fallocate ", m.name, ": ", ErrnoText(errno)));
  }
  const bool keep = (m.mode & FALLOC_FL_KEEP_SIZE) != 0;
  const uint64_t end = off + len;
  if (m.mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) {
    const uint64_t zero_end = keep ? std::min(end, size) : end;
    if (zero_end > off) Apply(f, off, std::string(zero_end - off, '\0'));
  } else if (!keep && end > size) {
    f.model.resize(end, '\0');
  }
  return CheckSize(f, f.model.size(), "fstat after fallocate");
}

// A MAP_SHARED, PROT_WRITE mapping of the range, written, msync(MS_SYNC)ed
// and unmapped. Mappings cannot grow a file: only [0, size) is written.
absl::Status Fsx::DoMapWrite(File& f) {
  if (f.model.empty()) return DoWrite(f);
  const auto [off, len, start, map_len] = PickMapRange(f.model.size());
  Note(absl::StrFormat("mapwrite %s off=%#x len=%#x end=%#x (map %#x+%#x)", f.name, off, len,
                       off + len, start, map_len));
  void* p = mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd,
                 static_cast<off_t>(start));
  if (p == MAP_FAILED) {
    return Fail(absl::StrCat("mmap(MAP_SHARED, PROT_READ|PROT_WRITE): ", ErrnoText(errno)));
  }
  const std::string data = Pattern(off, len);
  const int sig = GuardedCopy(static_cast<char*>(p) + (off - start), data.data(), len);
  const int synced = sig == 0 ? msync(p, map_len, MS_SYNC) : 0;
  const int sync_errno = errno;
  munmap(p, map_len);
  if (sig != 0) return Fail(absl::StrCat("signal ", strsignal(sig), " writing through the mapping"));
  if (synced != 0) return Fail(absl::StrCat("msync(MS_SYNC): ", ErrnoText(sync_errno)));
  Apply(f, off, data);
  stats_.map_writes++;
  return absl::OkStatus();
}

absl::Status Fsx::DoMapRead(File& f) {
  if (f.model.empty()) return DoRead(f);
  const auto [off, len, start, map_len] = PickMapRange(f.model.size());
  Note(absl::StrFormat("mapread %s off=%#x len=%#x end=%#x (map %#x+%#x)", f.name, off, len,
                       off + len, start, map_len));
  void* p = mmap(nullptr, map_len, PROT_READ, MAP_SHARED, f.fd, static_cast<off_t>(start));
  if (p == MAP_FAILED) return Fail(absl::StrCat("mmap(MAP_SHARED, PROT_READ): ", ErrnoText(errno)));
  std::string got(len, '\0');
  const int sig = GuardedCopy(got.data(), static_cast<char*>(p) + (off - start), len);
  munmap(p, map_len);
  if (sig != 0) return Fail(absl::StrCat("signal ", strsignal(sig), " reading through the mapping"));
  stats_.map_reads++;
  return Compare(f, off, len, got, "mmap read");
}

absl::Status Fsx::DoSync(File& f) {
  const bool data_only = Chance(30);
  Note(absl::StrCat(data_only ? "fdatasync " : "fsync ", f.name));
  if ((data_only ? fdatasync(f.fd) : fsync(f.fd)) != 0) {
    return Fail(absl::StrCat(data_only ? "fdatasync: " : "fsync: ", ErrnoText(errno)));
  }
  stats_.syncs++;
  return absl::OkStatus();
}

// close() must keep every byte (flush on close); the reopened file (now and
// then with O_TRUNC) must have the model's size, and now and then its whole
// content is checked.
absl::Status Fsx::DoReopen(File& f) {
  const bool verify = Chance(25);
  const bool trunc = Chance(4);
  Note(absl::StrCat("close+reopen ", f.name, trunc ? " O_TRUNC" : "", verify ? " +verify" : ""));
  const int fd = f.fd;
  f.fd = -1;
  if (close(fd) != 0) return Fail(absl::StrCat("close: ", ErrnoText(errno)));
  if (absl::Status s = Open(f, O_RDWR | (trunc ? O_TRUNC : 0)); !s.ok()) return s;
  if (trunc) f.model.clear();
  stats_.reopens++;
  if (absl::Status s = CheckSize(f, f.model.size(), "fstat after reopen"); !s.ok()) return s;
  return verify ? VerifyWhole(f, "after reopening") : absl::OkStatus();
}

absl::Status Fsx::DoStat(File& f, bool by_path) {
  Note(absl::StrCat(by_path ? "stat " : "fstat ", f.name));
  stats_.stats++;
  if (!by_path) return CheckSize(f, f.model.size(), "fstat");
  struct stat st;
  if (stat(f.path.c_str(), &st) != 0) return Fail(absl::StrCat("stat: ", ErrnoText(errno)));
  if (static_cast<uint64_t>(st.st_size) != f.model.size()) {
    return Fail(absl::StrFormat("stat: size %#x, expected %#x", st.st_size, f.model.size()));
  }
  return absl::OkStatus();
}

// Drops the file's clean pages from the page cache: later reads go to the
// filesystem instead of the kernel's copy.
absl::Status Fsx::DoDrop(File& f) {
  Note(absl::StrCat("fadvise(DONTNEED) ", f.name));
  const int err = posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
  if (err != 0) return Fail(absl::StrCat("posix_fadvise(DONTNEED): ", ErrnoText(err)));
  stats_.cache_drops++;
  return absl::OkStatus();
}

// lseek's SEEK_DATA or SEEK_HOLE from an offset in or just past the file.
// A filesystem may call any hole data, but a hole reads as zeros: SEEK_DATA
// may skip only zeros of the model (all of them to the end: ENXIO), and
// SEEK_HOLE lands on a zero byte or at the end.
absl::Status Fsx::DoSeek(File& f) {
  const bool hole = Chance(50);
  const uint64_t size = f.model.size();
  const uint64_t off = std::min(PickOffset(size, false), size + 3);
  Note(absl::StrFormat("lseek %s %#x %s", f.name, off, hole ? "SEEK_HOLE" : "SEEK_DATA"));
  stats_.seeks++;
  const off_t r = lseek(f.fd, static_cast<off_t>(off), hole ? SEEK_HOLE : SEEK_DATA);
  const int err = r < 0 ? errno : 0;
  auto zeros = [&](uint64_t from, uint64_t to) {
    return std::all_of(f.model.begin() + from, f.model.begin() + to,
                       [](char c) { return c == 0; });
  };
  if (off >= size) {
    if (err == ENXIO) return absl::OkStatus();
    return Fail(absl::StrFormat("lseek at or past the end (%#x): %s, expected ENXIO", size,
                                r < 0 ? ErrnoText(err) : absl::StrFormat("%#x", r)));
  }
  if (r < 0) {
    if (!hole && err == ENXIO && zeros(off, size)) return absl::OkStatus();
    return Fail(absl::StrCat("lseek: ", ErrnoText(err)));
  }
  const uint64_t at = static_cast<uint64_t>(r);
  if (at < off || at > size || (!hole && at == size)) {
    return Fail(absl::StrFormat("lseek: %#x, outside [%#x, %#x%s", at, off, size,
                                hole ? "]" : ")"));
  }
  if (!hole && !zeros(off, at)) {
    return Fail(absl::StrFormat("SEEK_DATA skipped data: %#x from %#x", at, off));
  }
  if (hole && at < size && f.model[at] != 0) {
    return Fail(absl::StrFormat("SEEK_HOLE landed on data at %#x", at));
  }
  return absl::OkStatus();
}

// ---- checks

absl::Status Fsx::Open(File& f, int flags) {
  f.fd = open(f.path.c_str(), flags | O_CLOEXEC, 0644);
  if (f.fd < 0) return Fail(absl::StrCat("open ", f.path, ": ", ErrnoText(errno)));
  return absl::OkStatus();
}

absl::Status Fsx::CheckSize(File& f, uint64_t size, const char* how) {
  struct stat st;
  if (fstat(f.fd, &st) != 0) return Fail(absl::StrCat(how, ": ", ErrnoText(errno)));
  if (static_cast<uint64_t>(st.st_size) != size) {
    return Fail(absl::StrFormat("%s: size %#x, expected %#x", how, st.st_size, size));
  }
  return absl::OkStatus();
}

absl::Status Fsx::Compare(File& f, uint64_t off, uint64_t len, const std::string& got,
                          const char* how) {
  const uint64_t size = f.model.size();
  const uint64_t want_len = off >= size ? 0 : std::min(len, size - off);
  stats_.bytes_read += got.size();
  const uint64_t common = std::min<uint64_t>(want_len, got.size());
  uint64_t i = 0;
  while (i < common && got[i] == f.model[off + i]) ++i;
  if (i == common && got.size() == want_len) return absl::OkStatus();
  if (i == common) {
    return Fail(absl::StrFormat("%s of %s off=%#x len=%#x returned %#x bytes, expected %#x "
                                "(file size %#x); the bytes it did return are right",
                                how, f.name, off, len, got.size(), want_len, size));
  }
  const uint64_t at = off + i;
  const uint64_t show = std::min<uint64_t>(16, common - i);
  return Fail(absl::StrFormat(
      "%s of %s off=%#x len=%#x: first differing byte at file offset %#x (byte %#x of the "
      "read; file size %#x; modulo boundaries: %s)\n  expected %s\n  got      %s\n  %s\n  %s",
      how, f.name, off, len, at, i, size, BoundaryOffsets(at),
      Hex(absl::string_view(f.model).substr(at, show)), Hex(absl::string_view(got).substr(i, show)),
      Origin(f, at, absl::string_view(got).substr(i, std::min<uint64_t>(8, common - i))),
      Reread(f, off, len, at)));
}

absl::Status Fsx::VerifyWhole(File& f, const char* when) {
  constexpr uint64_t kChunk = 1 << 20;
  const uint64_t size = f.model.size();
  for (uint64_t off = 0; off < size + 1; off += kChunk) {
    std::string got;
    if (absl::Status s = ReadFully(f.fd, off, kChunk, &got); !s.ok()) {
      return Fail(absl::StrCat("whole-file read ", when, ": ", s.message()));
    }
    stats_.reads++;
    const std::string how = absl::StrCat("whole-file read ", when);
    if (absl::Status s = Compare(f, off, kChunk, got, how.c_str()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// "at%b=..." for every boundary b: where in its stripe unit, object... `at` is.
std::string Fsx::BoundaryOffsets(uint64_t at) const {
  std::string s;
  for (uint64_t b : o_.boundaries) absl::StrAppendFormat(&s, "%#x%%%#x=%#x ", at, b, at % b);
  return s;
}

// Which write put these bytes at `off`: the newest recorded write of this
// file covering `off` whose pattern matches.
std::string Fsx::Origin(const File& f, uint64_t off, absl::string_view got) const {
  if (got.empty()) return "";
  if (got.find_first_not_of('\0') == absl::string_view::npos) {
    return "the bytes read are zeros: a hole, trimmed, or never written";
  }
  const int file = static_cast<int>(&f - files_.data());
  for (auto it = written_.rbegin(); it != written_.rend(); ++it) {
    if (it->file != file || off < it->off || off + got.size() > it->off + it->len) continue;
    bool match = true;
    for (size_t i = 0; i < got.size() && match; ++i) {
      match = static_cast<uint8_t>(got[i]) == PatternByte(it->op, off + i);
    }
    if (match) {
      return absl::StrFormat("the bytes read were written by op #%d (off=%#x len=%#x): %s", it->op,
                             it->off, it->len,
                             it->op == op_ ? "this op" : "stale data, a later write was lost");
    }
  }
  return "the bytes read match no earlier write of this file at this offset";
}

// The same range through a fresh descriptor with the page cache dropped:
// tells a wrong stored byte from a wrong cached one.
std::string Fsx::Reread(const File& f, uint64_t off, uint64_t len, uint64_t at) const {
  int fd = open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::StrCat("re-read through a fresh descriptor: open: ", ErrnoText(errno));
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  std::string again;
  absl::Status s = ReadFully(fd, off, len, &again);
  close(fd);
  if (!s.ok()) return absl::StrCat("re-read through a fresh descriptor: ", s.message());
  const uint64_t i = at - off;
  if (i >= again.size()) {
    return absl::StrFormat("re-read through a fresh descriptor returned only %#x bytes",
                           again.size());
  }
  const bool right = again[i] == f.model[at];
  return absl::StrFormat("re-read through a fresh descriptor, cache dropped: byte at %#x is %02x, "
                         "%s",
                         at, static_cast<uint8_t>(again[i]),
                         right ? "right (the wrong byte was cached, not stored)"
                               : "still wrong (it is stored wrong)");
}

void Fsx::Corrupt(const File& f) {
  if (f.model.empty()) return;
  const uint64_t at = f.model.size() / 2;
  Note(absl::StrFormat("(test) flip byte %#x of %s behind the model's back", at, f.name));
  int fd = open(f.path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  const char flipped = static_cast<char>(f.model[at] ^ 0x5a);
  (void)!pwrite(fd, &flipped, 1, static_cast<off_t>(at));
  close(fd);
}

void Fsx::Note(std::string what) {
  current_ = absl::StrCat("#", op_, " ", what);
  history_.push_back(current_);
  while (history_.size() > o_.history) history_.pop_front();
}

absl::Status Fsx::Fail(const std::string& what) {
  std::string report = absl::StrFormat(
      "fsx failed: seed=%d at op #%d of %d (files=%d max_file_bytes=%#x max_io_bytes=%#x "
      "mmap=%d)\n  op: %s\n  %s\nlast %d ops, newest last:\n",
      o_.seed, op_, o_.ops, o_.files, o_.max_file_bytes, o_.max_io_bytes, o_.mmap ? 1 : 0,
      current_, what, history_.size());
  for (const std::string& h : history_) absl::StrAppend(&report, "  ", h, "\n");
  absl::StrAppend(&report, "replay: the same options with seed=", o_.seed, " ops=", op_, "\n");
  return absl::DataLossError(report);
}

}  // namespace

std::string FsxStats::Summary() const {
  return absl::StrCat("ops=", ops, " writes=", writes, " reads=", reads, " truncates=", truncates,
                      " map_writes=", map_writes, " map_reads=", map_reads, " syncs=", syncs,
                      " reopens=", reopens, " stats=", stats, " cache_drops=", cache_drops,
                      " holes=", holes, " fallocates=", fallocates, " unsupported=", unsupported,
                      " streams=", streams, " seeks=", seeks, " bytes_written=", bytes_written,
                      " bytes_read=", bytes_read);
}

absl::Status RunFsx(const FsxOptions& options, FsxStats* stats) {
  FsxStats ignored;
  Fsx fsx(options, stats != nullptr ? stats : &ignored);
  return fsx.Run();
}

}  // namespace weft::testing
