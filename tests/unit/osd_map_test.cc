#include "common/cluster_map/osd_map.h"

#include <catch2/catch.hpp>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/escaping.h"
#include "common/cluster_map/types.h"

namespace weft {
namespace {

// Every field set to something other than its default.
OsdMap FullMap() {
  OsdMap m;
  m.fsid = "3f2a9c1e-fsid";
  m.epoch = 4242;
  m.modified_ms = 1700000000123;
  OsdInfo a;
  a.id = OsdId(0);
  a.addr = "127.0.0.1:6801";
  a.host = "node-a";
  a.rack = "rack-1";
  a.weight = 2.5;
  a.up = true;
  a.in = true;
  a.up_from = 17;
  a.down_at = 12;
  a.down_since_ms = 1699999999000;
  OsdInfo b;
  b.id = OsdId(7);
  b.addr = "10.1.2.3:6807";
  b.host = "node-b";
  b.rack = "";
  b.weight = 0;
  b.up = false;
  b.in = false;
  b.up_from = 3;
  b.down_at = 4000;
  b.down_since_ms = -5;
  m.osds = {a, b};
  PoolInfo rep;
  rep.id = PoolId(1);
  rep.name = "meta";
  rep.type = PoolType::kReplicated;
  rep.size = 3;
  rep.min_size = 2;
  rep.pg_num = 64;
  rep.failure_domain = FailureDomain::kOsd;
  rep.created_ms = 1690000000000;
  PoolInfo ec;
  ec.id = PoolId(3);
  ec.name = "data-ec";
  ec.type = PoolType::kErasure;
  ec.size = 6;
  ec.min_size = 5;
  ec.pg_num = 1000;
  ec.failure_domain = FailureDomain::kRack;
  ec.ec_k = 4;
  ec.ec_m = 2;
  ec.ec_chunk_bytes = 65536;
  ec.created_ms = 1;
  // Sorted; sources need only be OSD ids, targets must exist (0 and 7).
  rep.upmap_items = {UpmapItem{5, OsdId(3), OsdId(7)}, UpmapItem{5, OsdId(4), OsdId(0)},
                     UpmapItem{63, OsdId(0), OsdId(7)}};
  ec.upmap_items = {UpmapItem{999, OsdId(2), OsdId(0)}};
  m.pools = {rep, ec};
  m.blocklist = {BlocklistEntry{"client.4711@10.0.0.9", 4100, 1700000999000},
                 BlocklistEntry{"client.12", 1, 0}};
  m.full_ratio = 0.97;
  m.nearfull_ratio = 0.9;
  m.flags = 0x8000'0005;
  m.default_failure_domain = FailureDomain::kRack;
  m.next_osd_id = 8;
  m.next_pool_id = 4;
  return m;
}

TEST_CASE("a blocklisted client is found until its entry expires") {
  const OsdMap m = FullMap();
  // "client.4711@10.0.0.9" expires at 1700000999000; "client.12" never.
  REQUIRE(m.FindBlocklisted("client.4711@10.0.0.9", 1700000998999) != nullptr);
  CHECK(m.FindBlocklisted("client.4711@10.0.0.9", 1700000998999)->added == 4100);
  CHECK(m.FindBlocklisted("client.4711@10.0.0.9", 1700000999000) == nullptr);
  CHECK(m.FindBlocklisted("client.12", 1LL << 62) != nullptr);
  CHECK(m.FindBlocklisted("client.1", 0) == nullptr);   // a prefix is another client
  CHECK(m.FindBlocklisted("client.123", 0) == nullptr);
  CHECK(m.FindBlocklisted("", 0) == nullptr);
}

TEST_CASE("OsdMap round trips every field") {
  const OsdMap m = FullMap();
  REQUIRE(m.Validate().ok());
  const std::string bytes = m.Encode();
  absl::StatusOr<OsdMap> back = OsdMap::Decode(bytes);
  REQUIRE(back.ok());
  CHECK(back->fsid == m.fsid);
  CHECK(back->epoch == m.epoch);
  CHECK(back->modified_ms == m.modified_ms);
  CHECK(back->osds == m.osds);
  CHECK(back->pools == m.pools);
  CHECK(back->blocklist == m.blocklist);
  CHECK(back->full_ratio == m.full_ratio);
  CHECK(back->nearfull_ratio == m.nearfull_ratio);
  CHECK(back->flags == m.flags);
  CHECK(back->default_failure_domain == m.default_failure_domain);
  CHECK(back->next_osd_id == m.next_osd_id);
  CHECK(back->next_pool_id == m.next_pool_id);
  CHECK(*back == m);
  // Deterministic: equal maps give equal bytes (etcd compare-and-swap).
  CHECK(back->Encode() == bytes);
  // The default map round trips too.
  absl::StatusOr<OsdMap> empty = OsdMap::Decode(OsdMap{}.Encode());
  REQUIRE(empty.ok());
  CHECK(*empty == OsdMap{});
}

TEST_CASE("OsdMap::Decode refuses garbage and truncation") {
  const std::string bytes = FullMap().Encode();
  SECTION("every truncation") {
    for (size_t n = 0; n < bytes.size(); ++n) {
      absl::StatusOr<OsdMap> r = OsdMap::Decode(absl::string_view(bytes).substr(0, n));
      REQUIRE(!r.ok());
      REQUIRE(r.status().code() == absl::StatusCode::kDataLoss);
    }
  }
  SECTION("every single-byte corruption") {
    for (size_t i = 0; i < bytes.size(); ++i) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ 0x20);
      REQUIRE(!OsdMap::Decode(bad).ok());
    }
  }
  SECTION("random bytes") {
    std::mt19937_64 rng(12345);
    for (int i = 0; i < 2000; ++i) {
      std::string junk(rng() % 300, '\0');
      for (char& c : junk) c = static_cast<char>(rng());
      absl::StatusOr<OsdMap> r = OsdMap::Decode(junk);
      REQUIRE(!r.ok());
      REQUIRE((r.status().code() == absl::StatusCode::kDataLoss ||
               r.status().code() == absl::StatusCode::kInvalidArgument));
    }
  }
  SECTION("trailing bytes") {
    REQUIRE(!OsdMap::Decode(bytes + "x").ok());
  }
}

TEST_CASE("OsdMap::Decode refuses a well-formed map that breaks invariants") {
  auto decode_code = [](const OsdMap& m) { return OsdMap::Decode(m.Encode()).status().code(); };
  OsdMap m = FullMap();
  std::swap(m.osds[0], m.osds[1]);  // unsorted
  CHECK(decode_code(m) == absl::StatusCode::kInvalidArgument);
  m = FullMap();
  m.osds[1].id = OsdId(8);  // not below next_osd_id
  CHECK(decode_code(m) == absl::StatusCode::kInvalidArgument);
  m = FullMap();
  m.osds[0].weight = -1;
  CHECK(decode_code(m) == absl::StatusCode::kInvalidArgument);
  m = FullMap();
  m.pools[1].ec_m = 3;  // size != k + m
  CHECK(decode_code(m) == absl::StatusCode::kInvalidArgument);
  m = FullMap();
  m.pools[0].min_size = 4;
  CHECK(decode_code(m) == absl::StatusCode::kInvalidArgument);
  m = FullMap();
  m.pools[0].pg_num = 0;
  CHECK(decode_code(m) == absl::StatusCode::kInvalidArgument);
  m = FullMap();
  m.pools[1].name = "meta";
  CHECK(decode_code(m) == absl::StatusCode::kInvalidArgument);
  m = FullMap();
  m.nearfull_ratio = 0.99;  // above full
  CHECK(decode_code(m) == absl::StatusCode::kInvalidArgument);
  m = FullMap();
  m.pools[1].id = PoolId(4);  // not below next_pool_id
  CHECK(decode_code(m) == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("OsdMap::Validate checks upmap items") {
  auto with_items = [](std::vector<UpmapItem> items) {
    OsdMap m = FullMap();
    m.pools[0].upmap_items = std::move(items);  // pool "meta": size 3, pg_num 64
    return m;
  };
  auto item = [](uint32_t seed, int from, int to) {
    return UpmapItem{seed, OsdId(from), OsdId(to)};
  };
  CHECK(with_items({}).Validate().ok());
  CHECK(with_items({item(0, 1, 0), item(0, 2, 7), item(0, 3, 0)}).Validate().code() ==
        absl::StatusCode::kInvalidArgument);  // target 0 twice in one PG
  CHECK(with_items({item(0, 1, 0), item(0, 2, 7), item(1, 2, 7)}).Validate().ok());
  const std::vector<std::pair<const char*, std::vector<UpmapItem>>> bad = {
      {"unsorted", {item(5, 1, 0), item(2, 1, 0)}},
      {"unsorted within a pg", {item(5, 2, 0), item(5, 1, 7)}},
      {"duplicate", {item(5, 1, 0), item(5, 1, 0)}},
      {"source twice in a pg", {item(5, 1, 0), item(5, 1, 7)}},
      {"seed >= pg_num", {item(64, 1, 0)}},
      {"target absent", {item(5, 1, 3)}},
      {"target no osd", {item(5, 1, -1)}},
      {"source negative", {item(5, -1, 0)}},
      {"source beyond next_osd_id", {item(5, 8, 0)}},
      {"source is target", {item(5, 7, 7)}},
      {"more than size in a pg", {item(5, 1, 0), item(5, 2, 7), item(5, 3, 0), item(5, 4, 7)}},
  };
  for (const auto& [what, items] : bad) {
    INFO(what);
    const OsdMap m = with_items(items);
    CHECK(m.Validate().code() == absl::StatusCode::kInvalidArgument);
    CHECK(OsdMap::Decode(m.Encode()).status().code() == absl::StatusCode::kInvalidArgument);
  }
}

// FullMap() without upmap items, encoded by the encoder as it was before the
// field existed (commit d12f2a1), in hex.
constexpr char kMapBeforeUpmap[] =
    "0a0d33663261396331652d6673696410922118fbd095ffbc312238120e3132372e302e302e313a363830311a"
    "066e6f64652d6122067261636b2d31290000000000000440300138014011480c5098c895ffbc312229080712"
    "0d31302e312e322e333a363830371a066e6f64652d62400348a01f50fbffffffffffffffff012a1908011204"
    "6d65746118012003280230403801588088e6de97312a2008031207646174612d656318022006280530e80738"
    "034004480250808004580132200a14636c69656e742e343731314031302e302e302e3910842018d8ccd2ffbc"
    "31320d0a09636c69656e742e31321001390ad7a3703d0aef3f41cdccccccccccec3f48858080800850035808"
    "600479b910156cbcaa68b3";

TEST_CASE("OsdMap without upmap items encodes as before them") {
  // Maps already in etcd must decode, and equal maps must keep encoding to
  // equal bytes (compare-and-swap compares bytes).
  OsdMap m = FullMap();
  for (PoolInfo& p : m.pools) p.upmap_items.clear();
  absl::StatusOr<OsdMap> old = OsdMap::Decode(absl::HexStringToBytes(kMapBeforeUpmap));
  REQUIRE(old.ok());
  CHECK(*old == m);
  CHECK(absl::BytesToHexString(m.Encode()) == kMapBeforeUpmap);
}

TEST_CASE("OsdMap lookups") {
  OsdMap m = FullMap();
  REQUIRE(m.FindOsd(OsdId(7)) != nullptr);
  CHECK(m.FindOsd(OsdId(7))->addr == "10.1.2.3:6807");
  CHECK(m.FindOsd(OsdId(3)) == nullptr);
  CHECK(m.FindOsd(kNoOsd) == nullptr);
  m.FindOsd(OsdId(0))->up = false;
  CHECK(!m.IsUp(OsdId(0)));
  CHECK(m.IsIn(OsdId(0)));
  CHECK(!m.IsIn(OsdId(7)));
  CHECK(!m.IsUp(OsdId(99)));
  CHECK(!m.IsIn(OsdId(99)));
  REQUIRE(m.FindPool(PoolId(3)) != nullptr);
  CHECK(m.FindPool(PoolId(3))->name == "data-ec");
  CHECK(m.FindPool(PoolId(2)) == nullptr);
  REQUIRE(m.FindPoolByName("meta") != nullptr);
  CHECK(m.FindPoolByName("meta")->id == PoolId(1));
  CHECK(m.FindPoolByName("nope") == nullptr);
}

// ---- strong ids ----

static_assert(!std::is_convertible_v<int, OsdId>);
static_assert(!std::is_convertible_v<OsdId, int>);
static_assert(!std::is_convertible_v<uint32_t, PoolId>);
static_assert(!std::is_convertible_v<PoolId, uint32_t>);
static_assert(!std::is_convertible_v<OsdId, PoolId>);
static_assert(!std::is_constructible_v<PoolId, OsdId>);
template <typename A, typename B>
concept ComparableWith = requires(A a, B b) { a == b; };
template <typename A>
concept Addable = requires(A a) { a + 1; };
static_assert(!ComparableWith<OsdId, PoolId>);
static_assert(!ComparableWith<OsdId, int>);
static_assert(!Addable<OsdId>);
static_assert(ComparableWith<OsdId, OsdId>);
static_assert(std::is_same_v<decltype(OsdId(1).value()), int32_t>);
static_assert(std::is_same_v<decltype(PoolId(1).value()), uint32_t>);
static_assert(kNoOsd.value() == -1);
static_assert(OsdId() == kNoOsd);
static_assert(PoolId().value() == 0);

TEST_CASE("strong ids compare - hash and print") {
  CHECK(OsdId(3) == OsdId(3));
  CHECK(OsdId(3) != OsdId(4));
  CHECK(OsdId(3) < OsdId(4));
  CHECK(kNoOsd < OsdId(0));
  CHECK(PoolId(2) > PoolId(1));
  CHECK(absl::Hash<OsdId>()(OsdId(5)) == absl::Hash<OsdId>()(OsdId(5)));
  absl::flat_hash_set<OsdId> osds = {OsdId(1), OsdId(2), OsdId(1)};
  CHECK(osds.size() == 2);
  absl::flat_hash_set<PgId> pgs = {PgId{PoolId(1), 2}, PgId{PoolId(2), 1}, PgId{PoolId(1), 2}};
  CHECK(pgs.size() == 2);
  std::ostringstream os;
  os << "osd=" << OsdId(12) << " pool=" << PoolId(3) << " pg=" << PgId{PoolId(3), 31};
  CHECK(os.str() == "osd=12 pool=3 pg=3.1f");
  CHECK(PgId{PoolId(1), 9} < PgId{PoolId(2), 0});
  CHECK(PgId{PoolId(2), 0} < PgId{PoolId(2), 1});
}

TEST_CASE("PgId ToString and Parse") {
  CHECK(PgId{PoolId(3), 0x1f}.ToString() == "3.1f");
  CHECK(PgId{PoolId(0), 0}.ToString() == "0.0");
  for (const PgId pg : {PgId{PoolId(1), 0}, PgId{PoolId(3), 0x1f}, PgId{PoolId(12), 0xabcdef},
                        PgId{PoolId(4294967295u), 0xffffffffu}}) {
    absl::StatusOr<PgId> back = PgId::Parse(pg.ToString());
    REQUIRE(back.ok());
    CHECK(*back == pg);
  }
  absl::StatusOr<PgId> upper = PgId::Parse("3.1F");
  REQUIRE(upper.ok());
  CHECK(*upper == PgId{PoolId(3), 0x1f});
  for (const char* bad : {"", "3", "3.", ".1f", "3.1g", "-3.1", "3.-1", "+3.1", " 3.1", "3.1 ",
                          "3.0x1f", "0x3.1", "4294967296.0", "3.100000000", "3.1.2", "3,1",
                          "a.1"}) {
    INFO(bad);
    CHECK(!PgId::Parse(bad).ok());
  }
}

TEST_CASE("failure domain and pool type names") {
  for (FailureDomain d : {FailureDomain::kOsd, FailureDomain::kHost, FailureDomain::kRack}) {
    absl::StatusOr<FailureDomain> back = ParseFailureDomain(FailureDomainName(d));
    REQUIRE(back.ok());
    CHECK(*back == d);
  }
  CHECK(FailureDomainName(FailureDomain::kHost) == "host");
  CHECK(!ParseFailureDomain("Host").ok());
  CHECK(!ParseFailureDomain("").ok());
  for (PoolType t : {PoolType::kReplicated, PoolType::kErasure}) {
    absl::StatusOr<PoolType> back = ParsePoolType(PoolTypeName(t));
    REQUIRE(back.ok());
    CHECK(*back == t);
  }
  CHECK(!ParsePoolType("ec").ok());
}

}  // namespace
}  // namespace weft
