#include "fuse-client/lib/client_config.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status/status.h"

namespace weft::client {
namespace {

// The value of `key` as a size (1 byte to 1 TiB), or `*out` unchanged when absent.
absl::Status ReadSize(const Config& config, absl::string_view key, uint64_t* out) {
  if (!config.Has(key)) return absl::OkStatus();
  absl::StatusOr<uint64_t> size = ParseSize(config.Get(key), uint64_t{1} << 40);
  if (!size.ok()) return Annotate(size.status(), absl::StrCat(config.path(), ": ", key));
  if (*size == 0) return absl::InvalidArgumentError(absl::StrCat(config.path(), ": ", key, " is 0"));
  *out = *size;
  return absl::OkStatus();
}

// The value of `key` as a count from 1 to `max`, or `*out` unchanged when absent.
absl::Status ReadCount(const Config& config, absl::string_view key, uint64_t max, size_t* out) {
  if (!config.Has(key)) return absl::OkStatus();
  uint64_t n = 0;
  if (!absl::SimpleAtoi(config.Get(key), &n) || n < 1 || n > max) {
    return absl::InvalidArgumentError(absl::StrCat(config.path(), ": ", key,
                                                   " must be a count from 1 to ", max, ", not '",
                                                   config.Get(key), "'"));
  }
  *out = n;
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyClientConfig(const Config& config, FileSystemClientOptions* options) {
  FileSystemClientOptions o = *options;
  RETURN_IF_ERROR(ReadSize(config, "client_inflight_bytes", &o.inflight_bytes_max));
  RETURN_IF_ERROR(ReadSize(config, "client_dirty_bytes", &o.dirty_bytes_max));
  RETURN_IF_ERROR(ReadSize(config, "client_file_dirty_bytes", &o.cache.dirty_bytes_max));
  RETURN_IF_ERROR(ReadSize(config, "client_flush_bytes", &o.cache.flush_bytes));
  RETURN_IF_ERROR(ReadSize(config, "client_readahead_bytes", &o.cache.readahead_bytes));
  RETURN_IF_ERROR(ReadSize(config, "client_readahead_max_bytes", &o.cache.readahead_max_bytes));
  RETURN_IF_ERROR(ReadCount(config, "client_writeback_queue", 65536, &o.writeback_queue));
  auto order = [&](uint64_t small, const char* small_key, uint64_t big, const char* big_key) {
    if (small <= big) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(config.path(), ": ", small_key, " (", small,
                                                   ") is larger than ", big_key, " (", big, ")"));
  };
  RETURN_IF_ERROR(order(o.cache.flush_bytes, "client_flush_bytes", o.cache.dirty_bytes_max,
                        "client_file_dirty_bytes"));
  RETURN_IF_ERROR(order(o.cache.dirty_bytes_max, "client_file_dirty_bytes", o.dirty_bytes_max,
                        "client_dirty_bytes"));
  RETURN_IF_ERROR(order(o.cache.readahead_bytes, "client_readahead_bytes",
                        o.cache.readahead_max_bytes, "client_readahead_max_bytes"));
  *options = o;
  return absl::OkStatus();
}

}  // namespace weft::client
