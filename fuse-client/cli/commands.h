// The `weft` admin CLI's commands. Each returns the process exit status and
// prints errors as one line "weft: <what>: <why>".
#pragma once

#include <string>

#include "common/config/config.h"
#include "fuse-client/cli/args.h"

namespace weft::cli {

int Fail(const absl::Status& status, const std::string& what = "");

int CmdCluster(const Config& config, const Args& args);
int CmdOsd(const Config& config, const Args& args);
int CmdPool(const Config& config, const Args& args);
int CmdStatus(const Config& config, const Args& args);
int CmdObj(const Config& config, const Args& args);
int CmdBench(const Config& config, const Args& args);
int CmdFs(const Config& config, const Args& args);
int CmdClient(const Config& config, const Args& args);

}  // namespace weft::cli
