// pg commands, and the osd scrub commands: scrub, deep scrub and repair
// asked of a PG's primary (or of one OSD for every PG it is primary of),
// and what the last scrubs found.
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/cluster_map/osd_map.h"
#include "common/placement/placement.h"
#include "common/rpc/rpc.h"
#include "fuse-client/cli/commands.h"
#include "fuse-client/lib/admin_client.h"
#include "proto/osd.grpc.pb.h"

namespace weft::cli {
namespace {

absl::StatusOr<pb::PgCommandType> CommandOf(const std::string& word) {
  if (word == "scrub") return pb::PGC_SCRUB;
  if (word == "deep-scrub") return pb::PGC_DEEP_SCRUB;
  if (word == "repair") return pb::PGC_REPAIR;
  return absl::InvalidArgumentError(absl::StrCat("unknown command '", word, "'"));
}

// Sends `req` to the OSD at `addr`; a scrub asked to wait may take long.
absl::StatusOr<pb::PgCommandReply> Send(const std::string& addr, const pb::PgCommandRequest& req) {
  rpc::ChannelCache channels;
  auto stub = pb::Osd::NewStub(channels.Get(addr));
  grpc::ClientContext ctx;
  ctx.set_deadline(rpc::DeadlineIn(req.wait() ? 3600 * 1000 : 30 * 1000));
  pb::PgCommandReply reply;
  absl::Status status = rpc::FromGrpc(stub->PgCommand(&ctx, req, &reply), addr);
  if (status.ok()) status = rpc::FromProto(reply.status());
  if (!status.ok() && reply.inconsistent_size() == 0) return status;
  if (!status.ok()) std::fprintf(stderr, "weft: %s\n", std::string(status.message()).c_str());
  return reply;
}

// The PG `text` names and the address of its primary.
absl::Status Locate(const OsdMap& map, const std::string& text, PgId* pg, std::string* addr) {
  auto id = PgId::Parse(text);
  if (!id.ok()) return id.status();
  const PoolInfo* pool = map.FindPool(id->pool);
  if (pool == nullptr) {
    return absl::NotFoundError(absl::StrCat("pg ", text, ": pool ", id->pool.value(),
                                            " does not exist"));
  }
  if (id->seed >= pool->pg_num) {
    return absl::NotFoundError(absl::StrCat("pg ", text, " does not exist: pool '", pool->name,
                                            "' has ", pool->pg_num, " pgs"));
  }
  const placement::PgMapping mapping = placement::MapPg(map, *pool, id->seed);
  const OsdInfo* primary = map.FindOsd(mapping.primary);
  if (primary == nullptr || !primary->up) {
    return absl::UnavailableError(absl::StrCat("pg ", text, " has no primary up"));
  }
  *pg = *id;
  *addr = primary->addr;
  return absl::OkStatus();
}

void PrintInconsistent(const pb::PgCommandReply& reply) {
  for (const pb::InconsistentObject& o : reply.inconsistent()) {
    std::printf("%s %s%s\n", o.pgid().c_str(), o.oid().c_str(), o.repaired() ? " (repaired)" : "");
    for (const pb::ScrubCopyError& c : o.copies()) {
      if (c.shard() >= 0) {
        std::printf("  osd.%d shard %d: %s\n", c.osd(), c.shard(), c.error().c_str());
      } else {
        std::printf("  osd.%d: %s\n", c.osd(), c.error().c_str());
      }
    }
  }
}

void PrintScrubbed(const pb::PgCommandReply& reply) {
  size_t objects = 0, left = 0;
  for (const pb::PgScrubStat& s : reply.pgs()) {
    objects += s.objects();
    left += s.errors();
  }
  size_t repaired = 0;
  for (const pb::InconsistentObject& o : reply.inconsistent()) repaired += o.repaired();
  std::printf("%d pgs, %zu objects: %d inconsistent, %zu repaired, %zu left\n",
              reply.pgs_size(), objects, reply.inconsistent_size(), repaired, left);
}

}  // namespace

int CmdPg(const Config& config, const Args& args) {
  const char* usage =
      "pg scrub|deep-scrub|repair PGID [--wait] | pg ls [inconsistent] | "
      "pg list-inconsistent-obj PGID | pg query PGID";
  if (args.positional.empty()) return Usage(usage);
  const std::string& sub = args.positional[0];
  auto admin = Admin(config);
  if (!admin.ok()) return Fail(admin.status());
  auto map = FetchMap(**admin);
  if (!map.ok()) return Fail(map.status(), "map");
  if (sub == "ls") {
    const bool only_inconsistent = args.positional.size() == 2 &&
                                   args.positional[1] == "inconsistent";
    if (args.positional.size() > 2 || (args.positional.size() == 2 && !only_inconsistent)) {
      return Usage("pg ls [inconsistent]");
    }
    auto status = (*admin)->Status();
    if (!status.ok()) return Fail(status.status(), "status");
    if (only_inconsistent) {
      for (const std::string& pg : status->inconsistent_pgs()) std::printf("%s\n", pg.c_str());
      return 0;
    }
    // Every PG with its acting set; states are in `weft status`.
    std::printf("%-8s %-6s %s\n", "PG", "PRIMARY", "ACTING");
    for (const PoolInfo& pool : map->pools) {
      const placement::PoolPlacement placement(*map, pool);
      for (uint32_t seed = 0; seed < pool.pg_num; ++seed) {
        const placement::PgMapping m = placement.Map(seed);
        std::string acting;
        for (OsdId osd : m.acting) {
          absl::StrAppend(&acting, acting.empty() ? "" : ",",
                          osd == kNoOsd ? std::string("-") : absl::StrCat(osd.value()));
        }
        std::printf("%-8s %-6s [%s]\n", PgId{pool.id, seed}.ToString().c_str(),
                    m.primary == kNoOsd ? "-" : absl::StrCat(m.primary.value()).c_str(),
                    acting.c_str());
      }
    }
    return 0;
  }
  if (args.positional.size() != 2) return Usage(usage);
  PgId pg;
  std::string addr;
  if (absl::Status s = Locate(*map, args.positional[1], &pg, &addr); !s.ok()) return Fail(s);
  pb::PgCommandRequest req;
  req.set_pool(pg.pool.value());
  req.set_pg_seed(pg.seed);
  if (sub == "query") {
    req.set_type(pb::PGC_QUERY);
    auto reply = Send(addr, req);
    if (!reply.ok()) return Fail(reply.status(), "pg query");
    std::printf("%s\n", reply->message().c_str());
    return 0;
  }
  if (sub == "list-inconsistent-obj") {
    req.set_type(pb::PGC_LIST_INCONSISTENT);
    auto reply = Send(addr, req);
    if (!reply.ok()) return Fail(reply.status(), "pg " + sub);
    PrintInconsistent(*reply);
    return 0;
  }
  auto type = CommandOf(sub);
  if (!type.ok()) return Usage(usage);
  req.set_type(*type);
  req.set_wait(args.Has("wait"));
  auto reply = Send(addr, req);
  if (!reply.ok()) return Fail(reply.status(), "pg " + sub);
  if (!req.wait()) {
    std::printf("%s\n", reply->message().c_str());
    return 0;
  }
  PrintInconsistent(*reply);
  PrintScrubbed(*reply);
  return reply->status().code() == 0 ? 0 : 1;
}

int CmdOsdScrub(const Config& config, const Args& args) {
  const char* usage = "osd scrub|deep-scrub|repair N|all [--wait]";
  if (args.positional.size() != 2) return Usage(usage);
  auto type = CommandOf(args.positional[0]);
  if (!type.ok()) return Usage(usage);
  auto admin = Admin(config);
  if (!admin.ok()) return Fail(admin.status());
  auto map = FetchMap(**admin);
  if (!map.ok()) return Fail(map.status(), "map");
  std::vector<const OsdInfo*> osds;
  if (args.positional[1] == "all") {
    for (const OsdInfo& osd : map->osds) {
      if (osd.up) osds.push_back(&osd);
    }
  } else {
    int32_t id = -1;
    if (!absl::SimpleAtoi(args.positional[1], &id)) return Usage(usage);
    const OsdInfo* osd = map->FindOsd(OsdId(id));
    if (osd == nullptr) return Fail(absl::NotFoundError(absl::StrCat("osd.", id, " does not exist")));
    if (!osd->up) return Fail(absl::UnavailableError(absl::StrCat("osd.", id, " is down")));
    osds.push_back(osd);
  }
  int rc = 0;
  for (const OsdInfo* osd : osds) {
    pb::PgCommandRequest req;
    req.set_type(*type);
    req.set_all(true);
    req.set_wait(args.Has("wait"));
    auto reply = Send(osd->addr, req);
    if (!reply.ok()) {
      Fail(reply.status(), absl::StrCat("osd.", osd->id.value()));
      rc = 1;
      continue;
    }
    if (!req.wait()) {
      std::printf("%s\n", reply->message().c_str());
      continue;
    }
    PrintInconsistent(*reply);
    std::printf("osd.%d: ", osd->id.value());
    PrintScrubbed(*reply);
    if (reply->status().code() != 0) rc = 1;
  }
  return rc;
}

}  // namespace weft::cli
