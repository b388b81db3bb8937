// The server's command-line configuration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace gpusort {

struct ServerConfig {
  std::string listen = "0.0.0.0:50051";          // gRPC address; port 0 picks a free port
  std::string metrics_listen = "0.0.0.0:9464";   // Prometheus /metrics; empty disables
  std::string backend = "auto";                  // auto | cpu | cuda
  std::size_t max_message_bytes = 64u << 20;     // one gRPC message, either direction
  std::size_t max_request_bytes = 4ull << 30;    // one request's keys + values, streamed or not
  int max_inflight = 64;                         // admitted calls; more get RESOURCE_EXHAUSTED
  int max_inflight_per_caller = 0;               // of those, one caller's at most; 0 = 3/4 of max_inflight
  double stream_first_message_timeout_seconds = 10;  // a stream's first message must come this soon
  double stream_idle_timeout_seconds = 30;       // a stream that moves nothing either way this long ends
  int max_streams_per_connection = 256;          // HTTP/2 streams one connection may have open at once
  double connection_idle_timeout_seconds = 300;  // a connection with no call this long is closed (GOAWAY)
  int workers = 0;                               // threads running jobs; 0 = one per core
  int cpu_threads = 0;                           // threads the CPU backend may use; 0 = all cores
  std::string cuda_devices;                      // "all" or "0,1": serve from each; empty: GPU 0
  std::string auto_routing = "load";             // AUTO between CPU and GPU: size | load | gpu (auto_policy.h)
  int cuda_streams = 4;                          // jobs on the GPU at once (one stream each)
  std::size_t cuda_memory_limit_bytes = 0;       // device memory requests may hold at once; 0 = all
  std::size_t cuda_stream_memory_bytes = 64u << 20;  // device memory each stream keeps for its jobs; 0 = none
  int cuda_wait_spin_us = 2000;                  // a thread waiting for the GPU polls this long, then sleeps
  std::size_t inline_max_keys = 4096;            // AUTO/CPU calls this small run on gRPC's thread; 0 = never
  // Shared memory (sort.proto, "Shared memory"): off unless shm_socket names the registration socket.
  std::string shm_socket;                        // Unix socket callers hand their memory's descriptors to
  std::size_t shm_max_regions = 64;              // shared-memory regions at once; 0 turns them off
  std::size_t shm_max_bytes = std::size_t{16} << 30;  // bytes all regions may map together
  std::size_t shm_max_regions_per_user = 16;     // regions one user id may hold at once
  std::size_t shm_max_bytes_per_user = std::size_t{4} << 30;  // bytes one user id's regions may map
  // Not a flag (issue 42: no measurement asked for another value): socket connections that have not
  // registered yet, lowered to a sixteenth of the descriptor limit where that is less.
  std::size_t shm_max_pending = 64;
  // Not a flag: descriptors callers handed over that may wait to be closed, the server's share of its
  // descriptor limit (descriptor_limit.h, set at start).
  std::size_t shm_max_closing_aside = 512;
  double shm_registration_timeout_seconds = 5;   // for a connection to send its registration
  std::size_t shm_max_call_connections = 256;    // connections carrying calls (one thread each)
  std::size_t shm_max_call_connections_per_user = 64;
  double shm_call_idle_timeout_seconds = 60;     // a calls connection idle this long is closed
  // Sockets beside gRPC (sort.proto, "Sockets beside gRPC"): off unless data_port >= 0 (0: a free port).
  int data_port = -1;                            // TCP port for SortOnSockets' keys, on --listen's host
  std::size_t data_max_connections = 256;        // data connections open at once; more are refused
  double data_idle_timeout_seconds = 60;         // a data connection with no request this long is closed
  double drain_timeout_seconds = 30;             // SIGTERM: wait this long for in-flight calls
  std::string log_level = "info";                // trace | debug | info | warn | error | off
  std::string port_file;                         // if set, "grpc_port=N\nmetrics_port=N\n" is written here
  // Security (README "Security"). Bad files stop the server at start.
  std::string tls_cert, tls_key;                 // PEM: TLS on the gRPC port
  std::string tls_client_ca;                     // PEM: mutual TLS, client certificates checked against it
  std::string auth_tokens_file;                  // one bearer token per line: SortService/EchoService need one
  std::string health_listen;                     // plaintext listener serving only grpc.health.v1.Health
};

// --max-inflight-per-caller as it applies: 0 means three quarters of --max-inflight (at least 1).
int PerCallerInflightLimit(const ServerConfig& config);

// Parses argv. On --help or --version prints and returns the exit code in `exit_code` (>= 0);
// on bad flags prints the problem and sets exit_code to 2. exit_code is -1 when the server should run.
ServerConfig ParseServerFlags(int argc, char** argv, int* exit_code);

}  // namespace gpusort
