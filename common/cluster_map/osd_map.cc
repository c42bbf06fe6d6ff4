#include "common/cluster_map/osd_map.h"

#include <xxhash.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status/status.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "proto/cluster_map.pb.h"

namespace weft {
namespace {

// Limits on what a map may hold; a map beyond them is corrupt, not big.
constexpr uint32_t kMaxPoolSize = 64;
constexpr uint32_t kMaxPgNum = 1u << 20;

// The trailer Encode appends: field 15, wire type fixed64 (tag (15 << 3) | 1),
// then the XXH64 of everything before it, little-endian.
constexpr uint8_t kChecksumTag = (15 << 3) | 1;
constexpr size_t kTrailerBytes = 1 + 8;

void PutFixed64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t GetFixed64(const char* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(in[i])} << (8 * i);
  return v;
}

pb::PoolInfo::FailureDomain FailureDomainToProto(FailureDomain d) {
  switch (d) {
    case FailureDomain::kOsd: return pb::PoolInfo::FAILURE_DOMAIN_OSD;
    case FailureDomain::kHost: return pb::PoolInfo::FAILURE_DOMAIN_HOST;
    case FailureDomain::kRack: return pb::PoolInfo::FAILURE_DOMAIN_RACK;
  }
  return pb::PoolInfo::FAILURE_DOMAIN_UNSPECIFIED;
}

absl::StatusOr<FailureDomain> FailureDomainFromProto(int v) {
  switch (v) {
    case pb::PoolInfo::FAILURE_DOMAIN_OSD: return FailureDomain::kOsd;
    case pb::PoolInfo::FAILURE_DOMAIN_HOST: return FailureDomain::kHost;
    case pb::PoolInfo::FAILURE_DOMAIN_RACK: return FailureDomain::kRack;
  }
  return absl::InvalidArgumentError(absl::StrCat("osdmap: unknown failure domain ", v));
}

absl::StatusOr<PoolType> PoolTypeFromProto(int v) {
  switch (v) {
    case pb::PoolInfo::TYPE_REPLICATED: return PoolType::kReplicated;
    case pb::PoolInfo::TYPE_ERASURE: return PoolType::kErasure;
  }
  return absl::InvalidArgumentError(absl::StrCat("osdmap: unknown pool type ", v));
}

void OsdToProto(const OsdInfo& o, pb::OsdInfo* p) {
  p->set_id(o.id.value());
  p->set_addr(o.addr);
  p->set_host(o.host);
  p->set_rack(o.rack);
  p->set_weight(o.weight);
  p->set_up(o.up);
  p->set_in(o.in);
  p->set_up_from(o.up_from);
  p->set_down_at(o.down_at);
  p->set_down_since_ms(o.down_since_ms);
  p->set_auto_out(o.auto_out);
  p->set_full(o.full);
  p->set_backfillfull(o.backfillfull);
  if (o.reweight != 1.0) p->set_reweight(o.reweight);
}

OsdInfo OsdFromProto(const pb::OsdInfo& p) {
  OsdInfo o;
  o.id = OsdId(p.id());
  o.addr = p.addr();
  o.host = p.host();
  o.rack = p.rack();
  o.weight = p.weight();
  o.up = p.up();
  o.in = p.in();
  o.up_from = p.up_from();
  o.down_at = p.down_at();
  o.down_since_ms = p.down_since_ms();
  o.auto_out = p.auto_out();
  o.full = p.full();
  o.backfillfull = p.backfillfull();
  o.reweight = p.has_reweight() ? p.reweight() : 1.0;
  return o;
}

void PoolToProto(const PoolInfo& pool, pb::PoolInfo* p) {
  p->set_id(pool.id.value());
  p->set_name(pool.name);
  p->set_type(pool.type == PoolType::kErasure ? pb::PoolInfo::TYPE_ERASURE
                                              : pb::PoolInfo::TYPE_REPLICATED);
  p->set_size(pool.size);
  p->set_min_size(pool.min_size);
  p->set_pg_num(pool.pg_num);
  p->set_failure_domain(FailureDomainToProto(pool.failure_domain));
  p->set_ec_k(pool.ec_k);
  p->set_ec_m(pool.ec_m);
  p->set_ec_chunk_bytes(pool.ec_chunk_bytes);
  p->set_created_ms(pool.created_ms);
  for (const UpmapItem& item : pool.upmap_items) {
    pb::UpmapItem* i = p->add_upmap_items();
    i->set_pg_seed(item.pg_seed);
    i->set_from(item.from.value());
    i->set_to(item.to.value());
  }
  for (const PastInterval& past : pool.past_intervals) {
    pb::PastInterval* i = p->add_past_intervals();
    i->set_pg_seed(past.pg_seed);
    i->set_last_epoch(past.last_epoch);
    for (OsdId osd : past.acting) i->add_acting(osd.value());
  }
}

absl::StatusOr<PoolInfo> PoolFromProto(const pb::PoolInfo& p) {
  PoolInfo pool;
  pool.id = PoolId(p.id());
  pool.name = p.name();
  ASSIGN_OR_RETURN(pool.type, PoolTypeFromProto(p.type()));
  pool.size = p.size();
  pool.min_size = p.min_size();
  pool.pg_num = p.pg_num();
  ASSIGN_OR_RETURN(pool.failure_domain, FailureDomainFromProto(p.failure_domain()));
  pool.ec_k = p.ec_k();
  pool.ec_m = p.ec_m();
  pool.ec_chunk_bytes = p.ec_chunk_bytes();
  pool.created_ms = p.created_ms();
  pool.upmap_items.reserve(p.upmap_items_size());
  for (const pb::UpmapItem& i : p.upmap_items()) {
    pool.upmap_items.push_back(UpmapItem{i.pg_seed(), OsdId(i.from()), OsdId(i.to())});
  }
  pool.past_intervals.reserve(p.past_intervals_size());
  for (const pb::PastInterval& i : p.past_intervals()) {
    PastInterval past{i.pg_seed(), i.last_epoch(), {}};
    for (int32_t osd : i.acting()) past.acting.push_back(OsdId(osd));
    pool.past_intervals.push_back(std::move(past));
  }
  return pool;
}

absl::Status ValidatePool(const PoolInfo& p) {
  auto bad = [&p](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("osdmap: pool ", p.id.value(), " (", p.name, "): ", what));
  };
  if (p.name.empty()) return bad("empty name");
  if (p.size < 1 || p.size > kMaxPoolSize) return bad(absl::StrCat("size ", p.size));
  if (p.min_size < 1 || p.min_size > p.size) {
    return bad(absl::StrCat("min_size ", p.min_size, " with size ", p.size));
  }
  if (p.pg_num < 1 || p.pg_num > kMaxPgNum) return bad(absl::StrCat("pg_num ", p.pg_num));
  if (p.type == PoolType::kErasure) {
    if (p.ec_k < 1 || uint64_t{p.ec_k} + p.ec_m != p.size) {
      return bad(absl::StrCat("ec k=", p.ec_k, " m=", p.ec_m, " size=", p.size));
    }
    // Striping divides by the chunk size.
    if (p.ec_chunk_bytes == 0) return bad("ec_chunk_bytes 0");
  }
  for (size_t i = 0; i < p.past_intervals.size(); ++i) {
    const PastInterval& past = p.past_intervals[i];
    if (past.pg_seed >= p.pg_num) return bad(absl::StrCat("past interval of pg ", past.pg_seed));
    if (past.acting.empty()) return bad("past interval without members");
    if (i > 0) {
      const PastInterval& prev = p.past_intervals[i - 1];
      if (std::make_pair(prev.pg_seed, prev.last_epoch) >=
          std::make_pair(past.pg_seed, past.last_epoch)) {
        return bad("past intervals not sorted or duplicated");
      }
    }
  }
  return absl::OkStatus();
}

// PoolInfo::upmap_items: sorted; per PG distinct `from`s, distinct `to`s, from
// != to, at most `size` items (each replaces one member); targets exist.
absl::Status ValidateUpmapItems(const OsdMap& map, const PoolInfo& p) {
  auto bad = [&p](const UpmapItem& item, absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("osdmap: pool ", p.id.value(), " (", p.name, "): upmap item pg ",
                     absl::Hex(item.pg_seed), " ", item.from.value(), "->", item.to.value(),
                     ": ", what));
  };
  size_t first_of_pg = 0;  // index of the first item of the current PG
  for (size_t i = 0; i < p.upmap_items.size(); ++i) {
    const UpmapItem& item = p.upmap_items[i];
    if (i > 0 && !(p.upmap_items[i - 1] < item)) return bad(item, "not sorted or duplicated");
    if (i == 0 || p.upmap_items[i - 1].pg_seed != item.pg_seed) first_of_pg = i;
    if (item.pg_seed >= p.pg_num) return bad(item, absl::StrCat("seed >= pg_num ", p.pg_num));
    if (item.from.value() < 0 || item.from.value() >= map.next_osd_id) {
      return bad(item, "source is not an osd id");
    }
    if (item.from == item.to) return bad(item, "source is the target");
    if (map.FindOsd(item.to) == nullptr) return bad(item, "target osd does not exist");
    if (i - first_of_pg >= p.size) return bad(item, "more items than pool size in one pg");
    for (size_t j = first_of_pg; j < i; ++j) {  // at most size - 1 earlier items
      if (p.upmap_items[j].from == item.from || p.upmap_items[j].to == item.to) {
        return bad(item, "source or target repeated in one pg");
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

// ---- enums ----

absl::string_view FailureDomainName(FailureDomain domain) {
  switch (domain) {
    case FailureDomain::kOsd: return "osd";
    case FailureDomain::kHost: return "host";
    case FailureDomain::kRack: return "rack";
  }
  return "unknown";
}

absl::StatusOr<FailureDomain> ParseFailureDomain(absl::string_view name) {
  for (FailureDomain d : {FailureDomain::kOsd, FailureDomain::kHost, FailureDomain::kRack}) {
    if (name == FailureDomainName(d)) return d;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown failure domain \"", name, "\" (want osd, host or rack)"));
}

absl::string_view PoolTypeName(PoolType type) {
  switch (type) {
    case PoolType::kReplicated: return "replicated";
    case PoolType::kErasure: return "erasure";
  }
  return "unknown";
}

absl::StatusOr<PoolType> ParsePoolType(absl::string_view name) {
  for (PoolType t : {PoolType::kReplicated, PoolType::kErasure}) {
    if (name == PoolTypeName(t)) return t;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown pool type \"", name, "\" (want replicated or erasure)"));
}

// ---- PgId (declared in types.h) ----

std::string PgId::ToString() const { return absl::StrFormat("%u.%x", pool.value(), seed); }

absl::StatusOr<PgId> PgId::Parse(absl::string_view text) {
  auto bad = [text]() {
    return absl::InvalidArgumentError(absl::StrCat("bad pg id \"", text, "\" (want e.g. 3.1f)"));
  };
  size_t dot = text.find('.');
  if (dot == absl::string_view::npos) return bad();
  absl::string_view pool = text.substr(0, dot);
  absl::string_view seed = text.substr(dot + 1);
  // absl::SimpleAtoi and SimpleHexAtoi accept signs, spaces and "0x"; a PG id has
  // exactly one spelling per value (up to hex case), so check the digits first.
  if (pool.empty() || pool.size() > 10 || seed.empty() || seed.size() > 8) return bad();
  if (!std::all_of(pool.begin(), pool.end(), absl::ascii_isdigit)) return bad();
  if (!std::all_of(seed.begin(), seed.end(), absl::ascii_isxdigit)) return bad();
  uint32_t pool_value = 0, seed_value = 0;
  if (!absl::SimpleAtoi(pool, &pool_value) || !absl::SimpleHexAtoi(seed, &seed_value)) {
    return bad();
  }
  return PgId{PoolId(pool_value), seed_value};
}

// ---- OsdMap ----

const OsdInfo* OsdMap::FindOsd(OsdId id) const {
  auto it = std::lower_bound(osds.begin(), osds.end(), id,
                             [](const OsdInfo& o, OsdId want) { return o.id < want; });
  return it != osds.end() && it->id == id ? &*it : nullptr;
}

OsdInfo* OsdMap::FindOsd(OsdId id) {
  return const_cast<OsdInfo*>(static_cast<const OsdMap*>(this)->FindOsd(id));
}

const PoolInfo* OsdMap::FindPool(PoolId id) const {
  auto it = std::lower_bound(pools.begin(), pools.end(), id,
                             [](const PoolInfo& p, PoolId want) { return p.id < want; });
  return it != pools.end() && it->id == id ? &*it : nullptr;
}

const PoolInfo* OsdMap::FindPoolByName(absl::string_view name) const {
  for (const PoolInfo& p : pools) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

bool OsdMap::IsUp(OsdId id) const {
  const OsdInfo* o = FindOsd(id);
  return o != nullptr && o->up;
}

bool OsdMap::IsIn(OsdId id) const {
  const OsdInfo* o = FindOsd(id);
  return o != nullptr && o->in;
}

const BlocklistEntry* OsdMap::FindBlocklisted(absl::string_view client, int64_t now_ms) const {
  for (const BlocklistEntry& b : blocklist) {
    if (b.client == client && !b.ExpiredAt(now_ms)) return &b;
  }
  return nullptr;
}

const OsdInfo* OsdMap::FirstFull() const {
  for (const OsdInfo& o : osds) {
    if (o.full && o.up && o.in) return &o;
  }
  return nullptr;
}

absl::Status OsdMap::Validate() const {
  for (size_t i = 0; i < osds.size(); ++i) {
    const OsdInfo& o = osds[i];
    if (o.id.value() < 0 || o.id.value() >= next_osd_id) {
      return absl::InvalidArgumentError(absl::StrCat("osdmap: osd id ", o.id.value(),
                                                     " outside [0, ", next_osd_id, ")"));
    }
    if (i > 0 && !(osds[i - 1].id < o.id)) {
      return absl::InvalidArgumentError(
          absl::StrCat("osdmap: osds not sorted or duplicated at id ", o.id.value()));
    }
    if (!(o.reweight >= 0 && o.reweight <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("osdmap: osd ", o.id.value(), " reweight ", o.reweight));
    }
    if (!std::isfinite(o.weight) || o.weight < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("osdmap: osd ", o.id.value(), " weight ", o.weight));
    }
  }
  absl::flat_hash_set<absl::string_view> names;
  for (size_t i = 0; i < pools.size(); ++i) {
    const PoolInfo& p = pools[i];
    if (p.id.value() < 1 || p.id.value() >= next_pool_id) {
      return absl::InvalidArgumentError(absl::StrCat("osdmap: pool id ", p.id.value(),
                                                     " outside [1, ", next_pool_id, ")"));
    }
    if (i > 0 && !(pools[i - 1].id < p.id)) {
      return absl::InvalidArgumentError(
          absl::StrCat("osdmap: pools not sorted or duplicated at id ", p.id.value()));
    }
    RETURN_IF_ERROR(ValidatePool(p));
    RETURN_IF_ERROR(ValidateUpmapItems(*this, p));
    if (!names.insert(p.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("osdmap: duplicate pool name ", p.name));
    }
  }
  for (const BlocklistEntry& b : blocklist) {
    if (b.client.empty()) {
      return absl::InvalidArgumentError("osdmap: blocklist entry without client");
    }
  }
  if (!(nearfull_ratio > 0 && nearfull_ratio <= backfillfull_ratio &&
        backfillfull_ratio <= full_ratio && full_ratio <= kFailsafeFullRatio)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "osdmap: ratios nearfull=", nearfull_ratio, " backfillfull=", backfillfull_ratio,
        " full=", full_ratio, " (want 0 < nearfull <= backfillfull <= full <= ",
        kFailsafeFullRatio, ", the OSDs' failsafe)"));
  }
  return absl::OkStatus();
}

std::string OsdMap::Encode() const {
  pb::OsdMap p;
  p.set_fsid(fsid);
  p.set_epoch(epoch);
  p.set_modified_ms(modified_ms);
  for (const OsdInfo& o : osds) OsdToProto(o, p.add_osds());
  for (const PoolInfo& pool : pools) PoolToProto(pool, p.add_pools());
  for (const BlocklistEntry& b : blocklist) {
    pb::BlocklistEntry* e = p.add_blocklist();
    e->set_client(b.client);
    e->set_added(b.added);
    e->set_expires_ms(b.expires_ms);
  }
  p.set_full_ratio(full_ratio);
  p.set_nearfull_ratio(nearfull_ratio);
  // Written only when not the default, so that a map that never set it
  // encodes to the same bytes as before the field existed.
  if (backfillfull_ratio != kDefaultBackfillfullRatio) p.set_backfillfull_ratio(backfillfull_ratio);
  p.set_flags(flags);
  p.set_default_failure_domain(FailureDomainToProto(default_failure_domain));
  p.set_next_osd_id(next_osd_id);
  p.set_next_pool_id(next_pool_id);

  std::string out;
  // Deterministic so that equal maps encode to equal bytes (etcd compare-and-swap
  // and the checksum both look at bytes).
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    p.SerializeToCodedStream(&coded);
  }
  const uint64_t sum = XXH64(out.data(), out.size(), 0);
  char trailer[kTrailerBytes];
  trailer[0] = static_cast<char>(kChecksumTag);
  PutFixed64(sum, trailer + 1);
  out.append(trailer, kTrailerBytes);
  return out;
}

absl::StatusOr<OsdMap> OsdMap::Decode(absl::string_view bytes) {
  // 1. The trailer proves the bytes are complete and unchanged.
  if (bytes.size() < kTrailerBytes || bytes.size() > INT_MAX) {
    return absl::DataLossError(absl::StrCat("osdmap: ", bytes.size(), " bytes is not a map"));
  }
  const size_t body = bytes.size() - kTrailerBytes;
  if (static_cast<uint8_t>(bytes[body]) != kChecksumTag ||
      GetFixed64(bytes.data() + body + 1) != XXH64(bytes.data(), body, 0)) {
    return absl::DataLossError("osdmap: checksum mismatch (truncated or corrupt)");
  }
  // 2. Parse the whole message, trailer included (it is a declared field).
  pb::OsdMap p;
  if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError("osdmap: not a weft.pb.OsdMap");
  }
  // 3. Convert, then check the invariants the rest of the system relies on.
  OsdMap m;
  m.fsid = p.fsid();
  m.epoch = p.epoch();
  m.modified_ms = p.modified_ms();
  m.osds.reserve(p.osds_size());
  for (const pb::OsdInfo& o : p.osds()) m.osds.push_back(OsdFromProto(o));
  m.pools.reserve(p.pools_size());
  for (const pb::PoolInfo& pool : p.pools()) {
    ASSIGN_OR_RETURN(PoolInfo info, PoolFromProto(pool));
    m.pools.push_back(std::move(info));
  }
  for (const pb::BlocklistEntry& b : p.blocklist()) {
    m.blocklist.push_back(BlocklistEntry{b.client(), b.added(), b.expires_ms()});
  }
  m.full_ratio = p.full_ratio();
  m.nearfull_ratio = p.nearfull_ratio();
  m.backfillfull_ratio =
      p.has_backfillfull_ratio() ? p.backfillfull_ratio() : kDefaultBackfillfullRatio;
  m.flags = p.flags();
  ASSIGN_OR_RETURN(m.default_failure_domain,
                   FailureDomainFromProto(p.default_failure_domain()));
  m.next_osd_id = p.next_osd_id();
  m.next_pool_id = p.next_pool_id();
  RETURN_IF_ERROR(m.Validate());
  return m;
}

}  // namespace weft
