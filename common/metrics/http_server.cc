#include "common/metrics/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/log/log.h"
#include "common/status/status.h"

namespace weft::metrics {
namespace {

constexpr size_t kMaxRequestBytes = 8192;

absl::Status Errno(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

// "host:port" or "[v6]:port".
absl::StatusOr<std::pair<std::string, std::string>> SplitAddr(const std::string& addr) {
  const size_t colon = addr.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", addr, "' is not host:port"));
  }
  std::string host = addr.substr(0, colon);
  std::string port = addr.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int n = 0;
  if (!absl::SimpleAtoi(port, &n) || n < 0 || n > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", addr, "': port must be 0 to 65535"));
  }
  return std::make_pair(host, port);
}

std::string Bound(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  char host[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    return absl::StrCat("[", host, "]:", ntohs(a->sin6_port));
  }
  auto* a = reinterpret_cast<sockaddr_in*>(&ss);
  inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
  return absl::StrCat(host, ":", ntohs(a->sin_port));
}

void SendAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client left or timed out: nothing to do
    data.remove_prefix(static_cast<size_t>(n));
  }
}

// Sends the answer (headers, then the body unless `head`). After a refusal
// the request may have bytes we never read (a body, over-long headers):
// closing with them unread would reset the connection and could destroy the
// answer before the client reads it, so what still comes is read and
// dropped until the client closes or `deadline`.
void Reply(int fd, absl::Time deadline, int code, absl::string_view reason,
           absl::string_view content_type, absl::string_view body, bool head,
           absl::string_view extra_headers = "") {
  SendAll(fd, absl::StrCat("HTTP/1.0 ", code, " ", reason, "\r\nContent-Type: ", content_type,
                           "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n",
                           extra_headers, "\r\n"));
  if (!head) SendAll(fd, body);
  if (code < 400) return;
  shutdown(fd, SHUT_WR);
  char buf[4096];
  while (absl::Now() < deadline) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
  }
}

}  // namespace

absl::StatusOr<std::string> ListenAddr(const Config& config, const std::string& key, int offset,
                                       const std::string& service_addr, const std::string& flag) {
  if (!flag.empty()) return flag;
  ASSIGN_OR_RETURN(int64_t port, config.GetInt(key, 0));
  if (port < 0 || port + offset > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        key, offset > 0 ? " plus the OSD id" : "", " must be a port, 1 to 65535 (0 = no metrics)"));
  }
  if (port == 0) return std::string();
  return absl::StrCat(service_addr.substr(0, service_addr.rfind(':')), ":", port + offset);
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& addr,
                                                              const Registry* registry,
                                                              absl::Duration io_timeout) {
  auto parts = SplitAddr(addr);
  if (!parts.ok()) return parts.status();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const char* host = parts->first.empty() ? nullptr : parts->first.c_str();
  if (int rc = getaddrinfo(host, parts->second.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", addr, "': ", gai_strerror(rc)));
  }
  int fd = -1;
  absl::Status why = absl::UnavailableError("no address");
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      why = Errno(absl::StrCat("metrics address ", addr, ": socket"));
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 16) == 0) break;
    why = Errno(absl::StrCat("metrics address ", addr));
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd < 0) return why;
  const int wake = eventfd(0, EFD_CLOEXEC);
  if (wake < 0) {
    absl::Status status = Errno("metrics server: eventfd");
    close(fd);
    return status;
  }
  auto server = std::unique_ptr<HttpServer>(
      new HttpServer(fd, wake, Bound(fd), registry, io_timeout));
  server->thread_ = std::thread([s = server.get()] { s->Loop(); });
  LOG(INFO) << "event=metrics_listening addr=" << server->addr();
  return server;
}

HttpServer::HttpServer(int listen_fd, int wake_fd, std::string addr, const Registry* registry,
                       absl::Duration io_timeout)
    : listen_fd_(listen_fd),
      wake_fd_(wake_fd),
      addr_(std::move(addr)),
      registry_(registry),
      io_timeout_(io_timeout) {}

HttpServer::~HttpServer() {
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) != sizeof(one)) {
    LOG(WARNING) << "event=metrics_stop_failed errno=" << errno;
  }
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  close(wake_fd_);
}

void HttpServer::Loop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      LOG(ERROR) << "event=metrics_poll_failed errno=" << errno;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;  // the client gave up already, or out of descriptors
    Serve(fd);
    close(fd);
  }
}

void HttpServer::Serve(int fd) {
  timeval tv = absl::ToTimeval(io_timeout_);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  // The request line and headers, up to the blank line that ends them.
  std::string request;
  const absl::Time deadline = absl::Now() + io_timeout_;
  while (request.find("\r\n\r\n") == std::string::npos &&
         request.find("\n\n") == std::string::npos) {
    if (request.size() >= kMaxRequestBytes) {
      return Reply(fd, deadline, 431, "Request Header Fields Too Large", "text/plain",
                   "request headers over 8 KiB\n", false);
    }
    if (absl::Now() > deadline) return;  // a client trickling bytes
    char buf[1024];
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // closed or timed out before a whole request
    request.append(buf, static_cast<size_t>(n));
  }
  const std::string line = request.substr(0, request.find_first_of("\r\n"));
  std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (words.size() != 3 || words[2].rfind("HTTP/", 0) != 0 || words[1].empty() ||
      words[1][0] != '/') {
    return Reply(fd, deadline, 400, "Bad Request", "text/plain", "malformed request line\n", false);
  }
  const std::string& method = words[0];
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    return Reply(fd, deadline, 405, "Method Not Allowed", "text/plain", "only GET and HEAD\n",
                 false, "Allow: GET, HEAD\r\n");
  }
  const std::string path = words[1].substr(0, words[1].find('?'));
  if (path == "/metrics") {
    return Reply(fd, deadline, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
                 registry_->Render(), head);
  }
  if (path == "/") {
    return Reply(fd, deadline, 200, "OK", "text/plain", "weft metrics: GET /metrics\n", head);
  }
  return Reply(fd, deadline, 404, "Not Found", "text/plain", "not found; try /metrics\n", head);
}

}  // namespace weft::metrics
