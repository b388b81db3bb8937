#include "server/transport/data_port/data_connection.h"

#include <algorithm>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpusort/v1/data_socket.h"
#include "server/core/status_macros.h"
#include "server/transport/data_port/data_socket_io.h"

namespace gpusort {
namespace {

namespace wire = v1::data_socket;

// The reason as printable ASCII, cut to what the reply allows (the server's own words; never bytes a
// caller sent).
std::string ReasonText(const absl::Status& status) {
  std::string text(status.message().substr(0, wire::kMaxReasonBytes));
  for (char& c : text) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return text;
}

// Best effort: the connection is closed right after, whatever happens here. It lingers first, dropping
// what the peer still sends, so that the refusal reaches it (data_socket_io.h).
void SendFailure(int fd, const absl::Status& status, const KeepGoingFn& keep_going) {
  const std::string reason = ReasonText(status);
  const auto header = wire::EncodeReply(wire::Reply{.code = static_cast<std::uint32_t>(status.code()),
                                                    .text_length = static_cast<std::uint32_t>(reason.size())});
  constexpr std::chrono::milliseconds kFailureSendTime{1000};
  if (!WriteFully(fd, header.data(), header.size(), kFailureSendTime, keep_going).ok()) return;
  if (!WriteFully(fd, reinterpret_cast<const std::byte*>(reason.data()), reason.size(), kFailureSendTime, keep_going)
           .ok()) {
    return;
  }
  LingerAfterRefusal(fd, kFailureSendTime, keep_going);
}

class PartServer {
 public:
  PartServer(int fd, SocketSortJob& job, uint32_t index, const DataConnectionLimits& limits,
             const std::atomic<bool>& stop)
      : fd_(fd),
        job_(job),
        limits_(limits),
        stop_(stop),
        width_(ElementSize(job.spec().dtype)),
        first_(job.Begin(index)),
        keys_(job.Begin(index + 1) - first_),
        chunk_keys_(std::max<std::size_t>(1, (job.direct() ? limits.direct_chunk_bytes : limits.chunk_bytes) / width_)),
        direct_(job.direct() ? job.ingest().DirectKeys().subspan(first_ * width_, keys_ * width_)
                             : std::span<std::byte>()) {}

  // The part's keys in, then the sort. In direct mode the socket writes them straight into the ingest's
  // memory (pinned, on a GPU) and each chunk is committed as it lands; otherwise each chunk is handed on
  // through Write, which converts it into the engine's staging. A failure here is the caller's to answer
  // on the socket.
  absl::Status ReceiveAndSort() {
    std::vector<std::byte> chunk(direct_.empty() ? std::min(keys_, chunk_keys_) * width_ : 0);
    for (std::size_t done = 0; done < keys_;) {
      const std::size_t n = std::min(chunk_keys_, keys_ - done);
      std::byte* to = direct_.empty() ? chunk.data() : direct_.data() + done * width_;
      RETURN_IF_ERROR(ReadFully(fd_, to, n * width_, limits_.stall, KeepGoing()));
      job_.Moved();
      RETURN_IF_ERROR(direct_.empty() ? job_.ingest().Write(first_ + done, std::span(to, n * width_))
                                      : job_.ingest().CommitDirect(first_ + done, n));
      done += n;
    }
    RETURN_IF_ERROR(job_.ArriveAndWait([this] { return stop_.load(); }));
    return job_.SortOnce();
  }

  // The reply header, then the answer chunk by chunk as each comes back from the engine. After the header
  // has gone out a failure can only close the socket.
  absl::Status SendAnswer() {
    const bool with_indices = job_.spec().payload == SortPayload::kIndices;
    const auto header = wire::EncodeReply(wire::Reply{
        .code = 0, .key_bytes = keys_ * width_, .index_bytes = with_indices ? keys_ * sizeof(int64_t) : 0});
    RETURN_IF_ERROR(WriteFully(fd_, header.data(), header.size(), limits_.stall, KeepGoing()));
    std::vector<int64_t> indices(with_indices ? keys_ : 0);
    std::vector<std::byte> chunk(direct_.empty() ? std::min(keys_, chunk_keys_) * width_ : 0);
    for (std::size_t done = 0; done < keys_;) {
      const std::size_t n = std::min(chunk_keys_, keys_ - done);
      int64_t* positions = with_indices ? indices.data() + done : nullptr;
      std::byte* from = direct_.empty() ? chunk.data() : direct_.data() + done * width_;
      RETURN_IF_ERROR(direct_.empty() ? job_.ingest().Read(first_ + done, first_ + done + n, from, positions)
                                      : job_.ingest().ReadDirect(first_ + done, first_ + done + n, positions));
      RETURN_IF_ERROR(WriteFully(fd_, from, n * width_, limits_.stall, KeepGoing()));
      job_.Moved();
      done += n;
    }
    if (with_indices) {
      RETURN_IF_ERROR(WriteFully(fd_, reinterpret_cast<const std::byte*>(indices.data()),
                                 indices.size() * sizeof(int64_t), limits_.stall, KeepGoing()));
    }
    return absl::OkStatus();
  }

  KeepGoingFn KeepGoing() const {
    return [this] {
      if (stop_.load()) return absl::UnavailableError("the server is stopping");
      return job_.failure();
    };
  }

 private:
  const int fd_;
  SocketSortJob& job_;
  const DataConnectionLimits& limits_;
  const std::atomic<bool>& stop_;
  const std::size_t width_, first_, keys_, chunk_keys_;
  const std::span<std::byte> direct_;  // this part's range of the ingest's direct memory; empty: staged
};

// One request on the connection: false when the connection is to close.
bool ServeOneRequest(int fd, const std::string& peer_host, SocketSorts& sorts, const DataConnectionLimits& limits,
                     const std::atomic<bool>& stop) {
  const KeepGoingFn until_stopped = [&stop] {
    return stop.load() ? absl::UnavailableError("the server is stopping") : absl::OkStatus();
  };
  std::array<std::byte, wire::kRequestBytes> header;
  bool ended_cleanly = false;
  // The first byte may take as long as the caller likes up to idle_between_parts; the rest must follow.
  absl::Status read = ReadFully(fd, header.data(), 1, limits.idle_between_parts, until_stopped, &ended_cleanly);
  // The rest within `stall` in all, not per byte: a peer that trickles its header cannot keep a
  // connection (one of --data-max-connections) without ever showing a ticket.
  const auto header_due = std::chrono::steady_clock::now() + limits.stall;
  const KeepGoingFn header_in_time = [&] {
    if (std::chrono::steady_clock::now() > header_due) {
      return absl::DeadlineExceededError("the request header did not arrive in time");
    }
    return until_stopped();
  };
  if (read.ok()) read = ReadFully(fd, header.data() + 1, header.size() - 1, limits.stall, header_in_time);
  if (!read.ok()) return false;  // the caller is done or gone, or idle too long: nothing to answer
  const std::optional<wire::Request> request = wire::DecodeRequest(header);
  if (!request) {
    SendFailure(fd, absl::InvalidArgumentError("not a data-port request header (magic GSDQ, 64 bytes)"), until_stopped);
    return false;
  }
  if (request->version != wire::kVersion) {
    SendFailure(fd, absl::UnimplementedError("data-port request version " + std::to_string(request->version) +
                                             "; this server speaks version 1"), until_stopped);
    return false;
  }
  if (!request->reserved_zero) {
    SendFailure(fd, absl::InvalidArgumentError("the request header's reserved bytes must be 0"), until_stopped);
    return false;
  }
  absl::StatusOr<std::shared_ptr<SocketSortJob>> job = sorts.Find(request->ticket, peer_host);
  if (!job.ok()) {
    SendFailure(fd, job.status(), until_stopped);
    return false;
  }
  if (absl::Status claimed = (*job)->Claim(request->index, request->bytes); !claimed.ok()) {
    SendFailure(fd, claimed, until_stopped);
    return false;
  }
  PartServer part(fd, **job, request->index, limits, stop);
  if (absl::Status sorted = part.ReceiveAndSort(); !sorted.ok()) {
    (*job)->Fail(sorted);
    // The job's own failure where it has one (another part's, the caller's cancellation): that is the
    // reason; this part's read only stopped because of it.
    const absl::Status failure = (*job)->failure();
    SendFailure(fd, failure.ok() ? sorted : failure, until_stopped);
    return false;
  }
  if (absl::Status sent = part.SendAnswer(); !sent.ok()) {
    (*job)->Fail(absl::UnavailableError("part " + std::to_string(request->index) +
                                        "'s answer could not be sent: " + std::string(sent.message())));
    return false;
  }
  (*job)->Answered(request->index);
  return true;
}

}  // namespace

void ServeDataConnection(int fd, const std::string& peer_host, SocketSorts& sorts, const DataConnectionLimits& limits,
                         const std::atomic<bool>& stop) {
  while (!stop.load() && ServeOneRequest(fd, peer_host, sorts, limits, stop)) {
  }
}

}  // namespace gpusort
