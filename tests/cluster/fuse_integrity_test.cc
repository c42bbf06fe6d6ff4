// Data integrity through a real weft-fuse mount, against real processes:
//
// - fsx (tests/harness/fsx.h) on a 3x pool, on EC 4+2 with 4 KiB chunks and
//   small striped objects, and on EC 8+2: random writes, reads, truncates,
//   mmap writes and reads, syncs and reopens checked against a model after
//   every read;
// - a large file (2 GiB) written sequentially with a running XXH3, read back
//   through a fresh mount;
// - a generated source tree untarred into the mount and onto local disk, the
//   two compared entry by entry and byte for byte;
// - files, holes, links and xattrs read back bit-exact after every daemon
//   (etcd, the MDS, all OSDs) restarted, orderly and by kill -9.
//
// Knobs (environment): WEFT_FSX_OPS, WEFT_FSX_SEED, WEFT_FSX_FILES,
// WEFT_FSX_MMAP=0 (no mmap ops), WEFT_BIGFILE_MIB, WEFT_TREE_FILES.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "tests/harness/cluster.h"
#include "tests/harness/fsx.h"
#include "tests/harness/mount_fixture.h"
#include "tests/harness/tree.h"

namespace weft::testing {
namespace {

constexpr uint64_t kKiB = 1 << 10;
constexpr uint64_t kMiB = 1 << 20;

uint64_t EnvU64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  uint64_t out = 0;
  return v != nullptr && absl::SimpleAtoi(v, &out) ? out : fallback;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// ---- fsx

// "size:xxh3" of a file's content.
std::string Digest(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return absl::StrCat("open errno ", errno);
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::string buf(kMiB, '\0');
  uint64_t size = 0;
  ssize_t n;
  while ((n = read(fd, buf.data(), buf.size())) > 0) {
    XXH3_64bits_update(state, buf.data(), n);
    size += n;
  }
  close(fd);
  const uint64_t h = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return n < 0 ? absl::StrCat("read errno ", errno) : absl::StrFormat("%d:%016x", size, h);
}

struct FsxCase {
  // Every file of the cluster gets this layout (weft.conf fs_default_*).
  void Stripe(uint64_t stripe_unit, uint32_t stripe_count, uint64_t object_size) {
    cluster.fs_stripe_unit_bytes = stripe_unit;
    cluster.fs_stripe_count = stripe_count;
    cluster.fs_object_bytes = object_size;
    layout = absl::StrFormat("stripe_unit=%d stripe_count=%d object_size=%d", stripe_unit,
                             stripe_count, object_size);
  }

  std::string label;
  ClusterOptions cluster;
  DataPoolOptions pool;
  std::string layout;  // the weft.file.layout the files must get (without the pool)
  FsxOptions fsx;
  uint64_t default_ops;
};

void RunFsxCase(FsxCase c) {
  MountFixture f(c.cluster, c.pool);
  FsxOptions o = c.fsx;
  o.dir = f.P("fsx");
  REQUIRE(mkdir(o.dir.c_str(), 0755) == 0);
  o.seed = EnvU64("WEFT_FSX_SEED", std::random_device{}() ^
                                        static_cast<uint64_t>(time(nullptr)) << 20);
  o.ops = EnvU64("WEFT_FSX_OPS", c.default_ops);
  o.files = static_cast<int>(EnvU64("WEFT_FSX_FILES", o.files));
  o.mmap = EnvU64("WEFT_FSX_MMAP", 1) != 0;
  const std::string banner =
      absl::StrFormat("fsx %s: seed=%d ops=%d files=%d mmap=%d max_file=%d KiB", c.label, o.seed,
                      o.ops, o.files, o.mmap ? 1 : 0, o.max_file_bytes / kKiB);
  std::cout << banner << std::endl;
  const auto start = std::chrono::steady_clock::now();
  o.progress = [&](const FsxStats& s) {
    std::cout << absl::StrFormat("  %.0f s: %s", SecondsSince(start), s.Summary()) << std::endl;
  };
  FsxStats stats;
  absl::Status result = RunFsx(o, &stats);
  std::cout << absl::StrFormat("fsx %s: %s in %.1f s: %s", c.label, result.ok() ? "passed" : "FAILED",
                               SecondsSince(start), stats.Summary())
            << std::endl;
  INFO(banner);
  INFO(result.message());
  INFO("reproduce: WEFT_FSX_SEED=" << o.seed << " WEFT_FSX_OPS=" << stats.ops + 1
                                   << " WEFT_FSX_FILES=" << o.files << " WEFT_FSX_MMAP=" << o.mmap
                                   << " (mount log " << f.mount->log_path() << ")");
  CHECK(result.ok());
  CHECK(stats.fallocates > 0);
  CHECK(stats.unsupported == 0);  // every mode fsx asks for is the mount's

  // What the run left behind reads the same through a fresh client (the run
  // itself read it back through this one, page cache dropped).
  std::vector<std::string> digests;
  for (int i = 0; i < o.files; ++i) digests.push_back(Digest(absl::StrCat(o.dir, "/fsx.", i)));
  f.Remount();
  o.dir = f.P("fsx");
  for (int i = 0; i < o.files; ++i) {
    INFO("fsx." << i << " through a fresh mount");
    CHECK(Digest(absl::StrCat(o.dir, "/fsx.", i)) == digests[i]);
  }

  // The files got the layout the run was meant to cover, on the pool it names.
  CHECK(Xattr(o.dir + "/fsx.0", "weft.file.layout") == absl::StrCat(c.layout, " pool=fs1_data"));
}

TEST_CASE("fuse integrity: fsx on a 3x replicated pool with striped 1 MiB objects",
          "[fuse][integrity]") {
  FsxCase c;
  c.label = "3x su=256K sc=3 os=1M";
  c.cluster.osds = 3;
  c.Stripe(256 * kKiB, 3, 1 * kMiB);
  c.pool.size = 3;
  c.fsx.files = 3;
  c.fsx.max_file_bytes = 8 * kMiB;
  c.fsx.max_io_bytes = 1 * kMiB;
  // page, stripe unit, stripe width (3 units), object, object set (3 objects)
  c.fsx.boundaries = {4 * kKiB, 256 * kKiB, 768 * kKiB, 1 * kMiB, 3 * kMiB};
  c.fsx.stream_bytes = 34 * kMiB;  // the client writes back at 32 MiB buffered
  c.default_ops = 4500;  // 70-150 ops/s here, with the load of the day
  RunFsxCase(c);
}

TEST_CASE("fuse integrity: fsx on EC 4+2 with 4 KiB chunks and 32 KiB striped objects",
          "[fuse][integrity]") {
  FsxCase c;
  c.label = "EC 4+2/4K su=8K sc=2 os=32K";
  c.cluster.osds = 6;
  c.Stripe(8 * kKiB, 2, 32 * kKiB);
  c.pool = {.ec_k = 4, .ec_m = 2, .ec_chunk_bytes = 4096, .failure_domain = "osd"};
  c.fsx.max_file_bytes = 2 * kMiB;
  c.fsx.max_io_bytes = 256 * kKiB;
  // EC chunk and page, stripe unit, EC stripe (4 chunks), object, object set
  c.fsx.boundaries = {4 * kKiB, 8 * kKiB, 16 * kKiB, 32 * kKiB, 64 * kKiB};
  // No streams: 34 MiB would be over a thousand 6-shard objects each time.
  c.default_ops = 2000;  // 30-60 ops/s here
  RunFsxCase(c);
}

TEST_CASE("fuse integrity: fsx on EC 8+2 with 4 MiB objects", "[fuse][integrity]") {
  FsxCase c;
  c.label = "EC 8+2/64K os=4M";
  c.cluster.osds = 10;
  c.pool = {.ec_k = 8, .ec_m = 2, .failure_domain = "osd"};
  c.layout = "stripe_unit=4194304 stripe_count=1 object_size=4194304";  // the MDS default
  c.fsx.max_file_bytes = 12 * kMiB;
  c.fsx.max_io_bytes = 1 * kMiB + 4 * kKiB;
  // page, EC chunk, EC stripe (8 chunks), object
  c.fsx.boundaries = {4 * kKiB, 64 * kKiB, 512 * kKiB, 4 * kMiB};
  c.fsx.stream_bytes = 34 * kMiB;  // the client writes back at 32 MiB buffered
  c.default_ops = 3000;  // 45-85 ops/s here
  RunFsxCase(c);
}

// Files under the MDS's inline limit (64 KiB by default) keep their bytes in
// the MDS: every operation of fsx, mmap and hole punching included, works
// on inline data. The second run lets them grow past it, so each file moves
// to objects at some point of the run.
TEST_CASE("fuse integrity: fsx on small files whose data stays in the MDS", "[fuse][integrity]") {
  FsxCase c;
  c.label = "3x inline, files under 60 KiB";
  c.cluster.osds = 3;
  c.pool.size = 3;
  c.layout = "stripe_unit=4194304 stripe_count=1 object_size=4194304";  // the MDS default
  c.fsx.files = 3;
  c.fsx.max_file_bytes = 60 * kKiB;
  c.fsx.max_io_bytes = 16 * kKiB;
  c.fsx.boundaries = {4 * kKiB, 32 * kKiB};
  c.default_ops = 20000;  // about 2,000 ops/s: no OSD in the way
  RunFsxCase(c);
}

TEST_CASE("fuse integrity: fsx on files that grow past the inline limit", "[fuse][integrity]") {
  FsxCase c;
  c.label = "3x inline to objects, files under 256 KiB";
  c.cluster.osds = 3;
  c.pool.size = 3;
  c.layout = "stripe_unit=4194304 stripe_count=1 object_size=4194304";
  c.fsx.files = 6;
  c.fsx.max_file_bytes = 256 * kKiB;
  c.fsx.max_io_bytes = 48 * kKiB;
  c.fsx.boundaries = {4 * kKiB, 64 * kKiB};
  c.default_ops = 10000;
  RunFsxCase(c);
}

// ---- a large file

// Block `i` of the large file: 1 MiB of reproducible pseudo-random bytes.
void FillBlock(uint64_t i, std::string* block) {
  uint64_t x = i * 0x9e3779b97f4a7c15ull + 12345;
  for (size_t off = 0; off < block->size(); off += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    memcpy(block->data() + off, &x, 8);
  }
}

TEST_CASE("fuse integrity: a large file written in 1 MiB writes reads back with the same "
          "checksum through a fresh mount",
          "[fuse][integrity]") {
  MountFixture f({.osds = 6}, {.ec_k = 4, .ec_m = 2, .failure_domain = "osd"});
  const uint64_t blocks = EnvU64("WEFT_BIGFILE_MIB", 2048);
  std::string path = f.P("big");
  std::string block(kMiB, '\0');

  XXH3_state_t* state = XXH3_createState();
  REQUIRE(state != nullptr);
  XXH3_64bits_reset(state);
  auto start = std::chrono::steady_clock::now();
  int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  for (uint64_t i = 0; i < blocks; ++i) {
    FillBlock(i, &block);
    XXH3_64bits_update(state, block.data(), block.size());
    ssize_t n = write(fd, block.data(), block.size());
    INFO("block " << i << " errno " << errno);
    REQUIRE(n == static_cast<ssize_t>(block.size()));
  }
  REQUIRE(fsync(fd) == 0);
  REQUIRE(close(fd) == 0);
  const double write_s = SecondsSince(start);
  const uint64_t written_hash = XXH3_64bits_digest(state);

  // A fresh weft-fuse: the kernel's page cache of the old mount and every
  // cache in the client are gone, so the bytes come from the OSDs.
  f.Remount();
  path = f.P("big");
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK(static_cast<uint64_t>(st.st_size) == blocks * kMiB);

  XXH3_64bits_reset(state);
  std::string got;
  uint64_t total = 0;
  int64_t first_bad = -1;
  start = std::chrono::steady_clock::now();
  fd = open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  for (uint64_t i = 0;; ++i) {
    got = ReadAt(fd, static_cast<off_t>(total), kMiB);
    const size_t have = got.size();
    if (have == 0) break;
    XXH3_64bits_update(state, got.data(), have);
    FillBlock(i, &block);
    if (first_bad < 0 && (have != kMiB || memcmp(got.data(), block.data(), have) != 0)) {
      size_t j = 0;
      while (j < have && got[j] == block[j]) ++j;
      first_bad = static_cast<int64_t>(total + j);
    }
    total += have;
  }
  close(fd);
  const double read_s = SecondsSince(start);
  const uint64_t read_hash = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  std::cout << absl::StrFormat(
                   "large file: %d MiB written in %.1f s (%.1f MiB/s), read back through a fresh "
                   "mount in %.1f s (%.1f MiB/s)",
                   blocks, write_s, blocks / write_s, read_s, total / kMiB / read_s)
            << std::endl;
  INFO("first differing byte at " << first_bad);
  CHECK(total == blocks * kMiB);
  CHECK(first_bad == -1);
  CHECK(read_hash == written_hash);
}

// ---- a source tree

void SetTimes(const std::string& path, std::mt19937_64& rng) {
  timespec ts[2];
  ts[0].tv_sec = ts[1].tv_sec = 1500000000 + static_cast<time_t>(rng() % 200000000);
  ts[0].tv_nsec = ts[1].tv_nsec = static_cast<long>(rng() % 1000000000);
  INFO(path);
  REQUIRE(utimensat(AT_FDCWD, path.c_str(), ts, AT_SYMLINK_NOFOLLOW) == 0);
}

// The source files proper: `files` text files in src/A/B/C, with modes and
// owners. Returns their paths relative to `root`.
std::vector<std::string> WriteSourceFiles(const std::string& root, int files,
                                          std::mt19937_64& rng) {
  namespace fs = std::filesystem;
  std::vector<std::string> words;
  for (int i = 0; i < 4096; ++i) words.push_back(absl::StrFormat("%x", rng() >> 24));
  std::vector<std::string> dirs;
  for (const char* a : {"core", "net", "io", "util"}) {
    for (int b = 0; b < 6; ++b) {
      for (int c = 0; c < 8; ++c) dirs.push_back(absl::StrCat("src/", a, "/", b, "/", c));
    }
  }
  for (const std::string& d : dirs) fs::create_directories(root + "/" + d);
  for (const char* d : {"empty/nested/dir", "deep/a/b/c/d/e/f/g/h/i/j/k", "with spaces/ünïcödé ½",
                        "blobs", "links", "hard", "empty-files", "private", "sticky", "setgid"}) {
    fs::create_directories(root + "/" + d);
  }
  std::vector<std::string> made;  // regular files
  std::lognormal_distribution<double> size_dist(8.3, 1.4);
  for (int i = 0; i < files; ++i) {
    const size_t size = std::min<size_t>(static_cast<size_t>(size_dist(rng)), 2 * kMiB);
    std::string text;
    while (text.size() < size) {
      for (int w = 0; w < 12; ++w) absl::StrAppend(&text, words[rng() % words.size()], " ");
      text.back() = '\n';
    }
    text.resize(size);
    const std::string rel = absl::StrFormat("%s/file%05d.c", dirs[rng() % dirs.size()], i);
    WriteFile(root + "/" + rel, text);
    made.push_back(rel);
    const int r = static_cast<int>(rng() % 100);
    const mode_t mode = r < 10 ? 0755 : r < 15 ? 0600 : r < 20 ? 0444 : r < 21 ? 04755 : 0644;
    REQUIRE(chmod((root + "/" + rel).c_str(), mode) == 0);
    if (r >= 50 && r < 60) REQUIRE(chown((root + "/" + rel).c_str(), 1000, 1000) == 0);
    if (r >= 60 && r < 63) REQUIRE(chown((root + "/" + rel).c_str(), 1234, 5678) == 0);
  }
  return made;
}

// A source-tree-like directory (in the spirit of anchors/bench/mktree.py)
// plus what tar must carry besides data: nested and empty directories,
// log-normal file sizes (median ~4 KiB, capped at 2 MiB) of pseudo-random
// text, files spanning several 4 MiB objects, runs of zeros, empty files, modes
// (also setuid, sticky and setgid directories), owners, symlinks (relative,
// absolute, dangling, to directories, long), hard links, user xattrs,
// nanosecond mtimes, long and non-ASCII names.
void MakeSourceTree(const std::string& root, int files) {
  namespace fs = std::filesystem;
  std::mt19937_64 rng(20261122);
  const std::vector<std::string> made = WriteSourceFiles(root, files, rng);
  // Files over several objects (the default layout has 4 MiB objects).
  WriteFile(root + "/blobs/4MiB", RandomBytes(4 * kMiB, 1));
  WriteFile(root + "/blobs/4MiB+1", RandomBytes(4 * kMiB + 1, 2));
  WriteFile(root + "/blobs/9MiB+7", RandomBytes(9 * kMiB + 7, 3));
  std::string mostly_zeros(6 * kMiB + 3, '\0');
  mostly_zeros.replace(5 * kMiB, 4, "tail");
  WriteFile(root + "/blobs/zeros", mostly_zeros);
  WriteFile(root + "/with spaces/ünïcödé ½/file with spaces", "spaces\n");
  WriteFile(root + "/deep/a/b/c/d/e/f/g/h/i/j/k/leaf", "leaf\n");
  WriteFile(root + "/src/" + std::string(255, 'n'), "a name of 255 bytes\n");
  for (int i = 0; i < 20; ++i) WriteFile(absl::StrCat(root, "/empty-files/e", i), "");
  // Symlinks of every kind.
  for (int i = 0; i < 40; ++i) {
    REQUIRE(symlink(("../" + made[rng() % made.size()]).c_str(),
                    absl::StrCat(root, "/links/rel", i).c_str()) == 0);
  }
  REQUIRE(symlink("/usr/include/stdio.h", (root + "/links/abs").c_str()) == 0);
  REQUIRE(symlink("no/such/target", (root + "/links/dangling").c_str()) == 0);
  REQUIRE(symlink("../src/net", (root + "/links/dir").c_str()) == 0);
  REQUIRE(symlink("rel0", (root + "/links/chain").c_str()) == 0);
  std::string long_target;
  while (long_target.size() < 1000) long_target += "a-long-path-component/";
  REQUIRE(symlink(long_target.c_str(), (root + "/links/long").c_str()) == 0);
  // Hard links, within and across directories.
  for (int i = 0; i < 15; ++i) {
    const std::string first = absl::StrCat(root, "/hard/h", i, "_a");
    WriteFile(first, RandomBytes(1000 + i * 3000, 100 + i));
    REQUIRE(link(first.c_str(), absl::StrCat(root, "/hard/h", i, "_b").c_str()) == 0);
    if (i % 3 == 0) REQUIRE(link(first.c_str(), absl::StrCat(root, "/src/io/0/0/h", i).c_str()) == 0);
  }
  // User xattrs.
  for (int i = 0; i < 30; ++i) {
    const std::string p = root + "/" + made[rng() % made.size()];
    const std::string bin = RandomBytes(100, 200 + i);
    REQUIRE(setxattr(p.c_str(), "user.origin", p.data(), p.size(), 0) == 0);
    REQUIRE(setxattr(p.c_str(), "user.bin", bin.data(), bin.size(), 0) == 0);
  }
  REQUIRE(setxattr((root + "/src").c_str(), "user.dir", "yes", 3, 0) == 0);
  // Times last: creating entries changes a directory's mtime.
  std::vector<std::string> all;
  for (const auto& e : fs::recursive_directory_iterator(root)) all.push_back(e.path().string());
  std::sort(all.begin(), all.end());  // the same times for the same tree, whatever the walk order
  for (const std::string& p : all) SetTimes(p, rng);
  REQUIRE(chmod((root + "/private").c_str(), 0700) == 0);
  REQUIRE(chmod((root + "/sticky").c_str(), 01777) == 0);
  REQUIRE(chmod((root + "/setgid").c_str(), 02755) == 0);
}

CommandResult Tar(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/tar", "--numeric-owner", "--xattrs",
                                   "--xattrs-include=user.*"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv);
}

TEST_CASE("fuse integrity: a source tree untarred into the mount equals the same tarball "
          "untarred on local disk",
          "[fuse][integrity]") {
  MountFixture f({.osds = 6}, {.ec_k = 4, .ec_m = 2, .failure_domain = "osd"});
  const int files = static_cast<int>(EnvU64("WEFT_TREE_FILES", 2000));
  const std::string work = f.cluster->dir() + "/tree-work";
  const std::string src = work + "/src";
  const std::string local = work + "/local";
  const std::string tarball = work + "/tree.tar";
  REQUIRE(std::filesystem::create_directories(src));
  REQUIRE(std::filesystem::create_directories(local));
  MakeSourceTree(src, files);
  CommandResult r = Tar({"--format=posix", "-cf", tarball, "-C", src, "."});
  INFO(r.output);
  REQUIRE(r.code == 0);
  r = Tar({"-xpf", tarball, "-C", local});
  INFO(r.output);
  REQUIRE(r.code == 0);

  std::string dst = f.P("tree");
  REQUIRE(mkdir(dst.c_str(), 0755) == 0);
  auto start = std::chrono::steady_clock::now();
  r = Tar({"-xpf", tarball, "-C", dst});
  const double untar_s = SecondsSince(start);
  std::cout << absl::StrFormat("source tree: untar into the mount took %.1f s", untar_s)
            << std::endl;
  INFO(r.output);
  REQUIRE(r.code == 0);

  // Through a fresh mount, so that the bytes come from the cluster.
  f.Remount();
  dst = f.P("tree");
  start = std::chrono::steady_clock::now();
  auto local_snap = SnapshotTree(local);
  auto src_snap = SnapshotTree(src);
  auto mount_snap = SnapshotTree(dst);
  INFO(mount_snap.status());
  REQUIRE(local_snap.ok());
  REQUIRE(src_snap.ok());
  REQUIRE(mount_snap.ok());
  // Two empty trees would compare equal: the tree holds every file made.
  REQUIRE(src_snap->entries.size() > static_cast<size_t>(files));
  // tar itself round-trips the tree on local disk...
  std::vector<std::string> diffs = CompareTrees(src, *src_snap, local, *local_snap, {});
  INFO("source vs local untar:\n" << absl::StrJoin(diffs, "\n"));
  REQUIRE(diffs.empty());
  // ...and the mount holds what local disk holds.
  diffs = CompareTrees(local, *local_snap, dst, *mount_snap, {});
  const double compare_s = SecondsSince(start);
  std::cout << absl::StrFormat("source tree: %d entries, untar into the mount %.1f s, "
                               "compare through a fresh mount %.1f s",
                               mount_snap->entries.size(), untar_s, compare_s)
            << std::endl;
  INFO("local untar vs mount (" << diffs.size() << " differences):\n" << absl::StrJoin(diffs, "\n"));
  CHECK(diffs.empty());
  CHECK(mount_snap->entries.size() == local_snap->entries.size());
}

// ---- restart

// What the restart test wrote: every regular file's bytes, by path under the root.
using Contents = std::map<std::string, std::string>;

void WriteAtOffset(const std::string& path, uint64_t off, const std::string& data, Contents* c,
                   const std::string& rel) {
  int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  WriteAll(fd, data, static_cast<off_t>(off));
  REQUIRE(close(fd) == 0);
  std::string& model = (*c)[rel];
  if (model.size() < off + data.size()) model.resize(off + data.size(), '\0');
  model.replace(off, data.size(), data);
}

// A file written only through a MAP_SHARED mapping: sized with ftruncate,
// then written, msync()ed if `msync_it`, unmapped and closed (close alone
// must write the dirty pages back).
void WriteMapped(const std::string& path, const std::string& data, bool msync_it) {
  int fd = open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, data.size()) == 0);
  void* p = mmap(nullptr, data.size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  INFO("mmap errno " << errno);
  REQUIRE(p != MAP_FAILED);
  memcpy(p, data.data(), data.size());
  if (msync_it) CHECK(msync(p, data.size(), MS_SYNC) == 0);
  REQUIRE(munmap(p, data.size()) == 0);
  REQUIRE(close(fd) == 0);
}

// Files of many sizes around the 4 MiB object, sparse files, truncated and
// overwritten files, files written through mmap, xattrs (small, binary,
// 60 KiB, trusted.*), symlinks, hard links, a fifo, modes, owners and set
// times, under `root` (on the mount).
Contents MakeRestartSet(const std::string& root) {
  Contents c;
  REQUIRE(mkdir(root.c_str(), 0755) == 0);
  REQUIRE(mkdir((root + "/dir").c_str(), 0755) == 0);
  REQUIRE(mkdir((root + "/dir/sub").c_str(), 0750) == 0);
  REQUIRE(mkdir((root + "/sticky").c_str(), 01777) == 0);
  REQUIRE(mkdir((root + "/empty").c_str(), 0700) == 0);
  uint64_t seed = 1;
  for (uint64_t size : std::initializer_list<uint64_t>{0, 1, 4095, 4096, 4097, 65539, kMiB, 4 * kMiB - 1,
                        4 * kMiB, 4 * kMiB + 1, 9 * kMiB + 12345}) {
    const std::string rel = absl::StrCat("size-", size);
    c[rel] = RandomBytes(size, seed++);
    WriteFile(root + "/" + rel, c[rel]);
  }
  WriteAtOffset(root + "/sparse-a", 0, "head", &c, "sparse-a");
  WriteAtOffset(root + "/sparse-a", 20 * kMiB + 5, "tail", &c, "sparse-a");
  WriteAtOffset(root + "/sparse-c", 64 * kMiB, RandomBytes(5000, 50), &c, "sparse-c");
  WriteFile(root + "/sparse-b", "");
  REQUIRE(truncate((root + "/sparse-b").c_str(), 10 * kMiB) == 0);
  c["sparse-b"] = std::string(10 * kMiB, '\0');
  WriteAtOffset(root + "/sparse-b", 5 * kMiB, RandomBytes(4096, 51), &c, "sparse-b");
  c["truncated"] = RandomBytes(9 * kMiB, 52);
  WriteFile(root + "/truncated", c["truncated"]);
  REQUIRE(truncate((root + "/truncated").c_str(), 4 * kMiB + 100) == 0);
  c["truncated"].resize(4 * kMiB + 100);
  WriteAtOffset(root + "/overwritten", 0, RandomBytes(6 * kMiB, 53), &c, "overwritten");
  WriteAtOffset(root + "/overwritten", 2 * kMiB + kMiB / 2, RandomBytes(kMiB, 54), &c, "overwritten");
  // xattrs
  const std::string x = root + "/size-4097";
  const std::string bin = RandomBytes(300, 55);
  const std::string big = RandomBytes(60 * kKiB, 56);
  REQUIRE(setxattr(x.c_str(), "user.a", "1", 1, 0) == 0);
  REQUIRE(setxattr(x.c_str(), "user.bin", bin.data(), bin.size(), 0) == 0);
  REQUIRE(setxattr(x.c_str(), "user.big", big.data(), big.size(), 0) == 0);
  REQUIRE(setxattr(x.c_str(), "trusted.t", "t", 1, 0) == 0);
  REQUIRE(setxattr((root + "/dir").c_str(), "user.d", "dir", 3, 0) == 0);
  // links
  REQUIRE(symlink("size-1", (root + "/sl-rel").c_str()) == 0);
  REQUIRE(symlink("/etc/hostname", (root + "/sl-abs").c_str()) == 0);
  REQUIRE(symlink("no/such", (root + "/sl-dangling").c_str()) == 0);
  REQUIRE(symlink("../size-4096", (root + "/dir/sl-up").c_str()) == 0);
  c["hard-1"] = RandomBytes(5 * kMiB + 3, 57);
  WriteFile(root + "/hard-1", c["hard-1"]);
  REQUIRE(link((root + "/hard-1").c_str(), (root + "/dir/hard-2").c_str()) == 0);
  REQUIRE(link((root + "/hard-1").c_str(), (root + "/dir/sub/hard-3").c_str()) == 0);
  c["dir/hard-2"] = c["dir/sub/hard-3"] = c["hard-1"];
  WriteMapped(root + "/mapped-msync", RandomBytes(5 * kMiB + 77, 58), true);
  WriteMapped(root + "/mapped-close", RandomBytes(3 * kMiB + 5, 59), false);
  c["mapped-msync"] = RandomBytes(5 * kMiB + 77, 58);
  c["mapped-close"] = RandomBytes(3 * kMiB + 5, 59);
  REQUIRE(mkfifo((root + "/fifo").c_str(), 0640) == 0);
  // modes, owners, times
  REQUIRE(chmod((root + "/size-1").c_str(), 0600) == 0);
  REQUIRE(chown((root + "/size-0").c_str(), 1234, 5678) == 0);
  timespec ts[2] = {{1234567890, 123456789}, {1234567890, 987654321}};
  REQUIRE(utimensat(AT_FDCWD, (root + "/size-4096").c_str(), ts, 0) == 0);
  return c;
}

void CheckContents(const std::string& root, const Contents& c, const char* when) {
  for (const auto& [rel, want] : c) {
    INFO(when << ": " << rel << " (" << want.size() << " bytes)");
    const std::string got = ReadFile(root + "/" + rel);
    CHECK(got.size() == want.size());
    if (got != want) {
      size_t i = 0;
      while (i < got.size() && i < want.size() && got[i] == want[i]) ++i;
      FAIL_CHECK("first differing byte at " << i);
    }
  }
}

TEST_CASE("fuse integrity: files - holes - links and xattrs read back bit-exact after every "
          "daemon restarts",
          "[fuse][integrity]") {
  MountFixture f({.osds = 6}, {.ec_k = 4, .ec_m = 2, .failure_domain = "osd"});
  const Contents contents = MakeRestartSet(f.P("r"));
  CheckContents(f.P("r"), contents, "before");
  auto before = SnapshotTree(f.P("r"));
  INFO(before.status());
  REQUIRE(before.ok());
  REQUIRE(before->entries.size() > 20);

  for (bool crash : {false, true}) {
    const char* how = crash ? "after kill -9 of every daemon" : "after an orderly restart";
    INFO(how);
    f.mount.reset();  // unmounted: everything flushed
    const auto start = std::chrono::steady_clock::now();
    absl::Status restarted = f.cluster->RestartAll(crash);
    INFO(restarted);
    REQUIRE(restarted.ok());
    REQUIRE(f.cluster->Meta("fs1") != nullptr);  // rank 0 serves fs1 again
    std::cout << absl::StrFormat("restart (%s): cluster clean again in %.1f s", how,
                                 SecondsSince(start))
              << std::endl;
    f.Remount();
    CheckContents(f.P("r"), contents, how);
    auto after = SnapshotTree(f.P("r"));
    INFO(after.status());
    REQUIRE(after.ok());
    TreeCompareOptions same_fs;
    same_fs.ctime = true;
    same_fs.ino = true;
    same_fs.contents = false;  // checked against what was written, above
    std::vector<std::string> diffs = CompareTrees("before", *before, "after", *after, same_fs);
    INFO(absl::StrJoin(diffs, "\n"));
    CHECK(diffs.empty());
    // And the filesystem takes new data.
    const std::string fresh = RandomBytes(5 * kMiB + 1, crash ? 60 : 61);
    WriteFile(f.P(crash ? "new-after-crash" : "new-after-restart"), fresh);
    CheckContents(f.mount->dir(), {{crash ? "new-after-crash" : "new-after-restart", fresh}}, how);
  }
}

// ---- times

// tar (and cp -p, rsync) write a file, then set its times through the open
// descriptor, then close it. The time set must be what the client reports
// at once, after the kernel's 1 s attribute cache expired (a fresh getattr
// while the file is open), after close, and what the MDS stores.
TEST_CASE("fuse integrity: times set through an open descriptor are reported and stored",
          "[fuse][integrity]") {
  MountFixture f({.osds = 3}, {});
  const timespec set[2] = {{1234567890, 111111111}, {1234567890, 222222222}};
  auto check_mtime = [&](const struct stat& st, const char* when) {
    INFO(when);
    CHECK(st.st_mtim.tv_sec == set[1].tv_sec);
    CHECK(st.st_mtim.tv_nsec == set[1].tv_nsec);
  };
  for (const bool fsync_first : {true, false}) {
    INFO((fsync_first ? "fsync before futimens" : "no fsync before futimens"));
    const std::string name = fsync_first ? "synced" : "buffered";
    int fd = open(f.P(name).c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, "some data", 9) == 9);
    if (fsync_first) REQUIRE(fsync(fd) == 0);
    REQUIRE(futimens(fd, set) == 0);
    struct stat st;
    REQUIRE(fstat(fd, &st) == 0);
    check_mtime(st, "fstat right after futimens");
    absl::SleepFor(absl::Milliseconds(1200));  // past the kernel's attribute timeout
    REQUIRE(fstat(fd, &st) == 0);
    check_mtime(st, "fstat 1.2 s later - file still open");
    REQUIRE(close(fd) == 0);
    REQUIRE(stat(f.P(name).c_str(), &st) == 0);
    check_mtime(st, "stat after close");
    CHECK(st.st_size == 9);
    f.Remount();
    REQUIRE(stat(f.P(name).c_str(), &st) == 0);
    check_mtime(st, "stat through a fresh mount - as the MDS has it");
  }
}

}  // namespace
}  // namespace weft::testing
