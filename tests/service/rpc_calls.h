// One call of each data RPC through the generated stub, with an optional x-request-id, returning the
// status, the request id the server put in the reply's headers, and the answer's bytes: for the fault
// tests (tests/service/backend_faults_test.cc, tests/gpu/gpu_oom_test.cc and gpu_fault_test.cc), which
// check what a failed call says and what a good one answers.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <type_traits>

#include <grpcpp/grpcpp.h>

#include "gpusort/v1/sort.grpc.pb.h"

namespace gpusort::testing {

struct CallResult {
  grpc::Status status;
  std::string request_id;  // the reply's x-request-id header; empty when none came (Trailers-Only)
  std::string keys;        // Sort and SortStream: the sorted keys; TopK(Stream): the values
  std::string indices;
  v1::ExecutionInfo info;  // of a good answer
};

namespace internal {

inline void Prepare(grpc::ClientContext& context, const std::string& request_id) {
  if (!request_id.empty()) context.AddMetadata("x-request-id", request_id);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
}

inline std::string RequestIdOf(const grpc::ClientContext& context) {
  const auto& headers = context.GetServerInitialMetadata();
  const auto found = headers.find("x-request-id");
  return found == headers.end() ? "" : std::string(found->second.data(), found->second.size());
}

// Writes `first` (options, and the first piece of keys) and the rest of `keys` in `chunk`-byte
// messages, half-closes, and collects the answer.
template <typename Request, typename Response, typename Stream>
CallResult Streamed(grpc::ClientContext& context, Stream& stream, Request first, const std::string& keys,
                    std::size_t chunk) {
  std::size_t pos = std::min(chunk, keys.size());
  first.set_keys(keys.substr(0, pos));
  bool writing = stream->Write(first);
  while (writing && pos < keys.size()) {
    Request next;
    next.set_keys(keys.substr(pos, chunk));
    pos += next.keys().size();
    writing = stream->Write(next);  // false once the server has answered (a failure, mid-stream)
  }
  stream->WritesDone();
  CallResult result;
  Response response;
  while (stream->Read(&response)) {
    if constexpr (std::is_same_v<Response, v1::TopKStreamResponse>) {
      result.keys += response.values();  // a top-k answers its keys as values
    } else {
      result.keys += response.keys();
    }
    result.indices += response.indices();
    if (response.has_info()) result.info = response.info();
  }
  result.status = stream->Finish();
  result.request_id = RequestIdOf(context);
  return result;
}

}  // namespace internal

inline CallResult CallSort(v1::SortService::Stub& stub, const v1::SortRequest& request,
                           const std::string& request_id = "") {
  grpc::ClientContext context;
  internal::Prepare(context, request_id);
  v1::SortResponse response;
  CallResult result;
  result.status = stub.Sort(&context, request, &response);
  result.request_id = internal::RequestIdOf(context);
  result.keys = response.keys();
  result.indices = response.indices();
  result.info = response.info();
  return result;
}

inline CallResult CallTopK(v1::SortService::Stub& stub, const v1::TopKRequest& request,
                           const std::string& request_id = "") {
  grpc::ClientContext context;
  internal::Prepare(context, request_id);
  v1::TopKResponse response;
  CallResult result;
  result.status = stub.TopK(&context, request, &response);
  result.request_id = internal::RequestIdOf(context);
  result.keys = response.values();
  result.indices = response.indices();
  result.info = response.info();
  return result;
}

// `first` carries the options (and the part, for a parted Sort); its keys are replaced by `keys`' first
// chunk.
inline CallResult CallSortStream(v1::SortService::Stub& stub, const v1::SortStreamRequest& first,
                                 const std::string& keys, std::size_t chunk, const std::string& request_id = "") {
  grpc::ClientContext context;
  internal::Prepare(context, request_id);
  auto stream = stub.SortStream(&context);
  return internal::Streamed<v1::SortStreamRequest, v1::SortStreamResponse>(context, stream, first, keys, chunk);
}

inline CallResult CallTopKStream(v1::SortService::Stub& stub, const v1::TopKOptions& options,
                                 const std::string& keys, std::size_t chunk, const std::string& request_id = "") {
  grpc::ClientContext context;
  internal::Prepare(context, request_id);
  auto stream = stub.TopKStream(&context);
  v1::TopKStreamRequest first;
  *first.mutable_options() = options;
  return internal::Streamed<v1::TopKStreamRequest, v1::TopKStreamResponse>(context, stream, first, keys, chunk);
}

}  // namespace gpusort::testing
