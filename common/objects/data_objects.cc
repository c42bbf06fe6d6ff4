#include "common/objects/data_objects.h"

#include <algorithm>
#include <optional>
#include <string>

#include "common/status/status.h"
#include "common/striping/striping.h"

namespace weft::objects {

absl::StatusOr<std::vector<uint64_t>> DataObjectsIn(Objects* objects, PoolId pool,
                                                    uint64_t ino, uint64_t first, uint64_t last) {
  std::vector<uint64_t> out;
  if (last <= first) return out;
  if (last - first <= kListDataObjectsAbove) {
    out.reserve(last - first);
    for (uint64_t objno = first; objno < last; ++objno) out.push_back(objno);
    return out;
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names,
                   objects->List(pool, striping::DataObjectPrefix(ino)));
  for (const std::string& name : names) {
    std::optional<uint64_t> objno = striping::DataObjectNumber(ino, name);
    if (objno && *objno >= first && *objno < last) out.push_back(*objno);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace weft::objects
