// Directory listings through the kernel. weft-fuse keeps, per open
// directory, the part of an MDS page the kernel's READDIR had no room for
// and the end of the directory (client::DirStream), so these check what
// that must not change: every name once however the listing is cut up
// (small getdents buffers, telldir and seekdir), names created after the
// end was reached shown after rewinddir and by a new opendir, by this mount
// or another, and the attributes ls -l sees. And statfs, which the mount
// answers for a second from the MDS's last answer.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/harness/http.h"
#include "tests/harness/mount_fixture.h"

namespace weft::testing {
namespace {

// linux_dirent64, as getdents64 fills it.
struct Dirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

// One getdents64 of `fd` into `buf`: appends the names it returned ("."
// and ".." left out) and returns its byte count (0 at the end).
long GetdentsOnce(int fd, std::vector<char>& buf, std::vector<std::string>* names) {
  const long n = syscall(SYS_getdents64, fd, buf.data(), buf.size());
  REQUIRE(n >= 0);
  for (long at = 0; at < n;) {
    const auto* d = reinterpret_cast<const Dirent64*>(buf.data() + at);
    const std::string name = d->name;
    if (name != "." && name != "..") names->push_back(name);
    at += d->reclen;
  }
  return n;
}

// Every name getdents64 returns for `path`, read `buffer` bytes at a time,
// in order.
std::vector<std::string> GetdentsNames(const std::string& path, size_t buffer) {
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY);
  REQUIRE(fd >= 0);
  std::vector<std::string> names;
  std::vector<char> buf(buffer);
  while (GetdentsOnce(fd, buf, &names) > 0) {
  }
  close(fd);
  return names;
}

// The names readdir(3) gives from where `d` stands to its end.
std::vector<std::string> ReadRest(DIR* d) {
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  return names;
}

std::set<std::string> AsSet(const std::vector<std::string>& v) {
  return std::set<std::string>(v.begin(), v.end());
}

void Touch(const std::string& path) {
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  close(fd);
}

TEST_CASE("fuse readdir: every name once however the listing is cut - telldir and seekdir",
          "[fuse][readdir]") {
  MountFixture f;
  REQUIRE(mkdir(f.P("d").c_str(), 0755) == 0);
  std::set<std::string> created;
  for (int i = 0; i < 700; ++i) {
    const std::string name = absl::StrCat("entry-with-a-longer-name-", i);
    Touch(f.P("d/" + name));
    created.insert(name);
  }
  // Buffers smaller than the kernel's READDIR: it takes part of each reply
  // and asks again from the middle of it.
  for (size_t buffer : {size_t{200}, size_t{1000}, size_t{4096}, size_t{65536}}) {
    INFO("getdents64 buffer " << buffer);
    const std::vector<std::string> names = GetdentsNames(f.P("d"), buffer);
    CHECK(names.size() == created.size());
    CHECK(AsSet(names) == created);
  }

  // telldir at every 97th entry, then seekdir back to each: the listing
  // continues exactly where it stood.
  DIR* d = opendir(f.P("d").c_str());
  REQUIRE(d != nullptr);
  std::vector<std::string> all;
  std::map<size_t, long> positions;  // index of the next entry -> telldir
  for (;;) {
    if (all.size() % 97 == 0) positions[all.size()] = telldir(d);
    dirent* e = readdir(d);
    if (e == nullptr) break;
    const std::string name = e->d_name;
    if (name != "." && name != "..") all.push_back(name);
  }
  CHECK(AsSet(all) == created);
  CHECK(all.size() == created.size());
  for (auto it = positions.rbegin(); it != positions.rend(); ++it) {
    INFO("seekdir to entry " << it->first);
    seekdir(d, it->second);
    const std::vector<std::string> rest = ReadRest(d);
    REQUIRE(rest.size() == all.size() - it->first);
    CHECK(std::equal(rest.begin(), rest.end(), all.begin() + static_cast<long>(it->first)));
  }
  closedir(d);

  // ls -l: the attributes that come with the entries are the files'.
  const std::string sized = *created.begin();
  REQUIRE(truncate(f.P("d/" + sized).c_str(), 12345) == 0);
  d = opendir(f.P("d").c_str());
  REQUIRE(d != nullptr);
  size_t seen = 0;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    REQUIRE(fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0);
    CHECK(st.st_ino == e->d_ino);
    CHECK(S_ISREG(st.st_mode));
    CHECK(st.st_size == (name == sized ? 12345 : 0));
    ++seen;
  }
  closedir(d);
  CHECK(seen == created.size());
}

TEST_CASE("fuse readdir: names created after the end are listed after rewinddir - by either mount",
          "[fuse][readdir]") {
  TwoMountFixture f;
  REQUIRE(mkdir(f.P("d").c_str(), 0755) == 0);
  for (int i = 0; i < 5; ++i) Touch(f.P(absl::StrCat("d/old", i)));
  REQUIRE(mkdir(f.P("empty").c_str(), 0755) == 0);

  DIR* d = opendir(f.P("d").c_str());
  REQUIRE(d != nullptr);
  CHECK(ReadRest(d).size() == 5);
  CHECK(readdir(d) == nullptr);  // still the end, asked again

  Touch(f.P("d/mine"));
  Touch(f.Q("d/theirs"));
  REQUIRE(unlink(f.Q("d/old0").c_str()) == 0);
  rewinddir(d);
  const std::set<std::string> after =
      AsSet(ReadRest(d));
  CHECK(after == std::set<std::string>{"old1", "old2", "old3", "old4", "mine", "theirs"});
  closedir(d);
  CHECK(AsSet(GetdentsNames(f.P("d"), 4096)) == after);
  CHECK(AsSet(GetdentsNames(f.Q("d"), 4096)) == after);

  // An empty directory, listed to its end; a name appears through the
  // other mount; a new opendir lists it.
  CHECK(GetdentsNames(f.P("empty"), 4096).empty());
  Touch(f.Q("empty/x"));
  CHECK(GetdentsNames(f.P("empty"), 4096) == std::vector<std::string>{"x"});
}

// A name removed in the middle of a listing, after the READDIR before it
// fetched a page holding it, is not listed after the removal: a change
// through this mount drops what the open directory kept of that page, and
// so does the revoke that another mount's change sends (the listing's
// reply granted this mount a lease on the directory).
TEST_CASE("fuse readdir: a name removed mid-listing - by this mount or the other - is not listed after",
          "[fuse][readdir]") {
  TwoMountFixture f;
  REQUIRE(mkdir(f.P("d").c_str(), 0755) == 0);
  for (int i = 0; i < 600; ++i) Touch(f.P(absl::StrCat("d/name-", i)));
  for (const bool other : {false, true}) {
    INFO((other ? "removed through the other mount" : "removed through this mount"));
    const std::vector<std::string> order = GetdentsNames(f.P("d"), 65536);
    const int fd = open(f.P("d").c_str(), O_RDONLY | O_DIRECTORY);
    REQUIRE(fd >= 0);
    // One getdents is one READDIR: it takes that reply whole, and the open
    // directory keeps the rest of the MDS page behind it.
    std::vector<char> buf(32768);
    std::vector<std::string> listed;
    REQUIRE(GetdentsOnce(fd, buf, &listed) > 0);
    REQUIRE(listed.size() + 10 < order.size());
    const std::string victim = order[listed.size() + 3];
    REQUIRE(unlink(((other ? f.Q("d/") : f.P("d/")) + victim).c_str()) == 0);
    while (GetdentsOnce(fd, buf, &listed) > 0) {
    }
    close(fd);
    CHECK(std::find(listed.begin(), listed.end(), victim) == listed.end());
    CHECK(listed.size() == order.size() - 1);
    std::set<std::string> expected = AsSet(order);
    expected.erase(victim);
    CHECK(AsSet(listed) == expected);
  }
}

TEST_CASE("fuse statfs: asked of the MDS at most once a second - same answer meanwhile",
          "[fuse][readdir]") {
  ClusterOptions options;
  options.metrics = true;
  MountFixture f(options);
  struct statvfs first;
  REQUIRE(statvfs(f.mount->dir().c_str(), &first) == 0);
  const double before = MdsRequests(*f.cluster, "statfs");
  const absl::Time start = absl::Now();
  for (int i = 0; i < 50; ++i) {
    struct statvfs again;
    REQUIRE(statvfs(f.mount->dir().c_str(), &again) == 0);
    CHECK(again.f_blocks == first.f_blocks);
    CHECK(again.f_namemax == 255);
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  // One more per second that passed (a stalled machine), never one per call.
  CHECK(MdsRequests(*f.cluster, "statfs") - before <= 1 + seconds);
  // After the second, the MDS is asked again.
  absl::SleepFor(absl::Milliseconds(1100));
  const double later = MdsRequests(*f.cluster, "statfs");
  struct statvfs fresh;
  REQUIRE(statvfs(f.mount->dir().c_str(), &fresh) == 0);
  CHECK(MdsRequests(*f.cluster, "statfs") == later + 1);
}

}  // namespace
}  // namespace weft::testing
