// weft: the admin CLI.
//
//   weft [-c FILE] cluster init [--failure-domain host|osd|rack]
//   weft [-c FILE] osd create|ls|tree|out|in|set-full-ratio|set-nearfull-ratio ...
//   weft [-c FILE] osd scrub|deep-scrub|repair N|all [--wait]
//   weft [-c FILE] pg scrub|deep-scrub|repair PGID [--wait] | pg ls [inconsistent]
//   weft [-c FILE] pg list-inconsistent-obj PGID
//   weft [-c FILE] pool create|ls|rm ...
//   weft [-c FILE] status
//   weft [-c FILE] obj put|get|stat|rm|ls POOL [NAME] [FILE]
//   weft [-c FILE] fs new|ls|status|add-data-pool|journal inspect ...
//   weft [-c FILE] client ls [FS] | client evict SESSION [--reason TEXT]
//   weft [-c FILE] bench POOL write|seq|rand|cleanup [--seconds S] [--threads T] [--block-size B]
//
// The config comes from -c FILE, else $WEFT_CONF, else /etc/weft/weft.conf.
#include <malloc.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/config/config.h"
#include "common/log/log.h"
#include "fuse-client/cli/commands.h"

namespace {

constexpr char kUsage[] =
    "usage: weft [-c FILE] COMMAND ...\n"
    "  cluster init [--failure-domain host|osd|rack] [--fsid ID]\n"
    "  osd create [--host H] [--rack R] [--weight W] [--id N]\n"
    "  osd ls | osd tree | osd out N | osd in N | osd set-full-ratio R | osd set-nearfull-ratio R\n"
    "  osd reweight N W | osd rm N | osd purge N\n"
    "  osd scrub|deep-scrub|repair N|all [--wait]\n"
    "  pg scrub|deep-scrub|repair PGID [--wait] | pg ls [inconsistent]\n"
    "  pg list-inconsistent-obj PGID | pg query PGID\n"
    "  pool create NAME --size N [--min-size M] [--pg-num P] [--failure-domain host|osd|rack]\n"
    "  pool ls | pool set NAME min_size M | pool rm NAME --yes-i-really-mean-it\n"
    "  status\n"
    "  obj put POOL NAME [FILE|-] | obj get POOL NAME [FILE|-] | obj stat POOL NAME\n"
    "  obj rm POOL NAME | obj ls POOL\n"
    "  bench POOL write|seq|rand|cleanup [--seconds S] [--threads T] [--block-size B]\n"
    "  fs new NAME --metadata-pool P --data-pool D | fs ls | fs status [NAME]\n"
    "  fs add-data-pool NAME POOL | fs journal inspect NAME [--events]\n"
    "  fs set NAME standby_count_wanted|allow_standby_replay|max_mds N | mds fail NAME|RANK|FS:RANK\n"
    "  client ls [FS] | client evict SESSION [--reason TEXT]\n";

}  // namespace

int main(int argc, char** argv) {
  // Object data moves in buffers of a few MiB. Above glibc's default
  // threshold each would be a fresh mmap: page faults and zeroing on every
  // request (a tenth of the OSD's CPU when measured). Keep them in the heap,
  // in few arenas (one per gRPC thread kept hundreds of MiB of free buffers:
  // 841 MiB peak RSS per OSD), and give back what exceeds 64 MiB free.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  mallopt(M_ARENA_MAX, 2);
  weft::log::StartProcess("weft");
  std::vector<std::string> rest;
  std::string conf_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if ((a == "-c" || a == "--conf") && i + 1 < argc) {
      conf_path = argv[++i];
    } else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      rest.push_back(a);
    }
  }
  if (rest.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  auto args = weft::cli::ParseArgs(rest, {"yes-i-really-mean-it", "no-verify", "detail", "events", "wait"});
  if (!args.ok()) return weft::cli::Fail(args.status());
  auto config = weft::Config::Load(weft::Config::DefaultPath(conf_path));
  if (!config.ok()) return weft::cli::Fail(config.status());
  const std::string cmd = args->positional[0];
  args->positional.erase(args->positional.begin());
  if (cmd == "cluster") return weft::cli::CmdCluster(*config, *args);
  if (cmd == "osd") return weft::cli::CmdOsd(*config, *args);
  if (cmd == "pool") return weft::cli::CmdPool(*config, *args);
  if (cmd == "status") return weft::cli::CmdStatus(*config, *args);
  if (cmd == "obj") return weft::cli::CmdObj(*config, *args);
  if (cmd == "bench") return weft::cli::CmdBench(*config, *args);
  if (cmd == "fs") return weft::cli::CmdFs(*config, *args);
  if (cmd == "client") return weft::cli::CmdClient(*config, *args);
  if (cmd == "mds") return weft::cli::CmdMds(*config, *args);
  if (cmd == "pg") return weft::cli::CmdPg(*config, *args);
  std::fprintf(stderr, "weft: unknown command '%s'\n%s", cmd.c_str(), kUsage);
  return 2;
}
