// The client's tunables from weft.conf (any frontend: weft-fuse, gateways).
//
//   client_inflight_bytes      = 256M   data I/O in flight, all files together
//   client_dirty_bytes         = 256M   buffered writes, all files together
//   client_file_dirty_bytes    = 64M    buffered writes per file (writers wait above)
//   client_flush_bytes         = 32M    a file starts writing back at this much
//   client_readahead_bytes     = 8M     a sequential reader's first window
//   client_readahead_max_bytes = 64M    the window grows with the stream up to this
//   client_writeback_queue     = 256    files waiting for write-back (closes wait above)
//
// Sizes as ParseSize reads them ("256M", "8388608"), the queue as a count
// (1 to 65536). Keys that are absent keep the defaults of
// FileSystemClientOptions.
#pragma once

#include "absl/status/status.h"
#include "common/config/config.h"
#include "fuse-client/lib/file_system_client.h"

namespace weft::client {

// Sets the tunables above in *options. InvalidArgument naming the key when a
// value is not a size (or a count), is 0, or breaks an order (flush <= per-file dirty <=
// total dirty, readahead <= readahead max); *options is unchanged then.
absl::Status ApplyClientConfig(const Config& config, FileSystemClientOptions* options);

}  // namespace weft::client
