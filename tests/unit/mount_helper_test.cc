// The mount(8) helper's translation of its arguments into weft-fuse's.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "fuse-client/fuse/mount_helper.h"

namespace weft::fuse {
namespace {

std::vector<std::string> Args(const std::vector<std::string>& in) {
  auto out = TranslateMountArgs(in);
  INFO(out.status());
  REQUIRE(out.ok());
  CHECK(!out->fake);
  return out->args;
}

TEST_CASE("mount helper: names it answers to", "[unit][fuse]") {
  CHECK(IsMountHelperName("/sbin/mount.fuse.weft"));
  CHECK(IsMountHelperName("mount.weft"));
  CHECK(IsMountHelperName("/usr/local/sbin/mount.weft"));
  CHECK(!IsMountHelperName("/usr/bin/weft-fuse"));
  CHECK(!IsMountHelperName("mount.fuse3"));
  CHECK(!IsMountHelperName("mount.weft2"));
}

TEST_CASE("mount helper: fstab options become weft-fuse options", "[unit][fuse]") {
  // The README's fstab line, as mount(8) passes it.
  CHECK(Args({"weft", "/mnt/weft", "-o", "rw,conf=/etc/weft/weft.conf,fs=weft,_netdev"}) ==
        std::vector<std::string>{"/mnt/weft", "-o", "rw,conf=/etc/weft/weft.conf,fs=weft"});
  // Everything mount(8), fstab and systemd keep for themselves goes.
  CHECK(Args({"weft", "/m", "-o",
              "defaults,noauto,auto,nofail,user,users,nouser,owner,group,_netdev,_rnetdev,"
              "x-systemd.automount,comment=x,user=alice,helper=weft,fs=a"}) ==
        std::vector<std::string>{"/m", "-o", "fs=a"});
  // Generic options pass through, in order; -r/-w become ro/rw.
  CHECK(Args({"a", "/m", "-o", "nosuid,noexec,noatime,conf=/c", "-r"}) ==
        std::vector<std::string>{"/m", "-o", "nosuid,noexec,noatime,conf=/c,ro,fs=a"});
  // Several -o lists, empty items, and the flags mount(8) adds.
  CHECK(Args({"-n", "-v", "a", "/m", "-o", "conf=/c,,", "-o", "log=/l", "-t", "fuse.weft"}) ==
        std::vector<std::string>{"/m", "-o", "conf=/c,log=/l,fs=a"});
}

TEST_CASE("mount helper: the source names the filesystem and a subdirectory", "[unit][fuse]") {
  CHECK(Args({"myfs", "/m"}) == std::vector<std::string>{"/m", "-o", "fs=myfs"});
  CHECK(Args({"myfs:/home/alice", "/m"}) ==
        std::vector<std::string>{"/m", "-o", "fs=myfs,subdir=/home/alice"});
  // Options win over the source.
  CHECK(Args({"myfs:/a", "/m", "-o", "fs=other,subdir=/b"}) ==
        std::vector<std::string>{"/m", "-o", "fs=other,subdir=/b"});
  CHECK(Args({"myfs:/a", "/m", "-o", "fs=other"}) ==
        std::vector<std::string>{"/m", "-o", "fs=other,subdir=/a"});
  // "none" names nothing: weft-fuse then asks for fs=.
  CHECK(Args({"none", "/m"}) == std::vector<std::string>{"/m"});
}

TEST_CASE("mount helper: unknown options reach weft-fuse unless sloppy", "[unit][fuse]") {
  CHECK(Args({"a", "/m", "-o", "bogus=1"}) == std::vector<std::string>{"/m", "-o", "bogus=1,fs=a"});
  CHECK(Args({"-s", "a", "/m", "-o", "bogus=1,ro"}) ==
        std::vector<std::string>{"/m", "-o", "ro,fs=a"});
  CHECK(Args({"-s", "a", "/m", "-o", "direct_writes=0,bogus"}) ==
        std::vector<std::string>{"/m", "-o", "direct_writes=0,fs=a"});
  auto fake = TranslateMountArgs({"-f", "a", "/m"});
  REQUIRE(fake.ok());
  CHECK(fake->fake);
}

TEST_CASE("mount helper: malformed command lines are refused with the reason", "[unit][fuse]") {
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {},
           {"a"},
           {"a", "/m", "/extra"},
           {"a", "/m", "-o"},
           {"a", "/m", "-N", "/proc/1/ns/mnt"},
           {"a", "/m", "-q"},
           {":/sub", "/m"},
           {"fs:sub", "/m"},
       }) {
    auto out = TranslateMountArgs(bad);
    INFO(bad.size());
    CHECK(!out.ok());
    CHECK(!out.status().message().empty());
  }
}

}  // namespace
}  // namespace weft::fuse
