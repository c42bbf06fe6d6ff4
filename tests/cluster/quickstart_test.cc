// scripts/quickstart.sh as a user runs it, twice on one machine: each
// cluster touches only its own mount.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <string>

#include "tests/harness/cluster.h"
#include "tests/harness/mount.h"

namespace weft::testing {
namespace {

// One quickstart cluster in its own directory; purged on destruction, also
// when a check failed.
struct Quickstart {
  std::string dir;
  explicit Quickstart(const std::string& d) : dir(d) {}
  CommandResult Run(const std::string& mnt, const std::string& what) const {
    // The build this test belongs to: quickstart's build step is then a no-op.
    const std::string bin = WEFT_BIN_DIR;
    const std::string build = bin.substr(0, bin.rfind("/bin"));
    return RunCommand({"/usr/bin/env", "WEFT_DIR=" + dir, "WEFT_MNT=" + mnt, "WEFT_OSDS=3",
                       "WEFT_BUILD_DIR=" + build,
                       std::string(WEFT_SOURCE_DIR) + "/scripts/quickstart.sh", what});
  }
  ~Quickstart() { RunCommand({"/usr/bin/env", "WEFT_DIR=" + dir, std::string(WEFT_SOURCE_DIR) +
                                                        "/scripts/quickstart.sh", "purge"}); }
};

TEST_CASE("quickstart: a second cluster refuses a mountpoint in use - down unmounts only "
          "its own mount",
          "[cluster][fuse]") {
  char tmpl[] = "/tmp/weft-qs-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string base = tmpl;
  const std::string mnt = base + "/mnt";
  struct RemoveBase {  // after both clusters are purged (declared first)
    std::string path;
    ~RemoveBase() { RunCommand({"/bin/rm", "-rf", path}); }
  } remove_base{base};
  {
    Quickstart a(base + "/a"), b(base + "/b");
    CommandResult up = a.Run(mnt, "up");
    INFO(up.output);
    REQUIRE(up.code == 0);
    REQUIRE(Mount::IsMounted(mnt));

    CommandResult refused = b.Run(mnt, "up");
    INFO(refused.output);
    CHECK(refused.code != 0);
    CHECK(refused.output.find("already mounted, not by the cluster in") != std::string::npos);
    CHECK(b.Run(mnt, "down").code == 0);
    CHECK(Mount::IsMounted(mnt));  // a's mount is still there

    CHECK(a.Run(mnt, "up").code == 0);  // again: harmless
    CHECK(a.Run(base + "/elsewhere", "down").code == 0);  // down finds its own mount
    CHECK_FALSE(Mount::IsMounted(mnt));
  }
}

}  // namespace
}  // namespace weft::testing
