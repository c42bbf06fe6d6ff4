// Bytes of one file held in memory, by file offset: the client's buffered
// writes. Extents never overlap; a sequential writer's bytes go into touching
// extents of about kSplitBytes, which the flush regroups by object.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace weft::objects {

class ExtentMap {
 public:
  // A sequential writer's bytes are kept in extents of about this size;
  // extents may touch (only overlapping or touching writes merge them).
  static constexpr uint64_t kSplitBytes = 1 << 20;

  // Stores `data` at `offset`, replacing what overlaps it.
  void Insert(uint64_t offset, absl::string_view data);
  // Copies every byte this map holds in [offset, offset + out->size()) into
  // *out at the same relative position; other bytes of *out are untouched.
  void Overlay(uint64_t offset, std::string* out) const;
  // The extents overlapping [offset, offset + length), clipped to it.
  ExtentMap Slice(uint64_t offset, uint64_t length) const;
  // Drops every byte at or past `size`.
  void TruncateAt(uint64_t size);
  // Moves every byte at or past `offset` into the map returned. Extents wholly
  // past it move without a copy; only one straddling it is copied in part.
  ExtentMap SplitFrom(uint64_t offset);

  bool empty() const { return extents_.empty(); }
  uint64_t bytes() const { return bytes_; }
  uint64_t end() const;  // one past the last byte held; 0 when empty
  const std::map<uint64_t, std::string>& extents() const { return extents_; }

 private:
  // Calls fn(offset, bytes) for each held run within [offset, offset + length).
  template <typename Fn>
  void ForEachOverlap(uint64_t offset, uint64_t length, Fn fn) const;

  std::map<uint64_t, std::string> extents_;  // offset -> bytes
  uint64_t bytes_ = 0;
};

}  // namespace weft::objects
