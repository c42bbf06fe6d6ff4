// client_* keys of weft.conf (fuse-client/lib/client_config.h): read into the
// client's options, bad values refused naming the key, nothing half-applied.
#include "fuse-client/lib/client_config.h"

#include <catch2/catch.hpp>

namespace weft::client {
namespace {

Config Conf(const std::string& text) {
  auto config = Config::Parse(text, "test.conf");
  REQUIRE(config.ok());
  return *config;
}

}  // namespace

TEST_CASE("client config: sizes are read and absent keys keep the defaults", "[client]") {
  FileSystemClientOptions options;
  const FileSystemClientOptions defaults;
  REQUIRE(ApplyClientConfig(Conf("mds = 1.2.3.4:5\n"), &options).ok());
  CHECK(options.inflight_bytes_max == defaults.inflight_bytes_max);
  CHECK(options.cache.readahead_bytes == 8ull << 20);

  REQUIRE(ApplyClientConfig(Conf("client_inflight_bytes = 64M\n"
                                 "client_dirty_bytes = 1G\n"
                                 "client_file_dirty_bytes = 128M\n"
                                 "client_flush_bytes = 16777216\n"
                                 "client_readahead_bytes = 2M\n"
                                 "client_readahead_max_bytes = 32M\n"
                                 "client_writeback_queue = 16\n"),
                            &options)
              .ok());
  CHECK(options.inflight_bytes_max == 64ull << 20);
  CHECK(options.dirty_bytes_max == 1ull << 30);
  CHECK(options.cache.dirty_bytes_max == 128ull << 20);
  CHECK(options.cache.flush_bytes == 16ull << 20);
  CHECK(options.cache.readahead_bytes == 2ull << 20);
  CHECK(options.cache.readahead_max_bytes == 32ull << 20);
  CHECK(options.writeback_queue == 16);
}

TEST_CASE("client config: bad values are refused naming the key and change nothing",
          "[client]") {
  for (const std::string bad : {"client_inflight_bytes = lots\n", "client_inflight_bytes = 0\n",
                                "client_readahead_bytes = -1M\n", "client_dirty_bytes = 2T\n",
                                "client_flush_bytes = 100M\n",  // above the per-file 64M
                                "client_readahead_bytes = 128M\n",  // above the max 64M
                                "client_file_dirty_bytes = 512M\n",  // above the total
                                "client_writeback_queue = 0\n", "client_writeback_queue = many\n",
                                "client_writeback_queue = 65537\n",
                                "client_writeback_queue = 8M\n"}) {
    INFO(bad);
    FileSystemClientOptions options;
    absl::Status status = ApplyClientConfig(Conf(bad), &options);
    REQUIRE(absl::IsInvalidArgument(status));
    const std::string key = bad.substr(0, bad.find(' '));
    CHECK(std::string(status.message()).find(key) != std::string::npos);
    const FileSystemClientOptions defaults;
    CHECK(options.inflight_bytes_max == defaults.inflight_bytes_max);
    CHECK(options.cache.flush_bytes == defaults.cache.flush_bytes);
    CHECK(options.cache.readahead_bytes == defaults.cache.readahead_bytes);
    CHECK(options.cache.dirty_bytes_max == defaults.cache.dirty_bytes_max);
    CHECK(options.writeback_queue == defaults.writeback_queue);
  }
}

}  // namespace weft::client
