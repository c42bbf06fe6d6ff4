#include "common/bytes/byte_chain.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace weft {

ByteChain::ByteChain(std::string data) {
  if (!data.empty()) Append(SharedBytes(std::move(data)));
}

void ByteChain::Append(SharedBytes piece) {
  if (piece.empty()) return;
  size_ += piece.size();
  pieces_.push_back(std::move(piece));
}

void ByteChain::Clear() {
  pieces_.clear();
  size_ = 0;
}

template <class F>
void ByteChain::Visit(size_t pos, size_t n, F f) const {
  if (pos >= size_) return;
  n = std::min(n, size_ - pos);
  size_t piece_start = 0;
  size_t done = 0;
  for (const SharedBytes& piece : pieces_) {
    if (done == n) return;
    const size_t piece_end = piece_start + piece.size();
    if (piece_end > pos + done) {
      const size_t from = pos + done - piece_start;
      const size_t len = std::min(piece.size() - from, n - done);
      if (!f(piece.view().substr(from, len), done)) return;
      done += len;
    }
    piece_start = piece_end;
  }
}

size_t ByteChain::CopyTo(size_t pos, size_t n, char* out) const {
  size_t copied = 0;
  Visit(pos, n, [&](absl::string_view part, size_t at) {
    std::memcpy(out + at, part.data(), part.size());
    copied += part.size();
    return true;
  });
  return copied;
}

bool ByteChain::EqualsAt(size_t pos, absl::string_view expected) const {
  if (pos > size_ || size_ - pos < expected.size()) return false;
  bool equal = true;
  Visit(pos, expected.size(), [&](absl::string_view part, size_t at) {
    equal = std::memcmp(part.data(), expected.data() + at, part.size()) == 0;
    return equal;
  });
  return equal;
}

void ByteChain::AppendTo(std::string* out) const {
  out->reserve(out->size() + size_);
  for (const SharedBytes& piece : pieces_) out->append(piece.view().data(), piece.size());
}

std::string ByteChain::ToString() const {
  std::string out;
  AppendTo(&out);
  return out;
}

}  // namespace weft
