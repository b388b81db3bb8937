// gpusort::Client: sort and top-k over gRPC from C++.
//
//   gpusort::Client client({.target = "localhost:50051"});
//   auto sorted = client.Sort<float>(keys);                 // absl::StatusOr<SortResult<float>>
//   auto top = client.TopK<float>(keys, {.k = 100});        // absl::StatusOr<TopKResult<float>>
//
// Arrays too large for one gRPC message go through the streaming RPCs by themselves, and large streamed
// sorts over several connections at once (ClientOptions::stream_parts). Errors come back
// as absl::Status with the server's gRPC code and message. One Client may be used from many threads.
//
// Several servers: ClientOptions::targets = {"10.0.0.1:50051", "10.0.0.2:50051"} (or a dns:/// target
// with load_balancing = "round_robin") spreads the calls over them, and calls that fail UNAVAILABLE
// because a server stopped are retried on another (ClientOptions::retry). ClientOptions::tls and
// bearer_token match the server's --tls-* and --auth-tokens-file.
//
// This header, gpusort/types.h (DType, Algorithm, ExecutionInfo, ... in gpusort::client) and
// gpusort/shared_memory.h name only gpusort's own types and include neither gRPC nor protobuf. Callers
// that use gRPC themselves (their own channel credentials, a channel to the server's EchoService)
// include gpusort/grpc_interop.h, the one gpusort header that does.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpusort/shared_memory.h"
#include "gpusort/types.h"

namespace gpusort {

// How arrays travel to the server.
enum class Transport {
  kAuto,    // unary below stream_from_bytes, the streaming RPCs from there (and whenever one message
            // cannot hold the array or its answer)
  kUnary,   // always one message each way; arrays over the message limit fail with RESOURCE_EXHAUSTED
  kStream,  // always the streaming RPCs
  // Shared memory with a server on the same host (ClientOptions::shm_socket): the arrays are copied
  // into regions this client registered (kept for reuse) and the answers out of them. For no copies at
  // all, build the keys in a region yourself and call SortInRegion / TopKInRegion.
  kSharedMemory,
  // Sorts of keys (or with indices) over the server's data port (its --data-port; sort.proto, "Sockets
  // beside gRPC"): the options over gRPC, the keys and the answer over plain TCP connections, in up to
  // stream_parts parts of at least 1 MiB side by side, kept open for later calls. Near the socket's own
  // speed, where gRPC moves large arrays at about a third of it (docs/benchmarks-log.md, issue 18); but the keys
  // cross in clear, so a server with TLS has no data port. Every other call goes as with kAuto. Not
  // while balancing over several servers.
  kSockets,
};

// Retries of calls that fail with UNAVAILABLE (a replica stopping, a connection lost, a server
// draining; and CANCELLED from a replica whose shutdown took a call as it began, a gRPC core behaviour
// a server cannot prevent), done by gRPC itself from the channel's service config. Every SortService
// call but RegisterRegion (retired; see sort.proto), and EchoService's, are retried: Sort and TopK are
// pure functions of the request, so running one twice is harmless. Shared-memory registration does not
// go over gRPC at all (ClientOptions::shm_socket) and is never retried: a region id means something only
// on the one server that made it. gRPC retries only a call that is not yet committed: no answer headers received and
// no more than its retry buffer (256 KiB by default) sent. So a unary call larger than that, or a
// stream past its first 256 KiB, fails rather than being retried once its bytes are out.
struct RetryOptions {
  int max_attempts = 4;  // the first try included; 1 turns retries off (gRPC caps it at 5)
  std::chrono::milliseconds initial_backoff{50};  // before the first retry, randomised by gRPC (0-100%)
  std::chrono::milliseconds max_backoff{1000};
  double backoff_multiplier = 2;
};

// TLS to the server (see README "Security"). Each PEM may come inline or from a file (the file wins).
struct TlsOptions {
  bool enabled = false;  // also on when any field below is set
  std::string ca_file{}, ca_pem{};  // roots that must sign the server's certificate; none: the system's roots
  std::string cert_file{}, cert_pem{};  // mutual TLS: this client's certificate chain ...
  std::string key_file{}, key_pem{};    // ... and its private key
  // The name the server's certificate must hold, when it is not the target's host (an IP address,
  // or several servers behind one name).
  std::string server_name{};
  bool on() const {
    return enabled || !ca_file.empty() || !ca_pem.empty() || !cert_file.empty() || !cert_pem.empty() ||
           !key_file.empty() || !key_pem.empty() || !server_name.empty();
  }
};

struct ClientOptions {
  std::string target = "localhost:50051";  // host:port, or any gRPC target (dns:///, ipv4:, ...)
  // Several servers to spread the calls over (host:port each; names are resolved once, when the
  // Client is made): used instead of `target` when it holds more than one. For a set of servers that
  // changes, give a `dns:///name:port` target instead (and load_balancing "round_robin").
  std::vector<std::string> targets{};
  // gRPC load-balancing policy: "round_robin" (each call to the next ready server; servers whose
  // health is not SERVING for gpusort.v1.SortService are left out, so a draining replica stops getting
  // calls) or "pick_first" (one server at a time). Empty: round_robin for several `targets`, else
  // pick_first. While balancing, large Sorts are not split into stream parts (all parts of one Sort
  // must reach one server) and shared memory is refused (a region lives on one server).
  std::string load_balancing{};
  RetryOptions retry{};
  TlsOptions tls{};  // other gRPC credentials: ClientWithCredentials (gpusort/grpc_interop.h)
  // Sent as "authorization: Bearer <token>" on every call (the server's --auth-tokens-file). Over a
  // channel without TLS the token travels in clear text.
  std::string bearer_token{};
  std::chrono::milliseconds timeout{0};    // deadline of each call; 0: none
  std::size_t max_message_bytes = 64u << 20;  // must not exceed the server's --max-message-bytes
  // Chunk size of the streaming RPCs: under 1 MiB with room for framing, so that it also fits a
  // server started with --max-message-bytes 1048576.
  std::size_t stream_chunk_bytes = 960u << 10;
  Transport transport = Transport::kAuto;
  // The server's shared-memory socket (its --shm-socket), for CreateSharedMemory and
  // Transport::kSharedMemory: regions are registered there, by handing the server the memory's
  // descriptor. It must be the socket of the server `target` names. Empty: no shared memory.
  std::string shm_socket{};
  // kAuto streams arrays (request or answer) of at least this many bytes. A streamed call overlaps the
  // transfer with the server's work and avoids gRPC's slow path for very large messages (BENCHMARKS.md).
  std::size_t stream_from_bytes = 4u << 20;
  // A large streamed Sort travels on this many SortStream calls at once, each on a connection of its
  // own (proto StreamPart), because one HTTP/2 connection moves only about 0.5-1 GB/s. On the GPU
  // machine a 16M-key (64 MiB) streamed sort took 123-126 ms on one stream, 61-62 ms in 4 parts and
  // 54-56 ms in 8 (unary: 237-257 ms; BENCHMARKS.md). 1: always one stream; at most 64 (the proto's
  // limit).
  int stream_parts = 8;
  // A streamed Sort whose keys are at least this many bytes is split into stream_parts (keys only or
  // PAYLOAD_INDICES; PAYLOAD_VALUES always takes one stream). Smaller Sorts keep to one stream: a split
  // costs a thread and a call per part, and each part's connection is opened on its first use.
  std::size_t stream_parts_from_bytes = 16u << 20;
  std::string request_id{};  // sent as x-request-id when set
  // Shared-memory calls (SortInRegion, TopKInRegion, and Transport::kSharedMemory through them) poll for
  // their answer this long before the calling thread sleeps: its core stays awake, and the answer is not
  // held up by the core's wake-up, which on a virtual machine can take a tenth of a millisecond or more
  // (docs/benchmarks-log.md, issue 18). The thread spins meanwhile (yielding the core to other threads that want it).
  // 0: sleep at once.
  std::chrono::microseconds wait_spin{0};
  // Shared-memory calls go as records on shm_socket itself (sort.proto, "Calls on the shared-memory
  // socket") rather than as gRPC calls: the same checks, limits and answers, without HTTP/2 and without
  // the server's hop to a worker thread. Calls fall back to gRPC on a server that does not take them.
  // false: always gRPC.
  bool shm_calls_on_socket = true;
  // Extra integer channel arguments. gRPC shares one connection among channels whose target and
  // arguments are equal; a distinct argument gives a Client a connection of its own (gpusort bench
  // --connections does so).
  std::vector<std::pair<std::string, int>> channel_arguments{};
  // Called as bytes go out and come back on streaming calls (done, total), e.g. for a progress line.
  std::function<void(std::string_view stage, std::size_t done, std::size_t total)> progress{};
};

struct SortOptions {
  bool descending = false;
  bool stable = false;  // equal keys keep their input order
  client::Algorithm algorithm = client::Algorithm::kAuto;
  uint64_t rows = 1;  // > 1: the keys are that many equal rows, each sorted alone (indices per row)
  // Or segments of any lengths: S + 1 offsets (0 first, never decreasing, n last), each segment sorted
  // alone (indices per segment). Empty: none. The caller's memory, read during the call.
  std::span<const uint64_t> segment_offsets{};
};

// Defaults as the CLI's (`gpusort topk`: k 10, largest first, sorted). The CLI writes values unless
// --output says otherwise, because it writes one file; a TopKResult holds both arrays, so the library
// asks for both (output = TopKOutput::kValues halves the answer when the indices are not wanted).
struct TopKOptions {
  uint64_t k = 10;
  bool largest = true;
  bool sorted = true;
  client::TopKOutput output = client::TopKOutput::kValuesAndIndices;
  uint64_t rows = 1;  // top-k of each of `rows` equal rows
  client::Algorithm algorithm = client::Algorithm::kAuto;
  // Or segments of any lengths: S + 1 offsets (0 first, never decreasing, n last); segment s yields
  // min(k, its length) results, segment after segment (indices per segment). Empty: none. The
  // caller's memory, read during the call.
  std::span<const uint64_t> segment_offsets{};
};

// How many results a TopK with these options answers: rows * k, or with segments the sum over them of
// min(k, length).
std::size_t TopKResultCount(const TopKOptions& options);

// Untyped request and answers, for callers that learn the dtype at run time (the CLI).
struct RawSortRequest {
  client::DType dtype = client::DType::kUnspecified;
  std::string_view keys{};  // little-endian elements of dtype
  SortOptions options{};
  client::Payload payload = client::Payload::kNone;
  std::string_view values{};   // Payload::kValues: value_width bytes per key
  uint32_t value_width = 0;
};
struct RawSortResult {
  std::string keys{}, values{}, indices{};  // indices: int64 little-endian
  client::ExecutionInfo info{};
  bool streamed = false;  // whether the streaming RPC carried it
};
struct RawTopKResult {
  std::string values{}, indices{};
  client::ExecutionInfo info{};
  bool streamed = false;
};

template <typename T>
struct SortResult {
  std::vector<T> keys{};
  std::vector<int64_t> indices{};  // Argsort only
  std::string values{};            // SortWithValues only
  client::ExecutionInfo info{};
};

template <typename T>
struct TopKResult {
  std::vector<T> values;         // TopKResultCount, row after row (unless output is indices only)
  std::vector<int64_t> indices;  // as many row (or segment) positions (unless output is values only)
  client::ExecutionInfo info{};
};

// A comma-separated server list ("h1:50051,h2:50051") as ClientOptions::targets; a string naming a gRPC
// resolver ("dns:///...", "ipv4:...", "unix:...") stays one target, commas and all.
std::vector<std::string> SplitServerList(std::string_view servers);

// The wire dtype of a C++ key type ((u)int8_t to (u)int64_t, float, double; float16 and bfloat16 keys
// go through the raw calls with their dtype).
template <typename T> constexpr client::DType WireDTypeOf();

namespace client_internal {
struct ClientAccess;  // builds a Client with gRPC credentials (gpusort/grpc_interop.h)
}  // namespace client_internal

class Client {
 public:
  // A bad option (an unreadable TLS file, a server name that does not resolve) does not throw: every
  // call then fails with it, and status() says so up front.
  explicit Client(ClientOptions options);
  ~Client();
  // Movable, so that Clients can be kept in containers and returned; a moved-from Client may only be
  // assigned to or destroyed.
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  absl::Status status() const;

  template <typename T>
  absl::StatusOr<SortResult<T>> Sort(std::span<const T> keys, const SortOptions& options = {});
  // Sorted keys and the permutation: indices[i] is the input position of output key i.
  template <typename T>
  absl::StatusOr<SortResult<T>> Argsort(std::span<const T> keys, const SortOptions& options = {});
  // Sorted keys with `values` (value_width opaque bytes per key) moved along.
  template <typename T>
  absl::StatusOr<SortResult<T>> SortWithValues(std::span<const T> keys, std::string_view values,
                                               uint32_t value_width,
                                               const SortOptions& options = {});
  template <typename T>
  absl::StatusOr<TopKResult<T>> TopK(std::span<const T> keys, const TopKOptions& options = {});

  // The same calls for vectors (spans are not deduced from them).
  template <typename T>
  absl::StatusOr<SortResult<T>> Sort(const std::vector<T>& keys, const SortOptions& o = {}) {
    return Sort(std::span<const T>(keys), o);
  }
  template <typename T>
  absl::StatusOr<SortResult<T>> Argsort(const std::vector<T>& keys, const SortOptions& o = {}) {
    return Argsort(std::span<const T>(keys), o);
  }
  template <typename T>
  absl::StatusOr<TopKResult<T>> TopK(const std::vector<T>& keys, const TopKOptions& o = {}) {
    return TopK(std::span<const T>(keys), o);
  }
  template <typename T>
  absl::StatusOr<SortResult<T>> SortWithValues(const std::vector<T>& keys, std::string_view values,
                                               uint32_t value_width, const SortOptions& o = {}) {
    return SortWithValues(std::span<const T>(keys), values, value_width, o);
  }
  // Values of a trivially copyable type V, one per key: the sorted keys, and the values in their order.
  template <typename T, typename V>
  absl::StatusOr<std::pair<SortResult<T>, std::vector<V>>> SortWithValues(const std::vector<T>& keys,
                                                                          const std::vector<V>& values,
                                                                          const SortOptions& o = {});

  absl::StatusOr<RawSortResult> SortRaw(const RawSortRequest& request);
  // Sorts into memory the caller owns: the sorted keys go to `keys_out` (as many bytes as the request's
  // keys) and, with Payload::kIndices, the int64 positions to `indices_out` (8 bytes a key; else empty).
  // Neither may overlap the request's keys. Values are not taken here (SortRaw carries them). A caller
  // that sorts arrays again and again into the same memory saves what fresh answer memory costs: on the
  // GPU machine the page faults of 64 MiB of fresh memory took longer than gRPC's transfer of it
  // (docs/benchmarks-log.md, issue 18). A Sort sent in parts (ClientOptions::stream_parts) writes each part's
  // answer straight into place; other calls copy the answer there once.
  absl::StatusOr<client::ExecutionInfo> SortRawInto(const RawSortRequest& request, std::span<std::byte> keys_out,
                                                    std::span<std::byte> indices_out = {});
  // The typed form: the sorted `keys` into `out` (as many elements).
  template <typename T>
  absl::StatusOr<client::ExecutionInfo> SortInto(std::span<const T> keys, std::span<T> out,
                                                 const SortOptions& options = {});
  absl::StatusOr<RawTopKResult> TopKRaw(client::DType dtype, std::string_view keys,
                                        const TopKOptions& options);

  // Shared memory (same host only; see gpusort/shared_memory.h).
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> CreateSharedMemory(std::size_t bytes);
  // Sorts the keys in `keys` into `output` (the same range sorts in place), with int64 positions into
  // `indices` when payload is Payload::kIndices. Only the ExecutionInfo comes back over the socket.
  absl::StatusOr<client::ExecutionInfo> SortInRegion(client::DType dtype, const SortOptions& options,
                                                     client::Payload payload, const client::RegionRef& keys,
                                                     const client::RegionRef& output,
                                                     const client::RegionRef* indices = nullptr);
  absl::StatusOr<client::ExecutionInfo> TopKInRegion(client::DType dtype, const TopKOptions& options,
                                                     const client::RegionRef& keys, const client::RegionRef* values,
                                                     const client::RegionRef* indices);

  // grpc.health.v1 Check: true when the service ("" = the whole server) is SERVING.
  absl::StatusOr<bool> Health(const std::string& service = "");

  const ClientOptions& options() const;
  // Whether calls are spread over several servers (a load-balancing policy other than pick_first).
  bool balancing() const;

 private:
  // Everything gRPC: the channels, the stubs, the part connections and the shared-memory pool
  // (client/src/client_impl.h). Its methods are thread-safe, as Client's are.
  struct Impl;
  friend struct client_internal::ClientAccess;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpusort

#include "gpusort/client_inl.h"  // IWYU pragma: export
