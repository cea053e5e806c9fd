// The Prometheus side of pktgen and rx: a tiny HTTP/1.0 server that answers
// GET /metrics with the latest page, and node_exporter's textfile (written
// whole, then renamed over the file: the collector never reads half a page).
//
// Who touches what: the reporter (main thread) renders a page from the
// snapshots it already copies and hands it over with publish(); the server
// thread copies the page under a mutex only the two of them take. Workers
// never see any of it, so a slow or stuck scraper cannot delay a packet: at
// worst it holds the server thread for its 2 s deadline, one client at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace rateline::report {

// --metrics [ADDR:]PORT: a numeric IPv4 or IPv6 address ([::1]:9464 for v6),
// default 127.0.0.1; port 0 = the kernel picks a free one.
struct MetricsEndpoint {
  std::string address = "127.0.0.1";
  uint16_t port = 0;
};
// Throws std::invalid_argument with what is wrong ("99999: port out of range (0..65535)").
MetricsEndpoint parse_metrics_endpoint(std::string_view text);

// What a program was asked for (pktgen, rx: metrics_options.hpp parses them).
struct MetricsOptions {
  std::optional<MetricsEndpoint> endpoint;  // --metrics
  std::string textfile;                     // --metrics-textfile
  uint64_t linger_ns = 0;                   // --metrics-linger: keep serving the final page this long
};

class MetricsServer {
 public:
  // Binds and listens now, so a taken port fails before anything is sent.
  // Throws SetupError ("Couldn't listen for metrics on ADDR:PORT: <cause>. <fix>").
  explicit MetricsServer(const MetricsEndpoint& at);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Starts the serving thread. Call it once the calling thread has dropped
  // its capabilities: threads copy their creator's (the server keeps none).
  void start();
  // "127.0.0.1:40123": the port the kernel gave when 0 was asked.
  const std::string& listening() const { return listening_; }
  void publish(std::string page);

 private:
  void serve_forever();
  void serve_one(int conn);
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: stops the thread without waiting out its poll
  std::string listening_;
  std::mutex page_mutex_;
  std::string page_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Both outputs behind one call for the programs' reporter loops.
class MetricsOutput {
 public:
  MetricsOutput() = default;
  // endpoint: none = no server; textfile "" = none. Throws SetupError (port
  // taken, textfile's directory not writable) before anything is sent.
  explicit MetricsOutput(const MetricsOptions& asked);

  bool enabled() const { return server_ || !textfile_.empty(); }
  // See MetricsServer::start().
  void start();
  // The start-up line ("metrics: http://127.0.0.1:40123/metrics; textfile F"), "" when off.
  std::string start_line() const;
  // The server serves it at once; the textfile is rewritten at most once a
  // second, and always when `final`. A textfile error is returned once ("" otherwise).
  std::string publish(std::string page, uint64_t now_ns, bool final);
  // Keeps serving the final page for --metrics-linger, or until a stop signal.
  void linger() const;

 private:
  std::unique_ptr<MetricsServer> server_;
  std::string textfile_;
  uint64_t linger_ns_ = 0;
  uint64_t textfile_written_ns_ = 0;
  bool textfile_failed_ = false;
};

}  // namespace rateline::report
