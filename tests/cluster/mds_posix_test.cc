// Permissions, ACLs, xattrs and recursive statistics enforced by the MDS
// (real processes), with the caller's uid, gid and supplementary groups.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "tests/harness/cluster.h"
#include "tests/harness/fs_fixture.h"

namespace weft::testing {
namespace {

// A POSIX ACL in the Linux xattr format.
std::string Acl(std::initializer_list<std::tuple<uint16_t, uint16_t, uint32_t>> entries) {
  std::string out(4, '\0');
  uint32_t version = 2;
  std::memcpy(out.data(), &version, 4);
  for (auto [tag, perm, id] : entries) {
    char e[8];
    std::memcpy(e, &tag, 2);
    std::memcpy(e + 2, &perm, 2);
    std::memcpy(e + 4, &id, 4);
    out.append(e, 8);
  }
  return out;
}
constexpr uint16_t kUserObj = 1, kUser = 2, kGroupObj = 4, kGroup = 8, kMask = 0x10, kOther = 0x20;
constexpr uint32_t kUndef = 0xffffffff;

// fs1 with three callers on one session: root, and alice (1000) and bob
// (1001), each in their own group only, with umask 022.
struct UsersFixture : FsFixture {
  UsersFixture() : root(meta.get()), alice(meta.get()), bob(meta.get()) {
    alice.As(1000, 1000).Umask(022);
    bob.As(1001, 1001).Umask(022);
  }
  FsCaller root, alice, bob;
};

TEST_CASE("permissions: mode bits - groups - sticky and setgid directories - chown", "[mds]") {
  UsersFixture f;
  FsCaller &root = f.root, &alice = f.alice, &bob = f.bob;
  const uint64_t top = root.root();

  CHECK(Errno(alice.Create(top, "nope")) == EACCES);
  CHECK(Errno(alice.Mkdir(top, "nope")) == EACCES);
  uint64_t home = Ino(root.Mkdir(top, "alice", 0755));
  // Refused for two reasons, answered as Linux does: the name first (EEXIST
  // for one that exists, ENOENT for one that does not), then write permission.
  CHECK(Errno(alice.Mkdir(top, "alice")) == EEXIST);
  CHECK(Errno(alice.Symlink(top, "alice", "x")) == EEXIST);
  CHECK(Errno(alice.Create(top, "alice", 0644, /*exclusive=*/true)) == EEXIST);
  CHECK(Errno(alice.Unlink(top, "nope")) == ENOENT);
  CHECK(Errno(alice.Rmdir(top, "nope")) == ENOENT);
  CHECK(Errno(alice.Rmdir(top, "alice")) == EACCES);
  REQUIRE(root.Chown(home, 1000, 1000).ok());
  auto file = alice.Create(home, "f", 0666);
  REQUIRE(file.ok());
  CHECK((file->mode() & 07777) == 0644);  // umask applied
  CHECK(file->uid() == 1000);
  CHECK(file->gid() == 1000);
  CHECK(Ino(bob.Lookup(home, "f")) == file->ino());
  CHECK(bob.Open(file->ino(), O_RDONLY).ok());
  CHECK(Errno(bob.Open(file->ino(), O_WRONLY)) == EACCES);
  CHECK(Errno(bob.Open(file->ino(), O_RDONLY | O_TRUNC)) == EACCES);
  CHECK(Errno(bob.Chmod(file->ino(), 0777)) == EPERM);
  CHECK(Errno(bob.Unlink(home, "f")) == EACCES);
  CHECK(Errno(bob.Truncate(file->ino(), 0)) == EACCES);
  // The first matching class decides: the owner without r is refused even
  // though "other" may read.
  REQUIRE(alice.Chmod(file->ino(), 0044).ok());
  CHECK(Errno(alice.Open(file->ino(), O_RDONLY)) == EACCES);
  CHECK(bob.Open(file->ino(), O_RDONLY).ok());
  CHECK(root.Open(file->ino(), O_RDWR).ok());  // root overrides
  REQUIRE(alice.Chmod(file->ino(), 0644).ok());
  // No search permission on the directory: no lookup.
  REQUIRE(alice.Chmod(home, 0700).ok());
  CHECK(Errno(bob.Lookup(home, "f")) == EACCES);
  REQUIRE(alice.Chmod(home, 0755).ok());

  // Supplementary groups.
  uint64_t shared = Ino(root.Mkdir(top, "shared", 0770));
  REQUIRE(root.Chown(shared, 0, 2000).ok());
  CHECK(Errno(bob.Create(shared, "x")) == EACCES);
  FsCaller bob_in_group(f.meta.get());
  bob_in_group.As(1001, 1001, {2000});
  CHECK(bob_in_group.Create(shared, "x").ok());

  // Sticky directory: only the file's owner, the directory's owner or root
  // may remove or rename a file.
  uint64_t tmp = Ino(root.Mkdir(top, "tmp", 01777));
  REQUIRE(alice.Create(tmp, "a").ok());
  REQUIRE(alice.Create(tmp, "a2").ok());
  CHECK(Errno(bob.Unlink(tmp, "a")) == EPERM);
  CHECK(Errno(bob.Rename(tmp, "a", tmp, "stolen")) == EPERM);
  REQUIRE(bob.Create(tmp, "b").ok());
  CHECK(Errno(bob.Rename(tmp, "b", tmp, "a")) == EPERM);  // would replace alice's file
  // Linux's order: the source's directory and its sticky bit (EPERM) come
  // before the target directory's write permission (EACCES).
  uint64_t closed = Ino(root.Mkdir(top, "closed", 0755));
  CHECK(Errno(bob.Rename(tmp, "a", closed, "a")) == EPERM);
  CHECK(Errno(bob.Rename(tmp, "b", closed, "b")) == EACCES);
  CHECK(alice.Unlink(tmp, "a").ok());
  CHECK(root.Unlink(tmp, "a2").ok());

  // Setgid directory: new entries take its group; directories keep setgid.
  uint64_t sg = Ino(root.Mkdir(top, "sg", 02775));
  CHECK((root.Getattr(sg)->mode() & S_ISGID) == 0);  // mkdir(2) ignores S_ISGID
  REQUIRE(root.Chown(sg, 0, 3000).ok());
  REQUIRE(root.Chmod(sg, 02775).ok());
  FsCaller carol(f.meta.get());
  carol.As(1002, 1002, {3000}).Umask(022);
  auto sgf = carol.Create(sg, "f", 0644);
  REQUIRE(sgf.ok());
  CHECK(sgf->gid() == 3000);
  auto sgd = carol.Mkdir(sg, "d", 0755);
  REQUIRE(sgd.ok());
  CHECK(sgd->gid() == 3000);
  CHECK((sgd->mode() & S_ISGID) != 0);

  // chown and chgrp.
  uint64_t mine = Ino(alice.Create(home, "mine", 0755));
  CHECK(Errno(alice.Chown(mine, 1001, -1)) == EPERM);
  CHECK(Errno(alice.Chown(mine, -1, 4000)) == EPERM);
  FsCaller alice_groups(f.meta.get());
  alice_groups.As(1000, 1000, {3000});
  CHECK(alice_groups.Chown(mine, -1, 3000)->gid() == 3000);
  REQUIRE(alice.Chmod(mine, 04755).ok());
  auto chowned = root.Chown(mine, 1001, -1);
  REQUIRE(chowned.ok());
  CHECK((chowned->mode() & S_ISUID) == 0);
  // A write by someone else clears setuid.
  REQUIRE(root.Chmod(mine, 04777).ok());
  REQUIRE(alice.Open(mine, O_WRONLY).ok());
  auto written = alice.Written(mine, 10);
  REQUIRE(written.ok());
  CHECK((written->mode() & S_ISUID) == 0);
  CHECK(written->size() == 10);
  // Written needs a handle this session opened for writing.
  auto other_session = f.cluster->Meta("fs1");
  REQUIRE(other_session != nullptr);
  FsCaller elsewhere(other_session.get());
  CHECK(Errno(elsewhere.Written(mine, 20)) == EBADF);
  // Closing a read-only handle leaves the writer's; closing the writer ends it.
  uint64_t shared_file = Ino(alice.Create(home, "two-handles", 0644));
  REQUIRE(alice.Open(shared_file, O_WRONLY).ok());
  REQUIRE(alice.Open(shared_file, O_RDONLY).ok());
  REQUIRE(alice.Release(shared_file, false).ok());
  CHECK(alice.Written(shared_file, 5).ok());
  REQUIRE(alice.Release(shared_file, true).ok());
  CHECK(Errno(alice.Written(shared_file, 6)) == EBADF);
  CHECK(Errno(alice.Release(shared_file)) == EBADF);
  // A batch of releases: each handle goes, also past one that is not open.
  uint64_t batch_a = Ino(alice.Create(home, "batch-a", 0644));
  uint64_t batch_b = Ino(alice.Create(home, "batch-b", 0644));
  REQUIRE(alice.Open(batch_a, O_WRONLY).ok());
  REQUIRE(alice.Open(batch_b, O_WRONLY).ok());
  REQUIRE(alice.Open(batch_b, O_RDONLY).ok());
  CHECK(Errno(alice.ReleaseBatch({{batch_a, true}, {shared_file, false}, {batch_b, true}})) ==
        EBADF);
  CHECK(Errno(alice.Written(batch_a, 1)) == EBADF);
  CHECK(Errno(alice.Written(batch_b, 1)) == EBADF);  // the read handle is not a writer
  REQUIRE(alice.ReleaseBatch({{batch_b, false}}).ok());
  CHECK(Errno(alice.Release(batch_b)) == EBADF);

  // utimes: explicit times need ownership; "now" needs write access.
  uint64_t open_file = Ino(alice.Create(home, "open", 0666));
  REQUIRE(alice.Chmod(open_file, 0666).ok());
  pb::SetattrOp times;
  times.set_ino(open_file);
  times.set_valid(pb::SA_MTIME);
  times.set_mtime_ns(5);
  CHECK(Errno(bob.Setattr(times)) == EPERM);
  times.set_valid(pb::SA_MTIME_NOW | pb::SA_ATIME_NOW);
  CHECK(bob.Setattr(times).ok());
}

TEST_CASE("POSIX ACLs: access checks - chmod and the mask - default ACL inheritance", "[mds]") {
  UsersFixture f;
  FsCaller &root = f.root, &alice = f.alice, &bob = f.bob;
  uint64_t home = Ino(root.Mkdir(root.root(), "alice", 0755));
  REQUIRE(root.Chown(home, 1000, 1000).ok());
  uint64_t file = Ino(alice.Create(home, "f", 0600));
  CHECK(Errno(bob.Open(file, O_RDWR)) == EACCES);
  std::string acl = Acl({{kUserObj, 6, kUndef}, {kUser, 6, 1001}, {kGroupObj, 0, kUndef},
                         {kMask, 6, kUndef}, {kOther, 0, kUndef}});
  CHECK(Errno(bob.Setxattr(file, "system.posix_acl_access", acl)) == EPERM);
  REQUIRE(alice.Setxattr(file, "system.posix_acl_access", acl).ok());
  CHECK((alice.Getattr(file)->mode() & 0777) == 0660);  // group bits show the mask
  CHECK(bob.Open(file, O_RDWR).ok());
  CHECK(alice.Getxattr(file, "system.posix_acl_access").value_or("(error)") == acl);
  // chmod g-rw lowers the mask: bob loses access.
  REQUIRE(alice.Chmod(file, 0600).ok());
  CHECK(Errno(bob.Open(file, O_RDWR)) == EACCES);
  REQUIRE(alice.Chmod(file, 0660).ok());
  CHECK(bob.Open(file, O_RDWR).ok());
  CHECK(Errno(alice.Setxattr(file, "system.posix_acl_access", "garbage")) == EOPNOTSUPP);
  CHECK(Errno(alice.Setxattr(file, "system.posix_acl_access", acl.substr(0, 9))) == EINVAL);
  CHECK(Errno(alice.Setxattr(file, "system.posix_acl_access",
                             Acl({{kUserObj, 6, kUndef}, {kUser, 6, 1001}, {kGroupObj, 0, kUndef},
                                  {kOther, 0, kUndef}}))) == EINVAL);  // named entry, no mask

  // Default ACL on a directory: new files get it as their access ACL.
  uint64_t dir = Ino(alice.Mkdir(home, "d", 0755));
  std::string dacl = Acl({{kUserObj, 7, kUndef}, {kUser, 7, 1001}, {kGroupObj, 5, kUndef},
                          {kMask, 7, kUndef}, {kOther, 5, kUndef}});
  REQUIRE(alice.Setxattr(dir, "system.posix_acl_default", dacl).ok());
  CHECK(Errno(alice.Setxattr(file, "system.posix_acl_default", dacl)) == EACCES);
  auto child = alice.Create(dir, "child", 0666);
  REQUIRE(child.ok());
  // The default ACL, not the umask (022), shapes the mode: 0666 & ~(other w).
  CHECK((child->mode() & 0777) == 0664);
  CHECK(bob.Open(child->ino(), O_RDWR).ok());
  // Its access ACL is the default one with the mask and other limited by
  // the create mode (rw-): rwx & rw- = rw-, r-x & rw- = r--.
  CHECK(alice.Getxattr(child->ino(), "system.posix_acl_access").value_or("(error)") ==
        Acl({{kUserObj, 6, kUndef}, {kUser, 7, 1001}, {kGroupObj, 5, kUndef}, {kMask, 6, kUndef},
             {kOther, 4, kUndef}}));
  CHECK(Errno(alice.Getxattr(child->ino(), "system.posix_acl_default")) == ENODATA);
  auto subdir = alice.Mkdir(dir, "sub", 0755);
  REQUIRE(subdir.ok());
  CHECK(alice.Getxattr(subdir->ino(), "system.posix_acl_default").value_or("(error)") == dacl);
}

TEST_CASE("xattrs: namespaces - flags - listing - and recursive statistics", "[mds]") {
  FsFixture f;
  FsCaller root(f.meta.get());
  FsCaller alice(f.meta.get());
  alice.As(1000, 1000);
  const uint64_t top = root.root();
  uint64_t dir = Ino(root.Mkdir(top, "d", 0777));
  uint64_t file = Ino(alice.Create(dir, "f", 0644));
  REQUIRE(alice.Setxattr(file, "user.color", "blue").ok());
  CHECK(alice.Getxattr(file, "user.color").value_or("(error)") == "blue");
  CHECK(Errno(alice.Setxattr(file, "user.color", "red", 1)) == EEXIST);
  CHECK(Errno(alice.Setxattr(file, "user.size", "1", 2)) == ENODATA);
  REQUIRE(alice.Setxattr(file, "user.color", "red", 2).ok());
  CHECK(alice.Getxattr(file, "user.color").value_or("(error)") == "red");
  CHECK(Errno(alice.Getxattr(file, "user.none")) == ENODATA);
  CHECK(Errno(alice.Setxattr(file, "trusted.t", "v")) == EPERM);
  CHECK(Errno(alice.Setxattr(file, "security.s", "v")) == EPERM);
  REQUIRE(root.Setxattr(file, "trusted.t", "v").ok());
  CHECK(Errno(alice.Getxattr(file, "trusted.t")) == ENODATA);
  CHECK(root.Getxattr(file, "trusted.t").value_or("(error)") == "v");
  using Names = std::vector<std::string>;
  CHECK(alice.Listxattr(file).value_or(Names{"(error)"}) == Names{"user.color"});
  CHECK(root.Listxattr(file).value_or(Names{"(error)"}) == Names{"trusted.t", "user.color"});
  uint64_t link = Ino(alice.Symlink(dir, "l", "f"));
  CHECK(Errno(alice.Setxattr(link, "user.x", "v")) == EPERM);
  FsCaller bob(f.meta.get());
  bob.As(1001, 1001);
  CHECK(Errno(bob.Setxattr(file, "user.x", "v")) == EACCES);
  CHECK(bob.Getxattr(file, "user.color").value_or("(error)") == "red");
  REQUIRE(alice.Removexattr(file, "user.color").ok());
  CHECK(Errno(alice.Removexattr(file, "user.color")) == ENODATA);

  // Recursive statistics reach the root within seconds; the weft.* names are
  // readable but never listed.
  uint64_t a = Ino(root.Mkdir(dir, "a"));
  uint64_t b = Ino(root.Mkdir(a, "b"));
  uint64_t big = Ino(root.Create(b, "big"));
  REQUIRE(root.Open(big, O_WRONLY).ok());
  REQUIRE(root.Written(big, 1000000).ok());
  REQUIRE(root.Create(a, "small").ok());
  auto wait_for = [&](uint64_t ino, const std::string& name, const std::string& want) {
    std::string got;
    for (int i = 0; i < 100; ++i) {
      auto v = root.Getxattr(ino, name);
      if (v.ok()) got = *v;
      if (got == want) break;
      absl::SleepFor(absl::Milliseconds(100));
    }
    INFO(name << " of " << ino);
    CHECK(got == want);
  };
  wait_for(top, "weft.dir.rbytes", "1000000");
  wait_for(top, "weft.dir.rfiles", "4");     // f, l, big, small
  wait_for(top, "weft.dir.rsubdirs", "3");   // d, a, b
  wait_for(a, "weft.dir.rfiles", "2");
  wait_for(b, "weft.dir.rbytes", "1000000");
  auto rctime = root.Getxattr(top, "weft.dir.rctime");
  REQUIRE(rctime.ok());
  CHECK(rctime->find('.') != std::string::npos);
  auto names = root.Listxattr(top);
  REQUIRE(names.ok());
  CHECK(names->empty());
  REQUIRE(root.Unlink(b, "big").ok());
  wait_for(top, "weft.dir.rbytes", "0");
  wait_for(top, "weft.dir.rfiles", "3");
  // Removing an ACL that is not there is not an error (Linux).
  CHECK(root.Removexattr(a, "system.posix_acl_default").ok());

  auto statfs = root.Statfs();
  REQUIRE(statfs.ok());
  CHECK(statfs->bytes_total() > 0);
  CHECK(statfs->bytes_avail() <= statfs->bytes_total());
  CHECK(statfs->name_max() == 255);
}

}  // namespace
}  // namespace weft::testing
