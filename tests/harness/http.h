// A raw HTTP client for tests of the metrics endpoints: sends bytes as given
// (well-formed or not) and reads the whole answer until the server closes.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace weft::testing {

// Connects to `addr` ("host:port"), sends `request` verbatim, half-closes
// unless `keep_open`, and returns everything received until the server
// closes or `timeout` passes.
absl::StatusOr<std::string> HttpExchange(const std::string& addr, const std::string& request,
                                         absl::Duration timeout = absl::Seconds(10),
                                         bool keep_open = false);

struct HttpResponse {
  int code = 0;
  std::string headers;  // the status line and headers
  std::string body;
};
// `GET path HTTP/1.0`, parsed.
absl::StatusOr<HttpResponse> HttpGet(const std::string& addr, const std::string& path);
// Splits a raw answer at its blank line.
absl::StatusOr<HttpResponse> ParseHttp(const std::string& raw);

// The value of the series `name` (with its labels, exactly as rendered:
// `weft_osd_pgs{osd="0"}`) in Prometheus text, or an error if absent.
absl::StatusOr<double> MetricValue(const std::string& text, const std::string& series);

}  // namespace weft::testing
