// The primary's view of an erasure-coded object while it applies one request:
// the resolved mutations are applied to whole stripes held in memory, loading
// a stripe's old content only when a mutation covers it partially (the
// read-modify-write of a partial-stripe write, a truncate inside a stripe).
// Full-stripe writes never load anything. The result is the set of changed
// stripes, the new logical size, and whether the object was replaced whole.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/striping/stripe_layout.h"

namespace weft::osd {

class StripeEdit {
 public:
  // Returns stripe `s` of the object as stored (stripe_width bytes, zeros past
  // the logical size).
  using Loader = std::function<absl::StatusOr<std::string>(uint64_t stripe)>;

  StripeEdit(striping::StripeLayout layout, bool exists, uint64_t size, Loader load);

  absl::Status Write(uint64_t offset, absl::string_view data);
  absl::Status Truncate(uint64_t size);
  void Replace();  // WRITE_FULL: the content starts over empty
  void Remove();
  void Create() { exists_ = true; }

  bool exists() const { return exists_; }
  uint64_t size() const { return size_; }
  // True when no old stripe survives: the shards are rewritten whole.
  bool rewritten() const { return base_stripes_ == 0; }
  bool removed() const { return removed_; }
  // Changed stripes (stripe_width bytes each) below NumStripes(size()).
  const std::map<uint64_t, std::string>& stripes() const { return stripes_; }

 private:
  absl::StatusOr<std::string*> Get(uint64_t stripe, bool overwrite_all);

  const striping::StripeLayout layout_;
  const Loader load_;
  bool exists_;
  bool removed_ = false;
  uint64_t size_;
  uint64_t base_stripes_;  // stripes below this still hold the stored content
  std::map<uint64_t, std::string> stripes_;
};

}  // namespace weft::osd
