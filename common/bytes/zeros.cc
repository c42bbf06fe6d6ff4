#include "common/bytes/zeros.h"

#include <cstring>

namespace weft {

bool IsZero(absl::string_view data) {
  // The first byte is zero and every byte equals the next one.
  return data.empty() ||
         (data[0] == '\0' && std::memcmp(data.data(), data.data() + 1, data.size() - 1) == 0);
}

size_t WithoutTrailingZeros(absl::string_view data) {
  constexpr size_t kStep = 4096;  // whole pages of zeros by memcmp, then byte by byte
  size_t end = data.size();
  while (end > 0) {
    const size_t from = end > kStep ? end - kStep : 0;
    if (!IsZero(data.substr(from, end - from))) break;
    end = from;
  }
  while (end > 0 && data[end - 1] == '\0') --end;
  return end;
}

}  // namespace weft
