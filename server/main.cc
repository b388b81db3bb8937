// gpusort-server: parses flags, starts the server, and drains it on SIGTERM or SIGINT.
#include <csignal>
#include <cstdio>
#include <fstream>

#include <spdlog/spdlog.h>

#include "server/transport/shm_socket/closer_process.h"
#include "server/service/config.h"
#include "server/transport/descriptor_limit.h"
#include "server/service/server.h"

namespace {

// Blocks SIGTERM and SIGINT in every thread (call before any thread starts), so that one thread can
// take them with sigwait instead of an async-signal handler.
sigset_t BlockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

bool WritePortFile(const std::string& path, int grpc_port, int metrics_port, int health_port, int data_port) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << "grpc_port=" << grpc_port << "\nmetrics_port=" << metrics_port << "\n";
    if (health_port != 0) out << "health_port=" << health_port << "\n";
    if (data_port != 0) out << "data_port=" << data_port << "\n";
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;  // readers never see half a file
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = -1;
  const gpusort::ServerConfig config = gpusort::ParseServerFlags(argc, argv, &exit_code);
  if (exit_code >= 0) return exit_code;
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");

  // Every connection, region and file is a descriptor: start with as many as the process may have.
  gpusort::RaiseDescriptorLimit();
  // Sockets that callers hand over are closed in a process of their own (closer_process.h); it is forked
  // here, before any thread starts.
  if (!config.shm_socket.empty()) {
    if (const absl::Status closer = gpusort::StartCloserProcess(); !closer.ok()) {
      spdlog::critical("{}", std::string(closer.message()));
      return 1;
    }
  }
  const sigset_t signals = BlockShutdownSignals();
  auto server = gpusort::GpusortServer::Start(config);
  if (!server.ok()) {
    spdlog::critical("{}", std::string(server.status().message()));
    return 1;
  }
  if (!config.port_file.empty() &&
      !WritePortFile(config.port_file, (*server)->grpc_port(), (*server)->metrics_port(),
                     (*server)->health_port(), (*server)->data_port())) {
    spdlog::critical("cannot write the port file {}", config.port_file);
    return 1;
  }

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  spdlog::info("received {}, draining", signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  const bool clean = (*server)->Drain();
  (*server)->Wait();
  server->reset();
  spdlog::info("stopped{}", clean ? "" : " (some calls were cancelled at the drain timeout)");
  return 0;
}
