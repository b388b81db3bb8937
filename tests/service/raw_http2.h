// A gRPC call written as HTTP/2 frames by hand (libnghttp2), for the bytes a gRPC client refuses to
// send: header values holding control bytes or non-ASCII, and the like. One call per connection,
// blocking, with a timeout; what came back (headers, trailers, DATA bytes, how the stream ended).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace gpusort::testing {

struct RawHttp2Reply {
  bool connected = false;
  bool stream_closed = false;  // the server ended the stream (a status, or RST_STREAM)
  uint32_t reset_code = 0;     // the stream's HTTP/2 error code when it was reset
  std::vector<std::pair<std::string, std::string>> headers;  // response headers and trailers, in order
  std::string data;
  int pings = 0;               // PING frames the server sent (not acknowledgements of ours)

  // The last value of header `name`, or "" when absent.
  std::string Header(const std::string& name) const {
    std::string value;
    for (const auto& [n, v] : headers)
      if (n == name) value = v;
    return value;
  }
};

// A gRPC message as DATA bytes: no compression, 4-byte big-endian length, the message.
inline std::string GrpcFrame(const std::string& message) {
  std::string frame(5, '\0');
  const uint32_t length = htonl(static_cast<uint32_t>(message.size()));
  std::memcpy(frame.data() + 1, &length, 4);
  return frame + message;
}

// POSTs `body` to `path` on 127.0.0.1:`port` with gRPC's headers plus `extra` (sent byte for byte).
inline RawHttp2Reply RawGrpcCall(int port, const std::string& path,
                                 const std::vector<std::pair<std::string, std::string>>& extra,
                                 const std::string& body,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  struct State {
    int fd = -1;
    RawHttp2Reply reply;
    std::string body;
    std::size_t body_sent = 0;
    int32_t stream_id = -1;
  } state;
  state.body = body;

  state.fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(state.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(state.fd);
    return state.reply;
  }
  state.reply.connected = true;

  nghttp2_session_callbacks* callbacks;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_send_callback(
      callbacks, [](nghttp2_session*, const uint8_t* data, size_t length, int, void* user) -> ssize_t {
        auto* s = static_cast<State*>(user);
        const ssize_t n = ::send(s->fd, data, length, MSG_NOSIGNAL);
        return n < 0 ? static_cast<ssize_t>(NGHTTP2_ERR_CALLBACK_FAILURE) : n;
      });
  nghttp2_session_callbacks_set_on_header_callback(
      callbacks, [](nghttp2_session*, const nghttp2_frame*, const uint8_t* name, size_t namelen,
                    const uint8_t* value, size_t valuelen, uint8_t, void* user) -> int {
        static_cast<State*>(user)->reply.headers.emplace_back(std::string(reinterpret_cast<const char*>(name), namelen),
                                                              std::string(reinterpret_cast<const char*>(value), valuelen));
        return 0;
      });
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
      callbacks, [](nghttp2_session*, uint8_t, int32_t, const uint8_t* data, size_t len, void* user) -> int {
        static_cast<State*>(user)->reply.data.append(reinterpret_cast<const char*>(data), len);
        return 0;
      });
  nghttp2_session_callbacks_set_on_frame_recv_callback(
      callbacks, [](nghttp2_session*, const nghttp2_frame* frame, void* user) -> int {
        if (frame->hd.type == NGHTTP2_PING && !(frame->hd.flags & NGHTTP2_FLAG_ACK)) ++static_cast<State*>(user)->reply.pings;
        return 0;
      });
  nghttp2_session_callbacks_set_on_stream_close_callback(
      callbacks, [](nghttp2_session*, int32_t, uint32_t error_code, void* user) -> int {
        auto* s = static_cast<State*>(user);
        s->reply.stream_closed = true;
        s->reply.reset_code = error_code;
        return 0;
      });
  nghttp2_session* session;
  nghttp2_session_client_new(&session, callbacks, &state);
  nghttp2_session_callbacks_del(callbacks);
  nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0);

  const std::string authority = "127.0.0.1:" + std::to_string(port);
  std::vector<std::pair<std::string, std::string>> fields = {
      {":method", "POST"}, {":scheme", "http"}, {":path", path}, {":authority", authority},
      {"content-type", "application/grpc"}, {"te", "trailers"}};
  fields.insert(fields.end(), extra.begin(), extra.end());
  std::vector<nghttp2_nv> nva;
  for (auto& [name, value] : fields) {
    nva.push_back({reinterpret_cast<uint8_t*>(name.data()), reinterpret_cast<uint8_t*>(value.data()), name.size(),
                   value.size(), NGHTTP2_NV_FLAG_NONE});
  }
  nghttp2_data_provider provider{};
  provider.read_callback = [](nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                              nghttp2_data_source*, void* user) -> ssize_t {
    auto* s = static_cast<State*>(user);
    const std::size_t n = std::min(length, s->body.size() - s->body_sent);
    std::memcpy(buf, s->body.data() + s->body_sent, n);
    s->body_sent += n;
    if (s->body_sent == s->body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  };
  state.stream_id = nghttp2_submit_request(session, nullptr, nva.data(), nva.size(), &provider, nullptr);

  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!state.reply.stream_closed && std::chrono::steady_clock::now() < end) {
    if (nghttp2_session_send(session) != 0) break;
    pollfd p{state.fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    uint8_t buffer[16384];
    const ssize_t n = ::recv(state.fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;  // the server closed the connection (or died)
    if (nghttp2_session_mem_recv(session, buffer, static_cast<size_t>(n)) < 0) break;
  }
  nghttp2_session_del(session);
  close(state.fd);
  return state.reply;
}

}  // namespace gpusort::testing
