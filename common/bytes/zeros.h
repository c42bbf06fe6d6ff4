// Zero bytes: what holes, padding and empty shards are made of.
#pragma once

#include <cstddef>

#include "absl/strings/string_view.h"

namespace weft {

// Whether every byte of `data` is zero (true for empty data).
bool IsZero(absl::string_view data);

// The length of `data` without its trailing zero bytes.
size_t WithoutTrailingZeros(absl::string_view data);

}  // namespace weft
