#include "osd/store/object_draft.h"

#include <algorithm>

#include "common/bytes/zeros.h"

namespace weft::osd {

ObjectDraft::ObjectDraft(bool exists, uint64_t size, Version version, int64_t mtime_ns)
    : exists_(exists),
      size_(exists ? size : 0),
      base_limit_(exists ? size : 0),
      version_(version),
      mtime_ns_(mtime_ns) {}

void ObjectDraft::ResetData() {
  reset_ = true;
  size_ = 0;
  base_limit_ = 0;
  extents_.clear();
}

void ObjectDraft::Touch() {
  if (exists_) return;
  exists_ = true;
  ResetData();
  version_ = Version();
  mtime_ns_ = 0;
}

void ObjectDraft::Write(uint64_t offset, SharedBytes data) {
  Touch();
  if (data.empty()) return;
  // A write from 0 that covers everything replaces the object.
  if (offset == 0 && data.size() >= size_) ResetData();
  const uint64_t end = offset + data.size();
  PutExtent(offset, std::move(data));
  size_ = std::max(size_, end);
}

void ObjectDraft::WriteFull(SharedBytes data) {
  Touch();
  ResetData();
  size_ = data.size();
  if (!data.empty()) PutExtent(0, std::move(data));
}

void ObjectDraft::Truncate(uint64_t size) {
  Touch();
  if (size < size_) {
    CutExtentsAt(size);
    base_limit_ = std::min(base_limit_, size);
  }
  size_ = size;
}

void ObjectDraft::Remove() {
  exists_ = false;
  ResetData();
  version_ = Version();
  mtime_ns_ = 0;
}

void ObjectDraft::SetVersion(Version version, int64_t mtime_ns) {
  Touch();
  version_ = version;
  mtime_ns_ = mtime_ns;
}

void ObjectDraft::PutExtent(uint64_t offset, SharedBytes data) {
  const uint64_t end = offset + data.size();
  // An extent starting before `offset` keeps its head, and its tail if it
  // reaches past `end`.
  auto it = extents_.lower_bound(offset);
  if (it != extents_.begin()) {
    auto prev = std::prev(it);
    const uint64_t prev_end = prev->first + prev->second.size();
    if (prev_end > offset) {
      if (prev_end > end) extents_[end] = prev->second.Sub(end - prev->first);
      prev->second = prev->second.Sub(0, offset - prev->first);
    }
  }
  // Extents starting inside [offset, end) are dropped, keeping a tail past end.
  it = extents_.lower_bound(offset);
  while (it != extents_.end() && it->first < end) {
    const uint64_t it_end = it->first + it->second.size();
    if (it_end > end) {
      SharedBytes tail = it->second.Sub(end - it->first);
      extents_.erase(it);
      extents_[end] = std::move(tail);
      break;
    }
    it = extents_.erase(it);
  }
  extents_[offset] = std::move(data);
}

void ObjectDraft::CutExtentsAt(uint64_t size) {
  auto it = extents_.lower_bound(size);
  extents_.erase(it, extents_.end());
  if (!extents_.empty()) {
    auto last = std::prev(extents_.end());
    if (last->first + last->second.size() > size) {
      last->second = last->second.Sub(0, size - last->first);
    }
  }
}

bool ObjectDraft::NeedsBase(uint64_t offset, uint64_t length) const {
  const uint64_t end = std::min(offset + length, base_limit_);
  uint64_t pos = offset;
  // Walk the extents covering [pos, end); any gap is a base byte.
  auto it = extents_.upper_bound(pos);
  if (it != extents_.begin()) --it;
  for (; pos < end; ++it) {
    if (it == extents_.end() || it->first > pos) return true;
    pos = std::max(pos, it->first + it->second.size());
  }
  return false;
}

void ObjectDraft::Overlay(uint64_t offset, std::string* buf) const {
  const uint64_t end = offset + buf->size();
  if (base_limit_ < end) {
    const uint64_t zero_from = std::max(base_limit_, offset);
    std::fill(buf->begin() + static_cast<ptrdiff_t>(zero_from - offset), buf->end(), '\0');
  }
  auto it = extents_.upper_bound(offset);
  if (it != extents_.begin()) --it;
  for (; it != extents_.end() && it->first < end; ++it) {
    const uint64_t from = std::max(offset, it->first);
    const uint64_t to = std::min(end, it->first + it->second.size());
    if (from >= to) continue;
    std::copy_n(it->second.view().begin() + static_cast<ptrdiff_t>(from - it->first), to - from,
                buf->begin() + static_cast<ptrdiff_t>(from - offset));
  }
}

bool ObjectDraft::KnownZero() const {
  if (base_limit_ > 0) return false;
  for (const auto& [offset, data] : extents_) {
    if (!IsZero(data.view())) return false;
  }
  return true;
}

std::optional<absl::string_view> ObjectDraft::Covered(uint64_t offset, uint64_t length) const {
  auto it = extents_.upper_bound(offset);
  if (it == extents_.begin()) return std::nullopt;
  --it;
  if (it->first + it->second.size() < offset + length) return std::nullopt;
  return it->second.view().substr(offset - it->first, length);
}

std::vector<std::pair<uint64_t, uint64_t>> ObjectDraft::ChangedIntervals(uint64_t old_size) const {
  const uint64_t limit = std::min(size_, old_size);
  std::vector<std::pair<uint64_t, uint64_t>> spans;
  for (const auto& [offset, data] : extents_) {
    if (offset >= limit) break;
    spans.emplace_back(offset, std::min<uint64_t>(limit, offset + data.size()));
  }
  if (base_limit_ < limit) spans.emplace_back(base_limit_, limit);
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& span : spans) {
    if (!merged.empty() && span.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, span.second);
    } else {
      merged.push_back(span);
    }
  }
  return merged;
}

std::vector<std::pair<uint64_t, std::string>> ObjectDraft::ChangedRanges(uint64_t old_size) const {
  std::vector<std::pair<uint64_t, std::string>> ranges;
  for (const auto& [begin, end] : ChangedIntervals(old_size)) {
    // Every byte of a changed range comes from an extent or is zero, never
    // from the base, so Overlay fills all of it.
    std::string buf(end - begin, '\0');
    Overlay(begin, &buf);
    ranges.emplace_back(begin, std::move(buf));
  }
  return ranges;
}

uint64_t ObjectDraft::ChangedBytes(uint64_t old_size) const {
  uint64_t total = 0;
  for (const auto& [begin, end] : ChangedIntervals(old_size)) total += end - begin;
  return total;
}

std::vector<std::pair<uint64_t, absl::string_view>> ObjectDraft::ExtentsFrom(
    uint64_t start) const {
  std::vector<std::pair<uint64_t, absl::string_view>> out;
  auto it = extents_.upper_bound(start);
  if (it != extents_.begin()) --it;
  for (; it != extents_.end(); ++it) {
    const uint64_t end = it->first + it->second.size();
    if (end <= start) continue;
    const uint64_t from = std::max(start, it->first);
    out.emplace_back(from, it->second.view().substr(from - it->first));
  }
  return out;
}

}  // namespace weft::osd
