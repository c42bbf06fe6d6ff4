#include "tests/harness/http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace weft::testing {

absl::StatusOr<std::string> HttpExchange(const std::string& addr, const std::string& request,
                                         absl::Duration timeout, bool keep_open) {
  const size_t colon = addr.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(addr.substr(colon + 1), &port)) {
    return absl::InvalidArgumentError("not host:port: " + addr);
  }
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, addr.substr(0, colon).c_str(), &sa.sin_addr) != 1) {
    return absl::InvalidArgumentError("not an IPv4 address: " + addr);
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("socket failed");
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    return absl::UnavailableError(absl::StrCat("connect ", addr, ": ", std::strerror(errno)));
  }
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer (431) and close before reading it all
    sent += static_cast<size_t>(n);
  }
  if (!keep_open) shutdown(fd, SHUT_WR);
  std::string out;
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    const int64_t left = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left <= 0) return absl::DeadlineExceededError("no end of answer from " + addr);
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return out;  // closed (or reset): what came is the answer
    out.append(buf, static_cast<size_t>(n));
  }
}

absl::StatusOr<HttpResponse> ParseHttp(const std::string& raw) {
  const size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return absl::DataLossError("no end of headers in: " + raw);
  HttpResponse r;
  r.headers = raw.substr(0, end);
  r.body = raw.substr(end + 4);
  std::vector<std::string> words = absl::StrSplit(r.headers.substr(0, r.headers.find('\r')), ' ');
  if (words.size() < 2 || !absl::SimpleAtoi(words[1], &r.code)) {
    return absl::DataLossError("bad status line in: " + raw);
  }
  return r;
}

absl::StatusOr<HttpResponse> HttpGet(const std::string& addr, const std::string& path) {
  auto raw = HttpExchange(addr, absl::StrCat("GET ", path, " HTTP/1.0\r\n\r\n"));
  if (!raw.ok()) return raw.status();
  return ParseHttp(*raw);
}

absl::StatusOr<double> MetricValue(const std::string& text, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.size() <= series.size() || line.substr(0, series.size()) != series ||
        line[series.size()] != ' ') {
      continue;
    }
    double v = 0;
    if (!absl::SimpleAtod(line.substr(series.size() + 1), &v)) break;
    return v;
  }
  return absl::NotFoundError("no series " + series);
}

}  // namespace weft::testing
