// Bytes held as a sequence of SharedBytes pieces: what a reader gets when it
// takes received data where it landed (in gRPC's receive slices) instead of
// having it copied into one string. Copying a ByteChain copies no bytes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/bytes/shared_bytes.h"

namespace weft {

class ByteChain {
 public:
  ByteChain() = default;
  // One piece that owns `data` (no copy).
  explicit ByteChain(std::string data);

  void Append(SharedBytes piece);
  void Clear();

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::vector<SharedBytes>& pieces() const { return pieces_; }

  // Copies bytes [pos, pos + n), clamped to the end, to `out`; returns how many.
  size_t CopyTo(size_t pos, size_t n, char* out) const;
  // Whether bytes [pos, pos + expected.size()) exist and equal `expected`.
  bool EqualsAt(size_t pos, absl::string_view expected) const;
  void AppendTo(std::string* out) const;
  std::string ToString() const;

  friend bool operator==(const ByteChain& chain, absl::string_view bytes) {
    return chain.size() == bytes.size() && chain.EqualsAt(0, bytes);
  }

 private:
  // Calls f(view of piece part, offset of that part within [pos, pos + n)) for
  // the parts of the pieces that cover [pos, pos + n), clamped to the end, in
  // order, until f returns false.
  template <class F>
  void Visit(size_t pos, size_t n, F f) const;

  std::vector<SharedBytes> pieces_;
  size_t size_ = 0;
};

}  // namespace weft
