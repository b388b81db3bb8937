// large_sort_bench: one Sort of arrays larger than one GPU takes (issue 19), as a shared-memory request
// reaches the CUDA backend (a Sort in registered host memory, in place), on each set of GPUs named,
// beside the PCIe floor measured in the same run: the keys copied once to the GPU and once back, over
// one GPU's link, and over every named GPU's links at once (each its share). Prints one row per set:
// the median wall time of --repeats sorts (fresh random keys before each, not timed), the floor, their
// ratio, and the request's stages (h2d, kernel, d2h summed over runs; merge on the host). The warm-up
// sort's time prints too: it pins the memory a sort larger than the GPUs keeps for the next ones.
//
//   large_sort_bench --keys 4G --devices 0 --devices 0,1 [--repeats 3] [--memory-limit BYTES]
//                    [--split-from KEYS] [--indices] [--json FILE]
//
// --indices asks for the keys' indices too (int64, in registered memory like the keys); the floor then
// adds the indices' copy back. Times are host wall clock around the blocking call (each is seconds
// long; CUDA events would add nothing). Every answer is checked: sorted, with the same sum and xor of
// keys as the input; with indices, each index names a distinct input position holding its key (keys
// are a hash of their position), equal keys in the order of their indices.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <span>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/size_flag.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"
#include "server/backend/cuda_backend.h"

namespace gpusort {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

unsigned Threads() { return std::max(1u, std::thread::hardware_concurrency()); }

// Calls f(begin, end) over [0, n) on every core.
template <typename F>
void Parallel(std::size_t n, F f) {
  const unsigned t = Threads();
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < t; ++i) threads.emplace_back([&, i] { f(n * i / t, n * (i + 1) / t); });
  for (auto& th : threads) th.join();
}

struct Checksum {
  uint64_t sum = 0, xor_all = 0;
  void Add(uint64_t key) {
    sum += key;
    xor_all ^= key;
  }
  void Add(const Checksum& other) {
    sum += other.sum;
    xor_all ^= other.xor_all;
  }
  bool operator==(const Checksum&) const = default;
};

Checksum Total(const std::vector<Checksum>& parts) {
  Checksum all;
  for (const Checksum& c : parts) all.Add(c);
  return all;
}

// The key at position i of fill `seed`: splitmix64 of the position, so that a check can recompute it.
uint32_t KeyAt(uint64_t seed, std::size_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<uint32_t>(z ^ (z >> 31));
}

Checksum Fill(uint32_t* keys, std::size_t n, uint64_t seed) {
  std::vector<Checksum> parts(Threads());
  std::atomic<unsigned> next{0};
  Parallel(n, [&](std::size_t b, std::size_t e) {
    Checksum c;
    for (std::size_t i = b; i < e; ++i) {
      keys[i] = KeyAt(seed, i);
      c.Add(keys[i]);
    }
    parts[next++] = c;
  });
  return Total(parts);
}

bool SortedWith(const uint32_t* keys, std::size_t n, const Checksum& want) {
  std::atomic<bool> ok{true};
  std::vector<Checksum> parts(Threads());
  std::atomic<unsigned> next{0};
  Parallel(n, [&](std::size_t b, std::size_t e) {
    Checksum c;
    for (std::size_t i = b; i < e; ++i) {
      if (i > 0 && keys[i - 1] > keys[i]) ok = false;
      c.Add(keys[i]);
    }
    parts[next++] = c;
  });
  return ok && Total(parts) == want;
}

// Sorted keys' indices: each a position of the input whose key (KeyAt) is the one beside it, equal keys
// in strictly ascending order of their indices. That makes them distinct (a position named twice would
// hold one key twice in its run of equals), so n of them in [0, n) are every position once.
bool IndicesRight(const uint32_t* keys, const int64_t* indices, std::size_t n, uint64_t seed) {
  std::atomic<bool> ok{true};
  Parallel(n, [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i < e; ++i) {
      const int64_t at = indices[i];
      if (at < 0 || static_cast<std::size_t>(at) >= n || KeyAt(seed, at) != keys[i] ||
          (i > 0 && keys[i - 1] == keys[i] && indices[i - 1] >= at)) {
        ok = false;
        return;
      }
    }
  });
  return ok;
}

// Seconds to copy `bytes` of `host` to the GPUs and back, each GPU its share at once, through a 1 GiB
// device buffer per GPU (the copies are what is measured; where they land does not matter).
std::pair<double, double> PcieFloor(std::byte* host, std::size_t bytes, const std::vector<int>& devices) {
  constexpr std::size_t kChunk = std::size_t{1} << 30;
  struct PerGpu {
    kernels::Stream stream;
    kernels::DeviceMemoryPool pool;
    kernels::DeviceAllocation buffer;
  };
  std::vector<PerGpu> gpus(devices.size());
  for (std::size_t g = 0; g < devices.size(); ++g) {
    if (!kernels::UseDevice(devices[g]).ok() || !kernels::Stream::Create(&gpus[g].stream).ok() ||
        !kernels::DeviceMemoryPool::Create(devices[g], &gpus[g].pool).ok() ||
        !gpus[g].pool.Allocate(kChunk, gpus[g].stream, &gpus[g].buffer).ok()) {
      std::fprintf(stderr, "floor: cannot set up GPU %d\n", devices[g]);
      std::exit(1);
    }
  }
  auto copy_all = [&](bool to_device) {
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> threads;
    for (std::size_t g = 0; g < devices.size(); ++g) {
      threads.emplace_back([&, g] {
        (void)kernels::UseDevice(devices[g]);
        const std::size_t b = bytes * g / devices.size(), e = bytes * (g + 1) / devices.size();
        for (std::size_t at = b; at < e; at += kChunk) {
          const std::size_t len = std::min(kChunk, e - at);
          const kernels::Status s =
              to_device ? kernels::CopyToDeviceAsync(gpus[g].buffer.data(), host + at, len, gpus[g].stream)
                        : kernels::CopyToHostAsync(host + at, gpus[g].buffer.data(), len, gpus[g].stream);
          if (!s.ok()) std::fprintf(stderr, "floor copy failed: %s\n", s.message().c_str());
        }
        (void)gpus[g].stream.Synchronize();
      });
    }
    for (auto& t : threads) t.join();
    return Since(start);
  };
  copy_all(true);  // warm-up
  return {copy_all(true), copy_all(false)};
}

std::vector<int> ParseDevices(const std::string& s) {
  std::vector<int> d;
  std::size_t from = 0;
  while (from <= s.size()) {
    const std::size_t comma = std::min(s.find(',', from), s.size());
    d.push_back(std::stoi(s.substr(from, comma - from)));
    from = comma + 1;
  }
  return d;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace
}  // namespace gpusort

int main(int argc, char** argv) {
  using namespace gpusort;
  std::size_t n = std::size_t{4} << 30, memory_limit = 0, split_from = 0;
  int repeats = 3;
  bool with_indices = false;
  std::vector<std::string> sets;
  std::string json;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--indices") {
      with_indices = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[i + 1];
    if (flag == "--keys") n = ParseSize(value);
    else if (flag == "--devices") sets.push_back(value);
    else if (flag == "--repeats") repeats = std::stoi(value);
    else if (flag == "--memory-limit") memory_limit = ParseSize(value);
    else if (flag == "--split-from") split_from = ParseSize(value);
    else if (flag == "--json") json = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (sets.empty()) sets = {"0"};
  const std::size_t bytes = n * sizeof(uint32_t);
  std::printf("large_sort_bench: %zu u32 keys (%.1f GiB), %d repeats, %u host threads\n", n,
              static_cast<double>(bytes) / (1 << 30), repeats, Threads());
  auto keys = std::make_unique_for_overwrite<uint32_t[]>(n);
  Clock::time_point t = Clock::now();
  Fill(keys.get(), n, 1);  // touches every page before registration
  kernels::HostRegistration registration;
  if (const kernels::Status s = kernels::HostRegistration::Register(keys.get(), bytes, &registration); !s.ok()) {
    std::fprintf(stderr, "registering the keys: %s\n", s.message().c_str());
    return 1;
  }
  std::unique_ptr<int64_t[]> indices;
  kernels::HostRegistration indices_registration;
  if (with_indices) {
    indices = std::make_unique_for_overwrite<int64_t[]>(n);
    Parallel(n, [&](std::size_t b, std::size_t e) { std::fill(indices.get() + b, indices.get() + e, int64_t{-1}); });
    if (const kernels::Status s =
            kernels::HostRegistration::Register(indices.get(), n * sizeof(int64_t), &indices_registration);
        !s.ok()) {
      std::fprintf(stderr, "registering the indices: %s\n", s.message().c_str());
      return 1;
    }
  }
  std::printf("filled and registered in %.2f s%s\n", Since(t), with_indices ? " (with int64 indices)" : "");
  FILE* out = json.empty() ? nullptr : std::fopen(json.c_str(), "w");
  if (out) std::fprintf(out, "[\n");
  for (std::size_t c = 0; c < sets.size(); ++c) {
    const std::vector<int> devices = ParseDevices(sets[c]);
    auto [h2d_floor, d2h_floor] = PcieFloor(reinterpret_cast<std::byte*>(keys.get()), bytes, devices);
    if (with_indices) d2h_floor += PcieFloor(reinterpret_cast<std::byte*>(indices.get()), n * sizeof(int64_t), devices).second;
    auto backend = MakeCudaBackend({.engine = {.memory_limit_bytes = memory_limit},
                                    .devices = devices,
                                    .split_from_keys = split_from});
    if (!backend.ok()) {
      std::fprintf(stderr, "backend on %s: %s\n", sets[c].c_str(), std::string(backend.status().message()).c_str());
      return 1;
    }
    std::vector<double> seconds;
    double warm_up = 0;
    ExecutionReport last;
    bool all_right = true;
    for (int r = 0; r <= repeats; ++r) {  // r == 0: warm-up, not counted
      const Checksum want = Fill(keys.get(), n, 100 + r);
      SortSpec spec;
      spec.algorithm = Algorithm::kRadix;
      SortBuffers buffers;
      buffers.count = n;
      buffers.keys = std::span(reinterpret_cast<std::byte*>(keys.get()), bytes);
      if (with_indices) {
        spec.payload = SortPayload::kIndices;
        spec.stable = true;
        buffers.indices_out = std::span(indices.get(), n);
      }
      ExecutionReport report;
      t = Clock::now();
      const absl::Status status = RunSort(*(*backend), spec, buffers, Cancellation(), report, Memory::kRegisteredHost, buffers.keys);
      const double s = Since(t);
      if (!status.ok()) {
        std::fprintf(stderr, "sort on %s failed: %s\n", sets[c].c_str(), std::string(status.message()).c_str());
        return 1;
      }
      all_right = all_right && SortedWith(keys.get(), n, want) &&
                  (!with_indices || IndicesRight(keys.get(), indices.get(), n, 100 + r));
      if (r > 0) seconds.push_back(s);
      if (r == 0) warm_up = s;
      last = report;
    }
    const double median = Median(seconds), floor = h2d_floor + d2h_floor;
    std::string stages;
    for (const StageTime& st : last.stages) stages += " " + std::string(StageName(st.stage)) + "=" + std::to_string(st.seconds);
    std::printf("GPUs %-6s sort %.3f s (runs: %s)  floor %.3f s (h2d %.3f, d2h %.3f)  ratio %.2fx  %s  "
                "warm-up sort %.3f s  stages:%s\n",
                sets[c].c_str(), median, last.device.c_str(), floor, h2d_floor, d2h_floor, median / floor,
                all_right ? "answers right" : "WRONG ANSWER", warm_up, stages.c_str());
    if (out) {
      std::fprintf(out, "  {\"devices\": \"%s\", \"keys\": %zu, \"sort_s\": %.4f, \"floor_s\": %.4f, \"h2d_s\": %.4f, "
                   "\"d2h_s\": %.4f, \"right\": %s}%s\n", sets[c].c_str(), n, median, floor, h2d_floor, d2h_floor,
                   all_right ? "true" : "false", c + 1 < sets.size() ? "," : "");
    }
    if (!all_right) return 1;
  }
  if (out) {
    std::fprintf(out, "]\n");
    std::fclose(out);
  }
  return 0;
}
