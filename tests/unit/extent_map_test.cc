// ExtentMap (the client's buffered writes) against a byte-array model.
#include <catch2/catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "common/objects/extent_map.h"

namespace weft::objects {
namespace {

// The model: every byte position, and whether it is held.
struct Model {
  std::string bytes;
  std::vector<bool> held;
  void Put(uint64_t offset, const std::string& data) {
    if (bytes.size() < offset + data.size()) {
      bytes.resize(offset + data.size(), '\0');
      held.resize(offset + data.size(), false);
    }
    for (size_t i = 0; i < data.size(); ++i) {
      bytes[offset + i] = data[i];
      held[offset + i] = true;
    }
  }
  uint64_t HeldBytes() const {
    uint64_t n = 0;
    for (bool h : held) n += h;
    return n;
  }
};

// Extents are sorted, disjoint and not touching, and hold what the model holds.
void CheckAgainst(const ExtentMap& m, const Model& model) {
  uint64_t prev_end = 0;
  bool first = true;
  uint64_t total = 0;
  for (const auto& [offset, bytes] : m.extents()) {
    REQUIRE_FALSE(bytes.empty());
    if (!first) REQUIRE(offset > prev_end);  // touching extents must have merged
    first = false;
    prev_end = offset + bytes.size();
    total += bytes.size();
    for (size_t i = 0; i < bytes.size(); ++i) {
      REQUIRE(model.held.at(offset + i));
      REQUIRE(bytes[i] == model.bytes[offset + i]);
    }
  }
  REQUIRE(total == model.HeldBytes());
  REQUIRE(m.bytes() == total);
}

TEST_CASE("extent map: random inserts match a byte model", "[client]") {
  std::mt19937_64 rng(GENERATE(1, 2, 3, 4, 5));
  ExtentMap m;
  Model model;
  for (int i = 0; i < 400; ++i) {
    const uint64_t offset = rng() % 4096;
    const size_t len = 1 + rng() % 300;
    std::string data(len, '\0');
    for (auto& c : data) c = static_cast<char>('a' + rng() % 26);
    m.Insert(offset, data);
    model.Put(offset, data);
    CheckAgainst(m, model);
    // Overlay onto a background of '#' shows held bytes, and '#' elsewhere.
    const uint64_t at = rng() % 4096;
    std::string out(1 + rng() % 500, '#');
    m.Overlay(at, &out);
    for (size_t k = 0; k < out.size(); ++k) {
      const uint64_t pos = at + k;
      const bool held = pos < model.held.size() && model.held[pos];
      REQUIRE(out[k] == (held ? model.bytes[pos] : '#'));
    }
  }
}

TEST_CASE("extent map: a sequential writer keeps one extent", "[client]") {
  ExtentMap m;
  for (int i = 0; i < 64; ++i) m.Insert(uint64_t(i) * 1000, std::string(1000, char('A' + i % 26)));
  REQUIRE(m.extents().size() == 1);
  REQUIRE(m.bytes() == 64000);
  REQUIRE(m.end() == 64000);
}

TEST_CASE("extent map: a long sequential write is kept in touching extents", "[client]") {
  ExtentMap m;
  const uint64_t piece = 768 << 10;
  for (int i = 0; i < 8; ++i) m.Insert(i * piece, std::string(piece, char('a' + i)));
  // An extent takes writes while under the split size: two writes each.
  REQUIRE(m.extents().size() == 4);
  REQUIRE(m.bytes() == 8 * piece);
  REQUIRE(m.end() == 8 * piece);
  for (const auto& [at, bytes] : m.extents()) {
    REQUIRE(bytes.size() <= 2 * piece);
    REQUIRE(bytes[0] == char('a' + at / piece));
  }
  // An overwrite across a boundary merges only the extents it touches.
  m.Insert(3 * piece - 10, std::string(20, '#'));
  std::string out(8 * piece, '?');
  m.Overlay(0, &out);
  REQUIRE(out.substr(3 * piece - 11, 22) == "c" + std::string(20, '#') + "d");
  REQUIRE(out.find('?') == std::string::npos);
  REQUIRE(m.bytes() == 8 * piece);
}

TEST_CASE("extent map: slice and truncate clip at the boundaries", "[client]") {
  ExtentMap m;
  m.Insert(10, "abcdef");    // [10, 16)
  m.Insert(100, "uvwxyz");   // [100, 106)
  ExtentMap s = m.Slice(12, 90);  // [12, 102)
  REQUIRE(s.extents().size() == 2);
  REQUIRE(s.extents().at(12) == "cdef");
  REQUIRE(s.extents().at(100) == "uv");
  REQUIRE(s.bytes() == 6);

  m.TruncateAt(103);
  REQUIRE(m.extents().at(100) == "uvw");
  REQUIRE(m.bytes() == 9);
  m.TruncateAt(100);  // an extent starting at the cut goes whole
  REQUIRE(m.extents().size() == 1);
  REQUIRE(m.end() == 16);
  m.TruncateAt(0);
  REQUIRE(m.empty());
  REQUIRE(m.bytes() == 0);
  REQUIRE(m.end() == 0);
}

TEST_CASE("extent map: a split moves every byte past the offset and keeps the rest", "[client]") {
  std::mt19937_64 rng(GENERATE(1, 2, 3, 4, 5, 6, 7, 8));
  ExtentMap m;
  Model model;
  for (int i = 0; i < 60; ++i) {
    const uint64_t offset = rng() % 4096;
    std::string data(1 + rng() % 300, '\0');
    for (char& c : data) c = static_cast<char>('a' + rng() % 26);
    m.Insert(offset, data);
    model.Put(offset, data);
  }
  const uint64_t cut = rng() % 4400;  // past the end too
  ExtentMap tail = m.SplitFrom(cut);
  Model head_model = model, tail_model = model;
  for (size_t i = 0; i < model.held.size(); ++i) {
    if (i >= cut) head_model.held[i] = false;
    if (i < cut) tail_model.held[i] = false;
  }
  CheckAgainst(m, head_model);
  CheckAgainst(tail, tail_model);
  REQUIRE(m.end() <= cut);
  if (!tail.empty()) REQUIRE(tail.extents().begin()->first >= cut);
}

TEST_CASE("extent map: a split at an extent's start moves it whole", "[client]") {
  ExtentMap m;
  m.Insert(0, std::string(ExtentMap::kSplitBytes, 'a'));
  m.Insert(ExtentMap::kSplitBytes, std::string(ExtentMap::kSplitBytes, 'b'));  // touching
  REQUIRE(m.extents().size() == 2);
  const char* second = m.extents().at(ExtentMap::kSplitBytes).data();
  ExtentMap tail = m.SplitFrom(ExtentMap::kSplitBytes);
  REQUIRE(m.extents().size() == 1);
  REQUIRE(m.bytes() == ExtentMap::kSplitBytes);
  REQUIRE(tail.extents().size() == 1);
  REQUIRE(tail.bytes() == ExtentMap::kSplitBytes);
  REQUIRE(tail.extents().at(ExtentMap::kSplitBytes).data() == second);  // moved, not copied
  REQUIRE(m.SplitFrom(0).bytes() == ExtentMap::kSplitBytes);
  REQUIRE(m.empty());
  REQUIRE(m.bytes() == 0);
}

}  // namespace
}  // namespace weft::objects
