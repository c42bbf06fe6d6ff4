// The `weft` admin CLI's commands. Each returns the process exit status and
// prints errors as one line "weft: <what>: <why>".
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/cluster_map/osd_map.h"
#include "common/config/config.h"
#include "fuse-client/cli/args.h"
#include "fuse-client/lib/admin_client.h"
#include "proto/cluster.pb.h"
#include "proto/mds_client.pb.h"

namespace weft::cli {

int Fail(const absl::Status& status, const std::string& what = "");
// "usage: weft TEXT" on stderr; returns 2.
int Usage(const std::string& text);
// The map manager's admin calls, through the config's MDS addresses.
absl::StatusOr<std::unique_ptr<client::AdminClient>> Admin(const Config& config);
absl::StatusOr<OsdMap> FetchMap(client::AdminClient& admin);

int CmdCluster(const Config& config, const Args& args);
int CmdOsd(const Config& config, const Args& args);
int CmdPool(const Config& config, const Args& args);
int CmdStatus(const Config& config, const Args& args);
int CmdObj(const Config& config, const Args& args);
int CmdBench(const Config& config, const Args& args);
int CmdFs(const Config& config, const Args& args);
int CmdMds(const Config& config, const Args& args);
int CmdClient(const Config& config, const Args& args);
int CmdPg(const Config& config, const Args& args);
// weft osd scrub|deep-scrub|repair N|all (cmd_pg.cc).
int CmdOsdScrub(const Config& config, const Args& args);

// What rank 0 of `fs` reports (`weft fs status`), within `timeout_ms`.
absl::StatusOr<pb::FsStatusReply> RankStatus(const pb::FsInfo& fs, uint32_t rank,
                                             int64_t timeout_ms);

}  // namespace weft::cli
