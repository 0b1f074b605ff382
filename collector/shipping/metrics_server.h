// MetricsServer: the opt-in Prometheus endpoint. A single thread serves
// `GET /metrics` (Metrics::Get().RenderText(), text format 0.0.4) over
// HTTP/1.1 with one request per connection; anything else gets 404/405.
// Bound to loopback unless told otherwise: the metrics reveal process ids
// and service names.
//
// Thread-safety: Start/stop from one thread; serving happens on the
// server's own thread. A slow or silent client is cut off after 2 s so it
// cannot wedge the loop.
#ifndef RINGPROF_COLLECTOR_SHIPPING_METRICS_SERVER_H_
#define RINGPROF_COLLECTOR_SHIPPING_METRICS_SERVER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace ringprof {
namespace collector {
namespace shipping {

class MetricsServer {
 public:
  // Listens on address:port (IPv4 literal; port 0 picks a free port).
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const std::string& address, int port);
  ~MetricsServer();  // stops the thread and closes the socket

  int port() const { return port_; }

 private:
  MetricsServer(int listen_fd, int stop_fd, int port);
  void Serve();
  void HandleConnection(int fd);

  const int listen_fd_;
  const int stop_fd_;  // eventfd: written to stop Serve()
  const int port_;
  std::thread thread_;
};

}  // namespace shipping
}  // namespace collector
}  // namespace ringprof

#endif  // RINGPROF_COLLECTOR_SHIPPING_METRICS_SERVER_H_
