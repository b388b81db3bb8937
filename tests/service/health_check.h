// A grpc.health.v1 Check for the service tests: the call's status and the serving status it answered.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "grpc/health/v1/health.grpc.pb.h"

namespace gpusort::testing {

using HealthStatus = grpc::health::v1::HealthCheckResponse;

// Checks `service` ("" for the whole server) with a 5 s deadline; *out is UNKNOWN when the call failed.
inline grpc::Status CheckHealth(const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
                                HealthStatus::ServingStatus* out) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  HealthStatus response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status status = stub->Check(&context, request, &response);
  *out = status.ok() ? response.status() : HealthStatus::UNKNOWN;
  return status;
}

// The serving status alone (UNKNOWN when the call failed).
inline HealthStatus::ServingStatus CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
                                               const std::string& service) {
  HealthStatus::ServingStatus status;
  CheckHealth(channel, service, &status);
  return status;
}

}  // namespace gpusort::testing
