#include "client/src/awake_wait.h"

#include <thread>

namespace gpusort::client_internal {

void WaitForTheOnlyEvent(grpc::CompletionQueue& cq, std::chrono::microseconds spin) {
  void* tag = nullptr;
  bool ok = false;
  bool got = false;
  const auto until = std::chrono::steady_clock::now() + spin;
  // A deadline in the past: one poll of the queue's file descriptors with a zero timeout, no sleep.
  const std::chrono::system_clock::time_point past{};
  while (!got && std::chrono::steady_clock::now() < until) {
    got = cq.AsyncNext(&tag, &ok, past) == grpc::CompletionQueue::GOT_EVENT;
    if (!got) std::this_thread::yield();
  }
  if (!got) (void)cq.Next(&tag, &ok);
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

}  // namespace gpusort::client_internal
