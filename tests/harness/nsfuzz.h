// A differential exerciser for the namespace: random sequences of POSIX
// calls (mkdir, create and open with their flags, write, read, truncate,
// unlink, rmdir, rename and its flags, link, symlink, readlink, chmod, chown,
// utimensat, mknod, xattrs, POSIX ACLs, access, stat, readdir) made by root
// and by unprivileged users, each call applied to two trees: a reference on a
// local filesystem (what Linux does) and the tree under test. After every
// call the return values, errnos and data returned must agree, the paths it
// touched must have the same type, mode, owner, link count and size on both
// sides, and the same ones of mtime and ctime must have changed; every
// `compare_every` calls and at the end the whole trees are compared,
// contents and xattrs included.
//
// Paths are made of a few short names ("a/b/c"), so that calls collide: they
// hit existing and missing entries, files where directories are expected,
// non-empty directories, symlinks (relative, dangling, looping) in the
// middle of paths, and directories moved into themselves. Everything a call
// needs (names, modes, data) is drawn before it runs, so a seed replays the
// same calls.
//
//   NsFuzzOptions o;
//   o.reference = "/tmp/ref"; o.tested = mount + "/t"; o.seed = 7;
//   o.users = {{1000, 1000, {1000, 2000}}};
//   std::string d = RunNsFuzz(o);  // "" when both sides agreed throughout
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tests/harness/mount.h"

namespace weft::testing {

struct NsFuzzOptions {
  std::string reference;  // an empty directory on a local filesystem
  std::string tested;     // an empty directory on the filesystem under test
  uint64_t seed = 1;
  int ops = 400;
  std::vector<UserIds> users;  // unprivileged callers; root makes about half the calls
  bool times = true;           // compare which of mtime and ctime each call changed
  int compare_every = 50;
  // mknod makes character devices too (1:7, /dev/full). Not on a mount with
  // nodev (libfuse's default), where they cannot be opened.
  bool devices = true;
  // Called after call number `n` (1-based) has run on both sides, before the
  // checks: lets a test change the tested tree behind the exerciser's back.
  std::function<void(int n)> after_call;
};

struct NsFuzzReport {
  std::string divergence;  // "" when both sides agreed throughout
  std::vector<std::string> history;  // the last calls and their results
  // Per kind of call, how many succeeded and how many failed (on the
  // reference), so that a test can check that the mix exercised both.
  std::map<std::string, std::pair<int, int>> outcomes;
  int calls = 0;
};

NsFuzzReport RunNsFuzz(const NsFuzzOptions& options);

// The report as text for a failed test: the divergence, then the history.
std::string Describe(const NsFuzzReport& report);

}  // namespace weft::testing
