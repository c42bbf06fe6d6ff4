#include "fuse-client/fuse/mount_helper.h"

#include <initializer_list>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace weft::fuse {
namespace {

absl::Status Invalid(absl::string_view a, absl::string_view b = "", absl::string_view c = "") {
  return absl::InvalidArgumentError(absl::StrCat(a, b, c));
}

bool OneOf(absl::string_view s, std::initializer_list<absl::string_view> set) {
  for (absl::string_view x : set) {
    if (s == x) return true;
  }
  return false;
}

bool StartsWithAny(absl::string_view s, std::initializer_list<absl::string_view> prefixes) {
  for (absl::string_view p : prefixes) {
    if (absl::StartsWith(s, p)) return true;
  }
  return false;
}

// Options that only mount(8), fstab and systemd read.
bool MountOnly(absl::string_view opt) {
  return OneOf(opt, {"defaults", "auto", "noauto", "nofail", "user", "users", "nouser", "owner",
                     "noowner", "group", "nogroup"}) ||
         StartsWithAny(opt, {"_", "x-", "comment=", "user=", "helper=", "uhelper="});
}

// Options weft-fuse or libfuse understand (kept under -s).
bool Known(absl::string_view opt) {
  return StartsWithAny(opt, {"conf=", "fs=", "subdir=", "log=", "direct_writes=", "locks=",
                             "recover_session=",
                             "fsname=", "subtype=", "max_read=", "blksize=", "context=",
                             "fscontext=", "defcontext=", "rootcontext=", "max_threads=",
                             "max_idle_threads="}) ||
         OneOf(opt, {"ro", "rw", "suid", "nosuid", "dev", "nodev", "exec", "noexec", "async",
                     "sync", "dirsync", "atime", "noatime", "diratime", "nodiratime",
                     "relatime", "norelatime", "strictatime", "nostrictatime", "lazytime",
                     "nolazytime", "allow_other", "allow_root", "default_permissions",
                     "auto_unmount", "debug"});
}

}  // namespace

bool IsMountHelperName(absl::string_view argv0) {
  const size_t slash = argv0.rfind('/');
  if (slash != absl::string_view::npos) argv0.remove_prefix(slash + 1);
  return argv0 == "mount.fuse.weft" || argv0 == "mount.weft";
}

absl::StatusOr<HelperCommand> TranslateMountArgs(const std::vector<std::string>& args) {
  std::vector<std::string> positional;
  std::vector<std::string> options;
  bool sloppy = false;
  HelperCommand out;
  // 1. Split the command line: two positional arguments, flags, -o lists.
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-o" || a == "-t" || a == "-N") {
      if (i + 1 >= args.size()) return Invalid(a, " needs a value");
      const std::string& value = args[++i];
      if (a == "-N") return Invalid("-N (another mount namespace) is not supported");
      if (a == "-o") {
        for (absl::string_view o : absl::StrSplit(value, ',', absl::SkipEmpty())) {
          options.emplace_back(o);
        }
      }
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      for (char flag : a.substr(1)) {
        switch (flag) {
          case 's': sloppy = true; break;
          case 'f': out.fake = true; break;
          case 'n': case 'v': break;
          case 'r': options.emplace_back("ro"); break;
          case 'w': options.emplace_back("rw"); break;
          default: return Invalid("unknown flag -", std::string(1, flag));
        }
      }
      continue;
    }
    positional.push_back(a);
  }
  if (positional.size() != 2) {
    return Invalid("usage: mount.fuse.weft FSNAME[:/SUBDIR] MOUNTPOINT -o conf=FILE[,OPTIONS]");
  }

  // 2. Keep what weft-fuse and libfuse use; note fs= and subdir=.
  std::vector<std::string> kept;
  bool has_fs = false, has_subdir = false;
  for (const std::string& o : options) {
    if (MountOnly(o)) continue;
    if (sloppy && !Known(o)) continue;
    has_fs |= absl::StartsWith(o, "fs=");
    has_subdir |= absl::StartsWith(o, "subdir=");
    kept.push_back(o);
  }

  // 3. The source: FSNAME or FSNAME:/SUBDIR, unless the options say.
  const std::string& source = positional[0];
  if (source != "none" && !source.empty()) {
    std::pair<std::string, std::string> parts = absl::StrSplit(source, absl::MaxSplits(':', 1));
    if (parts.first.empty()) return Invalid("source ", source, ": no filesystem name");
    if (!parts.second.empty() && parts.second[0] != '/') {
      return Invalid("source ", source, ": want FSNAME or FSNAME:/SUBDIR");
    }
    if (!has_fs) kept.push_back(absl::StrCat("fs=", parts.first));
    if (!has_subdir && !parts.second.empty()) kept.push_back(absl::StrCat("subdir=", parts.second));
  }

  out.args.push_back(positional[1]);
  if (!kept.empty()) {
    out.args.push_back("-o");
    out.args.push_back(absl::StrJoin(kept, ","));
  }
  return out;
}

}  // namespace weft::fuse
