#include "gpusort/client.h"

#include <algorithm>
#include <cstring>

#include <grpcpp/grpcpp.h>

#include "grpc/health/v1/health.grpc.pb.h"

namespace gpusort {
namespace {

// Room for options and framing beside the arrays in one message.
constexpr std::size_t kMessageHeadroom = 64u << 10;

absl::Status ToAbsl(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

std::size_t ElementBytes(v1::DType d) {
  switch (d) {
    case v1::DTYPE_INT64:
    case v1::DTYPE_UINT64:
    case v1::DTYPE_FLOAT64: return 8;
    default: return 4;
  }
}

void FillSortOptions(const RawSortRequest& r, v1::SortOptions* o) {
  o->set_dtype(r.dtype);
  o->set_order(r.options.descending ? v1::ORDER_DESCENDING : v1::ORDER_ASCENDING);
  o->set_stable(r.options.stable);
  o->set_payload(r.payload);
  o->set_value_width(r.value_width);
  o->set_algorithm(r.options.algorithm);
}

void FillTopKOptions(v1::DType dtype, const TopKOptions& t, v1::TopKOptions* o) {
  o->set_dtype(dtype);
  o->set_k(t.k);
  o->set_largest(t.largest);
  o->set_sorted(t.sorted);
  o->set_output(t.output);
  o->set_rows(t.rows);
  o->set_algorithm(t.algorithm);
}

// The server (or gRPC) refused a unary message for its size: the streaming RPC will carry it. The
// server's limit may be lower than this client's max_message_bytes, which the caller need not know.
bool TooLargeForOneMessage(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
         (s.error_message().find("larger than max") != std::string::npos ||
          s.error_message().find("message limit") != std::string::npos);
}

std::size_t TopKResultBytes(v1::DType dtype, v1::TopKOutput output) {
  std::size_t bytes = 0;
  if (output != v1::TOPK_OUTPUT_INDICES) bytes += ElementBytes(dtype);
  if (output != v1::TOPK_OUTPUT_VALUES) bytes += sizeof(int64_t);
  return bytes;
}

std::size_t TopKAnswerBytes(v1::DType dtype, const TopKOptions& o) {
  return std::max<uint64_t>(o.rows, 1) * o.k * TopKResultBytes(dtype, o.output);
}

std::size_t SortAnswerBytes(const RawSortRequest& r) {
  std::size_t bytes = r.keys.size() + r.values.size();
  if (r.payload == v1::PAYLOAD_INDICES) bytes += r.keys.size() / ElementBytes(r.dtype) * sizeof(int64_t);
  return bytes;
}

// Checks that a response chunk starts where the previous one ended.
absl::Status CheckOffset(uint64_t offset, std::size_t expected) {
  if (offset == expected) return absl::OkStatus();
  return absl::DataLossError("the server's answer skipped or repeated elements: chunk at " +
                             std::to_string(offset) + ", expected " + std::to_string(expected));
}

}  // namespace

Client::Client(ClientOptions options) : options_(std::move(options)) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(options_.max_message_bytes + kMessageHeadroom));
  args.SetMaxSendMessageSize(static_cast<int>(options_.max_message_bytes));
  for (const auto& [name, value] : options_.channel_arguments) args.SetInt(name, value);
  auto credentials = options_.credentials ? options_.credentials : grpc::InsecureChannelCredentials();
  channel_ = grpc::CreateCustomChannel(options_.target, credentials, args);
  stub_ = v1::SortService::NewStub(channel_);
}

std::unique_ptr<grpc::ClientContext> Client::NewContext() const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (options_.timeout.count() > 0)
    context->set_deadline(std::chrono::system_clock::now() + options_.timeout);
  if (!options_.request_id.empty()) context->AddMetadata("x-request-id", options_.request_id);
  return context;
}

std::size_t Client::UnaryLimit() const {
  return options_.max_message_bytes - std::min(options_.max_message_bytes / 2, kMessageHeadroom);
}

bool Client::ShouldStream(std::size_t request_bytes, std::size_t answer_bytes) const {
  switch (options_.transport) {
    case Transport::kUnary: return false;
    case Transport::kStream: return true;
    case Transport::kSharedMemory: return false;
    case Transport::kAuto: break;
  }
  const std::size_t largest = std::max(request_bytes, answer_bytes);
  return largest > UnaryLimit() || largest >= options_.stream_from_bytes;
}

absl::StatusOr<RawSortResult> Client::SortRaw(const RawSortRequest& r) {
  if (options_.transport == Transport::kSharedMemory) return SortThroughRegion(r);
  if (ShouldStream(r.keys.size() + r.values.size(), SortAnswerBytes(r))) return SortStreamed(r);
  v1::SortRequest request;
  FillSortOptions(r, request.mutable_options());
  request.set_keys(std::string(r.keys));
  request.set_values(std::string(r.values));
  v1::SortResponse response;
  auto context = NewContext();
  grpc::Status status = stub_->Sort(context.get(), request, &response);
  if (options_.transport == Transport::kAuto && TooLargeForOneMessage(status)) return SortStreamed(r);
  if (!status.ok()) return ToAbsl(status);
  RawSortResult result;
  result.keys = std::move(*response.mutable_keys());
  result.values = std::move(*response.mutable_values());
  result.indices = std::move(*response.mutable_indices());
  result.info = std::move(*response.mutable_info());
  return result;
}

absl::StatusOr<RawSortResult> Client::SortStreamed(const RawSortRequest& r) {
  const std::size_t answer_bytes = SortAnswerBytes(r);
  RawSortResult result;
  result.streamed = true;
  auto context = NewContext();
  // Streaming: keys first, then values, in chunks; the server answers once everything is in.
  auto call = stub_->SortStream(context.get());
  const std::size_t chunk = options_.stream_chunk_bytes;
  const std::size_t total = r.keys.size() + r.values.size();
  std::size_t sent = 0;
  v1::SortStreamRequest message;
  FillSortOptions(r, message.mutable_options());
  message.set_response_chunk_bytes(static_cast<uint32_t>(std::min(chunk, options_.max_message_bytes / 2)));
  // The first message carries the options; keys, then values, follow in chunks of `chunk` bytes.
  bool writing = true;
  auto send = [&](std::string_view part, bool is_values) {
    for (std::size_t pos = 0; writing && pos < part.size(); pos += chunk) {
      const std::string_view piece = part.substr(pos, chunk);
      (is_values ? message.mutable_values() : message.mutable_keys())->assign(piece);
      writing = call->Write(message);
      message.Clear();
      sent += piece.size();
      if (options_.progress) options_.progress("send", sent, total);
    }
  };
  send(r.keys, false);
  send(r.values, true);
  if (writing && message.has_options()) call->Write(message);  // an empty array: options alone
  call->WritesDone();

  v1::SortStreamResponse chunk_in;
  std::size_t received = 0;
  const std::size_t key_bytes = ElementBytes(r.dtype);
  while (call->Read(&chunk_in)) {
    absl::Status offset_ok = CheckOffset(chunk_in.offset(), result.keys.size() / key_bytes);
    if (!offset_ok.ok()) {
      context->TryCancel();
      call->Finish();
      return offset_ok;
    }
    result.keys += chunk_in.keys();
    result.values += chunk_in.values();
    result.indices += chunk_in.indices();
    received += chunk_in.keys().size() + chunk_in.values().size() + chunk_in.indices().size();
    if (chunk_in.has_info()) result.info = std::move(*chunk_in.mutable_info());
    if (options_.progress) options_.progress("receive", received, answer_bytes);
  }
  grpc::Status status = call->Finish();
  if (!status.ok()) return ToAbsl(status);
  return result;
}

absl::StatusOr<RawTopKResult> Client::TopKRaw(v1::DType dtype, std::string_view keys,
                                              const TopKOptions& o) {
  if (options_.transport == Transport::kSharedMemory) return TopKThroughRegion(dtype, keys, o);
  if (ShouldStream(keys.size(), TopKAnswerBytes(dtype, o))) return TopKStreamed(dtype, keys, o);
  v1::TopKRequest request;
  FillTopKOptions(dtype, o, request.mutable_options());
  request.set_keys(std::string(keys));
  v1::TopKResponse response;
  auto context = NewContext();
  grpc::Status status = stub_->TopK(context.get(), request, &response);
  if (options_.transport == Transport::kAuto && TooLargeForOneMessage(status)) return TopKStreamed(dtype, keys, o);
  if (!status.ok()) return ToAbsl(status);
  RawTopKResult result;
  result.values = std::move(*response.mutable_values());
  result.indices = std::move(*response.mutable_indices());
  result.info = std::move(*response.mutable_info());
  return result;
}

absl::StatusOr<RawTopKResult> Client::TopKStreamed(v1::DType dtype, std::string_view keys,
                                                   const TopKOptions& o) {
  const std::size_t per_result = TopKResultBytes(dtype, o.output);
  RawTopKResult result;
  result.streamed = true;
  auto context = NewContext();
  auto call = stub_->TopKStream(context.get());
  const std::size_t chunk = options_.stream_chunk_bytes;
  v1::TopKStreamRequest message;
  FillTopKOptions(dtype, o, message.mutable_options());
  message.set_response_chunk_bytes(static_cast<uint32_t>(std::min(chunk, options_.max_message_bytes / 2)));
  // Options in the first message, even for an empty array; keys in chunks of `chunk` bytes.
  std::size_t pos = 0;
  do {
    const std::size_t take = std::min(chunk, keys.size() - pos);
    message.set_keys(std::string(keys.substr(pos, take)));
    if (!call->Write(message)) break;
    message.Clear();
    pos += take;
    if (options_.progress) options_.progress("send", pos, keys.size());
  } while (pos < keys.size());
  call->WritesDone();

  v1::TopKStreamResponse chunk_in;
  std::size_t results = 0;
  while (call->Read(&chunk_in)) {
    absl::Status offset_ok = CheckOffset(chunk_in.offset(), results);
    if (!offset_ok.ok()) {
      context->TryCancel();
      call->Finish();
      return offset_ok;
    }
    results += per_result == 0 ? 0
               : (chunk_in.values().size() + chunk_in.indices().size()) / per_result;
    result.values += chunk_in.values();
    result.indices += chunk_in.indices();
    if (chunk_in.has_info()) result.info = std::move(*chunk_in.mutable_info());
  }
  grpc::Status status = call->Finish();
  if (!status.ok()) return ToAbsl(status);
  return result;
}

absl::StatusOr<bool> Client::Health(const std::string& service) {
  auto stub = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  auto context = NewContext();
  if (options_.timeout.count() == 0)
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status status = stub->Check(context.get(), request, &response);
  if (!status.ok()) return ToAbsl(status);
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

}  // namespace gpusort

namespace gpusort {

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> Client::CreateSharedMemory(std::size_t bytes) {
  return SharedMemoryRegion::Create(*stub_, bytes);
}

absl::StatusOr<v1::ExecutionInfo> Client::SortInRegion(v1::DType dtype, const SortOptions& options,
                                                       v1::Payload payload, const v1::RegionRef& keys,
                                                       const v1::RegionRef& output, const v1::RegionRef* indices) {
  v1::SortRequest request;
  RawSortRequest raw;
  raw.dtype = dtype;
  raw.options = options;
  raw.payload = payload;
  FillSortOptions(raw, request.mutable_options());
  *request.mutable_keys_region() = keys;
  *request.mutable_output_region() = output;
  if (indices != nullptr) *request.mutable_indices_region() = *indices;
  v1::SortResponse response;
  auto context = NewContext();
  grpc::Status status = stub_->Sort(context.get(), request, &response);
  if (!status.ok()) return ToAbsl(status);
  return std::move(*response.mutable_info());
}

absl::StatusOr<v1::ExecutionInfo> Client::TopKInRegion(v1::DType dtype, const TopKOptions& options,
                                                       const v1::RegionRef& keys, const v1::RegionRef* values,
                                                       const v1::RegionRef* indices) {
  v1::TopKRequest request;
  FillTopKOptions(dtype, options, request.mutable_options());
  *request.mutable_keys_region() = keys;
  if (values != nullptr) *request.mutable_values_region() = *values;
  if (indices != nullptr) *request.mutable_indices_region() = *indices;
  v1::TopKResponse response;
  auto context = NewContext();
  grpc::Status status = stub_->TopK(context.get(), request, &response);
  if (!status.ok()) return ToAbsl(status);
  return std::move(*response.mutable_info());
}

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> Client::TakeRegion(std::size_t bytes) {
  {
    std::lock_guard lock(regions_mutex_);
    for (auto it = free_regions_.begin(); it != free_regions_.end(); ++it) {
      if ((*it)->size() >= bytes) {
        auto region = std::move(*it);
        free_regions_.erase(it);
        return region;
      }
    }
  }
  // Rounded up to a power of two so that a few sizes serve many calls; registering costs milliseconds.
  std::size_t size = 1u << 20;
  while (size < bytes) size *= 2;
  return SharedMemoryRegion::Create(*stub_, size);
}

void Client::ReleaseRegion(std::unique_ptr<SharedMemoryRegion> region) {
  std::lock_guard lock(regions_mutex_);
  free_regions_.push_back(std::move(region));
}

absl::StatusOr<RawSortResult> Client::SortThroughRegion(const RawSortRequest& r) {
  if (r.payload == v1::PAYLOAD_VALUES) {
    return absl::InvalidArgumentError("the shared-memory transport does not carry values; use unary or streaming");
  }
  const std::size_t n = r.keys.size() / ElementBytes(r.dtype);
  const std::size_t index_bytes = r.payload == v1::PAYLOAD_INDICES ? n * sizeof(int64_t) : 0;
  // Layout: [keys, sorted in place][indices], the indices 8-byte aligned.
  const std::size_t index_offset = (r.keys.size() + 7) / 8 * 8;
  auto region = TakeRegion(std::max<std::size_t>(1, index_offset + index_bytes));
  if (!region.ok()) return region.status();
  std::memcpy((*region)->data(), r.keys.data(), r.keys.size());
  const v1::RegionRef keys = (*region)->Ref(0, r.keys.size());
  const v1::RegionRef indices = (*region)->Ref(index_offset, index_bytes);
  auto info = SortInRegion(r.dtype, r.options, r.payload, keys, keys,
                           r.payload == v1::PAYLOAD_INDICES ? &indices : nullptr);
  RawSortResult result;
  if (info.ok()) {
    result.keys.assign(reinterpret_cast<const char*>((*region)->data()), r.keys.size());
    result.indices.assign(reinterpret_cast<const char*>((*region)->data()) + index_offset, index_bytes);
    result.info = std::move(*info);
  }
  ReleaseRegion(std::move(*region));
  if (!info.ok()) return info.status();
  return result;
}

absl::StatusOr<RawTopKResult> Client::TopKThroughRegion(v1::DType dtype, std::string_view keys,
                                                        const TopKOptions& o) {
  const std::size_t results = std::max<uint64_t>(o.rows, 1) * o.k;
  const bool want_values = o.output != v1::TOPK_OUTPUT_INDICES;
  const bool want_indices = o.output != v1::TOPK_OUTPUT_VALUES;
  const std::size_t value_offset = (keys.size() + 7) / 8 * 8;
  const std::size_t value_bytes = want_values ? results * ElementBytes(dtype) : 0;
  const std::size_t index_offset = (value_offset + value_bytes + 7) / 8 * 8;
  const std::size_t index_bytes = want_indices ? results * sizeof(int64_t) : 0;
  auto region = TakeRegion(std::max<std::size_t>(1, index_offset + index_bytes));
  if (!region.ok()) return region.status();
  std::memcpy((*region)->data(), keys.data(), keys.size());
  const v1::RegionRef keys_ref = (*region)->Ref(0, keys.size());
  const v1::RegionRef values_ref = (*region)->Ref(value_offset, value_bytes);
  const v1::RegionRef indices_ref = (*region)->Ref(index_offset, index_bytes);
  auto info = TopKInRegion(dtype, o, keys_ref, want_values ? &values_ref : nullptr,
                           want_indices ? &indices_ref : nullptr);
  RawTopKResult result;
  if (info.ok()) {
    const char* base = reinterpret_cast<const char*>((*region)->data());
    result.values.assign(base + value_offset, value_bytes);
    result.indices.assign(base + index_offset, index_bytes);
    result.info = std::move(*info);
  }
  ReleaseRegion(std::move(*region));
  if (!info.ok()) return info.status();
  return result;
}

}  // namespace gpusort
