// tcp_floor: what plain TCP on loopback costs for the bytes a service call moves (issue 18), the floor
// that gpusort's network path is judged against in scripts/service-bench.sh.
//
// One request sends `--bytes` split into `--connections` equal parts, each on a connection of its own
// (as the client sends a large sort as SortStream parts, each on its own connection), and gets the same
// bytes back on each connection. Two patterns:
//   echo   each server connection writes back every chunk as it arrives (the EchoStream's shape);
//   store  store-and-forward: each server connection reads its whole part into memory, waits until
//          every part of the request has arrived (a sort needs every key before it answers), then
//          writes its part back (the shape of a streamed Sort, less the sort).
// No gRPC, no framing beyond an 8-byte length per part, no copies but the socket's: the floor.
// The server side runs as threads of this process on 127.0.0.1, one per connection; connections stay
// open across requests, as a gRPC channel's do. Requests go one after another; the latency of each is
// from its first byte sent to its last byte received.
//
//   tcp_floor --bytes 64M --connections 8 --pattern store --requests 20 [--warmup 3] [--json FILE]
//
// Output: a line for people, and with --json a document shaped like `gpusort bench --format json`
// (rows[0].latency_ms.p50, requests_per_s, ...) so the same scripts read both.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kChunk = 1 << 20;  // the echo's unit, as the client's default stream chunk

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "tcp_floor: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

void WriteAll(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      Die("send");
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

// Reads exactly n bytes; false on a clean end of stream before the first byte.
bool ReadAll(int fd, char* data, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::recv(fd, data + got, n - got, 0);
    if (r == 0 && got == 0) return false;
    if (r <= 0) {
      if (r < 0 && errno == EINTR) continue;
      Die("recv");
    }
    got += static_cast<std::size_t>(r);
  }
  return true;
}

void NoDelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

struct Options {
  std::size_t bytes = 64u << 20;
  int connections = 8;
  bool store = true;
  int requests = 20;
  int warmup = 3;
  std::string json;
};

// The server end of one connection: for each request, an 8-byte length, then that many bytes.
void Serve(int fd, bool store, std::barrier<>& all_parts_in) {
  std::vector<char> buffer;
  for (;;) {
    uint64_t length = 0;
    if (!ReadAll(fd, reinterpret_cast<char*>(&length), sizeof length)) return;
    if (store) {
      buffer.resize(length);
      ReadAll(fd, buffer.data(), length);
      all_parts_in.arrive_and_wait();
      WriteAll(fd, buffer.data(), length);
    } else {
      buffer.resize(std::min<std::size_t>(length, kChunk));
      for (std::size_t done = 0; done < length;) {
        const std::size_t n = std::min(kChunk, length - done);
        ReadAll(fd, buffer.data(), n);
        WriteAll(fd, buffer.data(), n);
        done += n;
      }
    }
  }
}

std::size_t ParseSize(const char* text) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  double scale = 1;
  if (*end == 'K') scale = 1024.0;
  if (*end == 'M') scale = 1024.0 * 1024;
  if (*end == 'G') scale = 1024.0 * 1024 * 1024;
  if (!(v > 0) || (scale != 1 && end[1] != '\0') || (scale == 1 && *end != '\0')) {
    std::fprintf(stderr, "tcp_floor: not a size: %s\n", text);
    std::exit(2);
  }
  return static_cast<std::size_t>(v * scale);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "tcp_floor: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--bytes") o.bytes = ParseSize(value());
    else if (a == "--connections") o.connections = std::atoi(value());
    else if (a == "--pattern") {
      const std::string p = value();
      if (p != "echo" && p != "store") {
        std::fprintf(stderr, "tcp_floor: --pattern is echo or store\n");
        std::exit(2);
      }
      o.store = p == "store";
    } else if (a == "--requests") o.requests = std::atoi(value());
    else if (a == "--warmup") o.warmup = std::atoi(value());
    else if (a == "--json") o.json = value();
    else {
      std::fprintf(stderr,
                   "usage: tcp_floor --bytes N[K|M|G] --connections C --pattern echo|store --requests R "
                   "[--warmup W] [--json FILE]\n");
      std::exit(2);
    }
  }
  if (o.connections < 1 || o.connections > 64 || o.requests < 1 || o.warmup < 0) {
    std::fprintf(stderr, "tcp_floor: --connections 1..64, --requests >= 1, --warmup >= 0\n");
    std::exit(2);
  }
  return o;
}

double Percentile(std::vector<double> v, double p) {  // nearest rank, as gpusort bench's
  std::sort(v.begin(), v.end());
  const std::size_t rank = static_cast<std::size_t>(std::ceil(p / 100 * static_cast<double>(v.size())));
  return v[std::max<std::size_t>(rank, 1) - 1];
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) Die("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t address_length = sizeof address;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) Die("bind");
  if (::listen(listener, o.connections) != 0) Die("listen");
  if (::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &address_length) != 0) Die("getsockname");

  std::vector<int> clients(o.connections);
  std::vector<std::thread> servers;
  std::barrier all_parts_in(o.connections);
  for (int c = 0; c < o.connections; ++c) {
    clients[c] = ::socket(AF_INET, SOCK_STREAM, 0);
    if (clients[c] < 0 || ::connect(clients[c], reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
      Die("connect");
    NoDelay(clients[c]);
    const int accepted = ::accept(listener, nullptr, nullptr);
    if (accepted < 0) Die("accept");
    NoDelay(accepted);
    servers.emplace_back([accepted, &o, &all_parts_in] {
      Serve(accepted, o.store, all_parts_in);
      ::close(accepted);
    });
  }

  // Part c of a request: bytes [c * part, ...), the last part taking the remainder.
  const std::size_t part = o.bytes / o.connections;
  std::vector<char> payload(o.bytes);
  for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 2654435761u >> 13);
  std::vector<std::vector<char>> answers(o.connections);
  auto part_bytes = [&](int c) { return c + 1 == o.connections ? o.bytes - part * c : part; };

  // One request: every connection's sender and receiver at once (the echo needs reading to overlap
  // writing, or the unread echo fills the socket buffers and stalls both ends).
  auto request = [&] {
    if (o.connections == 1 && o.bytes <= (256u << 10)) {
      // Small enough for the socket buffers to hold the whole echo: one thread, no thread start
      // (about 20-50 us) in the measurement.
      const uint64_t length = o.bytes;
      answers[0].resize(o.bytes);
      WriteAll(clients[0], reinterpret_cast<const char*>(&length), sizeof length);
      WriteAll(clients[0], payload.data(), o.bytes);
      ReadAll(clients[0], answers[0].data(), o.bytes);
      return;
    }
    std::vector<std::thread> threads;
    for (int c = 0; c < o.connections; ++c) {
      const std::size_t n = part_bytes(c);
      answers[c].resize(n);
      threads.emplace_back([&, c, n] {
        const uint64_t length = n;
        WriteAll(clients[c], reinterpret_cast<const char*>(&length), sizeof length);
        WriteAll(clients[c], payload.data() + part * c, n);
      });
      threads.emplace_back([&, c, n] { ReadAll(clients[c], answers[c].data(), n); });
    }
    for (auto& t : threads) t.join();
  };

  for (int i = 0; i < o.warmup; ++i) request();
  std::vector<double> ms;
  const auto start = Clock::now();
  for (int i = 0; i < o.requests; ++i) {
    const auto t0 = Clock::now();
    request();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (int c = 0; c < o.connections; ++c) {
    if (std::memcmp(answers[c].data(), payload.data() + part * c, part_bytes(c)) != 0) {
      std::fprintf(stderr, "tcp_floor: the bytes back differ from the bytes sent\n");
      return 1;
    }
  }
  for (int fd : clients) ::shutdown(fd, SHUT_WR);  // each server connection sees its end and returns
  for (auto& t : servers) t.join();
  for (int fd : clients) ::close(fd);
  ::close(listener);

  const char* pattern = o.store ? "store" : "echo";
  const double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  const double p50 = Percentile(ms, 50), p90 = Percentile(ms, 90), p99 = Percentile(ms, 99);
  const double lo = *std::min_element(ms.begin(), ms.end()), hi = *std::max_element(ms.begin(), ms.end());
  std::printf("tcp %-5s %11zu bytes over %2d connections: p50 %.3f ms p99 %.3f ms (%d requests, %.2f GB/s each way)\n",
              pattern, o.bytes, o.connections, p50, p99, o.requests, static_cast<double>(o.bytes) / p50 / 1e6);
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    char text[1024];
    std::snprintf(text, sizeof text,
                  "{\"tool\":\"tcp_floor\",\"rows\":[{\"method\":\"tcp-%s\",\"transport\":\"tcp\",\"bytes\":%zu,"
                  "\"connections\":%d,\"requests\":%d,\"errors\":0,\"requests_per_s\":%.3f,"
                  "\"latency_ms\":{\"mean\":%.6f,\"p50\":%.6f,\"p90\":%.6f,\"p99\":%.6f,\"min\":%.6f,\"max\":%.6f}}]}\n",
                  pattern, o.bytes, o.connections, o.requests, o.requests / seconds, mean, p50, p90, p99, lo, hi);
    out << text;
    if (!out) Die("writing " + o.json);
  }
  return 0;
}
