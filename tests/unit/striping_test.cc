// common/striping against a brute-force model that deals stripe units out
// one by one, for many layouts.
#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <utility>

#include "common/striping/striping.h"

namespace weft::striping {
namespace {

// file offset -> (objno, obj_off) by walking the round-robin literally.
struct Model {
  explicit Model(const Layout& l, uint64_t file_bytes) {
    uint64_t units_per_object = l.object_size / l.stripe_unit;
    uint64_t off = 0;
    for (uint64_t set = 0; off < file_bytes; ++set) {
      for (uint64_t row = 0; row < units_per_object && off < file_bytes; ++row) {
        for (uint64_t pos = 0; pos < l.stripe_count && off < file_bytes; ++pos) {
          for (uint64_t b = 0; b < l.stripe_unit && off < file_bytes; ++b, ++off) {
            where.push_back({set * l.stripe_count + pos, row * l.stripe_unit + b});
          }
        }
      }
    }
  }
  std::vector<std::pair<uint64_t, uint64_t>> where;
};

std::vector<Layout> Layouts() {
  return {{1, 1, 1}, {1, 3, 2}, {2, 2, 4}, {4, 3, 8}, {3, 1, 9}, {2, 5, 6}, {8, 2, 8}};
}

TEST_CASE("striping: Validate", "[striping]") {
  CHECK(Layout{4, 1, 16}.Validate().ok());
  CHECK(!Layout{0, 1, 16}.Validate().ok());
  CHECK(!Layout{4, 0, 16}.Validate().ok());
  CHECK(!Layout{3, 1, 16}.Validate().ok());
}

TEST_CASE("striping: FileToObject and ObjectToFile match the model", "[striping]") {
  for (const Layout& l : Layouts()) {
    const uint64_t n = l.set_bytes() * 3 + 5;
    Model m(l, n);
    for (uint64_t off = 0; off < n; ++off) {
      ObjectPos p = FileToObject(l, off);
      INFO("layout " << l.stripe_unit << "," << l.stripe_count << "," << l.object_size
                     << " off " << off);
      CHECK(p.objno == m.where[off].first);
      CHECK(p.offset == m.where[off].second);
      CHECK(ObjectToFile(l, p.objno, p.offset) == off);
    }
  }
}

TEST_CASE("striping: FileRangeToObjects covers the range exactly", "[striping]") {
  std::mt19937_64 rng(7);
  for (const Layout& l : Layouts()) {
    const uint64_t n = l.set_bytes() * 3 + 5;
    Model m(l, n);
    for (int iter = 0; iter < 300; ++iter) {
      uint64_t off = rng() % n;
      uint64_t len = 1 + rng() % (n - off);
      auto extents = FileRangeToObjects(l, off, len);
      std::vector<int> seen(len, 0);
      for (size_t i = 0; i < extents.size(); ++i) {
        const ObjectExtent& e = extents[i];
        if (i > 0) CHECK(extents[i - 1].objno < e.objno);
        uint64_t obj_off = e.offset;
        uint64_t total = 0;
        for (const BufferExtent& b : e.pieces) {
          for (uint64_t k = 0; k < b.length; ++k) {
            uint64_t file_off = off + b.buffer_offset + k;
            REQUIRE(file_off < n);
            CHECK(m.where[file_off].first == e.objno);
            CHECK(m.where[file_off].second == obj_off + k);
            seen[b.buffer_offset + k]++;
          }
          obj_off += b.length;
          total += b.length;
        }
        CHECK(total == e.length);
      }
      for (uint64_t k = 0; k < len; ++k) REQUIRE(seen[k] == 1);
    }
  }
}

TEST_CASE("striping: ObjectBytesBelow and TruncatePlan match the model", "[striping]") {
  for (const Layout& l : Layouts()) {
    const uint64_t n = l.set_bytes() * 3 + 5;
    Model m(l, n);
    auto sizes = [&](uint64_t file_size) {
      std::map<uint64_t, uint64_t> s;  // objno -> object size
      for (uint64_t off = 0; off < file_size; ++off) {
        auto [obj, o] = m.where[off];
        s[obj] = std::max(s[obj], o + 1);
      }
      return s;
    };
    for (uint64_t old_size = 0; old_size <= n; ++old_size) {
      auto old_objs = sizes(old_size);
      for (const auto& [obj, size] : old_objs) CHECK(ObjectBytesBelow(l, obj, old_size) == size);
      for (uint64_t new_size = 0; new_size < old_size; new_size += 1 + new_size / 3) {
        auto new_objs = sizes(new_size);
        std::map<uint64_t, uint64_t> expect;
        for (const auto& [obj, size] : old_objs) {
          uint64_t keep = new_objs.count(obj) ? new_objs[obj] : 0;
          if (keep < size) expect[obj] = keep;
        }
        std::map<uint64_t, uint64_t> got;
        for (const ObjectTrim& t : TruncatePlan(l, old_size, new_size)) got[t.objno] = t.keep_bytes;
        INFO("old " << old_size << " new " << new_size);
        CHECK(got == expect);
      }
    }
  }
}

TEST_CASE("striping: data object names - their prefix - and their numbers read back",
          "[striping]") {
  CHECK(DataObjectName(0x10000, 42) == "10000.0000002a");
  CHECK(DataObjectName(0x1abc, 0) == "1abc.00000000");
  CHECK(DataObjectPrefix(0x1abc) == "1abc.");
  for (uint64_t objno : {uint64_t{0}, uint64_t{42}, uint64_t{0xffffffff}, uint64_t{1} << 38,
                         ~uint64_t{0}}) {
    INFO(objno);
    CHECK(DataObjectNumber(0x1abc, DataObjectName(0x1abc, objno)) == objno);
  }
  // Another file's objects, and names no file's object has.
  CHECK(!DataObjectNumber(0x1abc, DataObjectName(0x1abc0, 1)));
  CHECK(!DataObjectNumber(0x1abc, DataObjectName(0x1ab, 1)));
  for (const char* bad : {"1abc.", "1abc.0000002", "1abc.0000002A", "1abc.0000002x",
                          "1abc.00000000000000002a", "1abc.000000002a", "1abc-0000002a"}) {
    INFO(bad);
    CHECK(!DataObjectNumber(0x1abc, bad));
  }
}

}  // namespace
}  // namespace weft::striping
