#include "server/service/server.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include "server/backend/backend_factory.h"
#include "server/service/auth.h"
#include "server/service/device_memory_refresh.h"
#include "server/service/metrics.h"
#include "server/transport/data_port/data_socket_listener.h"
#include "server/transport/descriptor_limit.h"
#include "server/transport/grpc/grpc_accept_guard.h"
#include "server/transport/listen_address.h"
#include "server/transport/grpc/port_probe.h"
#include "server/transport/shm_socket/region_socket_listener.h"
#include "server/transport/grpc/tls.h"
#include "server/transport/grpc/echo_service.h"
#include "server/transport/grpc/grpc_hand_off.h"
#include "server/service/service_core.h"
#include "server/transport/grpc/sort_service.h"

namespace gpusort {
namespace {

constexpr char kServiceName[] = "gpusort.v1.SortService";
// A drain ends once no call has been refused for this long (Drain says why), or this long after the
// calls in flight finished, whichever comes first.
constexpr std::chrono::milliseconds kDrainQuietPeriod{100};
constexpr std::chrono::milliseconds kDrainSettleMax{1000};
// Room for a reply's ExecutionInfo beside arrays that fill max_message_bytes.
constexpr int kReplyHeadroomBytes = 64 << 10;

// Drops the reflection plugin (which gRPC adds to every server once any asked for it) from the health
// listener's builder, so that the plaintext port serves grpc.health.v1.Health alone.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    std::erase_if(*plugins, [](const std::unique_ptr<grpc::ServerBuilderPlugin>& p) {
      return dynamic_cast<grpc::reflection::ProtoServerReflectionPlugin*>(p.get()) != nullptr;
    });
  }
};

// The health listener's answer to any method but the health service's.
class HealthOnly final : public grpc::CallbackGenericService {
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class Refusal final : public grpc::ServerGenericBidiReactor {
     public:
      Refusal() {
        Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                            "this port (--health-listen) serves only grpc.health.v1.Health"));
      }
      void OnDone() override { delete this; }
    };
    return new Refusal;
  }
};

}  // namespace

GpusortServer::GpusortServer(const ServerConfig& config) : config_(config) {}

absl::StatusOr<std::unique_ptr<GpusortServer>> GpusortServer::Start(const ServerConfig& config) {
  auto backend = MakeBackend({.backend = config.backend,
                              .cpu_threads = config.cpu_threads,
                              .cuda_devices = config.cuda_devices,
                              .max_request_bytes = config.max_request_bytes,
                              .cuda_streams = config.cuda_streams,
                              .cuda_memory_limit_bytes = config.cuda_memory_limit_bytes,
                              .cuda_stream_memory_bytes = config.cuda_stream_memory_bytes,
                              .cuda_wait_spin_us = config.cuda_wait_spin_us,
                              .auto_routing = config.auto_routing});
  if (!backend.ok()) return backend.status();
  return Start(config, std::move(*backend));
}

absl::StatusOr<std::unique_ptr<GpusortServer>> GpusortServer::Start(
    const ServerConfig& config, std::unique_ptr<Backend> backend) {
  std::unique_ptr<GpusortServer> server(new GpusortServer(config));
  absl::Status status = server->Init(std::move(backend));
  if (!status.ok()) return status;
  return server;
}

absl::Status GpusortServer::Init(std::unique_ptr<Backend> backend) {
  // Security first: a bad file must stop the server before it listens anywhere.
  auto tls = MakeServerTls(config_);
  if (!tls.ok()) return tls.status();
  if (!config_.auth_tokens_file.empty()) {
    auto auth = TokenAuth::FromFile(config_.auth_tokens_file);
    if (!auth.ok()) return auth.status();
    auth_ = std::move(*auth);
  }
  backend_ = std::move(backend);
  metrics_ = std::make_unique<Metrics>(GPUSORT_VERSION, BackendKindName(backend_->kind()));
  const std::size_t descriptor_limit = DescriptorLimit();
  const DescriptorShares shares = SharesOf(descriptor_limit);
  CapConnectionsByDescriptors(shares, descriptor_limit);
  if (absl::Status s = StartMetrics(shares); !s.ok()) return s;
  // A backend that fails for good (a GPU whose context a sticky CUDA error ruined) cannot come back in
  // this process: health says so, so that balancing callers leave and Kubernetes' liveness probe
  // restarts the pod, while new calls are refused with UNAVAILABLE (ServiceCore::Admit).
  // On several GPUs, one that fails leaves the others serving: health then names the one lost.
  core_ = std::make_unique<ServiceCore>(
      config_, *backend_, *metrics_, [this](const absl::Status&) { SetServing(false); },
      [this] { UpdateServing(); });
  if (absl::Status s = StartSideSockets(); !s.ok()) return s;
  service_ = std::make_unique<SortService>(*core_, auth_.get());
  echo_service_ = std::make_unique<EchoService>(auth_.get());
  // Everything built so far happens before the first call's handler, on gRPC's threads.
  ReleaseToGrpc(service_.get());
  ReleaseToGrpc(echo_service_.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config_.listen, tls->credentials, &grpc_port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(config_.max_message_bytes) + kReplyHeadroomBytes);
  // Connections and streams a caller may hold: gRPC queues a client's calls past the stream limit on
  // its side, and an idle connection is closed with a GOAWAY, which clients answer by reconnecting.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, config_.max_streams_per_connection);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(config_.connection_idle_timeout_seconds * 1000));
  // gRPC's own HTTP/2 windows and BDP probe: a 16 MiB window per stream and the probe off were measured
  // and gave no sort any gain (docs/benchmarks-log.md, "Streaming chunk size and HTTP/2 window" and "gRPC's BDP
  // probe on the GPU host"), so neither is a flag (issue 42).
  builder.RegisterService(service_.get());
  builder.RegisterService(echo_service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || grpc_port_ == 0)
    return absl::UnavailableError("cannot listen for gRPC on " + config_.listen);
  if (!config_.health_listen.empty()) {
    grpc::ServerBuilder health;
    health.SetOption(std::make_unique<WithoutReflection>());
    // gRPC builds no server without a callback or sync service of the caller's; this one answers
    // every method but the health service's UNIMPLEMENTED.
    health_fallback_ = std::make_unique<HealthOnly>();
    health.RegisterCallbackGenericService(health_fallback_.get());
    health.AddListeningPort(config_.health_listen, grpc::InsecureServerCredentials(), &health_port_);
    // A probe connects, asks and goes: a connection that has not sent its HTTP/2 preface after 2 s, or
    // carried no call for 5 s, is closed, so that connections held open and silent (issue 41's second
    // attack session: 8 filled the port's share at a limit of 256) keep no probe out for long.
    health.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 2000);
    health.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, 5000);
    health_server_ = health.BuildAndStart();
    if (health_server_ == nullptr || health_port_ == 0)
      return absl::UnavailableError("cannot listen for health checks on " + config_.health_listen);
  }
  GuardGrpcPorts(shares);
  SetServing(true);
  spdlog::info("gpusort-server {} listening on port {} ({}{}), metrics port {}{}, backend {} on {}",
               GPUSORT_VERSION, grpc_port_, tls->description, auth_ ? ", bearer tokens" : "", metrics_port_,
               health_server_ ? ", plaintext health port " + std::to_string(health_port_) : "",
               BackendKindName(backend_->kind()), backend_->device());
  return absl::OkStatus();
}

absl::Status GpusortServer::StartMetrics(const DescriptorShares& shares) {
  if (config_.metrics_listen.empty()) return absl::OkStatus();
  device_memory_refresh_ = std::make_unique<DeviceMemoryRefresh>(*backend_, *metrics_);
  absl::StatusOr<std::unique_ptr<MetricsListener>> listener = MetricsListener::Start(
      {.listen = config_.metrics_listen, .max_connections = shares.metrics_connections}, [this] {
        device_memory_refresh_->Refresh();  // first: it fills the registry's gauges
        return prometheus::TextSerializer().Serialize(metrics_->registry()->Collect());
      });
  if (!listener.ok()) {
    return absl::UnavailableError("cannot serve metrics on " + config_.metrics_listen + ": " +
                                  std::string(listener.status().message()));
  }
  metrics_listener_ = std::move(*listener);
  metrics_port_ = metrics_listener_->port();
  return absl::OkStatus();
}

void GpusortServer::CapConnectionsByDescriptors(const DescriptorShares& shares, std::size_t limit) {
  const auto cap = [limit](std::size_t& flag, std::size_t share, const char* name) {
    if (flag <= share) return;
    spdlog::warn("{} {} is more than this process's {} descriptors leave it; serving {}", name, flag, limit, share);
    flag = share;
  };
  cap(config_.data_max_connections, shares.data_connections, "--data-max-connections");
  cap(config_.shm_max_call_connections, shares.shm_call_connections, "--shm-max-call-connections");
  config_.shm_max_pending = std::min(config_.shm_max_pending, shares.shm_pending_connections);
  config_.shm_max_closing_aside = shares.caller_descriptors_closing;
}

void GpusortServer::GuardGrpcPorts(const DescriptorShares& shares) {
  if (!config_.listen.starts_with("unix:")) {
    grpc_guard_ = GrpcAcceptGuard::Guard(grpc_port_, "gRPC port " + std::to_string(grpc_port_),
                                         shares.grpc_connections);
    port_probe_ = std::make_unique<PortProbe>(ConnectHost(config_.listen), grpc_guard_, [this](bool accepting) {
      port_accepting_.store(accepting);
      spdlog::warn("gRPC port {} {}", grpc_port_,
                   accepting ? "accepts connections again: health SERVING"
                             : "cannot take new connections: health NOT_SERVING until it can");
      UpdateServing();
    });
  }
  if (health_server_ != nullptr && !config_.health_listen.starts_with("unix:")) {
    health_guard_ = GrpcAcceptGuard::Guard(health_port_, "health port " + std::to_string(health_port_),
                                           shares.health_connections);
  }
}

void GpusortServer::UpdateServing() {
  SetServing(backend_->Healthy().ok() && !core_->draining() && port_accepting_.load());
}

absl::Status GpusortServer::StartSideSockets() {
  if (!config_.shm_socket.empty()) {
    region_calls_ = std::make_unique<RegionCalls>(*core_, auth_.get(), RegionCallsOptionsFrom(config_));
  }
  auto region_socket = StartRegionSocket(config_, core_->regions(), region_calls_.get());
  if (!region_socket.ok()) return region_socket.status();
  region_socket_ = std::move(*region_socket);
  auto data_socket = StartDataPort(config_, core_->socket_sorts());
  if (!data_socket.ok()) return data_socket.status();
  data_socket_ = std::move(*data_socket);
  return absl::OkStatus();
}

void GpusortServer::SetServing(bool serving) {
  std::lock_guard lock(serving_mutex_);  // a worker may call it (backend failure) while the server stops
  for (grpc::Server* s : {server_.get(), health_server_.get()}) {
    if (s == nullptr) continue;
    s->GetHealthCheckService()->SetServingStatus(serving);
    s->GetHealthCheckService()->SetServingStatus(kServiceName, serving);
    // Each GPU as a service of its own, "gpusort.v1.SortService/cuda:1": serving while the server
    // serves and that GPU can.
    for (const Backend::DeviceServing& d : backend_->devices()) {
      s->GetHealthCheckService()->SetServingStatus(std::string(kServiceName) + "/" + d.device,
                                                    serving && d.status.ok());
    }
  }
}

bool GpusortServer::Drain() {
  const auto start = std::chrono::steady_clock::now();
  const auto timeout = std::chrono::duration<double>(config_.drain_timeout_seconds);
  core_->StartDraining();  // first: the port probe's UpdateServing must not turn health back on
  SetServing(false);
  spdlog::info("draining: health NOT_SERVING, new calls refused, waiting up to {} s",
               config_.drain_timeout_seconds);
  const bool idle = core_->WaitIdle(timeout);
  if (!idle) spdlog::warn("drain timeout: cancelling the calls still in flight");
  // Callers that balance over replicas watch health and stop sending here within milliseconds of
  // NOT_SERVING; until they do, their calls are refused with a retryable UNAVAILABLE. Shutdown must
  // wait for that: a call that arrives once it has begun is taken in but never handled, and gRPC
  // cancels it at the shutdown deadline, too late for the caller to retry it anywhere. So stop only
  // after kDrainQuietPeriod without a refusal, and at most kDrainSettleMax after the work is done
  // (callers that do not watch health, such as one connection through a Service, learn of the drain
  // only from the GOAWAY that Shutdown sends).
  const auto settle_end = std::min(std::chrono::steady_clock::now() + kDrainSettleMax,
                                   start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout));
  for (;;) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= settle_end || now - std::max(start, core_->last_drain_refusal()) >= kDrainQuietPeriod) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  if (health_server_ != nullptr) health_server_->Shutdown(std::chrono::system_clock::now());
  return idle;
}

int GpusortServer::data_port() const { return data_socket_ == nullptr ? 0 : data_socket_->port(); }

std::size_t GpusortServer::registered_regions() const { return core_->regions().count(); }

void GpusortServer::Wait() {
  server_->Wait();
  if (health_server_ != nullptr) health_server_->Wait();
}

GpusortServer::~GpusortServer() {
  port_probe_.reset();  // before what its callback touches
  if (server_ != nullptr) {
    core_->StartDraining();
    server_->Shutdown(std::chrono::system_clock::now());
    // Every call answers (cancelled ones quickly) before the workers and the server go away.
    core_->WaitIdle(std::chrono::seconds(30));
    AcquireFromGrpc(core_.get());  // every call's OnDone, which gRPC ran before Shutdown returned
  }
  if (health_server_ != nullptr) health_server_->Shutdown(std::chrono::system_clock::now());
  {
    std::lock_guard lock(serving_mutex_);
    health_server_.reset();
  }
  health_fallback_.reset();
  region_socket_.reset();  // unregisters every region before the regions go
  region_calls_.reset();   // after the listener, which hands it connections; joins its threads
  data_socket_.reset();    // its connections' threads end before the jobs' backend goes
  core_.reset();  // joins the worker threads
  server_.reset();
  service_.reset();
  echo_service_.reset();
  metrics_listener_.reset();
}

}  // namespace gpusort
