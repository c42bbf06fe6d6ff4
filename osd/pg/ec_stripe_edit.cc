#include "osd/pg/ec_stripe_edit.h"

#include <algorithm>
#include <cstring>

namespace weft::osd {

StripeEdit::StripeEdit(striping::StripeLayout layout, bool exists, uint64_t size, Loader load)
    : layout_(layout),
      load_(std::move(load)),
      exists_(exists),
      size_(exists ? size : 0),
      min_size_(size_),
      base_stripes_(exists ? layout.NumStripes(size) : 0) {}

void StripeEdit::SplitWhole() {
  if (whole_.empty()) return;
  const uint64_t w = layout_.stripe_width();
  for (uint64_t s = 0; s * w < whole_.size(); ++s) {
    std::string stripe = whole_.substr(s * w, w);
    stripe.resize(w, '\0');
    stripes_.emplace(s, std::move(stripe));
  }
  whole_.clear();
}

std::vector<uint64_t> StripeEdit::ChangedStripes() const {
  std::vector<uint64_t> out;
  const uint64_t n = layout_.NumStripes(size_);
  const uint64_t whole = std::min(n, layout_.NumStripes(whole_.size()));
  for (uint64_t s = 0; s < whole; ++s) out.push_back(s);
  for (const auto& [s, data] : stripes_) {
    if (s < n) out.push_back(s);
  }
  return out;
}

absl::string_view StripeEdit::Stripe(uint64_t s) const {
  const uint64_t w = layout_.stripe_width();
  if (s * w < whole_.size()) return absl::string_view(whole_).substr(s * w, w);
  auto it = stripes_.find(s);
  return it == stripes_.end() ? absl::string_view() : absl::string_view(it->second);
}

absl::StatusOr<std::string*> StripeEdit::Get(uint64_t stripe, bool overwrite_all) {
  SplitWhole();
  auto it = stripes_.find(stripe);
  if (it != stripes_.end()) return &it->second;
  std::string content;
  if (stripe < base_stripes_ && !overwrite_all) {
    auto loaded = load_(stripe);
    if (!loaded.ok()) return loaded.status();
    content = std::move(*loaded);
  }
  content.resize(layout_.stripe_width(), '\0');
  return &stripes_.emplace(stripe, std::move(content)).first->second;
}

absl::Status StripeEdit::Write(uint64_t offset, absl::string_view data) {
  exists_ = true;
  const uint64_t w = layout_.stripe_width();
  uint64_t x = offset;
  const uint64_t end = offset + data.size();
  while (x < end) {
    const uint64_t s = x / w;
    const uint64_t in = x % w;
    const uint64_t n = std::min(w - in, end - x);
    auto stripe = Get(s, /*overwrite_all=*/n == w);
    if (!stripe.ok()) return stripe.status();
    std::memcpy((*stripe)->data() + in, data.data() + (x - offset), n);
    x += n;
  }
  size_ = std::max(size_, end);
  return absl::OkStatus();
}

absl::Status StripeEdit::Write(uint64_t offset, std::string data) {
  if (offset != 0 || base_stripes_ != 0 || !stripes_.empty() || !whole_.empty() ||
      data.empty()) {
    return Write(offset, absl::string_view(data));
  }
  exists_ = true;
  size_ = std::max<uint64_t>(size_, data.size());
  whole_ = std::move(data);
  return absl::OkStatus();
}

absl::Status StripeEdit::Truncate(uint64_t size) {
  SplitWhole();
  exists_ = true;
  min_size_ = std::min(min_size_, size);
  if (size < size_) {
    const uint64_t w = layout_.stripe_width();
    if (size % w != 0) {
      auto stripe = Get(size / w, false);
      if (!stripe.ok()) return stripe.status();
      std::memset((*stripe)->data() + size % w, 0, w - size % w);
    }
    const uint64_t keep = layout_.NumStripes(size);
    stripes_.erase(stripes_.lower_bound(keep), stripes_.end());
    base_stripes_ = std::min(base_stripes_, keep);
  }
  size_ = size;
  return absl::OkStatus();
}

void StripeEdit::Replace() {
  stripes_.clear();
  whole_.clear();
  base_stripes_ = 0;
  size_ = 0;
  min_size_ = 0;
  exists_ = true;
}

void StripeEdit::Remove() {
  Replace();
  exists_ = false;
  removed_ = true;
}

}  // namespace weft::osd
