// AttrChanges (fuse-client/lib/file_cache.h): attribute changes a client made
// on its own, merged in the order they were made before they reach the MDS.
#include <catch2/catch.hpp>

#include "fuse-client/lib/file_cache.h"
#include "proto/mds_client.pb.h"

namespace weft::client {
namespace {

TEST_CASE("attr changes: later values win field by field - ctime is the latest", "[client]") {
  AttrChanges merged;
  CHECK(merged.empty());
  AttrChanges chown;
  chown.valid = posix::kSetUid | posix::kSetGid;
  chown.uid = 1000;
  chown.gid = 2000;
  chown.ctime_ns = 300;
  merged.Add(chown);
  AttrChanges chmod;
  chmod.valid = posix::kSetMode;
  chmod.mode = 0640;
  chmod.ctime_ns = 500;
  merged.Add(chmod);
  AttrChanges chgrp;
  chgrp.valid = posix::kSetGid;
  chgrp.gid = 3000;
  chgrp.ctime_ns = 400;  // a clock that went back: ctime does not
  merged.Add(chgrp);
  AttrChanges times;
  times.valid = posix::kSetAtime | posix::kSetMtime;
  times.atime_ns = 7;
  times.mtime_ns = 9;
  times.ctime_ns = 600;
  merged.Add(times);

  CHECK_FALSE(merged.empty());
  CHECK(merged.valid == (posix::kSetUid | posix::kSetGid | posix::kSetMode | posix::kSetAtime |
                         posix::kSetMtime));
  CHECK(merged.uid == 1000);
  CHECK(merged.gid == 3000);
  CHECK(merged.mode == 0640);
  CHECK(merged.atime_ns == 7);
  CHECK(merged.mtime_ns == 9);
  CHECK(merged.ctime_ns == 600);

  // A field not set by a later change keeps its earlier value.
  AttrChanges mode_again;
  mode_again.valid = posix::kSetMode;
  mode_again.mode = 0600;
  mode_again.ctime_ns = 100;
  merged.Add(mode_again);
  CHECK(merged.mode == 0600);
  CHECK(merged.uid == 1000);
  CHECK(merged.mtime_ns == 9);
  CHECK(merged.ctime_ns == 600);
}

}  // namespace
}  // namespace weft::client
