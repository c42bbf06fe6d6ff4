// Data coherence of a shared file through two real mounts of one filesystem
// (docs/ARCHITECTURE.md, "Shared files"): while another session holds a file
// open and someone writes it, every writer writes through (to the OSDs and
// reported to the MDS before write(2) returns) and each report drops every
// other opener's cached pages (its kernel's too) before it is answered. So a
// descriptor kept open, or a mapping, on one mount reads what the other
// mount wrote right after its call returned, with no sleep and no reopen;
// and O_APPEND writers on several mounts get their places at the end of the
// file from the MDS, so no record is lost or torn.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/harness/fsx.h"
#include "tests/harness/mount_fixture.h"

namespace weft::testing {
namespace {

using TwoMounts = TwoMountFixture;

int OpenOrFail(const std::string& path, int flags, mode_t mode = 0644) {
  const int fd = open(path.c_str(), flags, mode);
  INFO("open " << path << ": errno " << (fd >= 0 ? 0 : errno));
  REQUIRE(fd >= 0);
  return fd;
}

off_t SizeOf(int fd) {
  struct stat st = {};
  REQUIRE(fstat(fd, &st) == 0);
  return st.st_size;
}

TEST_CASE(
    "fuse coherence: a descriptor kept open sees the other mount's writes and truncates at once",
    "[fuse][caps][coherence]") {
  TwoMounts f;
  WriteFile(f.P("f"), std::string(10000, 'a'));
  // The reader opens first and reads everything: its kernel caches the pages.
  const int reader = OpenOrFail(f.Q("f"), O_RDONLY);
  CHECK(ReadAt(reader, 0, 20000) == std::string(10000, 'a'));
  const int writer = OpenOrFail(f.P("f"), O_WRONLY);

  std::string model(10000, 'a');
  std::mt19937 rng(46);
  for (int i = 0; i < 40; ++i) {
    INFO("round " << i);
    const int kind = static_cast<int>(rng() % 4);
    if (kind == 0) {  // an overwrite inside the file
      const size_t at = rng() % model.size();
      const std::string bytes(1 + rng() % 3000, static_cast<char>('b' + i % 20));
      WriteAll(writer, bytes, static_cast<off_t>(at));
      if (at + bytes.size() > model.size()) model.resize(at + bytes.size(), '\0');
      model.replace(at, bytes.size(), bytes);
    } else if (kind == 1) {  // growth past the end, leaving a hole
      const size_t at = model.size() + rng() % 5000;
      const std::string bytes(1 + rng() % 4000, static_cast<char>('B' + i % 20));
      WriteAll(writer, bytes, static_cast<off_t>(at));
      model.resize(at, '\0');
      model += bytes;
    } else if (kind == 2) {  // a truncate down
      const size_t to = rng() % (model.size() + 1);
      REQUIRE(ftruncate(writer, static_cast<off_t>(to)) == 0);
      model.resize(to);
    } else {  // a truncate up
      const size_t to = model.size() + rng() % 3000;
      REQUIRE(ftruncate(writer, static_cast<off_t>(to)) == 0);
      model.resize(to, '\0');
    }
    // Right after the writer's call returned, with no sleep: the size and
    // every byte through the descriptor the reader kept.
    CHECK(SizeOf(reader) == static_cast<off_t>(model.size()));
    CHECK(ReadAt(reader, 0, model.size() + 4096) == model);
  }
  close(writer);
  close(reader);
  CHECK(ReadFile(f.Q("f")) == model);
}

TEST_CASE("fuse coherence: two mounts writing one file in turn read each other's bytes at once",
          "[fuse][caps][coherence]") {
  TwoMounts f;
  WriteFile(f.P("g"), "");
  const int a = OpenOrFail(f.P("g"), O_RDWR);
  const int b = OpenOrFail(f.Q("g"), O_RDWR);
  std::string model;
  std::mt19937 rng(47);
  for (int i = 0; i < 60; ++i) {
    INFO("round " << i);
    const int from = (rng() % 2 == 0) ? a : b;
    const int other = from == a ? b : a;
    // Disjoint, overlapping and extending writes, against one model.
    const size_t at = model.empty() ? 0 : rng() % (model.size() + 2000);
    const std::string bytes(1 + rng() % 6000, static_cast<char>('a' + i % 26));
    WriteAll(from, bytes, static_cast<off_t>(at));
    if (at + bytes.size() > model.size()) model.resize(at + bytes.size(), '\0');
    model.replace(at, bytes.size(), bytes);
    CHECK(ReadAt(other, 0, model.size() + 100) == model);
    CHECK(ReadAt(from, 0, model.size() + 100) == model);
  }
  close(a);
  close(b);
  CHECK(ReadFile(f.P("g")) == model);
  CHECK(ReadFile(f.Q("g")) == model);
}

TEST_CASE("fuse coherence: a mapping on one mount shows the other mount's msync at once",
          "[fuse][caps][coherence]") {
  TwoMounts f;
  constexpr size_t kSize = 3 * 4096;
  WriteFile(f.P("m"), std::string(kSize, 'x'));
  const int rfd = OpenOrFail(f.Q("m"), O_RDONLY);
  void* rmap = mmap(nullptr, kSize, PROT_READ, MAP_SHARED, rfd, 0);
  REQUIRE(rmap != MAP_FAILED);
  const char* seen = static_cast<const char*>(rmap);
  CHECK(std::string(seen, kSize) == std::string(kSize, 'x'));  // faulted in: cached

  const int wfd = OpenOrFail(f.P("m"), O_RDWR);
  void* wmap = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, wfd, 0);
  INFO("writable mmap: errno " << (wmap == MAP_FAILED ? errno : 0));
  REQUIRE(wmap != MAP_FAILED);
  char* out = static_cast<char*>(wmap);
  for (int round = 0; round < 5; ++round) {
    INFO("round " << round);
    const char c = static_cast<char>('0' + round);
    memset(out + 4096 + round * 100, c, 700);
    REQUIRE(msync(wmap, kSize, MS_SYNC) == 0);
    CHECK(std::string(seen + 4096 + round * 100, 700) == std::string(700, c));
  }
  // And a plain write through the other mount reaches the mapping too.
  WriteAll(wfd, "written", 2 * 4096);
  CHECK(std::string(seen + 2 * 4096, 7) == "written");
  munmap(wmap, kSize);
  munmap(rmap, kSize);
  close(wfd);
  close(rfd);
}

// Reads `n` bytes at `at` of a mapping in a child process: a SIGBUS (a
// fault past the size its kernel knows) kills the child, not the test.
// Returns the bytes, or "signal N".
std::string ReadMappedInChild(const char* map, size_t at, size_t n) {
  int pipefd[2];
  REQUIRE(pipe(pipefd) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(pipefd[0]);
    const std::string bytes(map + at, n);
    _exit(write(pipefd[1], bytes.data(), n) == static_cast<ssize_t>(n) ? 0 : 2);
  }
  close(pipefd[1]);
  std::string got(n, '\0');
  size_t have = 0;
  while (have < n) {
    const ssize_t r = read(pipefd[0], got.data() + have, n - have);
    if (r <= 0) break;
    have += static_cast<size_t>(r);
  }
  close(pipefd[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  if (WIFSIGNALED(status)) return absl::StrCat("signal ", WTERMSIG(status));
  got.resize(have);
  return got;
}

TEST_CASE("fuse coherence: a mapping reads past the size its kernel knew once the other mount grew the file",
          "[fuse][caps][coherence]") {
  TwoMounts f;
  constexpr size_t kMapped = 64 * 4096;
  WriteFile(f.P("grow"), std::string(100, 'a'));
  // The reader maps more than the file holds and touches the first page:
  // its kernel knows the file as 100 bytes.
  const int rfd = OpenOrFail(f.Q("grow"), O_RDONLY);
  void* rmap = mmap(nullptr, kMapped, PROT_READ, MAP_SHARED, rfd, 0);
  REQUIRE(rmap != MAP_FAILED);
  const char* seen = static_cast<const char*>(rmap);
  CHECK(std::string(seen, 100) == std::string(100, 'a'));

  const int wfd = OpenOrFail(f.P("grow"), O_WRONLY);
  std::string model(100, 'a');
  // Growth by write (into the same page, into later pages, past a hole)
  // and by truncate, each read through the mapping right after, with no
  // stat on the reader's mount (which would refresh its kernel's size).
  struct Step {
    size_t at;
    size_t n;
    bool truncate;
  };
  for (const Step& s : {Step{100, 900, false}, Step{1000, 9000, false}, Step{5 * 4096, 300, false},
                        Step{0, 9 * 4096 + 17, true}, Step{30 * 4096, 4096, false}}) {
    INFO("at " << s.at << " n " << s.n << (s.truncate ? " truncate" : " write"));
    if (s.truncate) {
      REQUIRE(ftruncate(wfd, static_cast<off_t>(s.n)) == 0);
      model.resize(s.n, '\0');
    } else {
      const std::string bytes(s.n, static_cast<char>('b' + s.at % 20));
      WriteAll(wfd, bytes, static_cast<off_t>(s.at));
      if (s.at + bytes.size() > model.size()) model.resize(s.at + bytes.size(), '\0');
      model.replace(s.at, bytes.size(), bytes);
    }
    CHECK(ReadMappedInChild(seen, 0, model.size()) == model);
  }
  munmap(rmap, kMapped);
  close(wfd);
  close(rfd);
}

// As on one machine: after a truncate through the other mount, a mapping's
// bytes past the new end in its last page read zeros, and a page wholly
// past it faults (SIGBUS), though its kernel had all of them cached and
// knew the old size. Cut by path with the mapping's mount the only opener
// (it caches the file), and by a descriptor both mounts hold (shared).
TEST_CASE("fuse coherence: a mapping faults past the end the other mount cut the file to",
          "[fuse][caps][coherence]") {
  TwoMounts f;
  constexpr size_t kSize = 3 * 4096;
  const std::string bus = absl::StrCat("signal ", SIGBUS);
  WriteFile(f.P("shrink"), std::string(kSize, 'a'));
  const int rfd = OpenOrFail(f.Q("shrink"), O_RDONLY);
  void* rmap = mmap(nullptr, kSize, PROT_READ, MAP_SHARED, rfd, 0);
  REQUIRE(rmap != MAP_FAILED);
  const char* seen = static_cast<const char*>(rmap);
  CHECK(std::string(seen, kSize) == std::string(kSize, 'a'));  // all three pages cached

  REQUIRE(truncate(f.P("shrink").c_str(), 100) == 0);
  CHECK(ReadMappedInChild(seen, 0, 100) == std::string(100, 'a'));
  CHECK(ReadMappedInChild(seen, 100, 4096 - 100) == std::string(4096 - 100, '\0'));
  CHECK(ReadMappedInChild(seen, 4096, 1) == bus);
  CHECK(ReadMappedInChild(seen, 2 * 4096 + 5, 1) == bus);

  // Grown again through the other mount, then cut while both hold it open.
  const int wfd = OpenOrFail(f.P("shrink"), O_RDWR);
  WriteAll(wfd, std::string(kSize - 100, 'b'), 100);
  CHECK(ReadMappedInChild(seen, 0, kSize) == std::string(100, 'a') + std::string(kSize - 100, 'b'));
  REQUIRE(ftruncate(wfd, 4096 + 10) == 0);
  CHECK(ReadMappedInChild(seen, 4096, 10) == std::string(10, 'b'));
  CHECK(ReadMappedInChild(seen, 4096 + 10, 20) == std::string(20, '\0'));
  CHECK(ReadMappedInChild(seen, 2 * 4096, 1) == bus);
  // The cut is what both mounts report.
  CHECK(SizeOf(rfd) == 4096 + 10);
  CHECK(SizeOf(wfd) == 4096 + 10);
  munmap(rmap, kSize);
  close(wfd);
  close(rfd);
}

TEST_CASE("fuse coherence: a mapping written after the other mount cut the file does not grow it",
          "[fuse][caps][coherence]") {
  TwoMounts f;
  constexpr size_t kSize = 64 * 4096;
  WriteFile(f.P("cut"), std::string(kSize, 'x'));
  // Both mounts hold the file open (shared: written through), and the
  // mapping's mount has read all of it: its kernel knows 64 pages.
  const int other = OpenOrFail(f.P("cut"), O_RDWR);
  const int mfd = OpenOrFail(f.Q("cut"), O_RDWR);
  CHECK(ReadAt(mfd, 0, kSize) == std::string(kSize, 'x'));

  // The other mount cuts the file to 20 pages and a bit.
  constexpr size_t kCut = 20 * 4096 + 1000;
  REQUIRE(ftruncate(other, kCut) == 0);
  // A write through a mapping of pages 4 to 21, up to the new end (as
  // fsx's mapwrite): the last page goes back whole, but the bytes past the
  // end must not (the kernel's size may still be the old one).
  void* map = mmap(nullptr, kSize - 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 4 * 4096);
  REQUIRE(map != MAP_FAILED);
  char* bytes = static_cast<char*>(map);
  memset(bytes + 100, 'm', kCut - 4 * 4096 - 100);
  REQUIRE(msync(map, kSize - 4 * 4096, MS_SYNC) == 0);
  std::string model(kCut, 'x');
  model.replace(4 * 4096 + 100, kCut - 4 * 4096 - 100, std::string(kCut - 4 * 4096 - 100, 'm'));
  for (const std::string& path : {f.P("cut"), f.Q("cut")}) {
    INFO(path);
    struct stat st = {};
    REQUIRE(stat(path.c_str(), &st) == 0);
    CHECK(st.st_size == static_cast<off_t>(kCut));
    CHECK(ReadFile(path) == model);
  }
  munmap(map, kSize - 4 * 4096);
  close(mfd);
  close(other);
}

TEST_CASE("fuse coherence: fsx through two mounts at once against one model",
          "[fuse][caps][coherence]") {
  TwoMounts f;
  REQUIRE(mkdir(f.P("fsx").c_str(), 0755) == 0);
  FsxOptions o;
  o.dir = f.P("fsx");
  o.other_dir = f.Q("fsx");
  o.files = 2;
  o.seed = std::random_device{}() ^ static_cast<uint64_t>(time(nullptr)) << 20;
  if (const char* seed = getenv("WEFT_FSX_SEED")) o.seed = strtoull(seed, nullptr, 10);
  o.ops = 5000;
  o.max_file_bytes = 2 << 20;
  o.max_io_bytes = 256 << 10;
  o.boundaries = {4096, 4 << 20};
  INFO("fsx seed " << o.seed << " (WEFT_FSX_SEED to repeat)");
  FsxStats stats;
  const absl::Status result = RunFsx(o, &stats);
  INFO(result.message());
  CHECK(result.ok());
  CHECK(stats.ops == o.ops);
}

// One writer process per mount appends `n` records of 64 bytes with
// O_APPEND, each in one write(2).
pid_t StartAppender(const std::string& path, char who, int n) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND);
  if (fd < 0) _exit(2);
  for (int i = 0; i < n; ++i) {
    std::string rec = absl::StrCat(std::string(1, who), " ", i, " ");
    rec.resize(63, who);
    rec += '\n';
    if (write(fd, rec.data(), rec.size()) != static_cast<ssize_t>(rec.size())) _exit(3);
  }
  _exit(close(fd) == 0 ? 0 : 4);
}

TEST_CASE("fuse coherence: O_APPEND writers on two mounts lose and tear no record",
          "[fuse][caps][coherence]") {
  TwoMounts f;
  WriteFile(f.P("log"), "");
  constexpr int kRecords = 1000;
  // Both hold the file open before either appends (the case that lost
  // half of the records: each client appended at its own idea of the end).
  const int hold_p = OpenOrFail(f.P("log"), O_WRONLY | O_APPEND);
  const int hold_q = OpenOrFail(f.Q("log"), O_WRONLY | O_APPEND);
  const pid_t p = StartAppender(f.P("log"), 'p', kRecords);
  const pid_t q = StartAppender(f.Q("log"), 'q', kRecords);
  for (pid_t pid : {p, q}) {
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  close(hold_p);
  close(hold_q);
  for (const std::string& path : {f.P("log"), f.Q("log")}) {
    INFO(path);
    const std::string all = ReadFile(path);
    REQUIRE(all.size() == 2 * kRecords * 64);
    int next[2] = {0, 0};
    for (size_t at = 0; at < all.size(); at += 64) {
      const std::string rec = all.substr(at, 64);
      INFO("record at " << at << ": " << rec);
      REQUIRE((rec[0] == 'p' || rec[0] == 'q'));
      const int who = rec[0] == 'p' ? 0 : 1;
      std::vector<std::string> parts = absl::StrSplit(rec, ' ');
      REQUIRE(parts.size() >= 3);
      // Each writer's records in its own order, none missing, none torn.
      CHECK(parts[1] == std::to_string(next[who]));
      ++next[who];
      CHECK(rec.back() == '\n');
      CHECK(rec.find_first_not_of(rec[0], rec.find(' ', 2) + 1) == 63);
    }
    CHECK(next[0] == kRecords);
    CHECK(next[1] == kRecords);
  }
}

}  // namespace
}  // namespace weft::testing
