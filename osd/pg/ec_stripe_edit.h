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
#include <vector>

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
  // The same, taking the bytes: a write from 0 into an edit that holds no
  // content yet (a new or replaced object) keeps `data` as is instead of
  // copying it into stripes.
  absl::Status Write(uint64_t offset, std::string data);
  absl::Status Truncate(uint64_t size);
  void Replace();  // WRITE_FULL: the content starts over empty
  void Remove();
  void Create() { exists_ = true; }

  bool exists() const { return exists_; }
  uint64_t size() const { return size_; }
  // The smallest size the object had during the edit: stored stripes past it
  // were cut (by a truncate) and must not show through a later extension.
  uint64_t min_size() const { return min_size_; }
  // True when no old stripe survives: the shards are rewritten whole.
  bool rewritten() const { return base_stripes_ == 0; }
  bool removed() const { return removed_; }
  // The changed stripes below NumStripes(size()), in order.
  std::vector<uint64_t> ChangedStripes() const;
  // The new content of stripe `s`: at most stripe_width bytes, zeros after
  // them; empty for a stripe that is not changed.
  absl::string_view Stripe(uint64_t s) const;

 private:
  absl::StatusOr<std::string*> Get(uint64_t stripe, bool overwrite_all);
  // Moves `whole_` into stripes_ (before a change it cannot take as is).
  void SplitWhole();

  const striping::StripeLayout layout_;
  const Loader load_;
  bool exists_;
  bool removed_ = false;
  uint64_t size_;
  uint64_t min_size_;
  uint64_t base_stripes_;  // stripes below this still hold the stored content
  std::map<uint64_t, std::string> stripes_;
  // Or, instead of stripes_: the object's content from offset 0 (stripes
  // past its end are zeros), as written.
  std::string whole_;
};

}  // namespace weft::osd
