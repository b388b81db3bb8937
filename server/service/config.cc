#include "server/service/config.h"

#include <algorithm>

#include <CLI/CLI.hpp>

namespace gpusort {

int PerCallerInflightLimit(const ServerConfig& config) {
  if (config.max_inflight_per_caller > 0) return std::min(config.max_inflight_per_caller, config.max_inflight);
  return std::max(1, (config.max_inflight * 3 + 3) / 4);
}

// long-function: the flag table, one option per entry in the order --help prints them; reading it top to
// bottom is reading the server's command line.
ServerConfig ParseServerFlags(int argc, char** argv, int* exit_code) {
  ServerConfig c;
  CLI::App app{"gpusort-server: sorting and top-k over gRPC, on the GPU or the CPU"};
  app.set_version_flag("--version", std::string(GPUSORT_VERSION));
  app.add_option("--listen", c.listen, "gRPC listen address (host:port; port 0 picks a free one)")
      ->capture_default_str();
  app.add_option("--metrics-listen", c.metrics_listen,
                 "Prometheus /metrics address (host:port; empty disables)")
      ->capture_default_str();
  app.add_option("--backend", c.backend, "auto picks CUDA when a GPU is usable, else CPU")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--max-message-bytes", c.max_message_bytes,
                 "largest single gRPC message either way; larger arrays use the streaming RPCs")
      ->check(CLI::Range(std::size_t{4096}, std::size_t{2047} << 20))
      ->capture_default_str();
  app.add_option("--max-request-bytes", c.max_request_bytes,
                 "largest request (keys + values), streamed or not; more is RESOURCE_EXHAUSTED")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-inflight", c.max_inflight,
                 "calls admitted at once; more are answered RESOURCE_EXHAUSTED at once")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-inflight-per-caller", c.max_inflight_per_caller,
                 "calls one caller may have admitted at once (a caller: its bearer token with "
                 "--auth-tokens-file, else its address); 0: three quarters of --max-inflight")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("--stream-first-message-timeout", c.stream_first_message_timeout_seconds,
                 "seconds a streaming call may take to send its first message (DEADLINE_EXCEEDED after)")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  app.add_option("--stream-idle-timeout", c.stream_idle_timeout_seconds,
                 "seconds a streaming call may go without sending a message or reading an answer chunk "
                 "while it is the caller's turn (DEADLINE_EXCEEDED after)")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  app.add_option("--max-streams-per-connection", c.max_streams_per_connection,
                 "HTTP/2 streams (calls) one connection may have open at once; a client queues the rest")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--connection-idle-timeout", c.connection_idle_timeout_seconds,
                 "seconds a connection may carry no call before the server closes it (GOAWAY; clients reconnect)")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  app.add_option("--workers", c.workers, "threads that run jobs (0: one per core)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--cpu-threads", c.cpu_threads, "threads the CPU backend uses (0: all cores)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app.add_option("--auto-routing", c.auto_routing,
                 "how AUTO picks between the CPU and the GPU engine: load (as size, but a sort sent over gRPC "
                 "needs more keys to go to the GPU while other requests are in flight), size (by size and kind "
                 "alone), gpu (every AUTO call to the GPU)")
      ->check(CLI::IsMember({"size", "load", "gpu"}))
      ->capture_default_str();
  app.add_option("--cuda-devices", c.cuda_devices,
                 "GPUs to serve from, each with its own engine, requests placed by load: all, or a list such as "
                 "0,1 (empty: GPU 0; --cuda-streams, --cuda-stream-memory-bytes and --cuda-memory-limit-bytes apply "
                 "to each); an array is split across them only when one GPU cannot take it")
      ->capture_default_str();
  app.add_option("--cuda-streams", c.cuda_streams,
                 "CUDA streams, each with two pinned staging buffers: jobs on the GPU at once")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--cuda-stream-memory-bytes", c.cuda_stream_memory_bytes,
                 "device memory each stream keeps for its jobs' buffers, so that a request needing no more never "
                 "calls the driver's allocator, whose lock all the server's GPUs share (0: none; not kept under "
                 "--cuda-memory-limit-bytes)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 34))
      ->capture_default_str();
  app.add_option("--cuda-memory-limit-bytes", c.cuda_memory_limit_bytes,
                 "device memory requests may hold at once on each GPU (0: all the GPU has); beyond it RESOURCE_EXHAUSTED, "
                 "except a whole-array Sort or one-row TopK too large for it, which is sorted in runs that fit and "
                 "merged on the host")
      ->capture_default_str();
  app.add_option("--cuda-wait-spin-us", c.cuda_wait_spin_us,
                 "microseconds a thread waiting for a GPU event polls it (yielding its core between polls) before it "
                 "sleeps until the GPU wakes it; 0: sleep at once. A sleeper wakes about 0.1 ms late, which a sort "
                 "that waits several times pays each time. At most one thread a GPU polls at once. A server "
                 "kept busy on several GPUs serves 2-4% more with 0 (docs/benchmarks-log.md, issue 19)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app.add_option("--inline-max-keys", c.inline_max_keys,
                 "AUTO or CPU Sort/TopK calls of at most this many keys run on the gRPC thread, skipping the "
                 "hop to a worker (0: never)")
      ->capture_default_str();
  app.add_option("--data-port", c.data_port,
                 "TCP port, on --listen's host, for the keys of SortOnSockets calls (sort.proto, \"Sockets "
                 "beside gRPC\"): plain TCP, so not with --tls-cert; 0 picks a free port; -1: off")
      ->group("Sockets beside gRPC")
      ->check(CLI::Range(-1, 65535))
      ->capture_default_str();
  app.add_option("--data-max-connections", c.data_max_connections,
                 "connections the data port serves at once; more are refused (RESOURCE_EXHAUSTED)")
      ->group("Sockets beside gRPC")
      ->check(CLI::Range(std::size_t{1}, std::size_t{65536}))
      ->capture_default_str();
  app.add_option("--data-idle-timeout", c.data_idle_timeout_seconds,
                 "seconds a data connection may wait between parts before it is closed")
      ->group("Sockets beside gRPC")
      ->check(CLI::Range(0.1, 86400.0))
      ->capture_default_str();
  app.add_option("--shm-socket", c.shm_socket,
                 "Unix socket on which callers on this host register shared memory by handing the server a "
                 "sealed memfd (sort.proto, \"Shared memory\"); empty: shared memory off")
      ->group("Shared memory");
  app.add_option("--shm-max-regions", c.shm_max_regions,
                 "shared-memory regions callers on this host may register at once (0: none)")
      ->group("Shared memory")
      ->capture_default_str();
  app.add_option("--shm-max-bytes", c.shm_max_bytes, "bytes all shared-memory regions may map together")
      ->group("Shared memory")
      ->capture_default_str();
  app.add_option("--shm-max-regions-per-user", c.shm_max_regions_per_user,
                 "shared-memory regions one user id (of the registering process) may hold at once")
      ->group("Shared memory")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--shm-max-bytes-per-user", c.shm_max_bytes_per_user,
                 "bytes one user id's shared-memory regions may map together")
      ->group("Shared memory")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--shm-registration-timeout", c.shm_registration_timeout_seconds,
                 "seconds a connection to --shm-socket has to send its registration before it is closed")
      ->group("Shared memory")
      ->check(CLI::Range(0.01, 3600.0))
      ->capture_default_str();
  app.add_option("--shm-max-call-connections", c.shm_max_call_connections,
                 "connections to --shm-socket carrying Sort and TopK calls (a thread each); more are refused")
      ->group("Shared memory")
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}))
      ->capture_default_str();
  app.add_option("--shm-max-call-connections-per-user", c.shm_max_call_connections_per_user,
                 "of those, how many one user id may hold at once")
      ->group("Shared memory")
      ->check(CLI::Range(std::size_t{1}, std::size_t{4096}))
      ->capture_default_str();
  app.add_option("--shm-call-idle-timeout", c.shm_call_idle_timeout_seconds,
                 "seconds a calls connection to --shm-socket may stay idle before it is closed")
      ->group("Shared memory")
      ->check(CLI::Range(0.01, 86400.0))
      ->capture_default_str();
  app.add_option("--drain-timeout", c.drain_timeout_seconds,
                 "seconds SIGTERM/SIGINT waits for in-flight calls before stopping")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--log-level", c.log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--port-file", c.port_file,
                 "write 'grpc_port=N' and 'metrics_port=N' (and 'health_port=N' with --health-listen, 'data_port=N' with --data-port) here "
                 "once listening (for scripts)");
  app.add_option("--tls-cert", c.tls_cert, "PEM certificate (chain) of the gRPC port: TLS on (with --tls-key)")
      ->group("Security");
  app.add_option("--tls-key", c.tls_key, "PEM private key of --tls-cert")->group("Security");
  app.add_option("--tls-client-ca", c.tls_client_ca,
                 "mutual TLS: PEM CA certificates; every client must present a certificate they signed")
      ->group("Security");
  app.add_option("--auth-tokens-file", c.auth_tokens_file,
                 "bearer tokens, one per line (# comments): SortService and EchoService calls must send "
                 "'authorization: Bearer <token>'; health and reflection need none")
      ->group("Security");
  app.add_option("--health-listen", c.health_listen,
                 "plaintext address serving only grpc.health.v1.Health, for probes that cannot speak TLS "
                 "(Kubernetes gRPC probes); empty: none")
      ->group("Security");
  // Sizes and counts take the suffixes the CLI takes (K M G as powers of 1024, also KB, MiB ...): the
  // suffix is read before any range check.
  for (const char* name : {"--max-message-bytes", "--max-request-bytes", "--cuda-stream-memory-bytes",
                           "--cuda-memory-limit-bytes", "--shm-max-bytes", "--shm-max-bytes-per-user",
                           "--inline-max-keys"}) {
    app.get_option(name)->transform(CLI::AsSizeValue(false));
  }
  try {
    app.parse(argc, argv);
    *exit_code = -1;
  } catch (const CLI::ParseError& e) {
    // --help and --version are 0; every bad flag or value is 2, as the CLI (CLI11 has a code of its own for each).
    *exit_code = app.exit(e) == 0 ? 0 : 2;
  }
  return c;
}

}  // namespace gpusort
