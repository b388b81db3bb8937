// What the CLI's subcommands share: exit codes and error lines, the connection flags and the client
// they make, the file flags, the count and number validators, and the algorithm names.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/cli/array_file.h"
#include "client/cli/connection_flags.h"
#include "gpusort/client.h"

namespace gpusort::cli {

// Every subcommand's exit codes (README "Exit codes").
inline constexpr int kExitFailed = 1, kExitUsage = 2;
inline constexpr char kExitCodes[] =
    "Exit codes: 0 done; 1 failed (the server's answer, a file, a connection: the message says which; "
    "health: a server not SERVING); 2 bad usage (a flag or value); 3 bench --fail-on-error saw a failed "
    "request.\n";

// "gpusort: CODE: message" on stderr; kExitFailed.
int Fail(const absl::Status& status);
// Prints like Fail, for a flag or value the command cannot use (kExitUsage).
int Usage(const absl::Status& status);

// How sort, topk and health reach a server.
struct Connection {
  std::string server = "localhost:50051";
  double timeout_seconds = 0;
  bool verbose = false;
  std::string transport = "auto";
  std::string shm_socket;  // --transport shm: the server's --shm-socket
  SecurityFlags security;
};
void AddConnectionFlags(CLI::App* app, Connection* c);
// INVALID_ARGUMENT for flags that do not go together or an address that is not one (a usage error).
absl::StatusOr<std::unique_ptr<Client>> MakeClient(const Connection& c);
// MakeClient's failure: kExitUsage for INVALID_ARGUMENT (the flags), else kExitFailed (a file, TLS).
int FailToConnect(const absl::Status& status);

// --verbose: how the server ran a call, on stderr.
void PrintInfo(const ExecutionInfo& info, bool streamed, const std::string& transport);

// The short dtype names, for --help (ParseDTypeFlag's error lists every accepted name).
inline constexpr char kDTypeHelp[] = "i32 u32 i64 u64 f32 f64 f16 bf16 i16 u16 i8 u8";

// The input and output files of sort and topk.
struct InputFlags {
  std::string in, out, format, in_format, out_format, dtype;
};
void AddFileFlags(CLI::App* app, InputFlags* f);
absl::StatusOr<Array> ReadInput(const InputFlags& f);
// ReadInput for a subcommand: on failure it prints why and sets *exit_code (kExitUsage for a --dtype it
// does not know, kExitFailed for the file itself).
std::optional<Array> ReadInputOrReport(const InputFlags& f, int* exit_code);
absl::Status WriteOutput(const InputFlags& f, const std::string& path, const Array& array);
// WriteOutput's refusals that do not need the answer (bf16 as .npy), before the server is asked.
absl::Status CheckOutput(const InputFlags& f, const std::string& path, DType dtype);

// CLI11's PositiveNumber and NonNegativeNumber say "Value 0 not in range 0.000000 to 1797693134862..."
// (the whole double range); these say what the flag needs.
CLI::Validator AtLeastOne();
CLI::Validator ZeroOrMore();
// Counts written as 1e6 or 2.5e3 (a whole number in scientific notation) become their digits, so that
// every count flag takes the same forms: 1000000, 1M (1024^2), 1e6. Anything else passes through to
// the size parser, which says what is wrong with it.
CLI::Validator ScientificCount();

// --transport's names, the same in every subcommand (one that cannot use a name says so: device is bench's).
const std::vector<std::string>& TransportNames();

// --algorithm's names (checked by CLI::IsMember before ParseAlgorithmFlag sees them).
const std::vector<std::string>& AlgorithmNames();
Algorithm ParseAlgorithmFlag(const std::string& name);

}  // namespace gpusort::cli
