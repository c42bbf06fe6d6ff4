// fs commands: new, ls, status, add-data-pool, journal inspect.
#include <cstdio>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "fuse-client/cli/commands.h"
#include "common/fs/mds_roles.h"
#include "common/status/status.h"
#include "fuse-client/lib/meta_client.h"
#include "common/objects/object_client.h"
#include "mds/fs/names.h"
#include "mds/journal/journal_format.h"
#include "mds/store/records.pb.h"
#include "proto/mds_client.grpc.pb.h"

namespace weft::cli {
namespace {

constexpr char kFsUsage[] =
    "fs new NAME --metadata-pool P --data-pool D | fs ls | fs status [NAME]\n"
    "       | fs add-data-pool NAME POOL | fs journal inspect NAME [--events]\n"
    "       | fs set NAME standby_count_wanted|allow_standby_replay|max_mds N";

int FsUsage() {
  std::fprintf(stderr, "usage: weft %s\n", kFsUsage);
  return 2;
}

std::string PoolName(const OsdMap* map, uint32_t id) {
  if (map != nullptr) {
    if (const PoolInfo* p = map->FindPool(PoolId(id))) return p->name;
  }
  return absl::StrCat("pool#", id);
}

absl::StatusOr<pb::FsInfo> FindFs(client::FsAdmin& admin, const std::string& name) {
  auto map = admin.FsList();
  if (!map.ok()) return map.status();
  for (const pb::FsInfo& fs : map->filesystems()) {
    if (fs.name() == name) return fs;
  }
  return absl::NotFoundError(absl::StrCat("no filesystem named ", name));
}

int FsList(client::FsAdmin& admin, const std::vector<std::string>& mds) {
  auto map = admin.FsList();
  if (!map.ok()) return Fail(map.status(), "fs ls");
  objects::ClientOptions options;
  options.mds_addrs = mds;
  auto objects = objects::ObjectClient::Connect(options);
  std::shared_ptr<const OsdMap> osdmap = objects.ok() ? (*objects)->map() : nullptr;
  if (map->filesystems().empty()) std::printf("no filesystems\n");
  for (const pb::FsInfo& fs : map->filesystems()) {
    std::string data;
    for (uint32_t p : fs.data_pools()) absl::StrAppend(&data, data.empty() ? "" : ",", PoolName(osdmap.get(), p));
    std::printf("name: %s, id: %u, metadata pool: %s, data pools: [%s], rank 0: %s (%s)\n",
                fs.name().c_str(), fs.id(), PoolName(osdmap.get(), fs.metadata_pool()).c_str(),
                data.c_str(), fs::RankOf(fs, 0).name().c_str(), fs::RankOf(fs, 0).addr().c_str());
  }
  return 0;
}

// "mds daemons: a (ADDR) rank 0 of weft; b (ADDR) standby-replay for rank 0
// of weft" and the map manager, after the filesystems.
void PrintDaemons(const pb::FsListReply& listed) {
  std::printf("mds daemons: %d alive, map manager %s\n", listed.daemons_size(),
              listed.leader_addr().empty() ? "(none elected)" : listed.leader_addr().c_str());
  for (const pb::MdsAlive& d : listed.daemons()) {
    const std::vector<fs::RankRef> held = fs::RanksHeldBy(listed.fsmap(), d);
    const std::vector<fs::RankRef> followed = fs::RanksFollowedBy(listed.fsmap(), d);
    std::string role = "standby";
    if (!held.empty()) {
      role = fs::Describe(held);
    } else if (!followed.empty()) {
      role = absl::StrCat("standby-replay for ", fs::Describe(followed));
    }
    std::printf("  %s (%s): %s\n", d.name().c_str(), d.addr().c_str(), role.c_str());
  }
}

int FsStatus(client::FsAdmin& admin, const std::string& name) {
  auto listed = admin.FsListWithDaemons();
  if (!listed.ok()) return Fail(listed.status(), "fs status");
  const pb::FsMap* map = &listed->fsmap();
  int shown = 0;
  for (const pb::FsInfo& fs : map->filesystems()) {
    if (!name.empty() && fs.name() != name) continue;
    ++shown;
    if (fs::MaxMds(fs) > 1 || fs.ranks_size() > 1) {
      std::printf("%s: max_mds %u, %d ranks\n", fs.name().c_str(), fs::MaxMds(fs), fs.ranks_size());
    }
    for (uint32_t r = 0; r < std::max<uint32_t>(1, fs.ranks_size()); ++r) {
      const pb::FsRank& held = fs::RankOf(fs, r);
      absl::StatusOr<pb::FsStatusReply> asked =
          held.addr().empty() ? absl::UnavailableError("no daemon holds it")
                              : RankStatus(fs, r, 10000);
      const absl::Status status = asked.status();
      const pb::FsStatusReply reply = asked.ok() ? *std::move(asked) : pb::FsStatusReply();
      std::printf("%s: rank %u on %s (%s)%s\n", fs.name().c_str(), r, held.name().c_str(),
                  held.addr().c_str(), held.stopping() ? ", stopping" : "");
      std::printf("  holder: client %s, incarnation %lu\n",
                  held.client().empty() ? "-" : held.client().c_str(),
                  static_cast<unsigned long>(held.incarnation()));
      if (!status.ok()) {
        std::printf("  state: unavailable (%s)\n", std::string(status.message()).c_str());
        continue;
      }
      std::printf(
          "  state: %s, sessions: %lu, inodes: %lu, replay: %ld ms, caps: %lu (Ls %lu, AsFs %lu)\n",
          reply.state().c_str(), reply.sessions(), reply.inodes(), reply.replay_ms(), reply.caps(),
          reply.dir_leases(), reply.attr_caps());
      std::printf(
          "  cache: %lu inodes, %lu dentries, %lu dirty inodes, %.1f MiB of %.1f MiB "
          "(mds_cache_memory_limit), MDS RSS %.1f MiB\n",
          reply.cached_inodes(), reply.cached_dentries(), reply.dirty_inodes(),
          reply.cache_bytes() / 1048576.0, reply.cache_limit_bytes() / 1048576.0,
          reply.rss_bytes() / 1048576.0);
      std::printf(
          "  caps: %.1f MiB (counted in the limit), max %lu per client (mds_max_caps_per_client); "
          "granted %lu, refused %lu, recalled %lu, released %lu\n",
          reply.caps_bytes() / 1048576.0, reply.max_caps_per_client(), reply.caps_granted(),
          reply.caps_refused(), reply.caps_recalled(), reply.caps_released());
      for (const pb::ClientInfo& c : reply.clients()) {
        std::printf("    client %lu (%s): %lu caps (Ls %lu, AsFs %lu), %lu open files, "
                    "%lu inodes cached\n",
                    c.session(), absl::CHexEscape(c.client()).c_str(), c.caps(), c.dir_leases(),
                    c.attr_caps(), c.open_files(), c.cached_inodes());
      }
      std::printf("  journal: events %lu..%lu, %lu segments, %.1f KiB\n",
                  reply.journal_first_seq(), reply.journal_last_seq(), reply.journal_segments(),
                  reply.journal_bytes() / 1024.0);
      std::printf("  strays: %lu, purge queue: %lu, truncates cutting objects: %lu\n",
                  reply.strays(), reply.purge_queue(), reply.trims());
      std::printf("  locks: %lu held, %lu waiting\n", reply.locks(), reply.lock_waiters());
      std::printf("  evictions: %lu%s%s\n", reply.evictions(),
                  reply.last_eviction().empty() ? "" : ", last: ",
                  absl::CHexEscape(reply.last_eviction()).c_str());
      std::printf("  requests: %lu, in the rank %.1f ms, rank lock: waited %.1f ms, held %.1f ms\n",
                  reply.requests(), reply.request_ns() / 1e6, reply.rank_lock_wait_ns() / 1e6,
                  reply.rank_lock_held_ns() / 1e6);
      if (reply.request_rate_s() > 0) {
        std::printf("  request rate: %.1f/s over the last %u s\n", reply.request_rate(),
                    reply.request_rate_s());
      }
    }
  }
  if (shown == 0 && !name.empty()) return Fail(absl::NotFoundError(absl::StrCat("no filesystem named ", name)), "fs status");
  PrintDaemons(*listed);
  return 0;
}

// Reads the journal straight from the metadata pool (works with the MDS down).
int JournalInspect(client::FsAdmin& admin, const std::vector<std::string>& mds,
                   const std::string& name, bool events) {
  auto fs = FindFs(admin, name);
  if (!fs.ok()) return Fail(fs.status(), "fs journal inspect");
  objects::ClientOptions options;
  options.mds_addrs = mds;
  auto objects = objects::ObjectClient::Connect(options);
  if (!objects.ok()) return Fail(objects.status(), "fs journal inspect");
  const PoolId pool(fs->metadata_pool());
  auto head_bytes = (*objects)->Get(pool, mds::JournalHeadObject(fs->id(), 0));
  if (absl::IsNotFound(head_bytes.status())) {
    return Fail(absl::NotFoundError("no journal head"), "fs journal inspect");
  }
  if (!head_bytes.ok()) return Fail(head_bytes.status(), "read journal head");
  pb::JournalHead head;
  if (!head.ParseFromString(*head_bytes)) {
    return Fail(absl::DataLossError("journal head does not parse"), "read journal head");
  }
  std::printf("journal of %s: trimmed to seq %lu, first segment %lu, segment size %u\n",
              name.c_str(), head.trimmed_seq(), head.first_segment(), head.segment_bytes());
  uint64_t count = 0, bytes = 0, first = 0, last = 0, segments = 0;
  for (uint64_t seg = head.first_segment();; ++seg) {
    auto data = (*objects)->Get(pool, mds::JournalSegmentObject(fs->id(), 0, seg));
    if (absl::IsNotFound(data.status())) break;
    if (!data.ok()) return Fail(data.status(), absl::StrCat("read segment ", seg));
    ++segments;
    bytes += data->size();
    size_t valid = 0;
    for (const std::string& frame : mds::ParseFrames(*data, &valid)) {
      pb::JournalEvent ev;
      if (!ev.ParseFromString(frame)) {
        std::printf("segment %lu: undecodable event\n", seg);
        continue;
      }
      if (ev.seq() <= head.trimmed_seq()) continue;
      ++count;
      if (first == 0) first = ev.seq();
      last = ev.seq();
      if (events) {
        std::printf("  seq %lu %s: %d inodes, %d removed, %d dentries, %d unlinked%s\n", ev.seq(),
                    ev.op().c_str(), ev.inodes_size(), ev.removed_inodes_size(),
                    ev.dentries_size(), ev.removed_dentries_size(),
                    ev.tid() != 0 ? absl::StrFormat(", request %x/%lu", ev.session(), ev.tid()).c_str() : "");
      }
    }
    if (valid != data->size()) std::printf("segment %lu: torn tail after %zu bytes\n", seg, valid);
  }
  std::printf("live: %lu events (seq %lu..%lu) in %lu segments, %lu bytes\n", count, first, last,
              segments, bytes);
  return 0;
}

}  // namespace

absl::StatusOr<pb::FsStatusReply> RankStatus(const pb::FsInfo& fs, uint32_t rank,
                                             int64_t timeout_ms) {
  rpc::ChannelCache channels;
  auto stub = pb::Mds::NewStub(channels.Get(fs::RankOf(fs, rank).addr()));
  grpc::ClientContext ctx;
  ctx.set_deadline(rpc::DeadlineIn(timeout_ms));
  pb::FsStatusRequest req;
  req.set_fs(fs.name());
  req.set_rank(rank);
  pb::FsStatusReply reply;
  RETURN_IF_ERROR(rpc::FromGrpc(stub->FsStatus(&ctx, req, &reply), "mds"));
  RETURN_IF_ERROR(rpc::FromProto(reply.status()));
  return reply;
}

int CmdFs(const Config& config, const Args& args) {
  if (args.positional.empty()) return FsUsage();
  auto mds = config.MdsAddresses();
  if (!mds.ok()) return Fail(mds.status());
  client::FsAdmin admin(*mds);
  const std::string& sub = args.positional[0];
  if (sub == "new") {
    if (args.positional.size() != 2 || args.Get("metadata-pool").empty() ||
        args.Get("data-pool").empty()) {
      return FsUsage();
    }
    absl::Status status = admin.FsNew(args.positional[1], args.Get("metadata-pool"), args.Get("data-pool"));
    if (!status.ok()) return Fail(status, "fs new");
    std::printf("created filesystem %s\n", args.positional[1].c_str());
    return 0;
  }
  if (sub == "ls" && args.positional.size() == 1) return FsList(admin, *mds);
  if (sub == "status" && args.positional.size() <= 2) {
    return FsStatus(admin, args.positional.size() == 2 ? args.positional[1] : "");
  }
  if (sub == "add-data-pool" && args.positional.size() == 3) {
    absl::Status status = admin.FsAddDataPool(args.positional[1], args.positional[2]);
    if (!status.ok()) return Fail(status, "fs add-data-pool");
    std::printf("filesystem %s: data pool %s added\n", args.positional[1].c_str(), args.positional[2].c_str());
    return 0;
  }
  if (sub == "set" && args.positional.size() == 4) {
    absl::Status status = admin.FsSet(args.positional[1], args.positional[2], args.positional[3]);
    if (!status.ok()) return Fail(status, "fs set");
    std::printf("filesystem %s: %s = %s\n", args.positional[1].c_str(), args.positional[2].c_str(),
                args.positional[3].c_str());
    return 0;
  }
  if (sub == "journal" && args.positional.size() == 3 && args.positional[1] == "inspect") {
    return JournalInspect(admin, *mds, args.positional[2], args.Has("events"));
  }
  return FsUsage();
}

int CmdMds(const Config& config, const Args& args) {
  if (args.positional.size() != 2 || args.positional[0] != "fail") {
    std::fprintf(stderr, "usage: weft mds fail NAME|RANK|FS:RANK\n");
    return 2;
  }
  auto mds = config.MdsAddresses();
  if (!mds.ok()) return Fail(mds.status());
  client::FsAdmin admin(*mds);
  auto done = admin.MdsFail(args.positional[1]);
  if (!done.ok()) return Fail(done.status(), "mds fail");
  std::printf("%s\n", done->c_str());
  return 0;
}

}  // namespace weft::cli
