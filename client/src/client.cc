// Client::Impl over gRPC: construction (names resolved once, the channel and stub), unary calls, streamed
// calls, a large Sort split over several connections (SplitSort), and the health check.
#include "gpusort/client.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <span>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "client/src/channel_config.h"
#include "client/src/client_impl.h"
#include "client/src/proto_convert.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace gpusort {
namespace {

using client_internal::FillSortOptions;
using client_internal::FillTopKOptions;
using client_internal::FromProto;
using client_internal::KeyBytes;
using client_internal::ToAbsl;

// Room for options and framing beside the arrays in one message.
constexpr std::size_t kMessageHeadroom = 64u << 10;

// The server (or gRPC) refused a unary message for its size: the streaming RPC will carry it. The
// server's limit may be lower than this client's max_message_bytes, which the caller need not know.
bool TooLargeForOneMessage(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
         (s.error_message().find("larger than max") != std::string::npos ||
          s.error_message().find("message limit") != std::string::npos);
}

std::size_t TopKResultBytes(client::DType dtype, client::TopKOutput output) {
  std::size_t bytes = 0;
  if (output != client::TopKOutput::kIndices) bytes += KeyBytes(dtype);
  if (output != client::TopKOutput::kValues) bytes += sizeof(int64_t);
  return bytes;
}

std::size_t TopKAnswerBytes(client::DType dtype, const TopKOptions& o) {
  return TopKResultCount(o) * TopKResultBytes(dtype, o.output);
}

std::size_t SortAnswerBytes(const RawSortRequest& r) {
  std::size_t bytes = r.keys.size() + r.values.size();
  if (r.payload == client::Payload::kIndices) bytes += r.keys.size() / KeyBytes(r.dtype) * sizeof(int64_t);
  return bytes;
}

// Checks that a response chunk starts where the previous one ended.
absl::Status CheckOffset(uint64_t offset, std::size_t expected) {
  if (offset == expected) return absl::OkStatus();
  return absl::DataLossError("the server's answer skipped or repeated elements: chunk at " +
                             std::to_string(offset) + ", expected " + std::to_string(expected));
}

// The proto's limit on StreamPart.count.
constexpr int kMaxStreamParts = 64;
// The integer channel argument that gives each part channel a connection of its own: gRPC shares one
// connection among channels whose target and arguments are equal.
constexpr char kStreamPartArgument[] = "gpusort.stream_part";
// How long a part connection may take to connect (at most the call's own timeout).
constexpr std::chrono::milliseconds kPartConnectTimeout{10000};

// A job id for StreamPart.job: 16 random bytes (the proto asks for 16 to 64), so that concurrent
// split Sorts from one host do not join each other's jobs.
std::string RandomJobId() {
  std::random_device random;
  std::string job(16, '\0');
  for (std::size_t i = 0; i < job.size(); i += sizeof(uint32_t)) {
    const uint32_t word = random();
    std::memcpy(job.data() + i, &word, sizeof word);
  }
  return job;
}

// What the parts of one split Sort share: the request, where the answer goes, progress and failure.
// Each part writes only its own range of keys_out and indices_out (sized by the caller: the request's
// key bytes, and 8 bytes a key with Payload::kIndices), so the parts need no lock for the arrays.
class SplitSort {
 public:
  SplitSort(const RawSortRequest& request, const ClientOptions& options, uint32_t count,
            std::span<std::byte> keys_out, std::span<std::byte> indices_out, client::ExecutionInfo* info)
      : request_(request),
        options_(options),
        job_(RandomJobId()),
        count_(count),
        width_(KeyBytes(request.dtype)),
        total_keys_(request.keys.size() / width_),
        answer_bytes_(SortAnswerBytes(request)),
        keys_out_(keys_out),
        indices_out_(indices_out),
        info_(info) {
    contexts_.resize(count);
    cancelled_.resize(count);
  }

  // Part `index` carries keys [Begin(index), Begin(index + 1)) and gets back that range sorted.
  std::size_t Begin(uint32_t index) const { return total_keys_ * index / count_; }

  // Every part's context is made before any part starts, so that a failing part can cancel all.
  void SetContext(uint32_t index, std::unique_ptr<grpc::ClientContext> context) {
    contexts_[index] = std::move(context);
  }

  // Runs part `index` on `stub` to its end; a failure is recorded (Fail) before it returns.
  void Run(uint32_t index, v1::SortService::Stub& stub) {
    absl::Status status = RunPart(index, stub);
    if (!status.ok()) Fail(index, status);
  }

  // OK, or why the Sort failed: the first failure that is neither a CANCELLED we caused nor an ABORTED
  // (what the server answers the other parts of a Sort whose part failed), else the first recorded.
  absl::Status status() {
    std::lock_guard lock(mutex_);
    for (const Failure& f : failures_)
      if (!f.cancelled_by_us && f.status.code() != absl::StatusCode::kAborted) return f.status;
    return failures_.empty() ? absl::OkStatus() : failures_.front().status;
  }

 private:
  absl::Status RunPart(uint32_t index, v1::SortService::Stub& stub) {
    grpc::ClientContext& context = *contexts_[index];
    auto call = stub.SortStream(&context);
    SendPart(index, *call);
    v1::SortStreamResponse in;
    std::size_t next = Begin(index);
    const std::size_t end = Begin(index + 1);
    absl::Status placed;
    while (placed.ok() && call->Read(&in)) {
      placed = Place(in, &next, end);
      if (in.has_info() && index == 0) *info_ = FromProto(in.info());
    }
    if (!placed.ok()) context.TryCancel();
    grpc::Status status = call->Finish();
    if (!placed.ok()) return placed;
    if (!status.ok()) return ToAbsl(status);
    if (next != end) {
      return absl::DataLossError("part " + std::to_string(index) + " got back elements [" +
                                 std::to_string(Begin(index)) + ", " + std::to_string(next) +
                                 ") of its [" + std::to_string(Begin(index)) + ", " +
                                 std::to_string(end) + ")");
    }
    return absl::OkStatus();
  }

  // The first message carries the options and the part (and the first keys); then keys in chunks.
  using Call = grpc::ClientReaderWriter<v1::SortStreamRequest, v1::SortStreamResponse>;
  void SendPart(uint32_t index, Call& call) {
    const std::size_t chunk = options_.stream_chunk_bytes;
    v1::SortStreamRequest message;
    FillSortOptions(request_, message.mutable_options());
    message.set_response_chunk_bytes(static_cast<uint32_t>(std::min(chunk, options_.max_message_bytes / 2)));
    v1::StreamPart* part = message.mutable_part();
    part->set_job(job_);
    part->set_index(index);
    part->set_count(count_);
    part->set_total_keys(total_keys_);
    const std::size_t begin = Begin(index) * width_;
    const std::string_view keys = request_.keys.substr(begin, Begin(index + 1) * width_ - begin);
    for (std::size_t pos = 0; pos < keys.size(); pos += chunk) {
      const std::string_view piece = keys.substr(pos, chunk);
      message.mutable_keys()->assign(piece);
      if (!call.Write(message)) break;  // the call failed: Finish says why
      message.Clear();
      Progress("send", piece.size(), request_.keys.size());
    }
    call.WritesDone();
  }

  // Copies one answer chunk into its place in the result; it must start at *next and end by `end`.
  absl::Status Place(const v1::SortStreamResponse& in, std::size_t* next, std::size_t end) {
    if (absl::Status offset_ok = CheckOffset(in.offset(), *next); !offset_ok.ok()) return offset_ok;
    const std::size_t n = in.keys().size() / width_;
    if (in.keys().size() % width_ != 0 || n > end - *next) {
      return absl::DataLossError("the server's answer chunk at " + std::to_string(in.offset()) + " holds " +
                                 std::to_string(in.keys().size()) + " key bytes; the part ends at element " +
                                 std::to_string(end));
    }
    const bool indices = request_.payload == client::Payload::kIndices;
    if (indices && in.indices().size() != n * sizeof(int64_t)) {
      return absl::DataLossError("the server's answer chunk at " + std::to_string(in.offset()) + " holds " +
                                 std::to_string(n) + " keys but " + std::to_string(in.indices().size()) +
                                 " index bytes");
    }
    std::memcpy(keys_out_.data() + *next * width_, in.keys().data(), in.keys().size());
    if (indices) {
      std::memcpy(indices_out_.data() + *next * sizeof(int64_t), in.indices().data(), in.indices().size());
    }
    *next += n;
    Progress("receive", in.keys().size() + in.indices().size(), answer_bytes_);
    return absl::OkStatus();
  }

  // Progress over all parts, one call at a time so that the callback need not be thread-safe.
  void Progress(std::string_view stage, std::size_t bytes, std::size_t total) {
    if (!options_.progress) return;
    std::lock_guard lock(progress_mutex_);
    std::size_t& done = stage == "send" ? sent_ : received_;
    done += bytes;
    options_.progress(stage, done, total);
  }

  // Records a failure. The first one that is not ABORTED cancels every other part: the server would
  // fail them anyway, and a part that has sent everything would otherwise wait for the sort until its
  // deadline. ABORTED cancels nothing: the server answers it when another part failed, and then ends
  // every part by itself; cancelling could hide the failure that caused it, which the server often
  // sends after the ABORTEDs.
  void Fail(uint32_t index, const absl::Status& status) {
    std::lock_guard lock(mutex_);
    failures_.push_back({status, cancelled_[index] && status.code() == absl::StatusCode::kCancelled});
    if (cancelling_ || status.code() == absl::StatusCode::kAborted) return;
    cancelling_ = true;
    for (uint32_t i = 0; i < count_; ++i) {
      if (i == index) continue;
      cancelled_[i] = true;
      contexts_[i]->TryCancel();  // also before its call starts: the call then starts cancelled
    }
  }

  const RawSortRequest& request_;
  const ClientOptions& options_;
  const std::string job_;
  const uint32_t count_;
  const std::size_t width_, total_keys_, answer_bytes_;
  const std::span<std::byte> keys_out_, indices_out_;
  client::ExecutionInfo* const info_;  // part 0's
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts_;  // set before any part starts

  struct Failure {
    absl::Status status;
    bool cancelled_by_us;
  };
  std::mutex mutex_;  // failures_, cancelled_, cancelling_
  std::vector<Failure> failures_;
  std::vector<bool> cancelled_;
  bool cancelling_ = false;
  std::mutex progress_mutex_;
  std::size_t sent_ = 0, received_ = 0;
};

}  // namespace

std::size_t TopKResultCount(const TopKOptions& o) {
  if (o.segment_offsets.empty()) return std::max<uint64_t>(o.rows, 1) * o.k;
  std::size_t results = 0;
  for (std::size_t s = 0; s + 1 < o.segment_offsets.size(); ++s) {
    // Offsets that decrease are refused by the server; they count as empty here.
    const uint64_t length =
        o.segment_offsets[s + 1] > o.segment_offsets[s] ? o.segment_offsets[s + 1] - o.segment_offsets[s] : 0;
    results += std::min<uint64_t>(length, o.k);
  }
  return results;
}

Client::Impl::Impl(ClientOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials)
    : options_(std::move(options)), credentials_(std::move(credentials)) {
  // Names resolve once, here: the part channels made later dial the same addresses.
  auto target = client_internal::ResolveTarget(options_);
  if (!target.ok()) {
    init_status_ = target.status();
    return;
  }
  target_uri_ = target->uri;
  target_authority_ = target->authority;
  target_servers_ = target->servers;
  balancing_ = client_internal::LoadBalancingPolicy(options_, target_servers_) != "pick_first";
  auto channel = MakeChannel(nullptr);
  if (!channel.ok()) {
    init_status_ = channel.status();
    return;
  }
  channel_ = std::move(*channel);
  stub_ = v1::SortService::NewStub(channel_);
  data_connections_ =
      std::make_unique<client_internal::DataConnections>(client_internal::DataHostOf(target_uri_, target_authority_));
  if (!options_.shm_socket.empty() && options_.shm_calls_on_socket) {
    region_calls_ = std::make_unique<client_internal::RegionCallConnections>(options_.shm_socket, options_.wait_spin);
  }
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> Client::Impl::MakeChannel(
    const std::pair<std::string, int>* extra_argument) const {
  grpc::ChannelArguments args;
  if (extra_argument != nullptr) args.SetInt(extra_argument->first, extra_argument->second);
  return client_internal::CreateChannelTo(
      options_, {.uri = target_uri_, .authority = target_authority_, .servers = target_servers_}, args,
      credentials_);
}

absl::StatusOr<std::vector<v1::SortService::Stub*>> Client::Impl::PartStubs(std::size_t count) {
  std::lock_guard lock(part_stubs_mutex_);
  while (part_stubs_.size() < count) {
    const std::pair<std::string, int> argument{kStreamPartArgument, static_cast<int>(part_stubs_.size())};
    auto channel = MakeChannel(&argument);
    if (!channel.ok()) return channel.status();
    part_channels_.push_back(std::move(*channel));
    part_stubs_.push_back(v1::SortService::NewStub(part_channels_.back()));
  }
  // Connected before any part starts. A part call on a channel still connecting fails at once with
  // UNAVAILABLE when its first connection attempt fails (seen on loopback as a spurious "failed to
  // connect to all addresses" when eight connections open at once), and one failed part fails the
  // whole Sort. Here every channel gets the time to connect, or its retries, within the call's timeout
  // or kPartConnectTimeout.
  const auto timeout = options_.timeout.count() > 0 ? std::min<std::chrono::milliseconds>(options_.timeout, kPartConnectTimeout)
                                                    : kPartConnectTimeout;
  const auto deadline = std::chrono::system_clock::now() + timeout;
  for (std::size_t i = 0; i < count; ++i) part_channels_[i]->GetState(/*try_to_connect=*/true);
  for (std::size_t i = 0; i < count; ++i) {
    if (!part_channels_[i]->WaitForConnected(deadline)) {
      const std::string what = "stream part connection " + std::to_string(i) + " to " + options_.target +
                               " did not connect within " + std::to_string(timeout.count()) + " ms";
      // The caller's own deadline ran out first: DEADLINE_EXCEEDED, as for any call it cuts short.
      if (timeout < kPartConnectTimeout) return absl::DeadlineExceededError(what + " (the call's timeout)");
      return absl::UnavailableError(what);
    }
  }
  std::vector<v1::SortService::Stub*> stubs;
  for (std::size_t i = 0; i < count; ++i) stubs.push_back(part_stubs_[i].get());
  return stubs;
}

std::unique_ptr<grpc::ClientContext> Client::Impl::NewContext() const { return NewCallContext(options_); }

std::size_t Client::Impl::UnaryLimit() const {
  return options_.max_message_bytes - std::min(options_.max_message_bytes / 2, kMessageHeadroom);
}

bool Client::Impl::ShouldStream(std::size_t request_bytes, std::size_t answer_bytes) const {
  switch (options_.transport) {
    case Transport::kUnary: return false;
    case Transport::kStream: return true;
    case Transport::kSharedMemory: return false;
    case Transport::kAuto:
    case Transport::kSockets: break;
  }
  const std::size_t largest = std::max(request_bytes, answer_bytes);
  return largest > UnaryLimit() || largest >= options_.stream_from_bytes;
}

absl::StatusOr<RawSortResult> Client::Impl::SortRaw(const RawSortRequest& r) {
  if (!init_status_.ok()) return init_status_;
  if (options_.transport == Transport::kSharedMemory) return SortThroughRegion(r);
  if (ShouldUseSockets(r)) return SortOnSockets(r);
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
  result.info = FromProto(response.info());
  return result;
}

bool Client::Impl::ShouldSplit(const RawSortRequest& r) const {
  // Every part must carry at least one key; values would need their own ranges (the proto has none).
  // While balancing, the parts could reach different servers, and all must reach one.
  return !balancing_ && options_.stream_parts > 1 && r.payload != client::Payload::kValues &&
         r.keys.size() >= options_.stream_parts_from_bytes &&
         r.keys.size() / KeyBytes(r.dtype) >= static_cast<std::size_t>(options_.stream_parts);
}

absl::StatusOr<RawSortResult> Client::Impl::SortStreamedInParts(const RawSortRequest& r) {
  RawSortResult result;
  result.streamed = true;
  result.keys.resize(r.keys.size());
  if (r.payload == client::Payload::kIndices)
    result.indices.resize(r.keys.size() / KeyBytes(r.dtype) * sizeof(int64_t));
  absl::StatusOr<client::ExecutionInfo> info = SortInPartsInto(r, std::as_writable_bytes(std::span(result.keys)),
                                                               std::as_writable_bytes(std::span(result.indices)));
  if (!info.ok()) return info.status();
  result.info = *std::move(info);
  return result;
}

absl::StatusOr<client::ExecutionInfo> Client::Impl::SortInPartsInto(const RawSortRequest& r,
                                                                    std::span<std::byte> keys_out,
                                                                    std::span<std::byte> indices_out) {
  client::ExecutionInfo info;
  const auto count = static_cast<uint32_t>(std::min(options_.stream_parts, kMaxStreamParts));
  auto part_stubs = PartStubs(count);
  if (!part_stubs.ok()) return part_stubs.status();
  const std::vector<v1::SortService::Stub*>& stubs = *part_stubs;
  SplitSort split(r, options_, count, keys_out, indices_out, &info);
  for (uint32_t i = 0; i < count; ++i) split.SetContext(i, NewContext());
  // A thread per part: each call writes all its keys before it reads, and the server answers no part
  // before every part has sent everything. This thread runs part 0.
  std::vector<std::thread> threads;
  for (uint32_t i = 1; i < count; ++i) threads.emplace_back([&split, &stubs, i] { split.Run(i, *stubs[i]); });
  split.Run(0, *stubs[0]);
  for (std::thread& t : threads) t.join();
  if (absl::Status status = split.status(); !status.ok()) return status;
  return info;
}

absl::StatusOr<client::ExecutionInfo> Client::Impl::SortRawInto(const RawSortRequest& r, std::span<std::byte> keys_out,
                                                                std::span<std::byte> indices_out) {
  if (!init_status_.ok()) return init_status_;
  if (r.payload == client::Payload::kValues)
    return absl::InvalidArgumentError("SortRawInto takes keys alone or with indices; SortRaw carries values");
  const std::size_t index_bytes =
      r.payload == client::Payload::kIndices ? r.keys.size() / KeyBytes(r.dtype) * sizeof(int64_t) : 0;
  if (keys_out.size() != r.keys.size() || indices_out.size() != index_bytes) {
    return absl::InvalidArgumentError("SortRawInto needs " + std::to_string(r.keys.size()) +
                                      " bytes for the keys and " + std::to_string(index_bytes) +
                                      " for the indices; got " + std::to_string(keys_out.size()) + " and " +
                                      std::to_string(indices_out.size()));
  }
  const auto* out_begin = reinterpret_cast<const char*>(keys_out.data());
  if (!r.keys.empty() && out_begin < r.keys.data() + r.keys.size() && r.keys.data() < out_begin + keys_out.size())
    return absl::InvalidArgumentError("SortRawInto's keys_out overlaps the request's keys");
  if (ShouldUseSockets(r)) return SortOnSocketsInto(r, keys_out, indices_out);
  if (options_.transport != Transport::kSharedMemory &&
      ShouldStream(r.keys.size() + r.values.size(), SortAnswerBytes(r)) && ShouldSplit(r)) {
    return SortInPartsInto(r, keys_out, indices_out);
  }
  absl::StatusOr<RawSortResult> result = SortRaw(r);
  if (!result.ok()) return result.status();
  if (result->keys.size() != keys_out.size() || result->indices.size() != indices_out.size())
    return absl::DataLossError("the server's answer does not have the request's size");
  if (!keys_out.empty()) std::memcpy(keys_out.data(), result->keys.data(), keys_out.size());
  if (!indices_out.empty()) std::memcpy(indices_out.data(), result->indices.data(), indices_out.size());
  return std::move(result->info);
}

absl::StatusOr<RawSortResult> Client::Impl::SortStreamed(const RawSortRequest& r) {
  if (ShouldSplit(r)) return SortStreamedInParts(r);
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
  const std::size_t key_bytes = KeyBytes(r.dtype);
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
    if (chunk_in.has_info()) result.info = FromProto(chunk_in.info());
    if (options_.progress) options_.progress("receive", received, answer_bytes);
  }
  grpc::Status status = call->Finish();
  if (!status.ok()) return ToAbsl(status);
  return result;
}

absl::StatusOr<RawTopKResult> Client::Impl::TopKRaw(client::DType dtype, std::string_view keys,
                                              const TopKOptions& o) {
  if (!init_status_.ok()) return init_status_;
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
  result.info = FromProto(response.info());
  return result;
}

absl::StatusOr<RawTopKResult> Client::Impl::TopKStreamed(client::DType dtype, std::string_view keys,
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
    if (chunk_in.has_info()) result.info = FromProto(chunk_in.info());
  }
  grpc::Status status = call->Finish();
  if (!status.ok()) return ToAbsl(status);
  return result;
}

absl::StatusOr<bool> Client::Impl::Health(const std::string& service) {
  if (!init_status_.ok()) return init_status_;
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
