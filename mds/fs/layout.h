// File layouts as the virtual xattrs weft.dir.layout and weft.file.layout
// show and set them (CephFS's ceph.dir.layout syntax):
//
//   "stripe_unit=1048576 stripe_count=4 object_size=16777216 pool=fsdata"
//
// Setting takes `key=value` pairs separated by whitespace, in any order and
// any subset (the rest come from the layout being changed); sizes are bytes
// or have a K, M or G suffix (powers of 1024); a pool is named by name or by
// id. A single field is set or read as weft.dir.layout.<key> (value alone).
//
// A valid layout (ValidateLayout; decisions in docs/ARCHITECTURE.md,
// "Layouts"):
//   - stripe_unit a multiple of 4 KiB (the page size; Ceph asks 64 KiB, which
//     Weft's data path does not need, and small units are worth testing);
//   - stripe_unit divides object_size;
//   - object_size at most min(1 GiB, osd_max_object_size), because the OSDs
//     refuse writes past their limit and a file would fail at its first write;
//   - stripe_count within [1, 256];
//   - pool one of this filesystem's data pools (`weft fs add-data-pool`).
// Everything else is EINVAL with a message naming the offending part.
//
// Nothing here knows about inodes or the wire: mds/ops/layout.cc applies it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/cluster_map/types.h"
#include "common/fs/attr.h"
#include "common/striping/striping.h"

namespace weft::mds {

inline constexpr uint64_t kStripeUnitAlignBytes = 4096;
inline constexpr uint64_t kLayoutObjectBytesMax = 1ull << 30;
inline constexpr uint64_t kStripeCountMax = 256;

// A file's striping and data pool (pool 0: none), as the client sees it too.
using FileLayout = fs::FileLayout;

// The pools a layout may name, as the maps say at the time of the request.
struct DataPools {
  std::vector<PoolId> data_pools;       // the filesystem's (fsmap), the default first
  std::map<PoolId, std::string> names;  // every pool of the osdmap

  bool IsDataPool(PoolId id) const;
  // The pool's name; its number when the osdmap does not know it.
  std::string NameOf(PoolId id) const;
};

// What the xattr name addresses: the whole layout (field empty) or one field.
enum class LayoutTarget { kNone, kDir, kFile };
struct LayoutXattr {
  LayoutTarget target = LayoutTarget::kNone;
  std::string field;  // "", or "stripe_unit", "stripe_count", "object_size", "pool"
};
// kNone when `name` is neither weft.dir.layout[.*] nor weft.file.layout[.*];
// `field` is whatever follows the dot, known or not (IsLayoutField says).
LayoutXattr ParseLayoutXattrName(absl::string_view name);
bool IsLayoutField(absl::string_view field);

// A layout size: weft::ParseSize (common/config) with a limit of 2^40.
absl::StatusOr<uint64_t> ParseLayoutSize(absl::string_view text);

// `base` with `value` applied: for an empty `field`, whitespace-separated
// key=value pairs (at least one, each key once); else the value of that one
// field. The result is validated. EINVAL with the reason on any error.
absl::StatusOr<FileLayout> ApplyLayoutText(const FileLayout& base, absl::string_view field,
                                           absl::string_view value, const DataPools& pools,
                                           uint64_t object_bytes_max);

// OK, or EINVAL naming the rule broken (see the top of this file).
// `object_bytes_max` is osd_max_object_size (capped at 1 GiB here).
absl::Status ValidateLayout(const FileLayout& layout, const DataPools& pools,
                            uint64_t object_bytes_max);

// "stripe_unit=... stripe_count=... object_size=... pool=NAME".
std::string FormatLayout(const FileLayout& layout, const DataPools& pools);
// One field's value; `field` must satisfy IsLayoutField.
std::string FormatLayoutField(const FileLayout& layout, absl::string_view field,
                              const DataPools& pools);

}  // namespace weft::mds
