// Waiting for a unary call's answer on a core kept awake (ClientOptions::wait_spin).
//
// A caller that sleeps through a call of a few milliseconds pays for its core's wake-up when the answer
// comes. On the GPU machine (a 16-core VM) waking idle threads is most of a small call: a gRPC echo of one
// key took 0.10-0.14 ms back to back and 0.08-0.09 with every core kept busy, a Sort of one key from
// shared memory 0.25 against 0.14-0.15. The region calls move no array, so their caller waits idle for
// the whole of the server's work: with wait_spin it polls the call's completion queue (epoll with a zero
// timeout, yielding the core between polls) for that long before it sleeps. Measured with it (5 ms): a
// 16M top-k from shared memory 1.74-1.83 ms against 1.88-1.96, and a 16M sort unchanged, whose wait
// outside the server is on the server's side (docs/benchmarks-log.md, issue 18, sixth step).
#pragma once

#include <chrono>

#include <grpcpp/grpcpp.h>

namespace gpusort::client_internal {

// Waits for the one event of `cq` (polling for `spin`, then blocking), then shuts `cq` down and drains it.
void WaitForTheOnlyEvent(grpc::CompletionQueue& cq, std::chrono::microseconds spin);

// Finishes `rpc` (started on `cq`, which carries nothing else) into `response`, waiting as above.
template <typename Response>
grpc::Status AwaitUnaryAnswer(grpc::ClientAsyncResponseReader<Response>& rpc, grpc::CompletionQueue& cq,
                              Response* response, std::chrono::microseconds spin) {
  grpc::Status status;
  rpc.Finish(response, &status, &status);
  WaitForTheOnlyEvent(cq, spin);
  return status;
}

// A unary call: `blocking()` when `spin` is 0, else `start(&cq)` (the stub's Async form on a queue of its
// own) with its answer awaited as above. Both forms answer into `response`.
template <typename Response, typename Blocking, typename Start>
grpc::Status CallUnary(std::chrono::microseconds spin, Response* response, Blocking blocking, Start start) {
  if (spin.count() <= 0) return blocking();
  grpc::CompletionQueue cq;
  auto rpc = start(&cq);
  return AwaitUnaryAnswer(*rpc, cq, response, spin);
}

}  // namespace gpusort::client_internal
