#include "mds/fs/layout.h"

#include <algorithm>
#include <cerrno>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/config/config.h"
#include "common/status/status.h"

namespace weft::mds {
namespace {

constexpr absl::string_view kDirPrefix = "weft.dir.layout";
constexpr absl::string_view kFilePrefix = "weft.file.layout";
constexpr uint64_t kSizeMax = 1ull << 40;
constexpr absl::string_view kFields[] = {"stripe_unit", "stripe_count", "object_size", "pool"};

absl::Status Invalid(absl::string_view message) {
  return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL, message);
}

// Client text for a message: escaped, at most 64 bytes of it.
std::string Quoted(absl::string_view text) {
  std::string out = absl::StrCat("'", absl::CHexEscape(text.substr(0, 64)));
  if (text.size() > 64) out += "...";
  return out + "'";
}

// Decimal digits only: no sign, no spaces, at most 13 of them (< 2^44).
std::optional<uint64_t> Digits(absl::string_view text) {
  if (text.empty() || text.size() > 13 ||
      text.find_first_not_of("0123456789") != absl::string_view::npos) {
    return std::nullopt;
  }
  uint64_t n = 0;
  for (char c : text) n = n * 10 + static_cast<uint64_t>(c - '0');
  return n;
}

absl::StatusOr<uint64_t> ParseCount(absl::string_view text, absl::string_view what) {
  std::optional<uint64_t> n = Digits(text);
  if (!n) return Invalid(absl::StrCat(what, ": not a number: ", Quoted(text)));
  if (*n > kSizeMax) return Invalid(absl::StrCat(what, ": ", Quoted(text), " is too large"));
  return *n;
}

absl::StatusOr<PoolId> ResolvePool(absl::string_view text, const DataPools& pools) {
  for (const auto& [id, name] : pools.names) {
    if (name == text) return id;
  }
  std::optional<uint64_t> id = Digits(text);
  if (id && *id > 0 && *id <= UINT32_MAX) return PoolId(static_cast<uint32_t>(*id));
  return Invalid(absl::StrCat("pool: no pool named ", Quoted(text)));
}

absl::Status SetField(FileLayout* layout, absl::string_view field, absl::string_view value,
                      const DataPools& pools) {
  if (field == "pool") {
    ASSIGN_OR_RETURN(layout->pool, ResolvePool(value, pools));
  } else if (field == "stripe_count") {
    ASSIGN_OR_RETURN(layout->stripe.stripe_count, ParseCount(value, field));
  } else {
    auto size = ParseLayoutSize(value);
    if (!size.ok()) return Invalid(absl::StrCat(field, ": ", size.status().message()));
    (field == "stripe_unit" ? layout->stripe.stripe_unit : layout->stripe.object_size) = *size;
  }
  return absl::OkStatus();
}

std::string PoolList(const DataPools& pools) {
  std::string out;
  for (PoolId id : pools.data_pools) {
    absl::StrAppend(&out, out.empty() ? "" : " ", pools.NameOf(id));
  }
  return out.empty() ? "none" : out;
}

}  // namespace

bool DataPools::IsDataPool(PoolId id) const {
  return std::find(data_pools.begin(), data_pools.end(), id) != data_pools.end();
}

std::string DataPools::NameOf(PoolId id) const {
  auto it = names.find(id);
  return it == names.end() ? absl::StrCat(id.value()) : it->second;
}

LayoutXattr ParseLayoutXattrName(absl::string_view name) {
  for (auto [prefix, target] : {std::pair{kDirPrefix, LayoutTarget::kDir},
                                std::pair{kFilePrefix, LayoutTarget::kFile}}) {
    if (!absl::StartsWith(name, prefix)) continue;
    absl::string_view rest = name.substr(prefix.size());
    if (rest.empty()) return {target, ""};
    if (rest.size() > 1 && rest.front() == '.') return {target, std::string(rest.substr(1))};
  }
  return {};
}

bool IsLayoutField(absl::string_view field) {
  return std::find(std::begin(kFields), std::end(kFields), field) != std::end(kFields);
}

absl::StatusOr<uint64_t> ParseLayoutSize(absl::string_view text) {
  return ParseSize(text, kSizeMax);
}

absl::StatusOr<FileLayout> ApplyLayoutText(const FileLayout& base, absl::string_view field,
                                           absl::string_view value, const DataPools& pools,
                                           uint64_t object_bytes_max) {
  FileLayout out = base;
  if (!field.empty()) {
    if (!IsLayoutField(field)) return Invalid(absl::StrCat("unknown layout field ", Quoted(field)));
    RETURN_IF_ERROR(SetField(&out, field, absl::StripAsciiWhitespace(value), pools));
  } else {
    std::vector<absl::string_view> pairs =
        absl::StrSplit(value, absl::ByAnyChar(" \t\n\r\v\f"), absl::SkipEmpty());
    if (pairs.empty()) {
      return Invalid("empty layout: expected key=value pairs of stripe_unit, stripe_count, "
                     "object_size, pool");
    }
    std::set<absl::string_view> seen;
    for (absl::string_view pair : pairs) {
      const size_t eq = pair.find('=');
      if (eq == absl::string_view::npos || eq == 0) {
        return Invalid(absl::StrCat("expected key=value, got ", Quoted(pair)));
      }
      absl::string_view key = pair.substr(0, eq);
      if (!IsLayoutField(key)) {
        return Invalid(absl::StrCat("unknown layout field ", Quoted(key),
                                    " (known: stripe_unit stripe_count object_size pool)"));
      }
      if (!seen.insert(key).second) return Invalid(absl::StrCat(key, " given twice"));
      RETURN_IF_ERROR(SetField(&out, key, pair.substr(eq + 1), pools));
    }
  }
  RETURN_IF_ERROR(ValidateLayout(out, pools, object_bytes_max));
  return out;
}

absl::Status ValidateLayout(const FileLayout& layout, const DataPools& pools,
                            uint64_t object_bytes_max) {
  const striping::Layout& s = layout.stripe;
  const uint64_t object_max = object_bytes_max == 0
                                  ? kLayoutObjectBytesMax
                                  : std::min(object_bytes_max, kLayoutObjectBytesMax);
  if (s.stripe_unit == 0 || s.stripe_unit % kStripeUnitAlignBytes != 0) {
    return Invalid(absl::StrFormat("stripe_unit %d is not a positive multiple of %d",
                                   s.stripe_unit, kStripeUnitAlignBytes));
  }
  if (s.stripe_count < 1 || s.stripe_count > kStripeCountMax) {
    return Invalid(absl::StrFormat("stripe_count %d is outside [1, %d]", s.stripe_count,
                                   kStripeCountMax));
  }
  if (s.object_size == 0 || s.object_size > object_max) {
    return Invalid(absl::StrFormat(
        "object_size %d is outside [1, %d] (the OSDs' osd_max_object_size, at most 1 GiB)",
        s.object_size, object_max));
  }
  if (s.object_size % s.stripe_unit != 0) {
    return Invalid(absl::StrFormat("stripe_unit %d does not divide object_size %d", s.stripe_unit,
                                   s.object_size));
  }
  if (!pools.IsDataPool(layout.pool)) {
    const bool exists = pools.names.contains(layout.pool);
    return Invalid(absl::StrCat(
        "pool ", pools.NameOf(layout.pool), exists ? " is not a data pool of this filesystem"
                                                   : " does not exist",
        " (data pools: ", PoolList(pools), "; add one with `weft fs add-data-pool`)"));
  }
  return absl::OkStatus();
}

std::string FormatLayout(const FileLayout& layout, const DataPools& pools) {
  return absl::StrFormat("stripe_unit=%d stripe_count=%d object_size=%d pool=%s",
                         layout.stripe.stripe_unit, layout.stripe.stripe_count,
                         layout.stripe.object_size, pools.NameOf(layout.pool));
}

std::string FormatLayoutField(const FileLayout& layout, absl::string_view field,
                              const DataPools& pools) {
  if (field == "stripe_unit") return absl::StrCat(layout.stripe.stripe_unit);
  if (field == "stripe_count") return absl::StrCat(layout.stripe.stripe_count);
  if (field == "object_size") return absl::StrCat(layout.stripe.object_size);
  return pools.NameOf(layout.pool);
}

}  // namespace weft::mds
