// duplex_floor: what the host can move to and from its GPUs at once (issue 19's mixed load on two GPUs).
// A mixed load copies keys to the GPUs and answers back at the same time, on every GPU, all through host
// memory; this measures that floor with nothing else running: for each set of GPUs named, the median
// over --repeats of
//   h2d:    --bytes from pinned host memory to each GPU of the set at once (each GPU its own bytes),
//   d2h:    the same back,
//   duplex: both at once on every GPU (one stream each way per GPU),
// printed as GB/s summed over the set's GPUs (1 GB = 1e9 bytes), each direction counted.
// --host memfd takes the host ends as a shared-memory caller's region is: memfd_create'd pages, mapped and
// registered (HostRegistration), rather than cudaMallocHost'd; both print with --host both.
//
//   duplex_floor --devices 0 --devices 0,1 [--bytes 1G] [--repeats 5] [--host pinned|memfd|both]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench/memfd_region.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"

namespace gpusort {
namespace {

using Clock = std::chrono::steady_clock;

struct Gpu {
  int ordinal = 0;
  kernels::Stream up, down;
  kernels::DeviceMemoryPool pool;
  kernels::DeviceAllocation to, from;  // device ends of the two directions
  kernels::PinnedBuffer pinned_source, pinned_sink;  // host ends: cudaMallocHost'd
  MemfdRegion memfd_source, memfd_sink;               // or memfd regions
  void* source = nullptr;
  void* sink = nullptr;
};

void Check(const kernels::Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "duplex_floor: %s: %s\n", what, s.message().c_str());
  std::exit(1);
}

// Seconds for one round: `h2d` and/or `d2h` on every GPU at once.
double Round(std::vector<Gpu>& gpus, std::size_t bytes, bool h2d, bool d2h) {
  const Clock::time_point start = Clock::now();
  for (Gpu& g : gpus) {
    Check(kernels::UseDevice(g.ordinal), "selecting a GPU");
    if (h2d) Check(kernels::CopyToDeviceAsync(g.to.data(), g.source, bytes, g.up), "host to device");
    if (d2h) Check(kernels::CopyToHostAsync(g.sink, g.from.data(), bytes, g.down), "device to host");
  }
  for (Gpu& g : gpus) {
    Check(g.up.Synchronize(), "waiting");
    Check(g.down.Synchronize(), "waiting");
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<int> ParseDevices(const std::string& s) {
  std::vector<int> d;
  for (std::size_t from = 0; from <= s.size();) {
    const std::size_t comma = std::min(s.find(',', from), s.size());
    d.push_back(std::stoi(s.substr(from, comma - from)));
    from = comma + 1;
  }
  return d;
}

// Measures one set of GPUs with host ends of one kind; prints its line. 0, or 1 when memory is short.
int MeasureSet(const std::string& kind, const std::string& set, std::size_t bytes, int repeats) {
  std::vector<Gpu> gpus(ParseDevices(set).size());
  const std::vector<int> ordinals = ParseDevices(set);
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    Gpu& gpu = gpus[g];
    gpu.ordinal = ordinals[g];
    Check(kernels::UseDevice(gpu.ordinal), "selecting a GPU");
    Check(kernels::Stream::Create(&gpu.up), "a stream");
    Check(kernels::Stream::Create(&gpu.down), "a stream");
    Check(kernels::DeviceMemoryPool::Create(gpu.ordinal, &gpu.pool), "the pool");
    Check(gpu.pool.Allocate(bytes, gpu.up, &gpu.to), "device memory");
    Check(gpu.pool.Allocate(bytes, gpu.up, &gpu.from), "device memory");
    if (kind == "pinned") {
      Check(kernels::PinnedBuffer::Allocate(bytes, &gpu.pinned_source), "pinned memory");
      Check(kernels::PinnedBuffer::Allocate(bytes, &gpu.pinned_sink), "pinned memory");
      gpu.source = gpu.pinned_source.data();
      gpu.sink = gpu.pinned_sink.data();
    } else {
      if (!gpu.memfd_source.Create(bytes) || !gpu.memfd_sink.Create(bytes)) {
        std::fprintf(stderr, "duplex_floor: a registered memfd region of %zu bytes\n", bytes);
        return 1;
      }
      gpu.source = gpu.memfd_source.data();
      gpu.sink = gpu.memfd_sink.data();
    }
    Check(gpu.up.Synchronize(), "waiting");
  }
  Round(gpus, bytes, true, true);  // warm-up
  std::vector<double> up, down, both;
  for (int r = 0; r < repeats; ++r) {
    up.push_back(Round(gpus, bytes, true, false));
    down.push_back(Round(gpus, bytes, false, true));
    both.push_back(Round(gpus, bytes, true, true));
  }
  const double total = static_cast<double>(bytes) * static_cast<double>(gpus.size()) / 1e9;
  std::printf(
      "%-6s GPUs %-6s %zu MiB each way per GPU: h2d %.1f GB/s, d2h %.1f GB/s, duplex %.1f GB/s (%.1f each way)\n",
      kind.c_str(), set.c_str(), bytes >> 20, total / Median(up), total / Median(down), 2 * total / Median(both),
      total / Median(both));
  return 0;
}

int Run(int argc, char** argv) {
  std::vector<std::string> sets;
  std::size_t bytes = std::size_t{1} << 30;
  int repeats = 5;
  std::string host = "pinned";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--devices") sets.push_back(v);
    else if (a == "--bytes") bytes = std::stoull(v) << (v.back() == 'G' ? 30 : v.back() == 'M' ? 20 : 0);
    else if (a == "--repeats") repeats = std::max(1, std::atoi(v.c_str()));
    else if (a == "--host" && (v == "pinned" || v == "memfd" || v == "both")) host = v;
    else {
      std::fprintf(stderr,
                   "usage: duplex_floor --devices 0[,1] ... [--bytes 1G] [--repeats 5] [--host pinned|memfd|both]\n");
      return 2;
    }
  }
  if (sets.empty()) sets.push_back("0");
  std::vector<std::string> hosts;
  if (host != "memfd") hosts.push_back("pinned");
  if (host != "pinned") hosts.push_back("memfd");
  for (const std::string& kind : hosts) {
    for (const std::string& set : sets) {
      if (MeasureSet(kind, set, bytes, repeats) != 0) return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace gpusort

int main(int argc, char** argv) { return gpusort::Run(argc, argv); }
