// Pinned host memory for the runs of a sort larger than the GPUs (device_merged_sort.h): each run's keys
// cross to a GPU, are sorted and cross back into it, so it must be page-locked for the copies to run at
// PCIe speed. One mapping per sort, on huge pages where the kernel gives them, first touched by every
// core at once and then registered: 0.63 s for 16 GiB on the H200 host, where cudaHostAlloc of the same
// bytes in 32 buffers took 7.62 s (bench/host_pin_probe.cc, 2026-11-29); the first sort of 4G keys
// under a 4 GiB limit took 2.1 s with it, of 4G keys with indices (32 GiB) 8.8 s, against 17-22 s with
// cudaHostAlloc'd buffers, one a run. Mappings are kept after use for
// the next such sort; at most `max_bytes` are held, lent and kept, and past that a sort gets none (and
// takes the host merge).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace gpusort {

class HostRunMemory {
 public:
  explicit HostRunMemory(std::size_t max_bytes);
  ~HostRunMemory();
  HostRunMemory(const HostRunMemory&) = delete;
  HostRunMemory& operator=(const HostRunMemory&) = delete;

  struct Mapping;  // mapped and registered
  class Lease {
   public:
    Lease(HostRunMemory* owner, std::unique_ptr<Mapping> mapping);
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    std::span<std::byte> bytes() const;

   private:
    HostRunMemory* owner_;
    std::unique_ptr<Mapping> mapping_;
  };

  // At least `bytes`: the smallest kept mapping that holds them, else a new one; nullopt past max_bytes
  // or where the memory cannot be had or registered.
  std::optional<Lease> Take(std::size_t bytes);

 private:
  void Keep(std::unique_ptr<Mapping> mapping);

  const std::size_t max_bytes_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Mapping>> kept_;
  std::size_t held_bytes_ = 0;  // lent and kept
};

// The process's: at most half the host's memory.
HostRunMemory& HostRuns();

}  // namespace gpusort
