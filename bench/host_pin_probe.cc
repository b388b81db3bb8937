// host_pin_probe: what pinning the host memory of a sort larger than the GPU costs, by way (issue 44).
// The first out-of-core sort of 4G keys with indices spent 17-22 s pinning 32 GiB (cudaHostAlloc, one
// buffer a run); mapped, touched and registered memory took as long; the benchmark's own fill and
// registration of 16 GiB took under 3 s. This times, for --bytes in --pieces buffers:
//   alloc:     cudaHostAlloc of each piece (PinnedPool's way);
//   touch+reg: mmap, every page touched by every core at once, then cudaHostRegister of each piece;
//   touch+reg huge: the same with MADV_HUGEPAGE;
//   touch+reg one: the same, one cudaHostRegister over all pieces.
// Each way's memory is freed before the next. Wall clock; run once each (first-time costs are the point).
//
//   host_pin_probe [--bytes 16G] [--pieces 32]
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/size_flag.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void Touch(std::byte* at, std::size_t bytes) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t) {
    workers.emplace_back([=] {
      const std::size_t b = bytes * t / threads / 4096 * 4096, e = bytes * (t + 1) / threads;
      for (std::size_t i = b; i < e; i += 4096) at[i] = std::byte{1};
    });
  }
  for (auto& w : workers) w.join();
}

// mmap'd, touched, registered (per piece, or once); returns seconds for the touch and the registration.
void MappedWay(std::size_t bytes, std::size_t pieces, bool huge, bool one, const char* name) {
  const Clock::time_point start = Clock::now();
  auto* at = static_cast<std::byte*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (at == MAP_FAILED) {
    std::printf("%-16s mmap failed\n", name);
    return;
  }
  if (huge) (void)madvise(at, bytes, MADV_HUGEPAGE);
  Touch(at, bytes);
  const double touched = Since(start);
  std::vector<gpusort::kernels::HostRegistration> registrations;
  const Clock::time_point registering = Clock::now();
  const std::size_t count = one ? 1 : pieces;
  bool ok = true;
  for (std::size_t p = 0; p < count; ++p) {
    const std::size_t b = bytes * p / count, e = bytes * (p + 1) / count;
    registrations.emplace_back();
    ok = ok && gpusort::kernels::HostRegistration::Register(at + b, e - b, &registrations.back()).ok();
  }
  const double registered = Since(registering);
  std::printf("%-16s %6.2f s  (touch %.2f s, register %.2f s)%s\n", name, Since(start), touched, registered,
              ok ? "" : "  REGISTRATION FAILED");
  registrations.clear();
  munmap(at, bytes);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t bytes = std::size_t{16} << 30, pieces = 32;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--bytes") bytes = gpusort::ParseSize(argv[i + 1]);
    else if (flag == "--pieces") pieces = std::stoull(argv[i + 1]);
  }
  if (!gpusort::kernels::UseDevice(0).ok()) {
    std::fprintf(stderr, "no GPU\n");
    return 1;
  }
  std::printf("host_pin_probe: %.1f GiB in %zu pieces\n", static_cast<double>(bytes) / (1 << 30), pieces);
  {
    const Clock::time_point start = Clock::now();
    std::vector<gpusort::kernels::PinnedBuffer> buffers(pieces);
    bool ok = true;
    for (auto& b : buffers) ok = ok && gpusort::kernels::PinnedBuffer::Allocate(bytes / pieces, &b).ok();
    std::printf("%-16s %6.2f s%s\n", "alloc", Since(start), ok ? "" : "  ALLOCATION FAILED");
  }
  MappedWay(bytes, pieces, false, false, "touch+reg");
  MappedWay(bytes, pieces, true, false, "touch+reg huge");
  MappedWay(bytes, pieces, false, true, "touch+reg one");
  return 0;
}
