// The metadata server through its gRPC API against real processes (etcd,
// weft-mds, 3 weft-osd): every namespace operation and its errors, driven
// like the POSIX calls they implement.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <dirent.h>
#include <sys/sysmacros.h>

#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/striping/striping.h"
#include "tests/harness/cluster.h"
#include "tests/harness/fs_fixture.h"
#include "proto/mds_client.grpc.pb.h"

namespace weft::testing {
namespace {

constexpr uint32_t kNoReplace = 1, kExchange = 2;
constexpr uint32_t kXattrCreate = 1, kXattrReplace = 2;

std::set<std::string> Names(const std::vector<pb::DirEntry>& entries) {
  std::set<std::string> out;
  for (const auto& e : entries) out.insert(e.name());
  return out;
}

TEST_CASE("namespace operations: create - lookup - link counts - symlinks - special files",
          "[mds]") {
  FsFixture f;
  FsCaller& fs = f.fs();
  const uint64_t root = fs.root();
  auto root_attr = fs.Getattr(root);
  REQUIRE(root_attr.ok());
  CHECK(S_ISDIR(root_attr->mode()));
  CHECK(root_attr->nlink() == 2);

  auto file = fs.Create(root, "a.txt", 0640);
  uint64_t a = Ino(file);
  CHECK(S_ISREG(file->mode()));
  CHECK((file->mode() & 07777) == 0640);  // umask 0 from these creds
  CHECK(file->nlink() == 1);
  CHECK(file->layout().object_size() == 4u << 20);
  CHECK(Errno(fs.Create(root, "a.txt")) == EEXIST);           // O_EXCL
  CHECK(Ino(fs.Create(root, "a.txt", 0644, false)) == a);     // O_CREAT without O_EXCL opens
  CHECK(Ino(fs.Lookup(root, "a.txt")) == a);
  CHECK(Errno(fs.Lookup(root, "missing")) == ENOENT);
  auto after = fs.Getattr(root);
  REQUIRE(after.ok());
  CHECK(after->mtime_ns() > root_attr->mtime_ns());  // the create changed the directory
  CHECK(after->ctime_ns() > root_attr->ctime_ns());

  uint64_t d = Ino(fs.Mkdir(root, "d", 0750));
  CHECK(fs.Getattr(root)->nlink() == 3);
  CHECK(fs.Getattr(d)->nlink() == 2);
  CHECK(Ino(fs.Lookup(d, "..")) == root);
  CHECK(Ino(fs.Lookup(d, ".")) == d);
  uint64_t sub = Ino(fs.Mkdir(d, "sub"));
  CHECK(fs.Getattr(d)->nlink() == 3);

  // Hard links.
  auto linked = fs.Link(a, d, "a-link");
  REQUIRE(linked.ok());
  CHECK(linked->nlink() == 2);
  CHECK(Ino(fs.Lookup(d, "a-link")) == a);
  CHECK(Errno(fs.Link(d, root, "dir-link")) == EPERM);
  CHECK(Errno(fs.Link(a, d, "a-link")) == EEXIST);
  REQUIRE(fs.Unlink(root, "a.txt").ok());
  CHECK(fs.Getattr(a)->nlink() == 1);
  CHECK(Errno(fs.Lookup(root, "a.txt")) == ENOENT);

  // Symlinks.
  auto link = fs.Symlink(d, "s", "../a.txt");
  REQUIRE(link.ok());
  CHECK(S_ISLNK(link->mode()));
  CHECK(link->size() == 8);
  CHECK(fs.Readlink(link->ino()).value_or("(error)") == "../a.txt");
  CHECK(Errno(fs.Readlink(a)) == EINVAL);
  CHECK(Errno(fs.Symlink(d, "empty", "")) == ENOENT);
  CHECK(Errno(fs.Symlink(d, "long", std::string(4096, 'x'))) == ENAMETOOLONG);

  // Special files.
  auto fifo = fs.Mknod(d, "fifo", S_IFIFO | 0600);
  REQUIRE(fifo.ok());
  CHECK(S_ISFIFO(fifo->mode()));
  auto sock = fs.Mknod(d, "sock", S_IFSOCK | 0600);
  REQUIRE(sock.ok());
  CHECK(S_ISSOCK(sock->mode()));
  auto chr = fs.Mknod(d, "null", S_IFCHR | 0666, makedev(1, 3));
  REQUIRE(chr.ok());
  CHECK(S_ISCHR(chr->mode()));
  CHECK(chr->rdev() == makedev(1, 3));
  auto blk = fs.Mknod(d, "blk", S_IFBLK | 0600, makedev(8, 1));
  REQUIRE(blk.ok());
  CHECK(blk->rdev() == makedev(8, 1));
  CHECK(Errno(fs.Mknod(d, "fifo", S_IFIFO | 0600)) == EEXIST);
  CHECK(Errno(fs.Mknod(d, "dir", S_IFDIR | 0755)) == EINVAL);

  // rmdir.
  CHECK(Errno(fs.Rmdir(root, "d")) == ENOTEMPTY);
  CHECK(Errno(fs.Rmdir(d, "fifo")) == ENOTDIR);
  CHECK(Errno(fs.Unlink(d, "sub")) == EISDIR);
  REQUIRE(fs.Rmdir(d, "sub").ok());
  CHECK(fs.Getattr(d)->nlink() == 2);
  CHECK(Errno(fs.Getattr(sub)) == ESTALE);
  CHECK(Errno(fs.Rmdir(d, "sub")) == ENOENT);

  auto entries = fs.Readdir(d);
  REQUIRE(entries.ok());
  std::map<std::string, uint32_t> types;  // name -> d_type
  for (const auto& e : *entries) types[e.name()] = e.type();
  CHECK(types == std::map<std::string, uint32_t>{{"a-link", DT_REG},
                                                 {"s", DT_LNK},
                                                 {"fifo", DT_FIFO},
                                                 {"sock", DT_SOCK},
                                                 {"null", DT_CHR},
                                                 {"blk", DT_BLK}});
  auto with_attrs = fs.Readdir(d, 2, true);
  REQUIRE(with_attrs.ok());
  REQUIRE(with_attrs->size() == 6);
  for (const auto& e : *with_attrs) CHECK(e.attr().ino() == e.ino());
}

TEST_CASE("rename: over files and empty directories - across directories - flags - subtrees",
          "[mds]") {
  FsFixture f;
  FsCaller& fs = f.fs();
  const uint64_t root = fs.root();
  uint64_t a = Ino(fs.Mkdir(root, "a"));
  uint64_t b = Ino(fs.Mkdir(root, "b"));
  uint64_t x = Ino(fs.Create(a, "x"));
  uint64_t y = Ino(fs.Create(b, "y"));

  // Across directories, replacing a file: the old target is gone, and the
  // reply names nothing replaced (as unlink's names nothing).
  auto replaced = fs.Rename(a, "x", b, "y");
  REQUIRE(replaced.ok());
  CHECK(replaced->ino() == 0);
  CHECK(Ino(fs.Lookup(b, "y")) == x);
  CHECK(Errno(fs.Lookup(a, "x")) == ENOENT);
  CHECK(Errno(fs.Getattr(y)) == ESTALE);
  CHECK(Errno(fs.Rename(a, "x", b, "z")) == ENOENT);

  // Same name: nothing happens.
  REQUIRE(fs.Rename(b, "y", b, "y").ok());
  // Two links of one file: POSIX says do nothing.
  REQUIRE(fs.Link(x, b, "y2").ok());
  REQUIRE(fs.Rename(b, "y", b, "y2").ok());
  CHECK(Ino(fs.Lookup(b, "y")) == x);
  CHECK(fs.Getattr(x)->nlink() == 2);
  // Over a file that lives on through another link: the reply carries it,
  // one link less, at the version the MDS now has.
  REQUIRE(fs.Create(a, "w").ok());
  replaced = fs.Rename(a, "w", b, "y2");  // x keeps "y"
  REQUIRE(replaced.ok());
  CHECK(replaced->ino() == x);
  CHECK(replaced->nlink() == 1);
  CHECK(replaced->version() == fs.Getattr(x)->version());
  REQUIRE(fs.Unlink(b, "y2").ok());

  // Directories: over an empty one, not over a non-empty one, nor kinds mixed.
  uint64_t d1 = Ino(fs.Mkdir(a, "d1"));
  uint64_t d2 = Ino(fs.Mkdir(b, "d2"));
  REQUIRE(fs.Create(d1, "inside").ok());
  CHECK(Errno(fs.Rename(b, "y", a, "d1")) == EISDIR);
  CHECK(Errno(fs.Rename(a, "d1", b, "y")) == ENOTDIR);
  CHECK(fs.Getattr(a)->nlink() == 3);
  CHECK(fs.Getattr(b)->nlink() == 3);
  replaced = fs.Rename(a, "d1", b, "d2");  // d2 is empty: replaced
  REQUIRE(replaced.ok());
  CHECK(replaced->ino() == d2);  // as it ends, for a client holding it open
  CHECK(replaced->nlink() == 0);
  CHECK(Ino(fs.Lookup(b, "d2")) == d1);
  CHECK(Errno(fs.Getattr(d2)) == ESTALE);
  CHECK(fs.Getattr(a)->nlink() == 2);
  CHECK(fs.Getattr(b)->nlink() == 3);
  CHECK(Ino(fs.Lookup(d1, "..")) == b);
  uint64_t full = Ino(fs.Mkdir(a, "full"));
  REQUIRE(fs.Create(full, "f").ok());
  CHECK(Errno(fs.Rename(b, "d2", a, "full")) == ENOTEMPTY);

  // A directory into its own subtree.
  uint64_t deep = Ino(fs.Mkdir(d1, "deep"));
  CHECK(Errno(fs.Rename(b, "d2", deep, "loop")) == EINVAL);
  CHECK(Errno(fs.Rename(b, "d2", d1, "self")) == EINVAL);

  // RENAME_NOREPLACE and RENAME_EXCHANGE.
  CHECK(Errno(fs.Rename(b, "y", a, "full", kNoReplace)) == EEXIST);
  REQUIRE(fs.Rename(b, "y", a, "fresh", kNoReplace).ok());
  CHECK(Ino(fs.Lookup(a, "fresh")) == x);
  // Onto itself: the name exists, so NOREPLACE refuses (as Linux does);
  // plain and EXCHANGE change nothing.
  CHECK(Errno(fs.Rename(a, "fresh", a, "fresh", kNoReplace)) == EEXIST);
  CHECK(fs.Rename(a, "fresh", a, "fresh").ok());
  CHECK(fs.Rename(a, "fresh", a, "fresh", kExchange).ok());
  CHECK(Ino(fs.Lookup(a, "fresh")) == x);
  CHECK(Errno(fs.Rename(a, "fresh", b, "nothing", kExchange)) == ENOENT);
  CHECK(Errno(fs.Rename(a, "fresh", b, "d2", kExchange | kNoReplace)) == EINVAL);
  replaced = fs.Rename(a, "fresh", b, "d2", kExchange);
  REQUIRE(replaced.ok());
  CHECK(replaced->ino() == d1);  // the other inode, moved too
  CHECK(Ino(fs.Lookup(a, "fresh")) == d1);
  CHECK(Ino(fs.Lookup(b, "d2")) == x);
  CHECK(Ino(fs.Lookup(d1, "..")) == a);
  CHECK(fs.Getattr(a)->nlink() == 4);  // d1 arrived, "full" was there
  CHECK(fs.Getattr(b)->nlink() == 2);
  CHECK(Errno(fs.Rename(a, "fresh", deep, "z", kExchange)) == ENOENT);
}

TEST_CASE("bad input gets the errno a local filesystem gives and changes nothing", "[mds]") {
  FsFixture f;
  FsCaller& fs = f.fs();
  const uint64_t root = fs.root();
  uint64_t file = Ino(fs.Create(root, "file"));
  for (const std::string& bad : {std::string(""), std::string("."), std::string(".."),
                                 std::string("a/b"), std::string("a\0b", 3)}) {
    INFO("name '" << bad << "'");
    CHECK(Errno(fs.Create(root, bad)) == EINVAL);
    CHECK(Errno(fs.Mkdir(root, bad)) == EINVAL);
    CHECK(Errno(fs.Rename(root, "file", root, bad)) == EINVAL);
    CHECK(Errno(fs.Link(file, root, bad)) == EINVAL);
    CHECK(Errno(fs.Symlink(root, bad, "t")) == EINVAL);
  }
  const std::string long_name(256, 'n');
  CHECK(Errno(fs.Create(root, long_name)) == ENAMETOOLONG);
  CHECK(Errno(fs.Lookup(root, long_name)) == ENAMETOOLONG);
  CHECK(fs.Create(root, std::string(255, 'n')).ok());
  // Paths through a non-directory.
  CHECK(Errno(fs.Lookup(file, "x")) == ENOTDIR);
  CHECK(Errno(fs.Create(file, "x")) == ENOTDIR);
  CHECK(Errno(fs.Readdir(file)) == ENOTDIR);
  // Unknown inodes.
  CHECK(Errno(fs.Getattr(987654321)) == ESTALE);
  CHECK(Errno(fs.Lookup(987654321, "x")) == ESTALE);
  CHECK(Errno(fs.Getattr(0)) == ESTALE);
  // Sizes on directories, special files.
  CHECK(Errno(fs.Truncate(root, 10)) == EISDIR);
  // Xattrs.
  CHECK(Errno(fs.Setxattr(file, "user." + std::string(251, 'x'), "v")) == ERANGE);
  CHECK(Errno(fs.Setxattr(file, "user.big", std::string(65537, 'v'))) == E2BIG);
  CHECK(fs.Setxattr(file, "user.max", std::string(65536, 'v')).ok());
  CHECK(Errno(fs.Setxattr(file, "", "v")) == ERANGE);
  CHECK(Errno(fs.Setxattr(file, "nonamespace", "v")) == EOPNOTSUPP);
  CHECK(Errno(fs.Setxattr(file, "user.a", "v", kXattrCreate | kXattrReplace)) == EINVAL);
  // An operation without a body; a session that does not exist.
  CHECK(Errno(fs.Call(pb::MetaRequest())) == EINVAL);
  {
    pb::MetaRequest r;
    r.mutable_getattr()->set_ino(root);
    r.set_session(f.meta->session() + 12345);
    r.set_tid(1);
    rpc::ChannelCache channels;
    auto stub = pb::Mds::NewStub(channels.Get(f.cluster->mds_addrs()[0]));
    grpc::ClientContext ctx;
    pb::MetaReply reply;
    REQUIRE(stub->Call(&ctx, r, &reply).ok());
    CHECK(reply.status().err() == ENOTCONN);
  }
  // Nothing above changed the namespace.
  auto entries = fs.Readdir(root);
  REQUIRE(entries.ok());
  CHECK(Names(*entries) == std::set<std::string>{"file", std::string(255, 'n')});
  auto xattrs = fs.Listxattr(file);
  REQUIRE(xattrs.ok());
  CHECK(*xattrs == std::vector<std::string>{"user.max"});
}

TEST_CASE("setattr: times with nanoseconds - sizes - and what changes ctime", "[mds]") {
  FsFixture f;
  FsCaller& fs = f.fs();
  auto created = fs.Create(fs.root(), "f");
  const uint64_t file = Ino(created);
  pb::SetattrOp op;
  op.set_ino(file);
  op.set_valid(pb::SA_ATIME | pb::SA_MTIME);
  op.set_atime_ns(1000000000LL * 1234 + 567);
  op.set_mtime_ns(1000000000LL * 2345 + 678901234);
  auto attr = fs.Setattr(op);
  REQUIRE(attr.ok());
  CHECK(attr->atime_ns() == 1000000000LL * 1234 + 567);
  CHECK(attr->mtime_ns() == 1000000000LL * 2345 + 678901234);
  // Setting times is a change: ctime moves on (to now, not to the time set).
  CHECK(attr->ctime_ns() > created->ctime_ns());
  auto again = fs.Getattr(file);
  REQUIRE(again.ok());
  CHECK(again->atime_ns() == attr->atime_ns());
  CHECK(again->mtime_ns() == attr->mtime_ns());
  CHECK(again->ctime_ns() == attr->ctime_ns());  // a getattr changes nothing
  // A size change sets mtime and ctime to now.
  auto truncated = fs.Truncate(file, 123456789);
  REQUIRE(truncated.ok());
  CHECK(truncated->size() == 123456789);
  CHECK(truncated->allocated() == 0);  // extended by a truncate: all hole
  CHECK(truncated->mtime_ns() > attr->ctime_ns());
  CHECK(truncated->ctime_ns() > attr->ctime_ns());
  auto emptied = fs.Truncate(file, 0);
  REQUIRE(emptied.ok());
  CHECK(emptied->size() == 0);
  // chmod and chown: ctime only.
  auto chmod = fs.Chmod(file, 0600);
  REQUIRE(chmod.ok());
  CHECK((chmod->mode() & 07777) == 0600);
  CHECK(S_ISREG(chmod->mode()));
  CHECK(chmod->ctime_ns() > emptied->ctime_ns());
  CHECK(chmod->mtime_ns() == emptied->mtime_ns());
  auto chown = fs.Chown(file, 1000, 1000);
  REQUIRE(chown.ok());
  CHECK(chown->uid() == 1000);
  CHECK(chown->gid() == 1000);
  CHECK(chown->ctime_ns() > chmod->ctime_ns());
  CHECK(chown->mtime_ns() == chmod->mtime_ns());
  CHECK(Errno(fs.Truncate(file, uint64_t{1} << 62)) == EFBIG);

  // Allocated bytes (st_blocks): what the writers report the objects grew
  // by, within [0, size], cut by a truncate.
  REQUIRE(fs.Open(file, O_RDWR).ok());
  auto allocated = [](const absl::StatusOr<pb::Attr>& a) {
    INFO(a.status());
    REQUIRE(a.ok());
    return a->allocated();
  };
  CHECK(allocated(fs.Written(file, 5000, 5000)) == 5000);
  CHECK(allocated(fs.Written(file, 5000, 3000)) == 5000);  // never above the size
  CHECK(allocated(fs.Written(file, 5000, -9000)) == 0);    // nor below zero
  CHECK(allocated(fs.Written(file, 8000, 8000)) == 8000);
  CHECK(allocated(fs.Truncate(file, 100)) == 100);
  CHECK(allocated(fs.Truncate(file, 1 << 20)) == 100);
  CHECK(allocated(fs.Getattr(file)) == 100);

  // A write's report arriving after a chmod (write-back) sets the write's
  // mtime, and leaves the later change time alone.
  auto before_chmod = fs.Getattr(file);
  REQUIRE(before_chmod.ok());
  auto chmod2 = fs.Chmod(file, 0640);
  REQUIRE(chmod2.ok());
  pb::MetaRequest late;
  late.mutable_written()->set_ino(file);
  late.mutable_written()->set_end(200);
  late.mutable_written()->set_mtime_ns(before_chmod->ctime_ns() + 1);
  auto reported = fs.Call(late);
  INFO(reported.status());
  REQUIRE(reported.ok());
  CHECK(reported->attr().mtime_ns() == before_chmod->ctime_ns() + 1);
  CHECK(reported->attr().ctime_ns() == chmod2->ctime_ns());
  REQUIRE(fs.Release(file, true).ok());
}

}  // namespace
}  // namespace weft::testing

namespace weft::testing {
namespace {

// WrittenOp with inline bytes, as weft-fuse sends for a file whose data
// the MDS keeps (`extents`: offset -> bytes).
pb::MetaRequest InlineWritten(uint64_t ino, uint64_t end,
                              const std::map<uint64_t, std::string>& extents) {
  pb::MetaRequest r;
  pb::WrittenOp* op = r.mutable_written();
  op->set_ino(ino);
  op->set_end(end);
  op->set_inline_report(true);
  for (const auto& [at, bytes] : extents) {
    pb::InlineExtent* e = op->add_inline_writes();
    e->set_offset(at);
    e->set_data(bytes);
  }
  return r;
}

pb::MetaRequest InlineOp(uint64_t ino, bool uninline) {
  pb::MetaRequest r;
  r.mutable_inline_data()->set_ino(ino);
  r.mutable_inline_data()->set_uninline(uninline);
  return r;
}

int ReplyErrno(const absl::StatusOr<pb::MetaReply>& r) { return r.ok() ? 0 : Errno(r.status()); }

TEST_CASE("reads reported by clients move atime by relatime - never ctime", "[mds]") {
  FsFixture f;
  FsCaller& fs = f.fs();
  const uint64_t file = Ino(fs.Create(fs.root(), "f"));
  const uint64_t dir = Ino(fs.Mkdir(fs.root(), "d"));
  constexpr int64_t kS = 1000000000;
  auto set_times = [&](uint64_t ino, int64_t atime, int64_t mtime) {
    pb::SetattrOp op;
    op.set_ino(ino);
    op.set_valid(pb::SA_ATIME | pb::SA_MTIME);
    op.set_atime_ns(atime);
    op.set_mtime_ns(mtime);
    auto a = fs.Setattr(op);
    REQUIRE(a.ok());
    return *a;
  };
  auto reads = [&](std::vector<std::pair<uint64_t, int64_t>> list, bool strict = false) {
    pb::MetaRequest r;
    r.mutable_atime()->set_strict(strict);
    for (const auto& [ino, t] : list) {
      pb::AtimeRef* read = r.mutable_atime()->add_reads();
      read->set_ino(ino);
      read->set_atime_ns(t);
    }
    return fs.Call(std::move(r));
  };
  // atime not after mtime: the read moves it; ctime stays, the version grows.
  const pb::Attr before = set_times(file, 100 * kS, 200 * kS);
  const int64_t t1 = before.ctime_ns() + 5 * kS;
  auto moved = reads({{file, t1}});
  REQUIRE(moved.ok());
  REQUIRE(moved->changed_size() == 1);
  CHECK(moved->changed(0).ino() == file);
  CHECK(moved->changed(0).atime_ns() == t1);
  CHECK(moved->changed(0).version() > before.version());
  auto after = fs.Getattr(file);
  REQUIRE(after.ok());
  CHECK(after->atime_ns() == t1);
  CHECK(after->mtime_ns() == 200 * kS);
  CHECK(after->ctime_ns() == before.ctime_ns());
  // Now after mtime and ctime and younger than a day: a later read leaves it,
  // unless strict; an earlier one never moves it back.
  auto left = reads({{file, t1 + 3600 * kS}});
  REQUIRE(left.ok());
  CHECK(left->changed_size() == 0);
  CHECK(fs.Getattr(file)->atime_ns() == t1);
  CHECK(reads({{file, t1 - kS}}, /*strict=*/true)->changed_size() == 0);
  CHECK(reads({{file, t1 + kS}}, /*strict=*/true)->changed_size() == 1);
  // A day after the atime, relatime moves it again.
  CHECK(reads({{file, t1 + kS + 24 * 3600 * kS}})->changed(0).atime_ns() ==
        t1 + kS + 24 * 3600 * kS);
  // Several inodes in one request, one of them read twice, one removed.
  set_times(dir, 100 * kS, 200 * kS);
  const uint64_t gone = Ino(fs.Create(fs.root(), "gone"));
  REQUIRE(fs.Unlink(fs.root(), "gone").ok());
  set_times(file, 100 * kS, 200 * kS);
  const int64_t t2 = fs.Getattr(file)->ctime_ns() + kS;
  auto batch = reads({{dir, t2}, {file, t2}, {gone, t2}, {file, t2 + kS}});
  REQUIRE(batch.ok());
  CHECK(batch->changed_size() == 2);
  CHECK(fs.Getattr(dir)->atime_ns() == t2);
  CHECK(fs.Getattr(file)->atime_ns() == t2);  // the second read of it is not due after the first
  // Bad input: too many reads, changing nothing; no reads at all is fine.
  std::vector<std::pair<uint64_t, int64_t>> many(4097, {file, t2 + 48 * 3600 * kS});
  auto refused = reads(many);
  CHECK(Errno(refused) == EINVAL);
  CHECK(fs.Getattr(file)->atime_ns() == t2);
  auto none = reads({});
  REQUIRE(none.ok());
  CHECK(none->changed_size() == 0);
}

TEST_CASE("inline data at the MDS: writes as extents - truncates - refusals - the move to an "
          "object - and what bad input gets",
          "[mds]") {
  FsFixture f;
  FsCaller& fs = f.fs();
  auto created = fs.Create(fs.root(), "f", 0644, /*exclusive=*/false);  // open for writing
  REQUIRE(created.ok());
  const uint64_t file = created->ino();
  CHECK(created->data_inline());

  auto wrote = fs.Call(InlineWritten(file, 12, {{0, "hello"}, {10, "xy"}}));
  REQUIRE(wrote.ok());
  CHECK(!wrote->inline_refused());
  CHECK(wrote->attr().size() == 12);
  CHECK(wrote->attr().allocated() == 12);
  auto read = fs.Call(InlineOp(file, false));
  REQUIRE(read.ok());
  CHECK(read->inline_data() == std::string("hello\0\0\0\0\0xy", 12));
  // Another range lands beside the first (two writers' batches).
  REQUIRE(fs.Call(InlineWritten(file, 7, {{5, "!!"}})).ok());
  CHECK(fs.Call(InlineOp(file, false))->inline_data() == std::string("hello!!\0\0\0xy", 12));

  // Truncates cut the bytes the MDS keeps; growing adds none.
  CHECK(fs.Truncate(file, 3)->allocated() == 3);
  CHECK(fs.Truncate(file, 100)->size() == 100);
  CHECK(fs.Call(InlineOp(file, false))->inline_data() == "hel");

  // Past the limit: refused, nothing changes.
  auto past = fs.Call(InlineWritten(file, 70000, {{65536, "z"}}));
  REQUIRE(past.ok());
  CHECK(past->inline_refused());
  CHECK(fs.Getattr(file)->size() == 100);
  // Objects reported before a move, while the MDS keeps bytes: refused.
  CHECK(Errno(fs.Written(file, 4096, 4096).status()) == EINVAL);

  // Bad input.
  auto dir = fs.Mkdir(fs.root(), "d");
  REQUIRE(dir.ok());
  CHECK(ReplyErrno(fs.Call(InlineOp(dir->ino(), false))) == EINVAL);
  CHECK(ReplyErrno(fs.Call(InlineOp(987654321, false))) == ESTALE);
  auto closed = fs.Create(fs.root(), "closed");  // not open
  REQUIRE(closed.ok());
  CHECK(ReplyErrno(fs.Call(InlineOp(closed->ino(), false))) == EBADF);
  REQUIRE(fs.Open(closed->ino(), O_RDONLY).ok());
  CHECK(ReplyErrno(fs.Call(InlineOp(closed->ino(), false))) == 0);
  CHECK(ReplyErrno(fs.Call(InlineOp(closed->ino(), true))) == EBADF);  // not for writing
  CHECK(ReplyErrno(fs.Call(InlineWritten(closed->ino(), 1, {{0, "x"}}))) == EBADF);

  // The move: the first object holds exactly the bytes, the file reports
  // objects from then on, and inline writes are refused.
  auto moved = fs.Call(InlineOp(file, true));
  REQUIRE(moved.ok());
  CHECK(!moved->attr().data_inline());
  CHECK(moved->attr().size() == 100);
  auto objects = f.cluster->Client();
  REQUIRE(objects != nullptr);
  auto pool = objects->LookupPool("fs1_data");
  REQUIRE(pool.ok());
  auto first = objects->Get(*pool, striping::DataObjectName(file, 0));
  REQUIRE(first.ok());
  CHECK(*first == "hel");
  CHECK(fs.Call(InlineWritten(file, 1, {{0, "x"}}))->inline_refused());
  auto after = fs.Call(InlineOp(file, false));
  REQUIRE(after.ok());
  CHECK(!after->has_inline_data());
  CHECK(fs.Written(file, 4096, 4093).ok());  // objects now
  CHECK(fs.Getattr(file)->allocated() == 4096);

  // A file without bytes that a client writes as objects directly moves.
  auto plain = fs.Create(fs.root(), "plain", 0644, false);
  REQUIRE(plain.ok());
  auto direct = fs.Written(plain->ino(), 4096, 4096);
  REQUIRE(direct.ok());
  CHECK(!direct->data_inline());
}

TEST_CASE("weft fs: new - ls - status - journal inspect - and what they refuse", "[mds]") {
  FsFixture f;
  Cluster& c = *f.cluster;
  FsCaller fs(f.meta.get());
  REQUIRE(fs.Mkdir(fs.root(), "dir").ok());
  REQUIRE(fs.Create(fs.root(), "file").ok());
  auto ls = c.Weft({"fs", "ls"});
  CHECK(ls.code == 0);
  CHECK(ls.output.find("name: fs1") != std::string::npos);
  CHECK(ls.output.find("metadata pool: fs1_meta") != std::string::npos);
  auto status = c.Weft({"fs", "status", "fs1"});
  CHECK(status.code == 0);
  CHECK(status.output.find("state: active") != std::string::npos);
  CHECK(status.output.find("sessions: 1") != std::string::npos);
  auto journal = c.Weft({"fs", "journal", "inspect", "fs1", "--events"});
  CHECK(journal.code == 0);
  INFO(journal.output);
  CHECK(journal.output.find("mkdir") != std::string::npos);
  CHECK(journal.output.find("create") != std::string::npos);

  // Refused, with the reason, and nothing changes.
  auto dup = c.Weft({"fs", "new", "fs1", "--metadata-pool", "fs1_meta", "--data-pool", "fs1_data"});
  CHECK(dup.code != 0);
  CHECK(dup.output.find("exists") != std::string::npos);
  auto nopool = c.Weft({"fs", "new", "fs2", "--metadata-pool", "nosuch", "--data-pool", "fs1_data"});
  CHECK(nopool.code != 0);
  CHECK(nopool.output.find("no pool nosuch") != std::string::npos);
  auto badname = c.Weft({"fs", "new", "bad/name", "--metadata-pool", "fs1_meta", "--data-pool", "fs1_data"});
  CHECK(badname.code != 0);
  auto shared = c.Weft({"fs", "new", "fs2", "--metadata-pool", "fs1_meta", "--data-pool", "fs1_data"});
  CHECK(shared.code != 0);
  CHECK(shared.output.find("metadata pool of filesystem fs1") != std::string::npos);
  auto rm = c.Weft({"pool", "rm", "fs1_data", "--yes-i-really-mean-it"});
  CHECK(rm.code != 0);
  CHECK(rm.output.find("used by filesystem fs1") != std::string::npos);
  auto usage = c.Weft({"fs", "new", "fs2"});
  CHECK(usage.code == 2);
  CHECK(c.Weft({"fs", "status", "nosuch"}).code != 0);
  ls = c.Weft({"fs", "ls"});
  CHECK(ls.output.find("fs2") == std::string::npos);
  CHECK(fs.Lookup(fs.root(), "file").ok());
}

}  // namespace
}  // namespace weft::testing
