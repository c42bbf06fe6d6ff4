// weft-fuse as a mount(8) helper. mount -t fuse.weft (or -t weft, or an
// /etc/fstab line of either type) runs /sbin/mount.fuse.weft (/sbin/mount.weft)
// as
//
//   mount.fuse.weft SOURCE MOUNTPOINT [-sfnvrw] [-N NS] [-o OPTIONS] [-t TYPE]
//
// Both names are links to weft-fuse, which sees its name in argv[0] and
// turns these arguments into its own (`MOUNTPOINT -o OPTIONS`):
//
//  - SOURCE names the filesystem, `FSNAME` or `FSNAME:/SUBDIR`; `fs=` and
//    `subdir=` in the options win over it. `none` names nothing.
//  - Options only mount(8) and fstab use are dropped: defaults, auto,
//    noauto, _netdev (any `_` option), nofail, user, users, nouser, owner,
//    group, user=, comment=, x-*, helper=.
//  - Everything else passes through: weft-fuse's own (conf=, fs=, subdir=,
//    log=) and the generic FUSE and kernel ones (ro, rw, nosuid, noexec,
//    noatime, ...). An option neither knows fails the mount with its name,
//    unless -s (sloppy) was given, which drops options this helper does not
//    know.
//  - -r and -w become ro and rw; -f (fake) means "check, do not mount";
//    -n, -v and -t are ignored; -N (another mount namespace) is refused.
//
// Pure string handling, no libfuse, so that it is unit-tested alone.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::fuse {

// True when weft-fuse was started as a mount helper: argv[0]'s file name is
// mount.fuse.weft or mount.weft.
bool IsMountHelperName(absl::string_view argv0);

struct HelperCommand {
  std::vector<std::string> args;  // weft-fuse's arguments after argv[0]
  bool fake = false;               // -f: validate only
};

// `args` are the helper's arguments after argv[0]. InvalidArgument with a
// one-line reason for a malformed command line.
absl::StatusOr<HelperCommand> TranslateMountArgs(const std::vector<std::string>& args);

}  // namespace weft::fuse
