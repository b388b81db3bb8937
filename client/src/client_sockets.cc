// Client::Impl's Sorts over the server's data port (Transport::kSockets; sort.proto, "Sockets beside
// gRPC"): the options over gRPC, the keys and the answer over plain TCP in parts side by side.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <span>
#include <thread>

#include <sys/socket.h>
#include <unistd.h>

#include "client/src/client_impl.h"
#include "client/src/proto_convert.h"
#include "gpusort/v1/data_socket.h"

namespace gpusort {
namespace {

namespace wire = v1::data_socket;
using client_internal::FillSortOptions;
using client_internal::FromProto;
using client_internal::KeyBytes;
using client_internal::ToAbsl;

// Parts of at least this many bytes: below it a part's thread and header cost more than they save.
constexpr std::size_t kMinPartBytes = 1u << 20;

absl::Status SendAll(int fd, const std::byte* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(std::string("data connection: send: ") + std::strerror(errno));
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status ReceiveAll(int fd, std::byte* out, std::size_t size) {
  while (size > 0) {
    const ssize_t n = recv(fd, out, size, MSG_WAITALL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError("the data connection ended before the part's answer did");
    out += n;
    size -= static_cast<std::size_t>(n);
  }
  return absl::OkStatus();
}

struct PartIo {
  int fd;
  uint32_t index;
  std::span<const std::byte> keys;  // the part's range of the request
  std::span<std::byte> keys_out;    // and of the answers
  std::span<std::byte> indices_out;
};

// The reply header and, for a refusal, its reason: the refusal as a status, or OK for an answer to come.
absl::StatusOr<wire::Reply> ReceiveReply(int fd) {
  std::array<std::byte, wire::kReplyBytes> reply_bytes;
  if (absl::Status s = ReceiveAll(fd, reply_bytes.data(), reply_bytes.size()); !s.ok()) return s;
  const std::optional<wire::Reply> reply = wire::DecodeReply(reply_bytes);
  if (!reply) return absl::DataLossError("the data port answered something that is not a reply header");
  if (reply->code == 0) return *reply;
  std::string reason(reply->text_length, '\0');
  (void)ReceiveAll(fd, reinterpret_cast<std::byte*>(reason.data()), reason.size());
  return absl::Status(static_cast<absl::StatusCode>(reply->code), "data port: " + reason);
}

// One part: header and keys out, then the reply and the part's answer in, straight into place.
absl::Status RunPart(const PartIo& part, const wire::Ticket& ticket) {
  const auto header = wire::EncodeRequest({.index = part.index, .bytes = part.keys.size(), .ticket = ticket});
  absl::Status sent = SendAll(part.fd, header.data(), header.size());
  if (sent.ok()) sent = SendAll(part.fd, part.keys.data(), part.keys.size());
  absl::StatusOr<wire::Reply> reply = ReceiveReply(part.fd);
  // A refusal may come while the keys are still going out (the server then drops them): it says why
  // the sending failed.
  if (!sent.ok()) {
    const bool refused = !reply.ok() && reply.status().code() != absl::StatusCode::kUnavailable;
    return refused ? reply.status() : sent;
  }
  if (!reply.ok()) return reply.status();
  if (reply->key_bytes != part.keys_out.size() || reply->index_bytes != part.indices_out.size())
    return absl::DataLossError("the data port's answer does not have the part's size");
  if (absl::Status s = ReceiveAll(part.fd, part.keys_out.data(), part.keys_out.size()); !s.ok()) return s;
  return ReceiveAll(part.fd, part.indices_out.data(), part.indices_out.size());
}

}  // namespace

bool Client::Impl::ShouldUseSockets(const RawSortRequest& r) const {
  return options_.transport == Transport::kSockets && r.payload != client::Payload::kValues && !balancing_;
}

absl::StatusOr<client::ExecutionInfo> Client::Impl::SortOnSocketsInto(const RawSortRequest& r,
                                                                      std::span<std::byte> keys_out,
                                                                      std::span<std::byte> indices_out) {
  const std::size_t width = KeyBytes(r.dtype);
  if (r.keys.size() % width != 0)
    return absl::InvalidArgumentError("the keys are not a whole number of elements of their dtype");
  const std::size_t n = r.keys.size() / width;
  const uint32_t parts = static_cast<uint32_t>(std::clamp<std::size_t>(
      std::min<std::size_t>(options_.stream_parts, r.keys.size() / kMinPartBytes), 1, wire::kMaxParts));
  v1::SocketSortRequest request;
  FillSortOptions(r, request.mutable_options());
  request.set_total_keys(n);
  request.set_parts(parts);
  auto context = NewContext();
  auto reader = stub_->SortOnSockets(context.get(), request);
  v1::SocketSortEvent event;
  if (!reader->Read(&event)) return ToAbsl(reader->Finish());
  if (event.ticket().size() != wire::kTicketBytes || event.port() == 0 || event.port() > 65535) {
    context->TryCancel();
    (void)reader->Finish();
    return absl::DataLossError("the server's SortOnSockets answer has no usable ticket and port");
  }
  wire::Ticket ticket;
  std::memcpy(ticket.data(), event.ticket().data(), ticket.size());
  const int port = static_cast<int>(event.port());
  absl::StatusOr<std::vector<int>> fds = data_connections_->Take(parts, port);
  if (!fds.ok()) {
    context->TryCancel();
    (void)reader->Finish();
    return fds.status();
  }
  std::vector<absl::Status> results(parts);
  // The first part to fail failed for its own reason; the later ones may fail only because this side
  // then cancelled the call (and the server forgot its ticket).
  std::mutex first_failure_mutex;
  absl::Status first_failure;
  const auto* keys = reinterpret_cast<const std::byte*>(r.keys.data());
  auto run = [&](uint32_t i) {
    const std::size_t begin = n * i / parts, end = n * (i + 1) / parts;
    const bool with_indices = !indices_out.empty();
    results[i] = RunPart({.fd = (*fds)[i],
                          .index = i,
                          .keys = std::span(keys + begin * width, (end - begin) * width),
                          .keys_out = keys_out.subspan(begin * width, (end - begin) * width),
                          .indices_out = with_indices ? indices_out.subspan(begin * 8, (end - begin) * 8)
                                                      : std::span<std::byte>()},
                         ticket);
    // A part that failed here may not have reached the server at all: end the call, or it would wait
    // for the part until the server's idle timeout.
    if (results[i].ok()) return;
    {
      std::lock_guard lock(first_failure_mutex);
      if (first_failure.ok()) first_failure = results[i];
    }
    context->TryCancel();
  };
  std::vector<std::thread> threads;
  for (uint32_t i = 1; i < parts; ++i) threads.emplace_back(run, i);
  run(0);
  for (std::thread& t : threads) t.join();
  const bool got_info = reader->Read(&event);
  const absl::Status call = ToAbsl(reader->Finish());
  std::vector<int> good;
  for (uint32_t i = 0; i < parts; ++i) {
    if (results[i].ok()) {
      good.push_back((*fds)[i]);
    } else {
      close((*fds)[i]);
    }
  }
  data_connections_->Give(std::move(good), port);
  const absl::Status& part_failure = first_failure;
  // The call's status is the server's reason, unless this side cancelled the call because a part failed
  // here (the data port refused it, or its connection broke): then the part's failure is the reason.
  if (!call.ok()) return call.code() == absl::StatusCode::kCancelled && !part_failure.ok() ? part_failure : call;
  if (!part_failure.ok()) return part_failure;
  if (!got_info) return absl::DataLossError("SortOnSockets ended without its ExecutionInfo");
  return FromProto(event.info());
}

absl::StatusOr<RawSortResult> Client::Impl::SortOnSockets(const RawSortRequest& r) {
  RawSortResult result;
  result.keys.resize(r.keys.size());
  if (r.payload == client::Payload::kIndices) result.indices.resize(r.keys.size() / KeyBytes(r.dtype) * 8);
  absl::StatusOr<client::ExecutionInfo> info =
      SortOnSocketsInto(r, std::as_writable_bytes(std::span(result.keys.data(), result.keys.size())),
                        std::as_writable_bytes(std::span(result.indices.data(), result.indices.size())));
  if (!info.ok()) return info.status();
  result.info = std::move(*info);
  result.streamed = true;
  return result;
}

}  // namespace gpusort
