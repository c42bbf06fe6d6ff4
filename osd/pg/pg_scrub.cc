// Self-healing of one PG: read repair, scrub and deep scrub, and repair
// (docs/ARCHITECTURE.md, "Scrub and repair").
//
// Read repair. A copy that fails its checksums is never served while a good
// one exists. The primary of a replicated pool pulls a good copy from a
// member before it answers (the read then returns the right bytes); a
// member that finds its own copy damaged outside that path (an erasure
// shard read, which the reader decodes around; a replica's local read)
// asks the primary to rewrite it, in the background.
//
// Scrub. The primary walks the PG's objects in name order, a chunk at a
// time; for each chunk it holds the PG's writes (order_), asks every member
// for what it holds in the chunk's name range (ScrubMap), and compares.
// Within a chunk all members have applied the same writes, so any
// difference is damage, not a write in flight. The authoritative copy of an
// object is the one most members agree on among those that read without
// error (its version first); a replicated pool compares size, version,
// xattrs, omap and, deep, a digest of the bytes; an erasure pool compares
// each shard's version, logical size and xattrs and, deep, decodes: the
// parity must match the data shards. Repair rewrites every bad copy from
// the authoritative one (the primary's own first, then the others from it).
#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/checksum/checksum.h"
#include "common/executor/thread_pool.h"
#include "common/log/log.h"
#include "common/status/status.h"
#include "osd/pg/object_ops.h"
#include "osd/pg/osd_error.h"
#include "osd/pg/pg.h"
#include "osd/pg/pg_codec.h"

namespace weft::osd {
namespace {

constexpr char kScrubStampsMeta[] = "scrub_stamps";  // "<last_scrub_ms> <last_deep_ms>"
// What the last scrub left unrepaired (a PgCommandReply's `inconsistent`):
// a primary that restarts still reports it.
constexpr char kScrubFoundMeta[] = "scrub_inconsistent";
// Deep scrub reads and hashes objects in pieces of this size: every member
// uses the same, so equal bytes give equal digests.
constexpr uint64_t kDigestPiece = 4ull << 20;
// A deep scrub's chunk holds at most this many bytes of the primary's
// objects (and at least one object).
constexpr uint64_t kDeepChunkBytes = 32ull << 20;

// A running digest with `piece` folded in.
uint64_t Mix(uint64_t digest, absl::string_view piece) {
  const uint64_t both[2] = {digest, common::Checksum64(piece)};
  return common::Checksum64(absl::string_view(reinterpret_cast<const char*>(both), sizeof(both)));
}

uint64_t MixKv(uint64_t digest, absl::string_view key, absl::string_view value) {
  return Mix(Mix(digest, key), value);
}

Version VersionOf(const pb::ScrubEntry& e) { return FromProto(e.version()); }

// What two readable copies of an object disagree on ("" when nothing).
std::string Differences(const pb::ScrubEntry& auth, const pb::ScrubEntry& e, bool ec) {
  std::vector<std::string> out;
  if (VersionOf(auth) != VersionOf(e)) {
    out.push_back(absl::StrCat("version ", e.version().epoch(), ".", e.version().seq(),
                               " != ", auth.version().epoch(), ".", auth.version().seq()));
  }
  if (ec && auth.logical_size() != e.logical_size()) {
    out.push_back(absl::StrCat("logical size ", e.logical_size(), " != ", auth.logical_size()));
  }
  if (!ec && auth.size() != e.size()) {
    out.push_back(absl::StrCat("size ", e.size(), " != ", auth.size()));
  }
  if (auth.xattrs_digest() != e.xattrs_digest()) out.push_back("xattrs differ");
  if (auth.omap_digest() != e.omap_digest()) out.push_back("omap differs");
  if (!ec && auth.data_digest() != e.data_digest()) out.push_back("data digest differs");
  return absl::StrJoin(out, ", ");
}

// What copies are grouped by to find the one most agree on.
using ShapeKey = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t>;
ShapeKey Shape(const pb::ScrubEntry& e, bool ec) {
  return {e.version().epoch(), e.version().seq(), ec ? e.logical_size() : e.size(),
          e.xattrs_digest(), e.omap_digest(), ec ? 0 : e.data_digest()};
}

}  // namespace

// One member's view of one object in a chunk (null entry: it has none).
struct Pg::ScrubCopy {
  OsdId osd;
  int32_t shard = -1;
  const pb::ScrubEntry* entry = nullptr;
};

// ---- read repair

std::vector<std::string> Pg::PullSources(const std::string& oid) {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> sources;
  for (OsdId osd : interval_.acting) {
    if (osd == ctx_.whoami) continue;
    auto missing = peer_missing_.find(osd);
    if (missing != peer_missing_.end() && missing->second.count(oid)) continue;
    const OsdInfo* info = map_ ? map_->FindOsd(osd) : nullptr;
    if (info != nullptr) sources.push_back(info->addr);
  }
  return sources;
}

absl::Status Pg::RepairLocalCopy(const std::string& oid, uint64_t interval_id,
                                 const absl::Status& why) {
  SectionGuard ordered(&order_);
  if (!StillInterval(interval_id)) return why;
  const absl::Status pulled = RepairObjectLocked(oid, ctx_.whoami, interval_id);
  if (!pulled.ok()) {
    LOG(ERROR) << "pg=" << coll_ << " event=read_repair_failed oid=" << oid.substr(0, 128)
               << " status=\"" << pulled << "\"";
    return absl::DataLossError(absl::StrCat("object ", oid, " of pg ", coll_,
                                            " has no good copy: osd.", ctx_.whoami.value(), ": ",
                                            why.message(), "; ", pulled.message()));
  }
  ++ctx_.counters->read_repairs;
  LOG(WARNING) << "pg=" << coll_ << " event=read_repair oid=" << oid.substr(0, 128) << " osd="
               << ctx_.whoami.value() << " reason=\"" << why.message() << "\"";
  StateChanged();  // `weft status` counts it soon
  return absl::OkStatus();
}

void Pg::ReportDamaged(const std::string& oid, const absl::Status& why) {
  OsdId primary = kNoOsd;
  std::string addr;
  {
    absl::MutexLock lock(&mu_);
    if (!damage_reported_.insert(oid).second) return;
    primary = interval_.primary;
    const OsdInfo* info = map_ ? map_->FindOsd(primary) : nullptr;
    if (info != nullptr) addr = info->addr;
  }
  LOG(WARNING) << "pg=" << coll_ << " event=damaged_copy oid=" << oid.substr(0, 128)
               << " osd=" << ctx_.whoami.value() << " reason=\"" << why.message() << "\"";
  auto self = shared_from_this();
  ctx_.background->Submit([self, oid, primary, addr] {
    absl::Status status;
    if (primary == self->ctx_.whoami) {
      status = self->RepairObject(oid, self->ctx_.whoami);
    } else if (primary == kNoOsd || addr.empty()) {
      status = absl::UnavailableError("the pg has no primary");
    } else {
      pb::PgCommandRequest req;
      req.set_pool(self->id_.pool.value());
      req.set_pg_seed(self->id_.seed);
      req.set_type(pb::PGC_REPAIR_OBJECT);
      req.set_oid(oid);
      req.set_osd(self->ctx_.whoami.value());
      pb::PgCommandReply reply;
      status = self->ctx_.peers->PgCommand(addr, req, &reply);
    }
    if (!status.ok()) {
      LOG(ERROR) << "pg=" << self->coll_ << " event=damaged_copy_not_repaired oid="
                 << oid.substr(0, 128) << " status=\"" << status << "\"";
    }
    absl::MutexLock lock(&self->mu_);
    self->damage_reported_.erase(oid);
  });
}

absl::Status Pg::RepairObject(const std::string& oid, OsdId bad) {
  SectionGuard ordered(&order_);
  uint64_t interval_id = 0;
  RETURN_IF_ERROR(CheckPrimary(&interval_id));
  RETURN_IF_ERROR(RepairObjectLocked(oid, bad, interval_id));
  ++ctx_.counters->read_repairs;
  LOG(WARNING) << "pg=" << coll_ << " event=read_repair oid=" << oid.substr(0, 128)
               << " osd=" << bad.value();
  StateChanged();
  return absl::OkStatus();
}

absl::Status Pg::RepairObjectLocked(const std::string& oid, OsdId bad, uint64_t interval_id) {
  bool member = false;
  {
    absl::MutexLock lock(&mu_);
    if (interval_.id != interval_id) return OsdError(pb::PG_NOT_ACTIVE, "pg interval changed");
    member = std::find(interval_.acting.begin(), interval_.acting.end(), bad) !=
             interval_.acting.end();
  }
  if (!member) return absl::InvalidArgumentError(absl::StrCat("osd.", bad.value(),
                                                              " is not a member of pg ", coll_));
  if (ec_) return EcPushShard(bad, oid, interval_id);
  if (bad != ctx_.whoami) return PushObject(bad, AddrOf(bad), oid, interval_id);
  // Our own copy: from another member that has it, at the version our
  // onode records (the log wrote it; a member at another is no source).
  ASSIGN_OR_RETURN(ObjectMeta meta, ctx_.store->Stat(coll_, oid));
  return PullObject(oid, PullSources(oid), interval_id, &meta.version);
}

// ---- scrub maps (every member)

void Pg::HandleScrubMap(const pb::ScrubMapRequest& req, pb::ScrubMapReply* reply) {
  FillStatus(BuildScrubMap(req, reply), reply->mutable_status());
}

absl::Status Pg::BuildScrubMap(const pb::ScrubMapRequest& req, pb::ScrubMapReply* reply) {
  std::string after = req.start_after();
  for (;;) {
    bool more = false;
    ASSIGN_OR_RETURN(auto page, ctx_.store->ListObjects(coll_, after, 256, &more));
    for (const auto& entry : page) {
      const std::string& oid = entry.first;
      const ObjectMeta& meta = entry.second;
      if (!req.last().empty() && oid > req.last()) return absl::OkStatus();
      pb::ScrubEntry* e = reply->add_objects();
      e->set_oid(oid);
      e->set_size(meta.size);
      ToProto(meta.version, e->mutable_version());
      e->set_shard(-1);
      auto check = [&]() -> absl::Status {
        ASSIGN_OR_RETURN(auto xattrs, ctx_.store->GetXattrs(coll_, oid));
        uint64_t xattrs_digest = 0;  // of the user xattrs, in name order
        for (const auto& [k, v] : xattrs) {
          if (k == kEcShardXattr) {
            int32_t shard = -1;
            if (absl::SimpleAtoi(v, &shard)) e->set_shard(shard);
            continue;
          }
          if (k == kEcSizeXattr) {
            uint64_t logical = 0;
            if (absl::SimpleAtoi(v, &logical)) e->set_logical_size(logical);
          }
          xattrs_digest = MixKv(xattrs_digest, k, v);
        }
        e->set_xattrs_digest(xattrs_digest);
        uint64_t omap_digest = 0;
        std::string key;
        for (;;) {
          bool more_keys = false;
          ASSIGN_OR_RETURN(auto kvs, ctx_.store->OmapList(coll_, oid, key, "", 10000, &more_keys));
          for (const auto& [k, v] : kvs) omap_digest = MixKv(omap_digest, k, v);
          if (!more_keys || kvs.empty()) break;
          key = kvs.back().first;
        }
        e->set_omap_digest(omap_digest);
        if (!req.deep()) return absl::OkStatus();
        uint64_t digest = 0;
        for (uint64_t off = 0; off < meta.size; off += kDigestPiece) {
          const uint64_t len = std::min(kDigestPiece, meta.size - off);
          ASSIGN_OR_RETURN(std::string data, ctx_.store->Read(coll_, oid, off, len));
          if (data.size() != len) {
            return absl::DataLossError(absl::StrCat("short read at ", off, ": ", data.size(),
                                                    " of ", len, " bytes"));
          }
          digest = Mix(digest, data);
          ctx_.counters->scrubbed_bytes += len;
        }
        e->set_data_digest(digest);
        return absl::OkStatus();
      };
      if (absl::Status s = check(); !s.ok()) e->set_error(std::string(s.message()));
    }
    if (!more || page.empty()) return absl::OkStatus();
    after = page.back().first;
  }
}

// ---- erasure pools: do the parity shards match the data shards?

absl::Status Pg::EcDeepCheck(const std::string& oid, uint64_t logical_size,
                             std::vector<uint32_t>* bad_parity) {
  const uint32_t k = layout_.k;
  const uint32_t n = layout_.k + layout_.m;
  const uint64_t shard_size = layout_.ShardSize(logical_size);
  const uint64_t piece = std::max<uint64_t>(layout_.chunk, kDigestPiece / layout_.chunk *
                                                               layout_.chunk);
  std::vector<bool> bad(n, false);
  for (uint64_t off = 0; off < shard_size; off += piece) {
    const uint64_t len = std::min(piece, shard_size - off);
    std::vector<ec::ShardRead> reads;
    for (uint32_t s = 0; s < n; ++s) reads.push_back({s, off, len});
    std::vector<ec::ShardReply> replies = EcFetch(oid, reads, /*stat=*/false);
    std::vector<std::string> bufs(n);
    for (uint32_t s = 0; s < n; ++s) {
      // Read errors are the shard comparison's to report.
      if (!replies[s].status.ok()) return absl::OkStatus();
      bufs[s] = std::move(replies[s].data);
      bufs[s].resize(len, '\0');
    }
    std::vector<const uint8_t*> data(k);
    for (uint32_t s = 0; s < k; ++s) data[s] = reinterpret_cast<const uint8_t*>(bufs[s].data());
    std::vector<std::string> parity(n - k, std::string(len, '\0'));
    std::vector<uint8_t*> out(n - k);
    for (uint32_t p = 0; p < n - k; ++p) out[p] = reinterpret_cast<uint8_t*>(parity[p].data());
    ec_->Encode(len, data.data(), out.data());
    for (uint32_t p = 0; p < n - k; ++p) {
      if (parity[p] != bufs[k + p]) bad[k + p] = true;
    }
  }
  for (uint32_t s = k; s < n; ++s) {
    if (bad[s]) bad_parity->push_back(s);
  }
  return absl::OkStatus();
}

// Judges the copies of one object (`list`: one per member, or shard
// position) against the authoritative state, into *bad (no copies: all
// good); with `repair`, rewrites the bad ones (order_ held by the caller).
absl::Status Pg::ScrubObject(const std::string& oid, const std::vector<ScrubCopy>& list,
                             bool deep, bool repair, uint64_t interval_id,
                             pb::InconsistentObject* bad) {
  // The authoritative state: present or absent as most readable
  // copies say (a tie: as the primary's, which the log wrote), then
  // the shape most present ones share, the newest version first.
  // A copy that cannot be read still exists: the object is not
  // deleted for want of a readable one.
  size_t present = 0, absent = 0;
  bool primary_present = false;
  std::map<ShapeKey, std::vector<const ScrubCopy*>> shapes;
  for (const ScrubCopy& c : list) {
    if (c.entry == nullptr) {
      ++absent;
      continue;
    }
    ++present;
    if (c.osd == ctx_.whoami) primary_present = true;
    if (c.entry->error().empty()) shapes[Shape(*c.entry, ec_ != nullptr)].push_back(&c);
  }
  const bool exists = present > absent || (present == absent && primary_present);
  const pb::ScrubEntry* auth = nullptr;
  size_t best = 0;
  // `shapes` is ordered by version first: the newest version's groups come
  // last, and among them the one most copies share wins.
  for (const auto& [shape, group] : shapes) {
    if (auth == nullptr || VersionOf(*auth) != VersionOf(*group[0]->entry) ||
        group.size() > best) {
      auth = group[0]->entry;
      best = group.size();
    }
  }
  bad->set_pgid(coll_);
  bad->set_oid(oid);
  std::vector<OsdId> to_fix;
  auto wrong = [&](const ScrubCopy& c, const std::string& error) {
    pb::ScrubCopyError* copy = bad->add_copies();
    copy->set_osd(c.osd.value());
    copy->set_shard(c.shard);
    copy->set_error(error);
    to_fix.push_back(c.osd);
  };
  for (const ScrubCopy& c : list) {
    std::string error;
    if (c.entry == nullptr) {
      if (exists) error = "missing";
    } else if (!c.entry->error().empty()) {
      error = absl::StrCat("read error: ", c.entry->error());
    } else if (!exists) {
      error = "present, but most members have no such object";
    } else if (auth != nullptr) {
      error = Differences(*auth, *c.entry, ec_ != nullptr);
      if (error.empty() && ec_ && c.entry->size() != layout_.ShardSize(auth->logical_size())) {
        error = absl::StrCat("shard size ", c.entry->size(), " != ",
                             layout_.ShardSize(auth->logical_size()));
      }
    }
    if (!error.empty()) wrong(c, error);
  }
  if (ec_ && deep && exists && auth != nullptr && bad->copies_size() == 0) {
    std::vector<uint32_t> parity;
    RETURN_IF_ERROR(EcDeepCheck(oid, auth->logical_size(), &parity));
    for (uint32_t s : parity) {
      for (const ScrubCopy& c : list) {
        if (c.shard == static_cast<int32_t>(s)) wrong(c, "parity does not match the data shards");
      }
    }
  }
  if (bad->copies_size() == 0) return absl::OkStatus();
  ++ctx_.counters->scrub_errors;
  LOG(ERROR) << "pg=" << coll_ << " event=scrub_inconsistent oid=" << oid.substr(0, 128)
             << " copies=" << bad->copies_size() << " first=\"" << bad->copies(0).error()
             << "\"";
  // Nothing to rewrite from when no copy reads: the damage stays
  // reported.
  if (repair && (!exists || auth != nullptr)) {
    // Our own copy first: the others are pushed from it.
    std::stable_sort(to_fix.begin(), to_fix.end(),
                     [this](OsdId a, OsdId b) { return a == ctx_.whoami && b != a; });
    absl::Status fixed;
    for (OsdId osd : to_fix) {
      if (!fixed.ok()) break;
      if (!ec_ && osd == ctx_.whoami && !exists) {
        Transaction txn;
        txn.Remove(oid);
        fixed = ctx_.store->Apply(coll_, std::move(txn));
      } else if (!ec_ && osd == ctx_.whoami) {
        std::vector<std::string> sources;
        for (const ScrubCopy& c : list) {
          if (c.entry != nullptr && c.entry->error().empty() && c.osd != ctx_.whoami &&
              Differences(*auth, *c.entry, false).empty()) {
            sources.push_back(AddrOf(c.osd));
          }
        }
        const Version want = VersionOf(*auth);
        fixed = PullObject(oid, sources, interval_id, &want);
      } else {
        fixed = RepairObjectLocked(oid, osd, interval_id);
      }
      if (fixed.ok()) ++ctx_.counters->scrub_repairs;
    }
    bad->set_repaired(fixed.ok());
    LOG(WARNING) << "pg=" << coll_ << " event=scrub_repair oid=" << oid.substr(0, 128)
                 << " status=\"" << fixed << "\"";
  }
  return absl::OkStatus();
}

// ---- scrub (the primary)

absl::Status Pg::Scrub(pb::PgCommandType type, std::vector<pb::InconsistentObject>* found) {
  const bool deep = type == pb::PGC_DEEP_SCRUB || type == pb::PGC_REPAIR;
  const bool repair = type == pb::PGC_REPAIR;
  uint64_t interval_id = 0;
  RETURN_IF_ERROR(CheckPrimary(&interval_id));
  std::vector<ScrubCopy> members;  // one per member (erasure: per shard position)
  Epoch epoch = 0;
  {
    absl::MutexLock lock(&mu_);
    if (!peer_missing_.empty() || !log_.missing().empty()) {
      return absl::UnavailableError(
          absl::StrCat("pg ", coll_, " is recovering: it is scrubbed once clean"));
    }
    if (scrub_.scrubbing) return absl::UnavailableError(absl::StrCat("pg ", coll_,
                                                                     " is being scrubbed"));
    scrub_.scrubbing = true;
    scrub_.deep = deep;
    epoch = map_->epoch;
    if (ec_) {
      for (size_t s = 0; s < interval_.shards.size(); ++s) {
        if (interval_.shards[s] != kNoOsd) {
          members.push_back({interval_.shards[s], static_cast<int32_t>(s), nullptr});
        }
      }
    } else {
      for (OsdId osd : interval_.acting) members.push_back({osd, -1, nullptr});
    }
  }
  StateChanged();
  LOG(INFO) << "pg=" << coll_ << " event=scrub_start deep=" << deep << " repair=" << repair;
  const int chunk = std::max(1, ctx_.options->scrub_chunk_objects);
  std::vector<pb::InconsistentObject> left;  // not repaired
  uint64_t objects = 0;
  std::string cursor;
  absl::Status status;
  for (bool first = true;; first = false) {
    if (!first && ctx_.options->scrub_sleep_ms > 0) {
      absl::SleepFor(absl::Milliseconds(ctx_.options->scrub_sleep_ms));
    }
    std::string last;
    status = [&]() -> absl::Status {
      SectionGuard ordered(&order_);
      if (!StillInterval(interval_id)) {
        return absl::UnavailableError("the pg's members changed during the scrub");
      }
      bool more = false;
      ASSIGN_OR_RETURN(auto own, ctx_.store->ListObjects(coll_, cursor, chunk, &more));
      // A deep chunk ends early once it holds kDeepChunkBytes: the PG's
      // writes wait for the members to read it all.
      uint64_t bytes = 0;
      for (size_t i = 0; deep && i + 1 < own.size(); ++i) {
        bytes += own[i].second.size;
        if (bytes >= kDeepChunkBytes) {
          own.resize(i + 1);
          more = true;
        }
      }
      last = more && !own.empty() ? own.back().first : "";
      pb::ScrubMapRequest req;
      req.set_map_epoch(epoch);
      req.set_pool(id_.pool.value());
      req.set_pg_seed(id_.seed);
      req.set_start_after(cursor);
      req.set_last(last);
      req.set_deep(deep);
      // Each OSD's map once, however many shard positions it has.
      std::map<int32_t, pb::ScrubMapReply> maps;
      for (const ScrubCopy& m : members) {
        if (maps.contains(m.osd.value())) continue;
        pb::ScrubMapReply& reply = maps[m.osd.value()];
        absl::Status s = m.osd == ctx_.whoami
                             ? BuildScrubMap(req, &reply)
                             : ctx_.peers->ScrubMap(AddrOf(m.osd), req, &reply);
        RETURN_IF_ERROR(Annotate(s, absl::StrCat("scrub map of osd.", m.osd.value())));
      }
      // oid -> the copy of each member (shard position).
      std::map<std::string, std::vector<ScrubCopy>> copies;
      for (const auto& [osd, reply] : maps) {
        for (const pb::ScrubEntry& e : reply.objects()) copies[e.oid()];
      }
      for (auto& [oid, list] : copies) list = members;
      for (const auto& [osd, reply] : maps) {
        for (const pb::ScrubEntry& e : reply.objects()) {
          for (ScrubCopy& c : copies[e.oid()]) {
            if (c.osd.value() == osd && (!ec_ || c.shard == e.shard())) c.entry = &e;
          }
        }
      }
      for (auto& [oid, list] : copies) {
        ++objects;
        pb::InconsistentObject bad;
        RETURN_IF_ERROR(ScrubObject(oid, list, deep, repair, interval_id, &bad));
        if (bad.copies_size() == 0) continue;
        found->push_back(bad);
        if (!bad.repaired()) left.push_back(bad);
      }
      return absl::OkStatus();
    }();
    if (!status.ok() || last.empty()) break;
    cursor = last;
  }
  Transaction txn;
  {
    absl::MutexLock lock(&mu_);
    scrub_.scrubbing = false;
    if (status.ok()) {
      const int64_t now = absl::ToUnixMillis(absl::Now());
      scrub_.last_scrub_ms = now;
      if (deep) scrub_.last_deep_scrub_ms = now;
      scrub_.inconsistent = left;
      scrub_.objects = objects;
      scrub_.saved = true;
      txn.PutMeta(kScrubStampsMeta,
                  absl::StrCat(scrub_.last_scrub_ms, " ", scrub_.last_deep_scrub_ms));
      if (left.empty()) {
        txn.DeleteMeta(kScrubFoundMeta);
      } else {
        pb::PgCommandReply found_left;
        for (const pb::InconsistentObject& o : left) *found_left.add_inconsistent() = o;
        txn.PutMeta(kScrubFoundMeta, found_left.SerializeAsString());
      }
    }
  }
  if (status.ok()) status = ctx_.store->Apply(coll_, std::move(txn));
  StateChanged();
  LOG(INFO) << "pg=" << coll_ << " event=scrub_end deep=" << deep << " objects=" << objects
            << " inconsistent=" << found->size() << " left=" << left.size() << " status=\""
            << status << "\"";
  return status;
}

ScrubStamps ReadScrubStamps(ObjectStore* store, const std::string& coll) {
  ScrubStamps out;
  auto saved = store->GetMeta(coll, kScrubStampsMeta);
  if (saved.ok()) {
    const size_t space = saved->find(' ');
    out.saved = space != std::string::npos &&
                absl::SimpleAtoi(saved->substr(0, space), &out.last_scrub_ms) &&
                absl::SimpleAtoi(saved->substr(space + 1), &out.last_deep_scrub_ms);
  }
  if (!out.saved) out.last_scrub_ms = out.last_deep_scrub_ms = absl::ToUnixMillis(absl::Now());
  auto found = store->GetMeta(coll, kScrubFoundMeta);
  pb::PgCommandReply parsed;
  if (found.ok() && parsed.ParseFromString(*found)) {
    out.inconsistent.assign(parsed.inconsistent().begin(), parsed.inconsistent().end());
  }
  return out;
}

pb::PgCommandType Pg::ScrubDue(absl::Time now) {
  Transaction save;
  {
    absl::MutexLock lock(&mu_);
    if (interval_.primary != ctx_.whoami || state_ != State::kActive || scrub_.scrubbing ||
        !peer_missing_.empty() || !log_.missing().empty()) {
      return pb::PGC_NONE;
    }
    if (!scrub_.saved) {
      // A PG never scrubbed: its intervals count from its first active
      // primary, also across restarts.
      save.PutMeta(kScrubStampsMeta,
                   absl::StrCat(scrub_.last_scrub_ms, " ", scrub_.last_deep_scrub_ms));
      scrub_.saved = true;
    }
  }
  if (!save.empty() && !ctx_.store->Apply(coll_, std::move(save)).ok()) {
    absl::MutexLock lock(&mu_);
    scrub_.saved = false;
  }
  absl::MutexLock lock(&mu_);
  const int64_t ms = absl::ToUnixMillis(now);
  if (ms - scrub_.last_deep_scrub_ms >= ctx_.options->deep_scrub_interval_s * 1000) {
    return pb::PGC_DEEP_SCRUB;
  }
  if (ms - scrub_.last_scrub_ms >= ctx_.options->scrub_min_interval_s * 1000) {
    return pb::PGC_SCRUB;
  }
  return pb::PGC_NONE;
}

pb::PgScrubStat Pg::ScrubStat() {
  absl::MutexLock lock(&mu_);
  pb::PgScrubStat stat;
  stat.set_pgid(coll_);
  stat.set_last_scrub_ms(scrub_.last_scrub_ms);
  stat.set_last_deep_scrub_ms(scrub_.last_deep_scrub_ms);
  stat.set_errors(scrub_.inconsistent.size());
  stat.set_objects(scrub_.objects);
  stat.set_scrubbing(scrub_.scrubbing);
  return stat;
}

std::vector<pb::InconsistentObject> Pg::Inconsistent() {
  absl::MutexLock lock(&mu_);
  return scrub_.inconsistent;
}

}  // namespace weft::osd
