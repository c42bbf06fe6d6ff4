#include "tests/harness/tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status/status.h"

namespace weft::testing {
namespace {

int64_t Ns(const timespec& t) { return t.tv_sec * 1000000000ll + t.tv_nsec; }

absl::Status ReadXattrs(const std::string& path, std::map<std::string, std::string>* out) {
  ssize_t n = llistxattr(path.c_str(), nullptr, 0);
  if (n < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP)) return absl::OkStatus();
  if (n < 0) return ErrnoToStatus(errno, absl::StrCat("llistxattr ", path));
  std::string names(static_cast<size_t>(n), '\0');
  n = llistxattr(path.c_str(), names.data(), names.size());
  if (n < 0) return ErrnoToStatus(errno, absl::StrCat("llistxattr ", path));
  names.resize(static_cast<size_t>(n));
  for (size_t pos = 0; pos < names.size();) {
    const std::string name = names.c_str() + pos;
    pos += name.size() + 1;
    ssize_t len = lgetxattr(path.c_str(), name.c_str(), nullptr, 0);
    if (len < 0) return ErrnoToStatus(errno, absl::StrCat("lgetxattr ", path, " ", name));
    std::string value(static_cast<size_t>(len), '\0');
    len = lgetxattr(path.c_str(), name.c_str(), value.data(), value.size());
    if (len < 0) return ErrnoToStatus(errno, absl::StrCat("lgetxattr ", path, " ", name));
    value.resize(static_cast<size_t>(len));
    (*out)[name] = value;
  }
  return absl::OkStatus();
}

absl::StatusOr<TreeEntry> EntryOf(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return ErrnoToStatus(errno, absl::StrCat("lstat ", path));
  TreeEntry e;
  e.mode = st.st_mode;
  e.uid = st.st_uid;
  e.gid = st.st_gid;
  e.size = static_cast<uint64_t>(st.st_size);
  e.nlink = st.st_nlink;
  e.ino = st.st_ino;
  e.mtime_ns = Ns(st.st_mtim);
  e.ctime_ns = Ns(st.st_ctim);
  e.rdev = st.st_rdev;
  if (S_ISLNK(st.st_mode)) {
    std::string target(4096, '\0');
    ssize_t n = readlink(path.c_str(), target.data(), target.size());
    if (n < 0) return ErrnoToStatus(errno, absl::StrCat("readlink ", path));
    target.resize(static_cast<size_t>(n));
    e.link_target = target;
  }
  RETURN_IF_ERROR(ReadXattrs(path, &e.xattrs));
  return e;
}

std::string Printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    }
  }
  return out.size() > 80 ? out.substr(0, 80) + "..." : out;
}

// The entry-by-entry comparison; hard-link groups and contents are done apart.
void CompareEntry(const std::string& path, const TreeEntry& x, const TreeEntry& y,
                  const TreeCompareOptions& o, std::vector<std::string>* out) {
  auto diff = [&](const char* what, auto a, auto b) {
    if (a != b) out->push_back(absl::StrCat(path, ": ", what, " ", a, " vs ", b));
  };
  diff("mode (octal)", absl::StrFormat("%o", x.mode), absl::StrFormat("%o", y.mode));
  if ((x.mode & S_IFMT) != (y.mode & S_IFMT)) return;
  if (!S_ISDIR(x.mode) || o.dir_size) diff("size", x.size, y.size);
  diff("nlink", x.nlink, y.nlink);
  if (o.owner) {
    diff("uid", x.uid, y.uid);
    diff("gid", x.gid, y.gid);
  }
  if (o.mtime) diff("mtime_ns", x.mtime_ns, y.mtime_ns);
  if (o.ctime) diff("ctime_ns", x.ctime_ns, y.ctime_ns);
  if (o.ino) diff("ino", x.ino, y.ino);
  if (S_ISCHR(x.mode) || S_ISBLK(x.mode)) diff("rdev", x.rdev, y.rdev);
  if (S_ISLNK(x.mode)) diff("symlink target", Printable(x.link_target), Printable(y.link_target));
  if (o.xattrs) {
    for (const auto& [name, value] : x.xattrs) {
      auto it = y.xattrs.find(name);
      if (it == y.xattrs.end()) {
        out->push_back(absl::StrCat(path, ": xattr ", name, " missing in b"));
      } else if (it->second != value) {
        out->push_back(absl::StrCat(path, ": xattr ", name, " \"", Printable(value), "\" vs \"",
                                    Printable(it->second), "\""));
      }
    }
    for (const auto& [name, value] : y.xattrs) {
      if (!x.xattrs.contains(name)) out->push_back(absl::StrCat(path, ": xattr ", name, " only in b"));
    }
  }
}

// path -> the other paths of its hard-link group (empty for a single link).
std::map<std::string, std::set<std::string>> LinkGroups(const TreeSnapshot& t) {
  std::map<uint64_t, std::set<std::string>> by_ino;
  for (const auto& [path, e] : t.entries) {
    if (!S_ISDIR(e.mode)) by_ino[e.ino].insert(path);
  }
  std::map<std::string, std::set<std::string>> out;
  for (const auto& [ino, paths] : by_ino) {
    for (const std::string& p : paths) {
      out[p] = paths;
      out[p].erase(p);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<TreeSnapshot> SnapshotTree(const std::string& root) {
  TreeSnapshot snap;
  std::error_code ec;
  namespace fs = std::filesystem;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec);
  if (ec) return absl::InternalError(absl::StrCat("walk ", root, ": ", ec.message()));
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return absl::InternalError(absl::StrCat("walk ", root, ": ", ec.message()));
    const std::string path = it->path().string();
    ASSIGN_OR_RETURN(TreeEntry e, EntryOf(path));
    // lexically: fs::relative() would resolve symlinks
    snap.entries[it->path().lexically_relative(root).string()] = std::move(e);
  }
  if (ec) return absl::InternalError(absl::StrCat("walk ", root, ": ", ec.message()));
  return snap;
}

std::string CompareFiles(const std::string& path_a, const std::string& path_b) {
  constexpr size_t kChunk = 1 << 20;
  int fa = open(path_a.c_str(), O_RDONLY | O_CLOEXEC);
  int fb = open(path_b.c_str(), O_RDONLY | O_CLOEXEC);
  std::string result;
  if (fa < 0 || fb < 0) {
    result = absl::StrCat("cannot open: ", strerror(errno));
  } else {
    std::string a(kChunk, '\0');
    std::string b(kChunk, '\0');
    for (uint64_t off = 0; result.empty();) {
      ssize_t na = pread(fa, a.data(), kChunk, static_cast<off_t>(off));
      ssize_t nb = pread(fb, b.data(), kChunk, static_cast<off_t>(off));
      if (na < 0 || nb < 0) {
        result = absl::StrCat("read error at ", off, ": ", strerror(errno));
      } else if (memcmp(a.data(), b.data(), std::min(na, nb)) != 0) {
        size_t i = 0;
        while (a[i] == b[i]) ++i;
        result = absl::StrFormat("contents differ at byte %d (%02x vs %02x)", off + i,
                                 static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i]));
      } else if (na != nb) {
        result = absl::StrCat("lengths differ: ", off + na, " vs ", off + nb, " bytes");
      } else if (na == 0) {
        break;
      }
      off += static_cast<uint64_t>(std::max<ssize_t>(na, 0));
    }
  }
  if (fa >= 0) close(fa);
  if (fb >= 0) close(fb);
  return result;
}

std::vector<std::string> CompareTrees(const std::string& root_a, const TreeSnapshot& a,
                                      const std::string& root_b, const TreeSnapshot& b,
                                      const TreeCompareOptions& options) {
  std::vector<std::string> out;
  const auto groups_a = LinkGroups(a);
  const auto groups_b = LinkGroups(b);
  for (const auto& [path, x] : a.entries) {
    if (out.size() >= options.max_differences) break;
    auto it = b.entries.find(path);
    if (it == b.entries.end()) {
      out.push_back(absl::StrCat(path, ": only in ", root_a));
      continue;
    }
    const TreeEntry& y = it->second;
    CompareEntry(path, x, y, options, &out);
    if (S_ISDIR(x.mode) || (x.mode & S_IFMT) != (y.mode & S_IFMT)) continue;
    auto ga = groups_a.find(path);
    auto gb = groups_b.find(path);
    if (ga != groups_a.end() && gb != groups_b.end() && ga->second != gb->second) {
      out.push_back(absl::StrCat(path, ": hard links differ (", ga->second.size(), " other names vs ",
                                 gb->second.size(), ")"));
    }
    if (options.contents && S_ISREG(x.mode)) {
      std::string d = CompareFiles(root_a + "/" + path, root_b + "/" + path);
      if (!d.empty()) out.push_back(absl::StrCat(path, ": ", d));
    }
  }
  for (const auto& [path, y] : b.entries) {
    if (out.size() >= options.max_differences) break;
    if (!a.entries.contains(path)) out.push_back(absl::StrCat(path, ": only in ", root_b));
  }
  return out;
}

}  // namespace weft::testing
