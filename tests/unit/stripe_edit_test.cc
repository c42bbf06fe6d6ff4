// StripeEdit (the EC primary's in-memory edit of an object) against a byte
// model: random writes (by view and by taking the bytes), truncates and
// replaces on new and existing objects; loads only of stripes the edit must
// merge with.
#include "osd/pg/ec_stripe_edit.h"

#include <catch2/catch.hpp>

#include <random>
#include <set>
#include <string>

namespace weft::osd {
namespace {

std::string Bytes(size_t n, std::mt19937& rng) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>('a' + rng() % 26);
  return s;
}

// The content the edit describes, as BuildSubWrites stores it: stripe s from
// the edit when it changed it, else zeros past what a truncate cut
// (min_size()), else from `stored`; cut at size().
std::string Content(const StripeEdit& edit, const striping::StripeLayout& layout,
                    const std::string& stored) {
  const uint64_t w = layout.stripe_width();
  std::string out = stored;
  out.resize(layout.NumStripes(edit.size()) * w, '\0');
  std::set<uint64_t> changed;
  for (uint64_t s : edit.ChangedStripes()) {
    REQUIRE(changed.insert(s).second);  // each once
    REQUIRE(s < layout.NumStripes(edit.size()));
    std::string stripe(edit.Stripe(s));
    REQUIRE(stripe.size() <= w);
    stripe.resize(w, '\0');
    out.replace(s * w, w, stripe);
  }
  // Nothing of the stored object survives a replace, nor past a cut.
  const uint64_t kept = edit.rewritten() ? 0 : layout.NumStripes(edit.min_size());
  for (uint64_t s = kept; s < layout.NumStripes(edit.size()); ++s) {
    if (changed.count(s) == 0) out.replace(s * w, w, std::string(w, '\0'));
  }
  out.resize(edit.size());
  return out;
}

}  // namespace

TEST_CASE("stripe edit: random writes - truncates and replaces match a byte model", "[ec]") {
  const striping::StripeLayout layout{4, 2, 4096};
  const uint64_t w = layout.stripe_width();
  std::mt19937 rng(7);
  for (int round = 0; round < 400; ++round) {
    const bool exists = rng() % 2 == 0;
    std::string stored = exists ? Bytes(rng() % (5 * w), rng) : std::string();
    std::string padded = stored;
    padded.resize(layout.NumStripes(stored.size()) * w, '\0');
    std::set<uint64_t> loaded;
    StripeEdit edit(layout, exists, stored.size(), [&](uint64_t s) -> absl::StatusOr<std::string> {
      REQUIRE(s * w < padded.size());
      loaded.insert(s);
      return padded.substr(s * w, w);
    });
    std::string model = stored;
    const int ops = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < ops; ++i) {
      switch (rng() % 5) {
        case 0:
        case 1: {  // a write, often from 0 (the case the edit keeps whole)
          const uint64_t at = rng() % 2 == 0 ? 0 : rng() % (4 * w);
          std::string data = Bytes(1 + rng() % (3 * w), rng);
          if (model.size() < at + data.size()) model.resize(at + data.size(), '\0');
          model.replace(at, data.size(), data);
          if (rng() % 2 == 0) {
            REQUIRE(edit.Write(at, std::move(data)).ok());
          } else {
            REQUIRE(edit.Write(at, absl::string_view(data)).ok());
          }
          break;
        }
        case 2: {
          const uint64_t size = rng() % (5 * w);
          model.resize(size, '\0');
          REQUIRE(edit.Truncate(size).ok());
          break;
        }
        case 3: {  // WRITE_FULL
          std::string data = Bytes(rng() % (3 * w), rng);
          model = data;
          edit.Replace();
          REQUIRE(edit.Write(0, std::move(data)).ok());
          break;
        }
        default: {  // a whole-stripe write never loads its stripe
          const uint64_t s = rng() % 4;
          std::string data = Bytes(w, rng);
          if (model.size() < (s + 1) * w) model.resize((s + 1) * w, '\0');
          model.replace(s * w, w, data);
          REQUIRE(edit.Write(s * w, std::move(data)).ok());
          break;
        }
      }
    }
    INFO("round " << round);
    REQUIRE(edit.exists());
    REQUIRE(edit.size() == model.size());
    REQUIRE(Content(edit, layout, padded) == model);
    for (uint64_t s : loaded) REQUIRE(s < layout.NumStripes(stored.size()));
  }
}

TEST_CASE("stripe edit: a write from 0 into a new object is kept without loading", "[ec]") {
  const striping::StripeLayout layout{4, 2, 4096};
  StripeEdit edit(layout, false, 0, [](uint64_t) -> absl::StatusOr<std::string> {
    FAIL("nothing to load");
    return std::string();
  });
  std::string data(3 * layout.stripe_width() + 100, 'x');
  REQUIRE(edit.Write(0, std::string(data)).ok());
  REQUIRE(edit.rewritten());
  REQUIRE(edit.ChangedStripes() == std::vector<uint64_t>{0, 1, 2, 3});
  REQUIRE(edit.Stripe(3) == std::string(100, 'x'));  // zeros follow
  // A later write into it splits it into stripes and keeps every byte.
  REQUIRE(edit.Write(10, absl::string_view("yy")).ok());
  data.replace(10, 2, "yy");
  REQUIRE(edit.Stripe(0).substr(0, 20) == data.substr(0, 20));
  REQUIRE(edit.Stripe(3).substr(0, 100) == std::string(100, 'x'));
  REQUIRE(edit.size() == data.size());
}

}  // namespace weft::osd

namespace weft::osd {
TEST_CASE("stripe edit: truncate down then write past the cut", "[ec]") {
  const striping::StripeLayout layout{4, 2, 4096};
  const uint64_t w = layout.stripe_width();
  std::string stored(5 * w, 's');
  StripeEdit edit(layout, true, stored.size(),
                  [&](uint64_t s) -> absl::StatusOr<std::string> { return stored.substr(s * w, w); });
  REQUIRE(edit.Truncate(w).ok());
  REQUIRE(edit.Write(3 * w, std::string(w, 'n')).ok());
  std::string model = std::string(w, 's') + std::string(2 * w, '\0') + std::string(w, 'n');
  REQUIRE(Content(edit, layout, stored) == model);
}
}  // namespace weft::osd
