// Immutable bytes with shared ownership: a view into a buffer that stays alive
// while any SharedBytes points into it. Copying one or taking a part of it
// copies no bytes.
//
// The OSD's store holds object data as SharedBytes so that a primary can apply
// a write to its own store from the very buffer it is sending to its replicas
// (osd/pg/pg.cc) instead of from a copy of it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"

namespace weft {

class SharedBytes {
 public:
  SharedBytes() = default;
  // Takes over `data`'s buffer (no copy).
  explicit SharedBytes(std::string data);
  // Borrows `view`, which must lie in memory that `owner` keeps alive and
  // unchanged.
  SharedBytes(std::shared_ptr<const void> owner, absl::string_view view)
      : owner_(std::move(owner)), view_(view) {}

  absl::string_view view() const { return view_; }
  size_t size() const { return view_.size(); }
  bool empty() const { return view_.empty(); }
  // Bytes [pos, pos + n) of these, clamped to the end; pos <= size().
  SharedBytes Sub(size_t pos, size_t n = absl::string_view::npos) const {
    return SharedBytes(owner_, view_.substr(pos, n));
  }

 private:
  std::shared_ptr<const void> owner_;
  absl::string_view view_;
};

}  // namespace weft
