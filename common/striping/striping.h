// File striping: how a file's bytes map onto its data objects (Ceph's RAID-0
// scheme), the reverse, and which objects a truncate must trim or remove.
//
// A layout has a stripe unit (su), a stripe count (sc) and an object size
// (os, a multiple of su). The file is cut into stripe units; consecutive units
// go round-robin over sc objects (one "stripe row" is su*sc bytes). Once each
// of the sc objects holds os bytes, the next "object set" of sc objects starts.
//
//   block     = offset / su
//   stripe    = block / sc          (row)       pos = block % sc
//   objectset = stripe / (os / su)
//   objno     = objectset * sc + pos
//   obj_off   = (stripe % (os / su)) * su + offset % su
//
// Data object names: "<ino hex>.<objno as 8 hex digits>" (DataObjectName).
// The MDS purges a file's objects after unlink with these names too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace weft::striping {

struct Layout {
  uint64_t stripe_unit = 0;   // bytes
  uint64_t stripe_count = 0;
  uint64_t object_size = 0;   // bytes, a multiple of stripe_unit

  // InvalidArgument unless all are > 0 and stripe_unit divides object_size.
  absl::Status Validate() const;
  uint64_t set_bytes() const { return object_size * stripe_count; }
  bool operator==(const Layout&) const = default;
};

// One piece of the caller's buffer that maps into an object.
struct BufferExtent {
  uint64_t buffer_offset = 0;  // from the start of the file range
  uint64_t length = 0;
};

// The part of one object that a file range touches. Within one object the
// touched bytes are contiguous ([offset, offset+length)) even when the file
// range spans several stripe rows; `pieces` say where each part of it sits in
// the caller's buffer, in object order.
struct ObjectExtent {
  uint64_t objno = 0;
  uint64_t offset = 0;  // in the object
  uint64_t length = 0;
  std::vector<BufferExtent> pieces;
};

// The position of file byte `offset`.
struct ObjectPos {
  uint64_t objno = 0;
  uint64_t offset = 0;  // in the object
};
ObjectPos FileToObject(const Layout& layout, uint64_t offset);

// The file offset of byte `offset` of object `objno` (the reverse).
uint64_t ObjectToFile(const Layout& layout, uint64_t objno, uint64_t offset);

// The objects the file range [offset, offset+length) touches, sorted by objno.
// `layout` must be valid.
std::vector<ObjectExtent> FileRangeToObjects(const Layout& layout, uint64_t offset,
                                             uint64_t length);

// How many bytes of object `objno` hold file bytes below `file_size`: the
// size the object has when the file is exactly `file_size` bytes long and
// fully written.
uint64_t ObjectBytesBelow(const Layout& layout, uint64_t objno, uint64_t file_size);

// What a truncate from `old_size` to `new_size` (< old_size) does to one object.
struct ObjectTrim {
  uint64_t objno = 0;
  uint64_t keep_bytes = 0;  // 0: remove the object; else truncate it to this size
};
// What a truncate from `old_size` to `new_size` does to object `objno`; none
// when the object keeps every byte it may hold.
std::optional<ObjectTrim> TrimOf(const Layout& layout, uint64_t objno, uint64_t old_size,
                                 uint64_t new_size);
// The objects a truncate may touch: [first, last) by objno.
std::pair<uint64_t, uint64_t> TruncateRange(const Layout& layout, uint64_t old_size,
                                            uint64_t new_size);
// Every object that may hold bytes in [new_size, old_size), sorted by objno.
std::vector<ObjectTrim> TruncatePlan(const Layout& layout, uint64_t old_size, uint64_t new_size);

// "<ino hex>.<objno 8 hex>", e.g. "10000.0000002a".
std::string DataObjectName(uint64_t ino, uint64_t objno);
// "<ino hex>.": what the names of `ino`'s data objects begin with.
std::string DataObjectPrefix(uint64_t ino);
// The object number in a data object name of `ino`; none if it is not one.
std::optional<uint64_t> DataObjectNumber(uint64_t ino, absl::string_view name);

}  // namespace weft::striping
