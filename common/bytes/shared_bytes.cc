#include "common/bytes/shared_bytes.h"

#include <utility>

namespace weft {

SharedBytes::SharedBytes(std::string data) {
  // The string's buffer moves with it; a short string's bytes live inside the
  // string object, which the shared block holds in place.
  auto owned = std::make_shared<const std::string>(std::move(data));
  view_ = *owned;
  owner_ = std::move(owned);
}

}  // namespace weft
