#include "collector/shipping/metrics_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "collector/base/log.h"
#include "collector/base/metrics.h"

namespace ringprof {
namespace collector {
namespace shipping {
namespace {

constexpr int kClientTimeoutMs = 2000;
constexpr size_t kMaxRequestBytes = 8192;

void WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n =
        send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

std::string Response(const char* status, const char* content_type,
                     const std::string& body) {
  return absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", content_type,
                      "\r\nContent-Length: ", body.size(),
                      "\r\nConnection: close\r\n\r\n", body);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& address, int port) {
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (port < 0 || port > 65535 ||
      inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid metrics address ", address, ":", port,
                     " (an IPv4 address and a port in [0, 65535])"));
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 16) != 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", address, ":", port, " for /metrics: ", error));
  }
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int stop_fd = eventfd(0, EFD_CLOEXEC);
  if (stop_fd < 0) {
    close(fd);
    return absl::InternalError("eventfd() failed");
  }
  return std::unique_ptr<MetricsServer>(
      new MetricsServer(fd, stop_fd, ntohs(addr.sin_port)));
}

MetricsServer::MetricsServer(int listen_fd, int stop_fd, int port)
    : listen_fd_(listen_fd), stop_fd_(stop_fd), port_(port) {
  thread_ = std::thread([this] { Serve(); });
}

MetricsServer::~MetricsServer() {
  const uint64_t one = 1;
  ssize_t unused = write(stop_fd_, &one, sizeof(one));
  (void)unused;
  thread_.join();
  close(listen_fd_);
  close(stop_fd_);
}

void MetricsServer::Serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if (fds[0].revents & POLLIN) {
      const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        HandleConnection(client);
        close(client);
      }
    }
  }
}

void MetricsServer::HandleConnection(int fd) {
  std::string request;
  char buf[2048];
  // Read until the end of the headers, bounded in size and time.
  while (request.find("\r\n\r\n") == std::string::npos &&
         request.size() < kMaxRequestBytes) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, kClientTimeoutMs) <= 0) return;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return;
    request.append(buf, static_cast<size_t>(n));
  }
  const size_t line_end = request.find("\r\n");
  const std::string line = request.substr(0, line_end);
  if (!absl::StartsWith(line, "GET ") && !absl::StartsWith(line, "HEAD ")) {
    WriteAll(fd, Response("405 Method Not Allowed", "text/plain", ""));
    return;
  }
  const size_t path_start = line.find(' ') + 1;
  const std::string path =
      line.substr(path_start, line.find(' ', path_start) - path_start);
  if (path != "/metrics" && !absl::StartsWith(path, "/metrics?")) {
    WriteAll(fd, Response("404 Not Found", "text/plain", "try /metrics\n"));
    return;
  }
  const std::string body = Metrics::Get().RenderText();
  WriteAll(fd, Response("200 OK", "text/plain; version=0.0.4; charset=utf-8",
                        absl::StartsWith(line, "HEAD ") ? "" : body));
}

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof
