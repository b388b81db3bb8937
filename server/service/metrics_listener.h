// /metrics (--metrics-listen): Prometheus' text format over HTTP/1.x, served by one thread with poll()
// instead of a thread a connection. An idle connection costs a descriptor and a small buffer, never a
// scrape's wait: civetweb (prometheus-cpp's Exposer) gave each of its threads one connection at a time
// and waited for its request, so 60 idle connections held a scrape 16 s with 8 threads and a 3 s timeout
// (issue 41's second attack session), and more threads or a shorter wait only moved the number.
//
// One request a connection (the answer says Connection: close): GET or HEAD of /metrics, 200 with the
// text format; any other path 404, any other method 405, a request line or head over 8 KiB 431. Each
// connection has `timeout` to send its request and again to read the answer. At most `max_connections`
// at once: a newcomer past that closes the oldest connection that has not sent its request yet, so
// that connections held open and silent cannot keep a scraper out.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/core/unique_fd.h"
#include "server/transport/accept_pause.h"

namespace gpusort {

struct MetricsListenerOptions {
  std::string listen;  // host:port, as --metrics-listen says it
  std::size_t max_connections = 256;
  std::chrono::milliseconds timeout{3000};
};

class MetricsListener {
 public:
  // `collect` returns the metrics in Prometheus' text format; it runs on the listener's thread.
  static absl::StatusOr<std::unique_ptr<MetricsListener>> Start(const MetricsListenerOptions& options,
                                                                std::function<std::string()> collect);
  // Stops the thread and closes every connection at once.
  ~MetricsListener();
  MetricsListener(const MetricsListener&) = delete;
  MetricsListener& operator=(const MetricsListener&) = delete;

  int port() const { return port_; }

 private:
  using Clock = std::chrono::steady_clock;
  enum class Stage { kReading, kWriting, kClosing };
  struct Connection {
    UniqueFd fd;
    Stage stage = Stage::kReading;
    std::string bytes;     // the request so far, then the answer
    std::size_t sent = 0;  // of the answer
    Clock::time_point deadline;
  };

  MetricsListener(const MetricsListenerOptions& options, std::function<std::string()> collect)
      : options_(options), collect_(std::move(collect)) {}
  void Run();
  void Accept();
  void Read(Connection& c);
  void Write(Connection& c);
  // The answer to the request head in c.bytes; c moves on to writing it.
  void Answer(Connection& c, const std::string& head);
  void Respond(Connection& c, const std::string& status, const std::string& body, bool head_only = false);

  const MetricsListenerOptions options_;
  const std::function<std::string()> collect_;
  UniqueFd listen_fd_;
  UniqueFd wake_fd_;  // an eventfd: written to stop the thread
  int port_ = 0;
  AcceptPause accept_pause_{"/metrics"};
  std::list<Connection> connections_;  // in the order they came: the oldest first; the thread's alone
  std::thread thread_;
};

}  // namespace gpusort
