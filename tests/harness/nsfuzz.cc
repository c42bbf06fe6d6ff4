#include "tests/harness/nsfuzz.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/posix/acl.h"
#include "tests/harness/tree.h"

namespace weft::testing {
namespace {

// The result of a failed call: its errno's name.
std::string Err() {
  const char* name = strerrorname_np(errno);
  return name != nullptr ? name : absl::StrCat("errno ", errno);
}
std::string Rc(long rc) { return rc < 0 ? Err() : "ok"; }

std::string Hex(const std::string& s) {
  std::string out;
  for (unsigned char c : s) absl::StrAppendFormat(&out, "%02x", c);
  return out;
}

// What a caller may see of a file's attributes through stat(2): nothing
// that differs between two correct filesystems (inode numbers, block counts,
// directory sizes, times).
std::string Visible(const struct stat& st) {
  std::string out = absl::StrFormat("mode=%o uid=%u gid=%u nlink=%u", st.st_mode, st.st_uid,
                                    st.st_gid, static_cast<unsigned>(st.st_nlink));
  if (!S_ISDIR(st.st_mode)) absl::StrAppend(&out, " size=", st.st_size);
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    absl::StrAppend(&out, " rdev=", major(st.st_rdev), ":", minor(st.st_rdev));
  }
  return out;
}

// The type of `path`, symlinks followed (S_IFREG, ...); 0 when stat fails.
mode_t TypeOf(const std::string& path) {
  struct stat st = {};
  return stat(path.c_str(), &st) == 0 ? st.st_mode & S_IFMT : 0;
}

int64_t Ns(const timespec& t) { return t.tv_sec * 1000000000ll + t.tv_nsec; }

// One path's state as lstat sees it, for the checks after each call.
struct PathState {
  bool exists = false;
  std::string visible;  // Visible(), or the errno of lstat
  int64_t mtime = 0;
  int64_t ctime = 0;
};

PathState Probe(const std::string& path) {
  PathState s;
  struct stat st = {};
  if (lstat(path.c_str(), &st) != 0) {
    s.visible = Err();
    return s;
  }
  s.exists = true;
  s.visible = Visible(st);
  s.mtime = Ns(st.st_mtim);
  s.ctime = Ns(st.st_ctim);
  return s;
}

// One call: what it is (for the history), the paths whose state it may
// change, and how to make it under a root. Every open has O_NONBLOCK, so
// that a FIFO the exerciser made does not block it.
struct Call {
  std::string kind;
  std::string text;
  std::vector<std::string> paths;  // relative; "" is the root
  std::function<std::string(const std::string& root)> run;
};

std::string Parent(const std::string& rel) {
  const size_t slash = rel.rfind('/');
  return slash == std::string::npos ? "" : rel.substr(0, slash);
}

class Generator {
 public:
  Generator(uint64_t seed, const std::vector<UserIds>& users, bool devices)
      : rng_(seed), users_(users), devices_(devices) {}

  int Uniform(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool Chance(int percent) { return Uniform(100) < percent; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Uniform(static_cast<int>(v.size())))];
  }

  // What the reference tree holds now: paths are drawn mostly from it, so
  // that calls find what they need about as often as they miss it.
  struct Existing {
    std::vector<std::string> entries, dirs, files, links;
  };
  void SetExisting(Existing existing) { existing_ = std::move(existing); }

  enum class Want { kAny, kFile, kDir, kLink };

  // An existing entry (of the kind wanted, mostly), a new name in an
  // existing directory, or "a/b/c" made of a few names; now and then with a
  // name of 255 or 256 bytes.
  std::string Path(Want want = Want::kAny) {
    static const std::vector<std::string> kNames = {"a", "b", "c", "d", "e", "f"};
    const std::vector<std::string>& wanted = want == Want::kFile  ? existing_.files
                                             : want == Want::kDir ? existing_.dirs
                                             : want == Want::kLink ? existing_.links
                                                                   : existing_.entries;
    const int how = Uniform(100);
    if (how < 50 && !wanted.empty()) return Pick(wanted);
    if (how < 60 && !existing_.entries.empty()) return Pick(existing_.entries);
    std::string name = Pick(kNames);
    if (Chance(2)) name = std::string(Chance(50) ? 255 : 256, 'n');
    if (how < 90) {
      const std::string dir = existing_.dirs.empty() || Chance(30) ? "" : Pick(existing_.dirs);
      return dir.empty() ? name : absl::StrCat(dir, "/", name);
    }
    const int depth = Chance(40) ? 1 : Chance(70) ? 2 : 3;
    std::string out = name;
    for (int i = 1; i < depth; ++i) out = absl::StrCat(out, "/", Pick(kNames));
    return out;
  }

  // The caller of the next call: root or one of the users.
  UserIds Caller() {
    if (users_.empty() || Chance(50)) return UserIds{0, 0, {}};
    return Pick(users_);
  }

  std::string Data(int max) {
    std::string out(static_cast<size_t>(Uniform(max + 1)), '\0');
    for (char& c : out) c = static_cast<char>('A' + Uniform(26));
    return out;
  }

  Call Next();

 private:
  uint32_t FileMode() {
    return Pick(std::vector<uint32_t>{0644, 0600, 0666, 0444, 0755, 04755, 02755, 0640, 0});
  }
  uint32_t DirMode() {
    return Pick(std::vector<uint32_t>{0755, 0777, 0700, 01777, 02775, 0555, 0711, 0750});
  }
  std::string Acl();

  std::mt19937_64 rng_;
  std::vector<UserIds> users_;
  bool devices_;
  Existing existing_;
};

std::string Generator::Acl() {
  posix::Acl acl;
  auto add = [&acl](uint16_t tag, int perm, uint32_t id = posix::kAclUndefinedId) {
    acl.entries.push_back({tag, static_cast<uint16_t>(perm), id});
  };
  add(posix::kAclUserObj, Uniform(8));
  const bool named = Chance(70);
  if (named) add(posix::kAclUser, Uniform(8), Pick(std::vector<uint32_t>{1000, 1001}));
  add(posix::kAclGroupObj, Uniform(8));
  if (named && Chance(50)) add(posix::kAclGroup, Uniform(8), 2000);
  if (named) add(posix::kAclMask, Uniform(8));
  add(posix::kAclOther, Uniform(8));
  return posix::EncodeAcl(acl);
}

Call Generator::Next() {
  Call c;
  const int kind = Uniform(29);
  Want want = Want::kAny;
  if (kind == 3 || kind == 25) want = Want::kDir;
  if ((kind >= 7 && kind <= 11) || kind == 17 || kind >= 27) want = Want::kFile;
  if (kind == 26) want = Want::kLink;
  const std::string p = Path(want);
  const std::string q = Path();
  auto at = [](const std::string& root, const std::string& rel) { return root + "/" + rel; };
  c.paths = {p, Parent(p)};
  switch (kind) {
    case 0:
    case 1: {
      const uint32_t mode = DirMode();
      c.kind = "mkdir";
      c.text = absl::StrFormat("mkdir %s %o", p, mode);
      c.run = [=](const std::string& r) { return Rc(mkdir(at(r, p).c_str(), mode)); };
      break;
    }
    case 2:
    case 4:
    case 5:
    case 6: {
      const uint32_t mode = FileMode();
      const int flags = Pick(std::vector<int>{0, O_EXCL, O_TRUNC, O_EXCL | O_NOFOLLOW, O_APPEND});
      c.kind = "create";
      c.text = absl::StrFormat("open %s O_CREAT|O_WRONLY|%#o %o", p, flags, mode);
      c.run = [=](const std::string& r) {
        const int fd = open(at(r, p).c_str(), O_CREAT | O_WRONLY | O_NONBLOCK | flags, mode);
        if (fd < 0) return Err();
        return Rc(close(fd));
      };
      break;
    }
    case 7: {
      const int flags = Pick(std::vector<int>{O_RDONLY, O_WRONLY, O_RDWR, O_RDONLY | O_DIRECTORY,
                                              O_WRONLY | O_TRUNC, O_RDONLY | O_NOFOLLOW,
                                              O_RDONLY | O_TRUNC, O_RDWR | O_APPEND,
                                              O_WRONLY | O_DIRECTORY, O_PATH});
      c.kind = "open";
      c.text = absl::StrFormat("open %s %#o", p, flags);
      c.run = [=](const std::string& r) {
        const int fd = open(at(r, p).c_str(), flags | O_NONBLOCK);
        if (fd < 0) return Err();
        return Rc(close(fd));
      };
      break;
    }
    case 8:
    case 9: {
      const std::string data = Data(9000);
      const off_t off = Chance(30) ? 0 : Uniform(20000);
      const bool append = Chance(25);
      c.kind = "write";
      c.text = absl::StrFormat("write %s %zu bytes at %s", p, data.size(),
                               append ? "O_APPEND" : absl::StrCat(off));
      c.run = [=](const std::string& r) {
        const int fd = open(at(r, p).c_str(), O_WRONLY | O_NONBLOCK | (append ? O_APPEND : 0));
        if (fd < 0) return Err();
        const ssize_t n = append ? write(fd, data.data(), data.size())
                                 : pwrite(fd, data.data(), data.size(), off);
        std::string out = n < 0 ? Err() : absl::StrCat("ok ", n);
        if (close(fd) != 0) absl::StrAppend(&out, " close ", Err());
        return out;
      };
      break;
    }
    case 10: {
      c.kind = "read";
      c.text = absl::StrCat("read ", p);
      c.run = [=](const std::string& r) {
        const int fd = open(at(r, p).c_str(), O_RDONLY | O_NONBLOCK);
        if (fd < 0) return Err();
        std::string data(65536, '\0');
        const ssize_t n = read(fd, data.data(), data.size());
        std::string out = n < 0 ? Err() : absl::StrCat("ok ", n, " ", std::hash<std::string>()(
                                                                         data.substr(0, n)));
        close(fd);
        return out;
      };
      break;
    }
    case 11: {
      const off_t len = Chance(30) ? 0 : Uniform(30000);
      c.kind = "truncate";
      c.text = absl::StrCat("truncate ", p, " ", len);
      c.run = [=](const std::string& r) { return Rc(truncate(at(r, p).c_str(), len)); };
      break;
    }
    case 3:
    case 12:
    case 13: {
      const bool dir = kind == 3;
      c.kind = dir ? "rmdir" : "unlink";
      c.text = absl::StrCat(c.kind, " ", p);
      c.run = [=](const std::string& r) {
        return Rc(dir ? rmdir(at(r, p).c_str()) : unlink(at(r, p).c_str()));
      };
      break;
    }
    case 14:
    case 15:
    case 16: {
      const unsigned flags = Pick(std::vector<unsigned>{0, 0, 0, RENAME_NOREPLACE,
                                                        RENAME_EXCHANGE});
      c.kind = "rename";
      c.text = absl::StrFormat("rename %s %s flags %u", p, q, flags);
      c.paths = {p, Parent(p), q, Parent(q)};
      c.run = [=](const std::string& r) {
        return Rc(syscall(SYS_renameat2, AT_FDCWD, at(r, p).c_str(), AT_FDCWD, at(r, q).c_str(),
                          flags));
      };
      break;
    }
    case 17: {
      c.kind = "link";
      c.text = absl::StrCat("link ", p, " ", q);
      c.paths = {p, Parent(p), q, Parent(q)};
      c.run = [=](const std::string& r) { return Rc(link(at(r, p).c_str(), at(r, q).c_str())); };
      break;
    }
    case 18: {
      // Relative targets only, without "..": they resolve inside the tree.
      const std::string target = Chance(20) ? Data(3) + "x" : Path();
      c.kind = "symlink";
      c.text = absl::StrCat("symlink ", target, " ", q);
      c.paths = {q, Parent(q)};
      c.run = [=](const std::string& r) { return Rc(symlink(target.c_str(), at(r, q).c_str())); };
      break;
    }
    case 19: {
      const bool follow = Chance(50);
      const uint32_t mode = Chance(50) ? FileMode() : DirMode();
      c.kind = "chmod";
      c.text = absl::StrFormat("%s %s %o", follow ? "chmod" : "fchmodat-nofollow", p, mode);
      c.run = [=](const std::string& r) {
        return follow ? Rc(chmod(at(r, p).c_str(), mode))
                      : Rc(fchmodat(AT_FDCWD, at(r, p).c_str(), mode, AT_SYMLINK_NOFOLLOW));
      };
      break;
    }
    case 20: {
      const uid_t uid = Pick(std::vector<uid_t>{static_cast<uid_t>(-1), 0, 1000, 1001});
      const gid_t gid = Pick(std::vector<gid_t>{static_cast<gid_t>(-1), 0, 1000, 1001, 2000});
      const bool follow = Chance(50);
      c.kind = "chown";
      c.text = absl::StrFormat("%s %s %d %d", follow ? "chown" : "lchown", p,
                               static_cast<int>(uid), static_cast<int>(gid));
      c.run = [=](const std::string& r) {
        return follow ? Rc(chown(at(r, p).c_str(), uid, gid))
                      : Rc(lchown(at(r, p).c_str(), uid, gid));
      };
      break;
    }
    case 21: {
      auto pick_time = [this]() {
        timespec t = {};
        switch (Uniform(4)) {
          case 0: t.tv_nsec = UTIME_NOW; break;
          case 1: t.tv_nsec = UTIME_OMIT; break;
          default:
            t.tv_sec = 1000000000 + Uniform(1000000);
            t.tv_nsec = Uniform(1000000000);
        }
        return t;
      };
      const bool null_times = Chance(15);
      const timespec t0 = pick_time(), t1 = pick_time();
      const int flags = Chance(30) ? AT_SYMLINK_NOFOLLOW : 0;
      c.kind = "utimensat";
      c.text = null_times ? absl::StrCat("utimensat ", p, " NULL flags ", flags)
                          : absl::StrFormat("utimensat %s %d.%09ld %d.%09ld flags %d", p,
                                            static_cast<int>(t0.tv_sec), t0.tv_nsec,
                                            static_cast<int>(t1.tv_sec), t1.tv_nsec, flags);
      c.run = [=](const std::string& r) {
        const timespec times[2] = {t0, t1};
        const std::string path = at(r, p);
        const int rc = utimensat(AT_FDCWD, path.c_str(), null_times ? nullptr : times, flags);
        if (rc != 0) return Err();
        struct stat st = {};
        if (lstat(path.c_str(), &st) != 0) return Err();
        // Explicit times must read back exactly (atime included).
        std::string out = "ok";
        if (!null_times && t0.tv_nsec != UTIME_NOW && t0.tv_nsec != UTIME_OMIT &&
            !(flags == 0 && S_ISLNK(st.st_mode))) {
          absl::StrAppend(&out, " atime ", Ns(st.st_atim) == Ns(t0) ? "set" : "wrong");
        }
        if (!null_times && t1.tv_nsec != UTIME_NOW && t1.tv_nsec != UTIME_OMIT &&
            !(flags == 0 && S_ISLNK(st.st_mode))) {
          absl::StrAppend(&out, " mtime ", Ns(st.st_mtim) == Ns(t1) ? "set" : "wrong");
        }
        return out;
      };
      break;
    }
    case 22: {
      const int type = devices_ ? Uniform(3) : 2 * Uniform(2);
      c.kind = "mknod";
      c.text = absl::StrCat("mknod ", p, type == 0 ? " fifo" : type == 1 ? " chr 1:7" : " sock");
      c.run = [=](const std::string& r) {
        const mode_t mode = (type == 0 ? S_IFIFO : type == 1 ? S_IFCHR : S_IFSOCK) | 0640;
        return Rc(mknod(at(r, p).c_str(), mode, type == 1 ? makedev(1, 7) : 0));
      };
      break;
    }
    case 23: {
      const std::string name =
          Pick(std::vector<std::string>{"user.k0", "user.k1", "trusted.t", "user.k0"});
      const std::string value = Data(40);
      const int flags = Pick(std::vector<int>{0, XATTR_CREATE, XATTR_REPLACE});
      const int op = Uniform(4);  // set, remove, get, list
      c.kind = std::vector<std::string>{"setxattr", "removexattr", "getxattr", "listxattr"}[op];
      c.text = absl::StrFormat("%s %s %s flags %d", c.kind, p, name, flags);
      c.run = [=](const std::string& r) {
        const std::string path = at(r, p);
        switch (op) {
          case 0:
            return Rc(lsetxattr(path.c_str(), name.c_str(), value.data(), value.size(), flags));
          case 1:
            return Rc(lremovexattr(path.c_str(), name.c_str()));
          case 2: {
            char buf[256];
            const ssize_t n = lgetxattr(path.c_str(), name.c_str(), buf, sizeof(buf));
            return n < 0 ? Err() : absl::StrCat("ok ", std::string(buf, n));
          }
          default: {
            char buf[1024];
            const ssize_t n = llistxattr(path.c_str(), buf, sizeof(buf));
            if (n < 0) return Err();
            std::set<std::string> names;
            for (ssize_t i = 0; i < n; i += static_cast<ssize_t>(strlen(buf + i)) + 1) {
              names.insert(buf + i);
            }
            return absl::StrCat("ok ", absl::StrJoin(names, ","));
          }
        }
      };
      break;
    }
    case 24: {
      const bool is_default = Chance(40);
      const std::string name =
          is_default ? "system.posix_acl_default" : "system.posix_acl_access";
      const int op = Uniform(3);  // set, get, remove
      const std::string value = Acl();
      c.kind = std::vector<std::string>{"setacl", "getacl", "removeacl"}[op];
      c.text = absl::StrFormat("%s %s %s %s", c.kind, p, name, op == 0 ? Hex(value) : "");
      c.run = [=](const std::string& r) {
        const std::string path = at(r, p);
        if (op == 0) return Rc(setxattr(path.c_str(), name.c_str(), value.data(), value.size(), 0));
        if (op == 2) return Rc(removexattr(path.c_str(), name.c_str()));
        char buf[256];
        const ssize_t n = getxattr(path.c_str(), name.c_str(), buf, sizeof(buf));
        return n < 0 ? Err() : absl::StrCat("ok ", Hex(std::string(buf, n)));
      };
      break;
    }
    case 25: {
      const int mode = Pick(std::vector<int>{F_OK, R_OK, W_OK, X_OK, R_OK | W_OK, R_OK | X_OK});
      const int op = Uniform(3);  // access, stat, readdir
      c.kind = std::vector<std::string>{"access", "stat", "readdir"}[op];
      c.text = op == 0 ? absl::StrCat("access ", p, " ", mode) : absl::StrCat(c.kind, " ", p);
      c.run = [=](const std::string& r) {
        const std::string path = at(r, p);
        if (op == 0) return Rc(access(path.c_str(), mode));
        if (op == 1) {
          struct stat st = {};
          return stat(path.c_str(), &st) != 0 ? Err() : absl::StrCat("ok ", Visible(st));
        }
        DIR* d = opendir(path.c_str());
        if (d == nullptr) return Err();
        std::set<std::string> names;
        errno = 0;
        while (dirent* e = readdir(d)) names.insert(e->d_name);
        std::string out = errno != 0 ? Err() : absl::StrCat("ok ", absl::StrJoin(names, ","));
        closedir(d);
        return out;
      };
      break;
    }
    case 27:
    case 28: {
      // Calls on a handle: what the open allowed stays allowed through it
      // (ftruncate of a file created mode 0, fchmod by the owner), and a
      // file unlinked while open keeps working.
      const int flags = Pick(std::vector<int>{O_RDWR, O_CREAT | O_RDWR, O_CREAT | O_WRONLY,
                                              O_RDONLY, O_CREAT | O_EXCL | O_RDWR});
      const uint32_t mode = FileMode();
      std::vector<std::pair<int, int64_t>> steps;  // (what, argument)
      for (int i = 0, n = 1 + Uniform(3); i < n; ++i) {
        steps.emplace_back(Uniform(8), Uniform(20000));
      }
      const std::string data = Data(3000);
      c.kind = "handle";
      c.text = absl::StrFormat("open %s %#o %o then", p, flags, mode);
      static const char* const kStep[] = {"ftruncate", "fchmod",  "fchown", "futimens",
                                          "pwrite",    "fstat",   "fsetxattr", "unlink+fstat"};
      for (const auto& [what, arg] : steps) absl::StrAppend(&c.text, " ", kStep[what], " ", arg);
      c.run = [=](const std::string& r) {
        const std::string path = at(r, p);
        // Regular files only: the steps below are file operations.
        const mode_t type = TypeOf(path);
        if (type != 0 && type != S_IFREG) return std::string("not a regular file: not opened");
        const int fd = open(path.c_str(), flags | O_NONBLOCK, mode);
        if (fd < 0) return Err();
        std::string out = "ok";
        for (const auto& [what, arg] : steps) {
          struct stat st = {};
          long rc = 0;
          switch (what) {
            case 0: rc = ftruncate(fd, arg); break;
            case 1: rc = fchmod(fd, static_cast<mode_t>(arg % 2 ? 0600 : 04755)); break;
            case 2: rc = fchown(fd, arg % 2 ? 1000 : -1, arg % 3 ? 2000 : -1); break;
            case 3: rc = futimens(fd, nullptr); break;
            case 4: rc = pwrite(fd, data.data(), data.size(), arg); break;
            case 6: rc = fsetxattr(fd, "user.h", data.data(), data.size() % 10, 0); break;
            case 7: rc = unlink(path.c_str()); [[fallthrough]];
            case 5:
              if (rc == 0) rc = fstat(fd, &st);
              if (rc == 0) absl::StrAppend(&out, " [", Visible(st), "]");
              break;
          }
          absl::StrAppend(&out, " ", rc < 0 ? Err() : "ok");
        }
        if (close(fd) != 0) absl::StrAppend(&out, " close ", Err());
        return out;
      };
      break;
    }
    default: {
      c.kind = "readlink";
      c.text = absl::StrCat("readlink ", p);
      c.run = [=](const std::string& r) {
        char buf[512];
        const ssize_t n = readlink(at(r, p).c_str(), buf, sizeof(buf));
        return n < 0 ? Err() : absl::StrCat("ok ", std::string(buf, n));
      };
      break;
    }
  }
  return c;
}

// Every entry below `root` (relative paths, sorted), by type; symlinks are
// not followed.
Generator::Existing Walk(const std::string& root) {
  Generator::Existing out;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           root, std::filesystem::directory_options::skip_permission_denied, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    const std::string rel = it->path().string().substr(root.size() + 1);
    out.entries.push_back(rel);
    if (it->is_symlink(ec)) {
      out.links.push_back(rel);
    } else if (it->is_directory(ec)) {
      out.dirs.push_back(rel);
    } else if (it->is_regular_file(ec)) {
      out.files.push_back(rel);
    }
  }
  for (auto* v : {&out.entries, &out.dirs, &out.files, &out.links}) std::sort(v->begin(), v->end());
  return out;
}

// `text` with the long names shortened to "<255 n>" and "<256 n>".
std::string Shorter(std::string text) {
  for (size_t len : {256, 255}) {
    const std::string name(len, 'n');
    for (size_t at; (at = text.find(name)) != std::string::npos;) {
      text.replace(at, len, absl::StrCat("<", len, " n>"));
    }
  }
  return text;
}

std::string Ids(const UserIds& ids) {
  return ids.uid == 0 ? "root" : absl::StrCat("uid ", ids.uid);
}

}  // namespace

NsFuzzReport RunNsFuzz(const NsFuzzOptions& options) {
  NsFuzzReport report;
  Generator gen(options.seed, options.users, options.devices);
  std::deque<std::string> history;
  auto fail = [&](std::string why) {
    report.divergence = std::move(why);
    report.history.assign(history.begin(), history.end());
    return report;
  };
  // Unprivileged callers need a root they can write in.
  if (chmod(options.reference.c_str(), 0777) != 0 || chmod(options.tested.c_str(), 0777) != 0) {
    return fail(absl::StrCat("chmod of the roots: ", Err()));
  }
  TreeCompareOptions tree_options;
  tree_options.mtime = false;  // the same call runs at different times on each side
  for (int n = 1; n <= options.ops; ++n) {
    gen.SetExisting(Walk(options.reference));
    const UserIds caller = gen.Caller();
    Call call = gen.Next();
    call.text = Shorter(call.text);
    std::set<std::string> paths(call.paths.begin(), call.paths.end());
    std::map<std::string, std::pair<PathState, PathState>> before;
    for (const std::string& rel : paths) {
      before[rel] = {Probe(options.reference + "/" + rel), Probe(options.tested + "/" + rel)};
    }
    // Both times change by a tick at least (the kernel's coarse clock).
    if (options.times) absl::SleepFor(absl::Milliseconds(5));
    const std::string both = RunAs(caller, [&]() {
      std::string a = call.run(options.reference);
      std::string b = call.run(options.tested);
      return absl::StrCat(a, std::string(1, '\0'), b);
    });
    const size_t nul = both.find('\0');
    if (nul == std::string::npos) {
      return fail(absl::StrCat(call.text, ": the child failed: ", both));
    }
    const std::string a = both.substr(0, nul), b = both.substr(nul + 1);
    auto& outcome = report.outcomes[call.kind];
    (a.rfind("ok", 0) == 0 ? outcome.first : outcome.second)++;
    history.push_back(absl::StrCat("#", n, " ", Ids(caller), ": ", call.text, " -> ", a,
                                   a == b ? "" : absl::StrCat(" | tested: ", b)));
    if (history.size() > 40) history.pop_front();
    report.calls = n;
    if (options.after_call) options.after_call(n);
    if (a != b) {
      return fail(absl::StrCat(call.text, " as ", Ids(caller), ": reference ", a, ", tested ", b));
    }
    for (const auto& [rel, was] : before) {
      const PathState x = Probe(options.reference + "/" + rel);
      const PathState y = Probe(options.tested + "/" + rel);
      const std::string where = absl::StrCat("after ", call.text, ": /", Shorter(rel));
      if (x.visible != y.visible) {
        return fail(absl::StrCat(where, ": reference ", x.visible, ", tested ", y.visible));
      }
      if (!options.times || !x.exists || !was.first.exists || !was.second.exists) continue;
      const bool mx = x.mtime != was.first.mtime, my = y.mtime != was.second.mtime;
      const bool cx = x.ctime != was.first.ctime, cy = y.ctime != was.second.ctime;
      if (mx != my) {
        return fail(absl::StrCat(where, ": mtime ", mx ? "changed" : "unchanged",
                                 " on the reference, ", my ? "changed" : "unchanged", " tested"));
      }
      if (cx != cy) {
        return fail(absl::StrCat(where, ": ctime ", cx ? "changed" : "unchanged",
                                 " on the reference, ", cy ? "changed" : "unchanged", " tested"));
      }
    }
    if (n % options.compare_every == 0 || n == options.ops) {
      auto ta = SnapshotTree(options.reference);
      auto tb = SnapshotTree(options.tested);
      if (!ta.ok() || !tb.ok()) {
        return fail(absl::StrCat("snapshot after #", n, ": ", ta.status().ToString(), " / ",
                                 tb.status().ToString()));
      }
      std::vector<std::string> diffs =
          CompareTrees(options.reference, *ta, options.tested, *tb, tree_options);
      if (!diffs.empty()) {
        return fail(absl::StrCat("the trees differ after #", n, ":\n  ",
                                 absl::StrJoin(diffs, "\n  ")));
      }
    }
  }
  report.history.assign(history.begin(), history.end());
  return report;
}

std::string Describe(const NsFuzzReport& report) {
  std::string out = absl::StrCat(report.divergence.empty() ? "no divergence" : report.divergence,
                                 "\nafter ", report.calls, " calls; the last ones:\n");
  for (const std::string& h : report.history) absl::StrAppend(&out, "  ", h, "\n");
  for (const auto& [kind, counts] : report.outcomes) {
    absl::StrAppend(&out, kind, " ", counts.first, " ok / ", counts.second, " failed; ");
  }
  return out;
}

}  // namespace weft::testing
