// The load generator of `gpusort bench`.
//
// Closed loop (BenchConfig::concurrency): N threads, each sending its next request as soon as the
// previous one is answered, so N requests are always in flight; one thread per slot is simple and
// fine up to a few hundred slots, because a synchronous gRPC call holds its thread anyway.
// Open loop (BenchConfig::rate): requests start on a fixed schedule whatever the server does, each
// on a thread of a pool that grows to what is in flight (at most --max-inflight), and their latency
// counts from the scheduled start, so that a slow server shows as latency rather than as a lower
// request rate (coordinated omission). The schedule is a fixed rate, or a rate moving linearly over
// the measurement (--ramp-linear, rate_ramp.h), whose requests are counted in the interval they were
// due in.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cli/bench_options.h"
#include "client/cli/bench_stats.h"

namespace gpusort::cli {

// Where a measurement stands, about every 0.5 s, and once more (final) when it ends.
struct BenchProgress {
  std::string label;  // "c=8", "100/s", "ramp 20-60/s", with "warmup " in front during the warm-up
  double elapsed_s = 0;
  uint64_t completed = 0;  // answered without error
  uint64_t errors = 0;
  bool final = false;
};
using ProgressFn = std::function<void(const BenchProgress&)>;

// One row per concurrency level, or one per rate, or one per ramp_interval_seconds of a linear ramp.
// Fails (without running the load) when the configuration is invalid, the payload cannot be made, or
// the first request fails in a way every request would (UNIMPLEMENTED, INVALID_ARGUMENT: a missing
// transport or algorithm, a bad -k; UNAUTHENTICATED, PERMISSION_DENIED: no or a wrong token;
// FAILED_PRECONDITION: shared memory over several servers), or the connection options are bad (an
// unreadable TLS file). Failed requests otherwise are counted in the rows, by code.
absl::StatusOr<std::vector<BenchRow>> RunBench(const BenchConfig& config,
                                               const ProgressFn& progress = nullptr);

}  // namespace gpusort::cli
