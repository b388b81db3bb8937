#include "server/service/call_state.h"

#include <cstdio>
#include <random>

#include "server/core/caller_text.h"

namespace gpusort {
namespace {

std::string MakeRequestId() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char id[17];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(rng()));
  return id;
}

// gRPC reports "no deadline" as a time far in the future; keep real deadlines only.
Cancellation::Clock::time_point SteadyDeadline(grpc::CallbackServerContext* context) {
  const auto system_deadline = context->deadline();
  const auto now_system = std::chrono::system_clock::now();
  if (system_deadline > now_system + std::chrono::hours(24 * 365))
    return Cancellation::Clock::time_point::max();
  return Cancellation::Clock::now() +
         std::chrono::duration_cast<Cancellation::Clock::duration>(system_deadline - now_system);
}

// The caller's x-request-id when it is safe to echo in the reply's headers and to log; else one made
// here. gRPC aborts the whole process when a reply header holds a byte it forbids (a control byte,
// anything outside ASCII), and a raw HTTP/2 client can send such bytes, so the check must come first.
std::string UsableOrNewRequestId(std::string_view given) {
  return !given.empty() && IsUsableRequestId(given) ? std::string(given) : MakeRequestId();
}

std::string RequestIdFrom(grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("x-request-id");
  if (it == metadata.end()) return MakeRequestId();
  return UsableOrNewRequestId(std::string_view(it->second.data(), it->second.size()));
}

}  // namespace

CallState::CallState(std::string_view method_name, grpc::CallbackServerContext* context)
    : method(method_name),
      request_id(RequestIdFrom(context)),
      cancellation(SteadyDeadline(context)) {}

CallState::CallState(std::string_view method_name, std::string_view caller_request_id,
                     Cancellation::Clock::time_point deadline)
    : method(method_name), request_id(UsableOrNewRequestId(caller_request_id)), cancellation(deadline) {}

}  // namespace gpusort
