#include "common/objects/extent_map.h"

#include <algorithm>

namespace weft::objects {

void ExtentMap::Insert(uint64_t offset, absl::string_view data) {
  if (data.empty()) return;
  const uint64_t end = offset + data.size();
  // The first extent that overlaps or touches [offset, end).
  auto first = extents_.upper_bound(offset);
  if (first != extents_.begin()) {
    auto prev = std::prev(first);
    if (prev->first + prev->second.size() >= offset) first = prev;
  }
  // Fast path of a sequential writer: the new bytes extend one extent, or
  // start the next one once it holds kSplitBytes (growing one string by
  // reallocation copied it over and over and faulted in fresh pages: a fifth
  // of the client's CPU on a streaming write).
  if (first != extents_.end() && first->first <= offset &&
      first->first + first->second.size() == offset &&
      (std::next(first) == extents_.end() || std::next(first)->first > end)) {
    if (first->second.size() >= kSplitBytes) {
      extents_.emplace_hint(std::next(first), offset, std::string(data));
    } else {
      first->second.append(data.data(), data.size());
    }
    bytes_ += data.size();
    return;
  }
  // General case: one new extent covering the new bytes and everything they
  // overlap or touch, old bytes first, new bytes over them.
  uint64_t start = offset, stop = end;
  auto last = first;
  while (last != extents_.end() && last->first <= end) {
    start = std::min(start, last->first);
    stop = std::max<uint64_t>(stop, last->first + last->second.size());
    ++last;
  }
  std::string merged(stop - start, '\0');
  for (auto it = first; it != last; ++it) {
    std::copy(it->second.begin(), it->second.end(), merged.begin() + (it->first - start));
    bytes_ -= it->second.size();
  }
  std::copy(data.begin(), data.end(), merged.begin() + (offset - start));
  extents_.erase(first, last);
  bytes_ += merged.size();
  extents_.emplace(start, std::move(merged));
}

template <typename Fn>
void ExtentMap::ForEachOverlap(uint64_t offset, uint64_t length, Fn fn) const {
  const uint64_t end = offset + length;
  auto it = extents_.upper_bound(offset);
  if (it != extents_.begin()) --it;
  for (; it != extents_.end() && it->first < end; ++it) {
    const uint64_t from = std::max(offset, it->first);
    const uint64_t to = std::min<uint64_t>(end, it->first + it->second.size());
    if (from < to) fn(from, absl::string_view(it->second).substr(from - it->first, to - from));
  }
}

void ExtentMap::Overlay(uint64_t offset, std::string* out) const {
  ForEachOverlap(offset, out->size(), [&](uint64_t at, absl::string_view bytes) {
    std::copy(bytes.begin(), bytes.end(), out->begin() + (at - offset));
  });
}

ExtentMap ExtentMap::Slice(uint64_t offset, uint64_t length) const {
  ExtentMap out;
  ForEachOverlap(offset, length, [&](uint64_t at, absl::string_view bytes) {
    out.extents_.emplace(at, std::string(bytes));
    out.bytes_ += bytes.size();
  });
  return out;
}

void ExtentMap::TruncateAt(uint64_t size) {
  auto it = extents_.upper_bound(size);
  if (it != extents_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second.size() > size) {
      bytes_ -= prev->second.size() - (size - prev->first);
      prev->second.resize(size - prev->first);
      if (prev->second.empty()) extents_.erase(prev);
    }
  }
  for (auto e = it; e != extents_.end(); ++e) bytes_ -= e->second.size();
  extents_.erase(it, extents_.end());
}

ExtentMap ExtentMap::SplitFrom(uint64_t offset) {
  ExtentMap tail;
  auto it = extents_.lower_bound(offset);
  if (it != extents_.begin()) {
    auto prev = std::prev(it);
    const uint64_t prev_end = prev->first + prev->second.size();
    if (prev_end > offset) {
      tail.extents_.emplace(offset, prev->second.substr(offset - prev->first));
      tail.bytes_ += prev_end - offset;
      prev->second.resize(offset - prev->first);
    }
  }
  while (it != extents_.end()) {
    tail.bytes_ += it->second.size();
    tail.extents_.insert(extents_.extract(it++));
  }
  bytes_ -= tail.bytes_;
  return tail;
}

uint64_t ExtentMap::end() const {
  if (extents_.empty()) return 0;
  const auto& last = *extents_.rbegin();
  return last.first + last.second.size();
}

}  // namespace weft::objects
