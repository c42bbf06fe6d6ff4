#include "common/striping/striping.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace weft::striping {

absl::Status Layout::Validate() const {
  if (stripe_unit == 0 || stripe_count == 0 || object_size == 0) {
    return absl::InvalidArgumentError("layout: stripe_unit, stripe_count, object_size must be > 0");
  }
  if (object_size % stripe_unit != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "layout: stripe_unit %d does not divide object_size %d", stripe_unit, object_size));
  }
  return absl::OkStatus();
}

ObjectPos FileToObject(const Layout& l, uint64_t offset) {
  const uint64_t stripes_per_object = l.object_size / l.stripe_unit;
  const uint64_t block = offset / l.stripe_unit;
  const uint64_t stripe = block / l.stripe_count;
  const uint64_t pos = block % l.stripe_count;
  const uint64_t objectset = stripe / stripes_per_object;
  ObjectPos out;
  out.objno = objectset * l.stripe_count + pos;
  out.offset = (stripe % stripes_per_object) * l.stripe_unit + offset % l.stripe_unit;
  return out;
}

uint64_t ObjectToFile(const Layout& l, uint64_t objno, uint64_t offset) {
  const uint64_t stripes_per_object = l.object_size / l.stripe_unit;
  const uint64_t objectset = objno / l.stripe_count;
  const uint64_t pos = objno % l.stripe_count;
  const uint64_t stripe = objectset * stripes_per_object + offset / l.stripe_unit;
  const uint64_t block = stripe * l.stripe_count + pos;
  return block * l.stripe_unit + offset % l.stripe_unit;
}

std::vector<ObjectExtent> FileRangeToObjects(const Layout& l, uint64_t offset, uint64_t length) {
  std::vector<ObjectExtent> out;  // few objects per request: linear search is fine
  uint64_t done = 0;
  while (done < length) {
    const uint64_t file_off = offset + done;
    const ObjectPos p = FileToObject(l, file_off);
    const uint64_t len = std::min(l.stripe_unit - file_off % l.stripe_unit, length - done);
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const ObjectExtent& e) { return e.objno == p.objno; });
    if (it == out.end()) {
      out.push_back(ObjectExtent{p.objno, p.offset, 0, {}});
      it = out.end() - 1;
    }
    // Successive rows of one object are adjacent in the object.
    it->length = p.offset + len - it->offset;
    it->pieces.push_back(BufferExtent{done, len});
    done += len;
  }
  std::sort(out.begin(), out.end(),
            [](const ObjectExtent& a, const ObjectExtent& b) { return a.objno < b.objno; });
  return out;
}

uint64_t ObjectBytesBelow(const Layout& l, uint64_t objno, uint64_t file_size) {
  const uint64_t set_start = (objno / l.stripe_count) * l.set_bytes();
  if (file_size <= set_start) return 0;
  const uint64_t rel = file_size - set_start;
  if (rel >= l.set_bytes()) return l.object_size;
  const uint64_t row = l.stripe_unit * l.stripe_count;
  const uint64_t pos = objno % l.stripe_count;
  const uint64_t rem = rel % row;
  const uint64_t before = pos * l.stripe_unit;
  const uint64_t partial = rem <= before ? 0 : std::min(rem - before, l.stripe_unit);
  return (rel / row) * l.stripe_unit + partial;
}

std::optional<ObjectTrim> TrimOf(const Layout& l, uint64_t objno, uint64_t old_size,
                                 uint64_t new_size) {
  const uint64_t had = ObjectBytesBelow(l, objno, old_size);
  const uint64_t keep = ObjectBytesBelow(l, objno, new_size);
  if (keep >= had) return std::nullopt;
  return ObjectTrim{objno, keep};
}

std::pair<uint64_t, uint64_t> TruncateRange(const Layout& l, uint64_t old_size,
                                            uint64_t new_size) {
  if (new_size >= old_size) return {0, 0};
  const uint64_t first_set = new_size / l.set_bytes();
  const uint64_t last_set = (old_size - 1) / l.set_bytes();
  return {first_set * l.stripe_count, (last_set + 1) * l.stripe_count};
}

std::vector<ObjectTrim> TruncatePlan(const Layout& l, uint64_t old_size, uint64_t new_size) {
  std::vector<ObjectTrim> out;
  const auto [first, last] = TruncateRange(l, old_size, new_size);
  for (uint64_t objno = first; objno < last; ++objno) {
    if (auto trim = TrimOf(l, objno, old_size, new_size)) out.push_back(*trim);
  }
  return out;
}

std::string DataObjectName(uint64_t ino, uint64_t objno) {
  return absl::StrFormat("%x.%08x", ino, objno);
}

std::string DataObjectPrefix(uint64_t ino) { return absl::StrFormat("%x.", ino); }

std::optional<uint64_t> DataObjectNumber(uint64_t ino, absl::string_view name) {
  const std::string prefix = DataObjectPrefix(ino);
  uint64_t objno = 0;
  if (!absl::StartsWith(name, prefix) ||
      !absl::SimpleHexAtoi(name.substr(prefix.size()), &objno)) {
    return std::nullopt;
  }
  // Only the name DataObjectName gives (lower case, no sign, no extra zeros).
  if (DataObjectName(ino, objno) != name) return std::nullopt;
  return objno;
}

}  // namespace weft::striping
