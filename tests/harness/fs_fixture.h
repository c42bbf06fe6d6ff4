// For Catch2 tests: a cluster (tests/harness/cluster.h) with filesystem
// "fs1" (pools fs1_meta and fs1_data, 3x) and a session with its MDS.
// Header-only because it uses Catch2's assertions: include it from tests.
#pragma once

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "tests/harness/cluster.h"
#include "tests/harness/fs_caller.h"

namespace weft::testing {

// A started cluster with the filesystem "fs1" created, its data pool made
// as `data` says (3x by default); REQUIREs success.
inline std::unique_ptr<Cluster> StartClusterWithFs(ClusterOptions options = {},
                                                   const DataPoolOptions& data = {}) {
  auto c = Cluster::Start(options);
  INFO(c.status());
  REQUIRE(c.ok());
  auto created = (*c)->CreateFs("fs1", data);
  INFO(created);
  REQUIRE(created.ok());
  return std::move(*c);
}

struct FsFixture {
  explicit FsFixture(ClusterOptions options = {}) : cluster(StartClusterWithFs(options)) {
    meta = cluster->Meta("fs1");
    REQUIRE(meta != nullptr);
    caller = std::make_unique<FsCaller>(meta.get());
  }
  // Requests as root on the fixture's session.
  FsCaller& fs() { return *caller; }
  // kill -9 of the MDS, then a restart, as an operator would.
  void RestartMds() {
    cluster->KillMds();
    auto st = cluster->StartMds();
    INFO(st);
    REQUIRE(st.ok());
  }

  std::unique_ptr<Cluster> cluster;
  std::unique_ptr<client::MetaClient> meta;
  std::unique_ptr<FsCaller> caller;
};

// The inode number of a successful reply; REQUIREs success.
inline uint64_t Ino(const absl::StatusOr<pb::Attr>& attr) {
  INFO(attr.status());
  REQUIRE(attr.ok());
  return attr->ino();
}

}  // namespace weft::testing
