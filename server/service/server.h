// Assembles one running server: backend, metrics endpoint, the gRPC server with the sort service,
// health and reflection; and takes it down with a drain. Tests embed it; main() wraps it.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"
#include "server/service/config.h"
#include "server/transport/descriptor_limit.h"
#include "server/service/metrics_listener.h"

namespace grpc {
class CallbackGenericService;
class Server;
}  // namespace grpc

namespace gpusort {

class DeviceMemoryRefresh;

class Metrics;
class ServiceCore;
class SortService;
class EchoService;
class TokenAuth;
class RegionCalls;
class RegionSocketListener;
class DataSocketListener;
class GrpcAcceptGuard;
class PortProbe;

class GpusortServer {
 public:
  // Picks the backend from config.backend: UNAVAILABLE for "cuda" when no CUDA backend is usable.
  static absl::StatusOr<std::unique_ptr<GpusortServer>> Start(const ServerConfig& config);
  // Same, serving from a given backend (tests use it to inject one).
  static absl::StatusOr<std::unique_ptr<GpusortServer>> Start(const ServerConfig& config,
                                                              std::unique_ptr<Backend> backend);
  ~GpusortServer();

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }  // 0 when metrics are off
  int health_port() const { return health_port_; }    // 0 without --health-listen
  int data_port() const;                               // 0 without --data-port
  const Backend& backend() const { return *backend_; }
  // Shared-memory and device regions registered now (tests, and what an operator may want to see).
  std::size_t registered_regions() const;

  // Health turns NOT_SERVING, new calls get UNAVAILABLE, in-flight calls may finish for up to the
  // drain timeout; then the gRPC server stops. Returns true when every call finished in time.
  bool Drain();
  // Blocks until the gRPC server has stopped (after Drain, from another thread).
  void Wait();

 private:
  explicit GpusortServer(const ServerConfig& config);
  absl::Status Init(std::unique_ptr<Backend> backend);
  // The sockets beside the gRPC port, each when its flag asks for it: shared-memory registration
  // (--shm-socket) and the data port (--data-port).
  absl::Status StartSideSockets();
  // /metrics (--metrics-listen; metrics_listener.h), at most its share of the descriptors.
  absl::Status StartMetrics(const DescriptorShares& shares);
  // Health of the whole server and of gpusort.v1.SortService, on the gRPC port and the health port.
  // NOT_SERVING from the start of a drain, once the backend has failed for good, and while the gRPC port
  // cannot take a new connection (PortProbe).
  void SetServing(bool serving);
  void UpdateServing();
  // Each listener's connections capped at its share of the descriptor limit (descriptor_limit.h).
  void CapConnectionsByDescriptors(const DescriptorShares& shares, std::size_t limit);
  // The gRPC ports' accept guards and the gRPC port's probe (grpc_accept_guard.h, port_probe.h).
  void GuardGrpcPorts(const DescriptorShares& shares);

  ServerConfig config_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<DeviceMemoryRefresh> device_memory_refresh_;
  std::unique_ptr<MetricsListener> metrics_listener_;
  std::unique_ptr<ServiceCore> core_;
  std::unique_ptr<RegionCalls> region_calls_;            // calls on --shm-socket; null without it
  std::unique_ptr<RegionSocketListener> region_socket_;  // --shm-socket; null without it
  std::unique_ptr<DataSocketListener> data_socket_;      // --data-port; null without it
  std::unique_ptr<SortService> service_;
  std::unique_ptr<EchoService> echo_service_;
  std::unique_ptr<TokenAuth> auth_;  // null without --auth-tokens-file
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::CallbackGenericService> health_fallback_;  // the health server's other methods
  std::unique_ptr<grpc::Server> health_server_;  // --health-listen
  std::shared_ptr<GrpcAcceptGuard> grpc_guard_;    // null for a Unix socket's listen address
  std::shared_ptr<GrpcAcceptGuard> health_guard_;  // null without --health-listen
  std::unique_ptr<PortProbe> port_probe_;
  std::atomic<bool> port_accepting_{true};
  std::mutex serving_mutex_;  // SetServing against health_server_ going away
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  int health_port_ = 0;
};

}  // namespace gpusort
