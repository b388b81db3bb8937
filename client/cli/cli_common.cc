#include "client/cli/cli_common.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "client/cli/dtype_names.h"
#include "client/cli/progress_line.h"

namespace gpusort::cli {
namespace {

// A progress line on stderr for long transfers, only when stderr is a terminal.
std::function<void(std::string_view, std::size_t, std::size_t)> ProgressLine() {
  if (!isatty(STDERR_FILENO)) return nullptr;
  return ProgressLineTo(stderr);
}

}  // namespace

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "gpusort: %s: %s\n", absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return kExitFailed;
}

int Usage(const absl::Status& status) {
  Fail(status);
  return kExitUsage;
}

int FailToConnect(const absl::Status& status) {
  return status.code() == absl::StatusCode::kInvalidArgument ? Usage(status) : Fail(status);
}

void AddConnectionFlags(CLI::App* app, Connection* c) {
  app->add_option("--server,-s", c->server,
                  "server address, or several separated by commas to balance over (or env GPUSORT_SERVER)")
      ->envname("GPUSORT_SERVER")
      ->capture_default_str();
  app->add_option("--timeout", c->timeout_seconds, "deadline in seconds (0: none; any other value at least 1 ms)")
      ->check(ZeroOrMore());
  app->add_flag("--verbose,-v", c->verbose, "print how the server ran it");
  app->add_option("--transport", c->transport,
                  "auto (stream from 4 MiB), unary, stream, shm (shared memory; server on this host), "
                  "sockets (Sorts over the server's --data-port), or device (bench only)")
      ->check(CLI::IsMember(TransportNames()))
      ->capture_default_str();
  AddShmSocketFlag(app, &c->shm_socket);
  AddSecurityFlags(app, &c->security);
}

absl::StatusOr<std::unique_ptr<Client>> MakeClient(const Connection& c) {
  ClientOptions options;
  if (absl::Status applied = ApplyConnectionFlags(c.server, c.security, &options); !applied.ok()) return applied;
  // Rounded up to whole milliseconds (the library's unit), so that 0.0001 is a 1 ms deadline rather than
  // none.
  options.timeout = std::chrono::milliseconds(
      c.timeout_seconds > 0 ? std::max<long long>(1, static_cast<long long>(std::ceil(c.timeout_seconds * 1000))) : 0);
  options.progress = ProgressLine();
  options.transport = c.transport == "unary"    ? Transport::kUnary
                      : c.transport == "stream" ? Transport::kStream
                      : c.transport == "shm"    ? Transport::kSharedMemory
                      : c.transport == "sockets" ? Transport::kSockets
                                                : Transport::kAuto;
  options.shm_socket = c.shm_socket;
  if (c.transport == "device") {
    return absl::InvalidArgumentError(
        "--transport device is bench's (keys already in GPU memory); sort and topk read their keys into host "
        "memory: auto, unary, stream, shm or sockets");
  }
  if (options.transport == Transport::kSharedMemory && options.shm_socket.empty()) {
    return absl::InvalidArgumentError("--transport shm needs --shm-socket: the path of the server's --shm-socket");
  }
  auto client = std::make_unique<Client>(options);
  if (!client->status().ok()) return client->status();
  return client;
}

void PrintInfo(const ExecutionInfo& info, bool streamed, const std::string& transport) {
  std::fprintf(stderr, "algorithm %s, backend %s, device %s, request %s, %s\n",
               std::string(WireName(info.algorithm)).c_str(), std::string(WireName(info.backend)).c_str(),
               info.device.c_str(), info.request_id.c_str(),
               transport == "sockets" ? "data port"
               : transport == "shm"   ? "shared memory"
               : streamed             ? "streamed"
                                      : "unary");
  for (const auto& s : info.stages) std::fprintf(stderr, "  %-10s %10.3f ms\n", s.stage.c_str(), s.seconds * 1e3);
  std::fprintf(stderr, "  %-10s %10.3f ms\n", "server", info.server_seconds * 1e3);
}

void AddFileFlags(CLI::App* app, InputFlags* f) {
  app->add_option("--in,-i", f->in, "input file (raw, text or .npy)")->required();
  app->add_option("--out,-o", f->out, "output file")->required();
  app->add_option("--dtype,-t", f->dtype, std::string(kDTypeHelp) + " (required unless .npy)");
  app->add_option("--format", f->format, "raw, text or npy for both files (default: by extension)");
  app->add_option("--in-format", f->in_format, "format of --in");
  app->add_option("--out-format", f->out_format, "format of --out");
}

absl::StatusOr<Array> ReadInput(const InputFlags& f) {
  std::optional<DType> dtype;
  if (!f.dtype.empty()) {
    auto parsed = ParseDTypeFlag(f.dtype);
    if (!parsed.ok()) return parsed.status();
    dtype = *parsed;
  }
  auto format = ChooseReadFormat(f.in_format.empty() ? f.format : f.in_format, f.in);
  if (!format.ok()) return format.status();
  return ReadArray(f.in, *format, dtype);
}

std::optional<Array> ReadInputOrReport(const InputFlags& f, int* exit_code) {
  if (!f.dtype.empty()) {
    if (auto dtype = ParseDTypeFlag(f.dtype); !dtype.ok()) {
      *exit_code = Usage(dtype.status());
      return std::nullopt;
    }
  }
  auto input = ReadInput(f);
  if (!input.ok()) {
    *exit_code = Fail(input.status());
    return std::nullopt;
  }
  return *std::move(input);
}

absl::Status WriteOutput(const InputFlags& f, const std::string& path, const Array& array) {
  auto format = ChooseWriteFormat(f.out_format.empty() ? f.format : f.out_format, path);
  if (!format.ok()) return format.status();
  return WriteArray(path, *format, array);
}

absl::Status CheckOutput(const InputFlags& f, const std::string& path, DType dtype) {
  auto format = ChooseWriteFormat(f.out_format.empty() ? f.format : f.out_format, path);
  if (!format.ok()) return format.status();
  return CheckWritable(path, *format, dtype);
}

CLI::Validator AtLeastOne() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !(value > 0)) return "must be a number above 0, not " + text;
        return "";
      },
      "POSITIVE", "positive");
}
CLI::Validator ZeroOrMore() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(text, value) || !(value >= 0)) return "must be 0 or more, not " + text;
        return "";
      },
      "NONNEGATIVE", "non-negative");
}

CLI::Validator ScientificCount() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::size_t e = text.find_first_of("eE");
        if (e == std::string::npos || e == 0 || e + 1 >= text.size()) return "";
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end != text.c_str() + text.size() || !(value >= 0) || value > 9.0e15 || value != std::floor(value)) {
          return "";  // not a whole number in scientific notation: the size parser judges it
        }
        text = std::to_string(static_cast<unsigned long long>(value));
        return "";
      },
      "", "scientific count");
}

Algorithm ParseAlgorithmFlag(const std::string& name) {
  static const std::map<std::string, Algorithm> kNames = {
      {"auto", Algorithm::kAuto},        {"radix", Algorithm::kRadix},
      {"merge", Algorithm::kMerge},      {"bitonic", Algorithm::kBitonic},
      {"odd_even", Algorithm::kOddEven}, {"quicksort", Algorithm::kQuicksort},
      {"cpu", Algorithm::kCpu},          {"radix_select", Algorithm::kRadixSelect},
      {"small_k", Algorithm::kSmallK},   {"thread_lists", Algorithm::kThreadLists}};
  return kNames.at(name);
}
const std::vector<std::string>& TransportNames() {
  static const std::vector<std::string> names = {"auto", "unary", "stream", "shm", "sockets", "device"};
  return names;
}

const std::vector<std::string>& AlgorithmNames() {
  static const std::vector<std::string> kNames = {"auto",      "radix", "merge",        "bitonic", "odd_even",
                                                  "quicksort", "cpu",   "radix_select", "small_k", "thread_lists"};
  return kNames;
}

}  // namespace gpusort::cli
