// The namespace as a rank sees it at one moment: its cache over the objects
// in the metadata pool, read the way a reload would (an independent reading
// of MetaCache's overlay: cached inodes and loaded fragments stand, the
// store fills in the rest, names and inodes the cache knows are gone stay
// gone), and the invariants that must hold of it after every step.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/objects/mem_objects.h"
#include "mds/cache/meta_cache.h"
#include "mds/rank_options.h"
#include "mds/sessions/sessions.h"
#include "mds/store/records.pb.h"

namespace weft::sim {

struct View {
  std::map<uint64_t, pb::InodeRec> inodes;
  std::map<uint64_t, std::map<std::string, pb::DentryRec>> dirs;  // dir -> name -> dentry
  std::map<uint64_t, uint64_t> strays;                            // ino -> holder session
  std::map<uint64_t, mds::Purge> purge;
  std::map<uint64_t, mds::Cut> trims;
  std::map<uint64_t, std::map<uint64_t, int>> opens;  // session -> ino -> handles
  bool rstats_settled = false;                        // no statistics change waits to propagate
  // The rank's reconnect window is open: a session's reconnect may have
  // dropped the last open of a stray, released when the window ends.
  bool reconnecting = false;
};

// Reads the view of filesystem `fs` (its metadata pool `pool`) from a rank's
// cache and sessions and the store.
View ReadView(const mds::MetaCache& cache, const mds::Sessions& sessions,
              const absl::flat_hash_map<uint64_t, mds::RStatDelta>& rstat_pending,
              objects::MemObjects& store, PoolId pool, uint32_t fs);

// Every invariant of the namespace that holds at any moment; the first
// broken one, described, or "" when all hold:
//   - every dentry names an inode that exists, with the inode's type;
//   - a directory is named by exactly one dentry, in its `parent`; the root
//     by none; a file's link count is the number of dentries naming it, a
//     directory's 2 plus its subdirectories;
//   - every inode is reachable from the root, or a stray: unlinked (nlink
//     0), in the strays table, held open by a session (or the reconnect
//     window is open: it is released when the window ends);
//   - no purge or trim is pending for an inode that is still named;
//   - recursive statistics are the sums of their subtrees, once no change
//     waits to propagate (View::rstats_settled): every live inode counted
//     once, in the directory its `parent` names and each one above. Only
//     with `rstats`: a hard link makes the MDS count a file per name, and
//     an unlink of the first name loses it (docs/ARCHITECTURE.md,
//     "Recursive statistics"), so runs with links leave this out.
std::string CheckInvariants(const View& view, bool rstats);

}  // namespace weft::sim
