// cluster, osd, pool and status commands.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "common/fs/mds_roles.h"
#include "common/cluster_map/osd_map.h"
#include "common/etcd/etcd_client.h"
#include "fuse-client/cli/commands.h"
#include "fuse-client/lib/admin_client.h"
#include "fuse-client/lib/meta_client.h"
#include "common/rpc/rpc.h"
#include "proto/mds_client.grpc.pb.h"

namespace weft::cli {

int Fail(const absl::Status& status, const std::string& what) {
  if (what.empty()) {
    std::fprintf(stderr, "weft: %s\n", std::string(status.message()).c_str());
  } else {
    std::fprintf(stderr, "weft: %s: %s\n", what.c_str(), std::string(status.message()).c_str());
  }
  return 1;
}

int Usage(const std::string& text) {
  std::fprintf(stderr, "usage: weft %s\n", text.c_str());
  return 2;
}

absl::StatusOr<std::unique_ptr<client::AdminClient>> Admin(const Config& config) {
  auto mds = config.MdsAddresses();
  if (!mds.ok()) return mds.status();
  return std::make_unique<client::AdminClient>(*mds);
}

absl::StatusOr<OsdMap> FetchMap(client::AdminClient& admin) {
  auto bytes = admin.GetMapBytes();
  if (!bytes.ok()) return bytes.status();
  return OsdMap::Decode(*bytes);
}

namespace {

std::string HumanBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f %s", v, units[u]);
}

// "mds:     3 up: a holds rank 0 of weft; standby-replay b; standby c".
void PrintMdsDaemons(const pb::FsListReply& listed) {
  std::vector<std::string> parts;
  std::string followers, standbys;
  for (const pb::MdsAlive& d : listed.daemons()) {
    const std::vector<fs::RankRef> held = fs::RanksHeldBy(listed.fsmap(), d);
    if (!held.empty()) {
      parts.push_back(absl::StrCat(d.name(), " holds ", fs::Describe(held)));
    } else if (!fs::RanksFollowedBy(listed.fsmap(), d).empty()) {
      absl::StrAppend(&followers, followers.empty() ? "" : ", ", d.name());
    } else {
      absl::StrAppend(&standbys, standbys.empty() ? "" : ", ", d.name());
    }
  }
  if (!followers.empty()) parts.push_back("standby-replay " + followers);
  if (!standbys.empty()) parts.push_back("standby " + standbys);
  std::printf("  mds:     %d up%s%s\n", listed.daemons_size(), parts.empty() ? "" : ": ",
              absl::StrJoin(parts, "; ").c_str());
}

// "fs:      NAME (rank 0 on DAEMON), ..." when filesystems exist.
void PrintFilesystems(const Config& config) {
  auto mds = config.MdsAddresses();
  if (!mds.ok()) return;
  client::FsAdmin fs_admin(*mds, 5000);
  auto listed = fs_admin.FsListWithDaemons();
  if (!listed.ok()) return;
  PrintMdsDaemons(*listed);
  const pb::FsMap* fsmap = &listed->fsmap();
  if (fsmap->filesystems().empty()) return;
  std::string line;
  std::vector<std::string> evictions;
  for (const pb::FsInfo& fs : fsmap->filesystems()) {
    std::string ranks;
    for (uint32_t r = 0; r < std::max<uint32_t>(1, fs.ranks_size()); ++r) {
      const pb::FsRank& held = fs::RankOf(fs, r);
      std::string sessions;
      absl::StatusOr<pb::FsStatusReply> reply =
          held.addr().empty() ? absl::UnavailableError("no holder") : RankStatus(fs, r, 5000);
      if (reply.ok()) {
        sessions = absl::StrCat(", ", reply->sessions(), " sessions");
        if (reply->evictions() > 0) {
          evictions.push_back(absl::StrCat(fs.name(), r == 0 ? "" : absl::StrCat(" rank ", r), ": ",
                                           reply->evictions(),
                                           " clients evicted, last ", reply->last_eviction()));
        }
      }
      absl::StrAppend(&ranks, ranks.empty() ? "" : "; ", "rank ", r, " on ",
                      held.name().empty() ? "none" : held.name(), sessions);
    }
    absl::StrAppend(&line, line.empty() ? "" : ", ", fs.name(), " (", ranks, ")");
  }
  std::printf("  fs:      %s\n", line.c_str());
  for (const std::string& e : evictions) std::printf("  evicted: %s\n", e.c_str());
}

}  // namespace

int CmdCluster(const Config& config, const Args& args) {
  if (args.positional.empty() || args.positional[0] != "init") {
    return Usage("cluster init [--failure-domain host|osd|rack] [--fsid ID]");
  }
  std::string fsid = args.Get("fsid", config.Get("fsid"));
  if (fsid.empty()) return Fail(absl::InvalidArgumentError("no fsid in the config or --fsid"));
  auto domain = ParseFailureDomain(args.Get("failure-domain", "host"));
  if (!domain.ok()) return Fail(domain.status(), "--failure-domain");
  auto endpoints = config.EtcdEndpoints();
  if (!endpoints.ok()) return Fail(endpoints.status());
  auto etcd = etcd::Client::Connect(*endpoints, absl::Seconds(5));
  if (!etcd.ok()) return Fail(etcd.status(), "etcd");
  OsdMap map;
  map.fsid = fsid;
  map.epoch = 1;
  map.modified_ms = absl::ToUnixMillis(absl::Now());
  map.default_failure_domain = *domain;
  const std::string key = ClusterPrefix(fsid) + "osdmap";
  auto txn = (*etcd)->Txn({etcd::Compare::CreateRevision(key, etcd::Compare::kEqual, 0)},
                          {etcd::Op::Put(key, map.Encode())}, {});
  if (!txn.ok()) return Fail(txn.status(), "etcd");
  if (!txn->succeeded) {
    return Fail(absl::AlreadyExistsError(absl::StrCat("cluster ", fsid, " is already initialized")));
  }
  std::printf("initialized cluster %s (failure domain %s)\n", fsid.c_str(),
              std::string(FailureDomainName(*domain)).c_str());
  return 0;
}

int CmdOsd(const Config& config, const Args& args) {
  const char* usage =
      "osd create|ls|tree|out N|in N|reweight N W|rm N|purge N|set-full-ratio R|"
      "set-nearfull-ratio R|set-backfillfull-ratio R|"
      "blocklist ls|add CLIENT [--seconds S]|rm CLIENT|scrub|deep-scrub|repair N|all [--wait]";
  if (args.positional.empty()) return Usage(usage);
  if (args.positional[0] == "scrub" || args.positional[0] == "deep-scrub" ||
      args.positional[0] == "repair") {
    return CmdOsdScrub(config, args);
  }
  auto admin = Admin(config);
  if (!admin.ok()) return Fail(admin.status());
  const std::string& sub = args.positional[0];
  if (sub == "create") {
    auto weight = args.GetDouble("weight", 1.0);
    if (!weight.ok()) return Fail(weight.status());
    auto id = args.GetInt("id", -1);
    if (!id.ok()) return Fail(id.status());
    auto created = (*admin)->OsdCreate(args.Get("host"), args.Get("rack"), *weight, *id);
    if (!created.ok()) return Fail(created.status(), "osd create");
    std::printf("%d\n", *created);
    return 0;
  }
  if (sub == "out" || sub == "in") {
    int32_t id = -1;
    if (args.positional.size() != 2 || !absl::SimpleAtoi(args.positional[1], &id)) {
      return Usage("osd out|in N");
    }
    auto status = (*admin)->OsdSetIn(id, sub == "in");
    if (!status.ok()) return Fail(status, "osd " + sub);
    std::printf("marked osd.%d %s\n", id, sub.c_str());
    return 0;
  }
  if (sub == "reweight") {
    int32_t id = -1;
    double w = -1;
    if (args.positional.size() != 3 || !absl::SimpleAtoi(args.positional[1], &id) ||
        !absl::SimpleAtod(args.positional[2], &w)) {
      return Usage("osd reweight N W   (W in [0, 1])");
    }
    auto status = (*admin)->OsdReweight(id, w);
    if (!status.ok()) return Fail(status, "osd reweight");
    std::printf("reweighted osd.%d to %g\n", id, w);
    return 0;
  }
  if (sub == "rm" || sub == "purge") {
    int32_t id = -1;
    if (args.positional.size() != 2 || !absl::SimpleAtoi(args.positional[1], &id)) {
      return Usage("osd " + sub + " N");
    }
    auto status = (*admin)->OsdRemove(id, sub == "purge");
    if (!status.ok()) return Fail(status, "osd " + sub);
    std::printf("removed osd.%d\n", id);
    return 0;
  }
  if (sub == "set-full-ratio" || sub == "set-nearfull-ratio" || sub == "set-backfillfull-ratio") {
    double ratio = 0;
    if (args.positional.size() != 2 || !absl::SimpleAtod(args.positional[1], &ratio)) {
      return Usage("osd " + sub + " RATIO");
    }
    const std::string which = sub.substr(4, sub.size() - 4 - 6);  // set-X-ratio
    auto status = (*admin)->SetRatio(which, ratio);
    if (!status.ok()) return Fail(status, "osd " + sub);
    std::printf("%s ratio %g\n", which.c_str(), ratio);
    return 0;
  }
  if (sub == "blocklist" && args.positional.size() == 3 &&
      (args.positional[1] == "add" || args.positional[1] == "rm")) {
    const std::string& client = args.positional[2];
    const bool remove = args.positional[1] == "rm";
    // As `ceph osd blocklist add`: an hour unless told; 0 keeps it until rm.
    auto seconds = args.GetInt("seconds", 3600);
    if (!seconds.ok()) return Fail(seconds.status());
    if (*seconds < 0) return Fail(absl::InvalidArgumentError("--seconds must be >= 0"));
    const int64_t expires_ms =
        *seconds == 0 ? 0 : absl::ToUnixMillis(absl::Now()) + *seconds * 1000;
    auto status = (*admin)->Blocklist(client, remove, expires_ms);
    if (!status.ok()) return Fail(status, "osd blocklist " + args.positional[1]);
    if (remove) {
      std::printf("un-blocklisted %s\n", client.c_str());
    } else if (expires_ms == 0) {
      std::printf("blocklisted %s until removed\n", client.c_str());
    } else {
      std::printf("blocklisted %s for %lld s\n", client.c_str(), static_cast<long long>(*seconds));
    }
    return 0;
  }
  auto map = FetchMap(**admin);
  if (!map.ok()) return Fail(map.status(), "map");
  if (sub == "blocklist" && args.positional.size() == 2 && args.positional[1] == "ls") {
    const int64_t now_ms = absl::ToUnixMillis(absl::Now());
    std::printf("%-8s %-24s %s\n", "EPOCH", "EXPIRES (UTC)", "CLIENT");
    for (const BlocklistEntry& b : map->blocklist) {
      if (b.ExpiredAt(now_ms)) continue;  // not yet pruned from the map
      const std::string expires =
          b.expires_ms == 0 ? "never"
                            : absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(b.expires_ms),
                                               absl::UTCTimeZone());
      std::printf("%-8llu %-24s %s\n", static_cast<unsigned long long>(b.added), expires.c_str(),
                  b.client.c_str());
    }
    return 0;
  }
  if (sub == "blocklist") return Usage("osd blocklist ls|add CLIENT [--seconds S]|rm CLIENT");
  if (sub == "ls") {
    std::printf("%-6s %-6s %-4s %-7s %-8s %-22s %s\n", "ID", "STATUS", "IN", "WEIGHT",
                "REWEIGHT", "ADDRESS", "HOST");
    for (const OsdInfo& osd : map->osds) {
      std::printf("%-6d %-6s %-4s %-7.3f %-8.3f %-22s %s\n", osd.id.value(),
                  osd.up ? "up" : "down", osd.in ? "in" : "out", osd.weight, osd.reweight,
                  osd.addr.c_str(), osd.host.c_str());
    }
    return 0;
  }
  if (sub == "tree") {
    std::map<std::string, std::map<std::string, std::vector<const OsdInfo*>>> tree;
    for (const OsdInfo& osd : map->osds) {
      tree[osd.rack.empty() ? "default" : osd.rack][osd.host.empty() ? "(unknown)" : osd.host]
          .push_back(&osd);
    }
    std::printf("%-8s %-28s %s\n", "WEIGHT", "NAME", "STATUS");
    for (const auto& [rack, hosts] : tree) {
      std::printf("%-8s rack %s\n", "", rack.c_str());
      for (const auto& [host, osds] : hosts) {
        double w = 0;
        for (auto* o : osds) w += o->in ? o->weight : 0;
        std::printf("%-8.3f   host %s\n", w, host.c_str());
        for (auto* o : osds) {
          std::printf("%-8.3f     osd.%-20d %s %s\n", o->weight, o->id.value(),
                      o->up ? "up" : "down", o->in ? "in" : "out");
        }
      }
    }
    return 0;
  }
  return Usage(usage);
}

int CmdPool(const Config& config, const Args& args) {
  const char* usage =
      "pool create NAME (--size N | --ec K+M [--chunk-size BYTES]) [--min-size M] [--pg-num P] "
      "[--failure-domain D] | pool ls | pool set NAME min_size M | "
      "pool rm NAME --yes-i-really-mean-it";
  if (args.positional.empty()) return Usage(usage);
  auto admin = Admin(config);
  if (!admin.ok()) return Fail(admin.status());
  const std::string& sub = args.positional[0];
  if (sub == "create") {
    if (args.positional.size() != 2) return Usage(usage);
    pb::PoolCreateRequest req;
    req.set_name(args.positional[1]);
    if (args.Has("ec")) {
      std::vector<std::string> km = absl::StrSplit(args.Get("ec"), '+');
      uint32_t k = 0, m = 0;
      if (km.size() != 2 || !absl::SimpleAtoi(km[0], &k) || !absl::SimpleAtoi(km[1], &m)) {
        return Fail(absl::InvalidArgumentError("--ec takes K+M, e.g. 4+2"));
      }
      req.set_ec_k(k);
      req.set_ec_m(m);
      auto chunk = args.GetInt("chunk-size", 0);
      if (!chunk.ok()) return Fail(chunk.status());
      if (*chunk < 0 || *chunk > (1 << 30)) {
        return Fail(absl::InvalidArgumentError("--chunk-size must be a multiple of 4096, <= 1 MiB"));
      }
      req.set_ec_chunk_bytes(static_cast<uint32_t>(*chunk));
    } else {
      auto size = args.GetInt("size", 3);
      if (!size.ok()) return Fail(size.status());
      if (*size < 1 || *size > 10) return Fail(absl::InvalidArgumentError("--size must be 1..10"));
      req.set_size(static_cast<uint32_t>(*size));
    }
    auto min_size = args.GetInt("min-size", 0);
    auto pg_num = args.GetInt("pg-num", 0);
    if (!min_size.ok()) return Fail(min_size.status());
    if (!pg_num.ok()) return Fail(pg_num.status());
    if (*min_size < 0 || *pg_num < 0 || *pg_num > 65536) {
      return Fail(absl::InvalidArgumentError("--min-size and --pg-num must be positive"));
    }
    req.set_min_size(static_cast<uint32_t>(*min_size));
    req.set_pg_num(static_cast<uint32_t>(*pg_num));
    req.set_failure_domain(args.Get("failure-domain"));
    auto status = (*admin)->PoolCreate(req);
    if (!status.ok()) return Fail(status, "pool create");
    std::printf("pool '%s' created\n", req.name().c_str());
    return 0;
  }
  if (sub == "set") {
    if (args.positional.size() != 4) return Usage("pool set NAME min_size VALUE");
    const std::string& name = args.positional[1];
    auto status = (*admin)->PoolSet(name, args.positional[2], args.positional[3]);
    if (absl::IsAlreadyExists(status)) {
      std::printf("%s\n", std::string(status.message()).c_str());
      return 0;
    }
    if (!status.ok()) return Fail(status, "pool set");
    std::printf("set pool '%s' %s to %s\n", name.c_str(), args.positional[2].c_str(),
                args.positional[3].c_str());
    return 0;
  }
  if (sub == "rm") {
    if (args.positional.size() != 2) return Usage(usage);
    std::string confirm = args.Has("yes-i-really-mean-it") ? args.positional[1] : "";
    auto status = (*admin)->PoolRemove(args.positional[1], confirm);
    if (!status.ok()) return Fail(status, "pool rm");
    std::printf("pool '%s' removed\n", args.positional[1].c_str());
    return 0;
  }
  if (sub == "ls") {
    auto map = FetchMap(**admin);
    if (!map.ok()) return Fail(map.status(), "map");
    std::printf("%-4s %-20s %-16s %-5s %-9s %-7s %s\n", "ID", "NAME", "TYPE", "SIZE", "MIN_SIZE",
                "PG_NUM", "FAILURE_DOMAIN");
    for (const PoolInfo& p : map->pools) {
      std::string type = p.type == PoolType::kErasure
                              ? absl::StrCat("ec ", p.ec_k, "+", p.ec_m, "/", p.ec_chunk_bytes / 1024, "K")
                              : std::string("replicated");
      std::printf("%-4u %-20s %-16s %-5u %-9u %-7u %s\n", p.id.value(), p.name.c_str(),
                  type.c_str(), p.size, p.min_size, p.pg_num,
                  std::string(FailureDomainName(p.failure_domain)).c_str());
    }
    return 0;
  }
  return Usage(usage);
}

int CmdStatus(const Config& config, const Args& args) {
  auto admin = Admin(config);
  if (!admin.ok()) return Fail(admin.status());
  auto st = (*admin)->Status();
  if (!st.ok()) return Fail(st.status(), "status");
  std::printf("%s\n", st->health().c_str());
  std::printf("  cluster: %s\n", st->fsid().c_str());
  std::printf("  manager: %s\n", st->leader().empty() ? "(none elected)" : st->leader().c_str());
  std::printf("  osdmap:  epoch %lu, %u osds: %u up, %u in\n",
              static_cast<unsigned long>(st->osdmap_epoch()), st->osds(), st->osds_up(),
              st->osds_in());
  std::printf("  pools:   %u pools, %u pgs\n", st->pools(), st->pgs());
  PrintFilesystems(config);
  std::map<std::string, uint32_t> states(st->pg_states().begin(), st->pg_states().end());
  std::string pgs;
  for (const auto& [state, n] : states) {
    absl::StrAppend(&pgs, pgs.empty() ? "" : ", ", n, " ", state);
  }
  std::printf("  pgs:     %s\n", pgs.empty() ? "none" : pgs.c_str());
  std::printf("  usage:   %s used by %lu objects, %s / %s avail\n",
              HumanBytes(st->bytes_used()).c_str(), static_cast<unsigned long>(st->objects()),
              HumanBytes(st->bytes_avail()).c_str(), HumanBytes(st->bytes_total()).c_str());
  for (const auto& io : st->osd_io()) {
    std::printf("  io:      osd.%d read %lu B, written %lu B, recovery %lu B\n", io.id(),
                static_cast<unsigned long>(io.read_bytes()),
                static_cast<unsigned long>(io.write_bytes()),
                static_cast<unsigned long>(io.recovery_bytes()));
  }
  if (st->recovery_objects_left() > 0) {
    std::string rate = "rate not known yet (run weft status again)";
    if (st->recovery_objects_sec() > 0 || st->recovery_bytes_sec() > 0) {
      // The slower of the two estimates: many small objects or a few big ones.
      double left_s = 0;
      if (st->recovery_objects_sec() > 0) {
        left_s = st->recovery_objects_left() / st->recovery_objects_sec();
      }
      if (st->recovery_bytes_sec() > 0) {
        left_s = std::max(left_s, st->recovery_bytes_left() / st->recovery_bytes_sec());
      }
      rate = absl::StrFormat("%.1f copies/s, %s/s, about %.0f s left",
                             st->recovery_objects_sec(),
                             HumanBytes(static_cast<uint64_t>(st->recovery_bytes_sec())), left_s);
    }
    std::string backfill;
    if (st->backfilling_pgs() > 0) backfill = absl::StrCat(", ", st->backfilling_pgs(), " pgs backfilling");
    std::printf("  recovery: %lu copies (%s) to make%s; %s\n",
                static_cast<unsigned long>(st->recovery_objects_left()),
                HumanBytes(st->recovery_bytes_left()).c_str(), backfill.c_str(), rate.c_str());
  }
  if (st->read_repairs() > 0) {
    std::printf("  repair:  %lu damaged copies rewritten on read since the OSDs started\n",
                static_cast<unsigned long>(st->read_repairs()));
  }
  if (st->checks_size() > 0) {
    std::printf("  warnings:\n");
    for (const auto& c : st->checks()) {
      std::printf("    [%s] %s: %s\n", c.severity().c_str(), c.code().c_str(),
                  c.message().c_str());
    }
  }
  return 0;
}

}  // namespace weft::cli
