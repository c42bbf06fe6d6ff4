// A small HTTP/1.0 server for Prometheus scrapes: `GET /metrics` answers the
// registry's text. One thread accepts and answers one connection at a time
// (scrapes come every few seconds, not in floods) and closes it after the
// reply; a client that sends nothing is dropped after a timeout, so it
// holds the server for at most that long. Anything but a well-formed GET or
// HEAD gets its 4xx status and changes nothing.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/config/config.h"
#include "common/metrics/metrics.h"

namespace weft::metrics {

// Where a daemon serves metrics: `flag` (its --metrics) when given; else,
// when weft.conf sets `key` to a port, that port plus `offset` (osd.N adds
// N) on the host of `service_addr`, the daemon's own "host:port"; "" for
// none. A value that is not a port is an error that names the key.
absl::StatusOr<std::string> ListenAddr(const Config& config, const std::string& key, int offset,
                                       const std::string& service_addr, const std::string& flag);

class HttpServer {
 public:
  // Listens on `addr` ("host:port"; port 0 picks a free one) and serves
  // `registry`, which must outlive the server. Errors name the address.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& addr, const Registry* registry,
      absl::Duration io_timeout = absl::Seconds(2));
  ~HttpServer();  // stops the thread and closes the socket

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Where it listens, with the port it got ("127.0.0.1:9300").
  const std::string& addr() const { return addr_; }

 private:
  HttpServer(int listen_fd, int wake_fd, std::string addr, const Registry* registry,
             absl::Duration io_timeout);
  void Loop();
  void Serve(int fd);

  const int listen_fd_;
  const int wake_fd_;  // an eventfd: written once to stop Loop
  const std::string addr_;
  const Registry* const registry_;
  const absl::Duration io_timeout_;
  std::thread thread_;
};

}  // namespace weft::metrics
