#include "server/service/server.h"

#include <chrono>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <prometheus/exposer.h>
#include <spdlog/spdlog.h>

#include "server/backend/backend_factory.h"
#include "server/service/metrics.h"
#include "server/service/echo_service.h"
#include "server/service/service_core.h"
#include "server/service/sort_service.h"

namespace gpusort {
namespace {

constexpr char kServiceName[] = "gpusort.v1.SortService";
// Room for a reply's ExecutionInfo beside arrays that fill max_message_bytes.
constexpr int kReplyHeadroomBytes = 64 << 10;

}  // namespace

GpusortServer::GpusortServer(const ServerConfig& config) : config_(config) {}

absl::StatusOr<std::unique_ptr<GpusortServer>> GpusortServer::Start(const ServerConfig& config) {
  auto backend = MakeBackend({.backend = config.backend,
                              .cpu_threads = config.cpu_threads,
                              .cuda_device = config.cuda_device,
                              .cuda_streams = config.cuda_streams,
                              .cuda_staging_bytes = config.cuda_staging_bytes,
                              .cuda_memory_limit_bytes = config.cuda_memory_limit_bytes});
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
  backend_ = std::move(backend);
  metrics_ = std::make_unique<Metrics>(GPUSORT_VERSION, BackendKindName(backend_->kind()));
  if (!config_.metrics_listen.empty()) {
    try {
      exposer_ = std::make_unique<prometheus::Exposer>(config_.metrics_listen);
    } catch (const std::exception& e) {
      return absl::UnavailableError("cannot serve metrics on " + config_.metrics_listen + ": " +
                                    e.what());
    }
    exposer_->RegisterCollectable(metrics_->registry());
    const auto ports = exposer_->GetListeningPorts();
    metrics_port_ = ports.empty() ? 0 : ports.front();
  }
  core_ = std::make_unique<ServiceCore>(config_, *backend_, *metrics_);
  service_ = std::make_unique<SortService>(*core_);
  echo_service_ = std::make_unique<EchoService>();

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(config_.listen, grpc::InsecureServerCredentials(), &grpc_port_);
  builder.SetMaxReceiveMessageSize(static_cast<int>(config_.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(config_.max_message_bytes) + kReplyHeadroomBytes);
  if (config_.http2_lookahead_bytes > 0) {
    builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, config_.http2_lookahead_bytes);
  }
  builder.RegisterService(service_.get());
  builder.RegisterService(echo_service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || grpc_port_ == 0)
    return absl::UnavailableError("cannot listen for gRPC on " + config_.listen);
  server_->GetHealthCheckService()->SetServingStatus(true);
  server_->GetHealthCheckService()->SetServingStatus(kServiceName, true);
  spdlog::info("gpusort-server {} listening on port {} (metrics port {}), backend {} on {}",
               GPUSORT_VERSION, grpc_port_, metrics_port_, BackendKindName(backend_->kind()),
               backend_->device());
  return absl::OkStatus();
}

bool GpusortServer::Drain() {
  server_->GetHealthCheckService()->SetServingStatus(false);
  core_->StartDraining();
  spdlog::info("draining: health NOT_SERVING, new calls refused, waiting up to {} s",
               config_.drain_timeout_seconds);
  const bool idle =
      core_->WaitIdle(std::chrono::duration<double>(config_.drain_timeout_seconds));
  if (!idle) spdlog::warn("drain timeout: cancelling the calls still in flight");
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return idle;
}

void GpusortServer::Wait() { server_->Wait(); }

GpusortServer::~GpusortServer() {
  if (server_ != nullptr) {
    core_->StartDraining();
    server_->Shutdown(std::chrono::system_clock::now());
    // Every call answers (cancelled ones quickly) before the workers and the server go away.
    core_->WaitIdle(std::chrono::seconds(30));
  }
  core_.reset();  // joins the worker threads
  server_.reset();
  service_.reset();
  echo_service_.reset();
  exposer_.reset();  // civetweb takes up to 2 s to stop its threads
}

}  // namespace gpusort
