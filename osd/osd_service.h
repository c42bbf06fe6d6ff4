// The gRPC adapter of weft-osd: a thin table from RPC to daemon entry point.
// gRPC's synchronous server runs each call on its own thread, so the blocking
// work below (store fsyncs, waiting for replicas) does not stall other calls.
// Op replies, which carry what reads return, go out without a copy of their
// data (rpc::UnaryService::AddAliased).
#pragma once

#include "common/rpc/aliased.h"

namespace weft::osd {

class OsdDaemon;

class OsdService final : public rpc::UnaryService {
 public:
  explicit OsdService(OsdDaemon* daemon);
};

}  // namespace weft::osd
