// Whether the gRPC port can take a new connection, for health (issue 41): while it cannot (the process
// is out of descriptors, or the port holds its most connections), health says NOT_SERVING, so that
// callers that balance leave and Kubernetes drains or restarts the replica; once it can, SERVING again.
// The port's GrpcAcceptGuard sees each refusal as it happens. After one, this connects to the port
// every period: gRPC waits for a new connection before it accepts again (grpc_accept_guard.h), and this
// one tells whether it was taken. While the port accepts, nothing connects.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace gpusort {

class GrpcAcceptGuard;

class PortProbe {
 public:
  // `host` and the guard's port: where to connect (a wildcard listen address means loopback).
  // `changed(accepting)` runs on the probe's thread whenever the answer changes.
  PortProbe(std::string host, std::shared_ptr<GrpcAcceptGuard> guard, std::function<void(bool)> changed,
            std::chrono::milliseconds period = std::chrono::seconds(1));
  ~PortProbe();
  PortProbe(const PortProbe&) = delete;
  PortProbe& operator=(const PortProbe&) = delete;

 private:
  void Run();
  // Connects once and tells whether the port took the connection.
  bool Connects();

  const std::string host_;
  const std::shared_ptr<GrpcAcceptGuard> guard_;
  const std::function<void(bool)> changed_;
  const std::chrono::milliseconds period_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace gpusort
