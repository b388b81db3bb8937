// Pinned host buffers lent to requests whose keys arrive from a socket (the data port's direct parts,
// backend.h PartedSortIngest::StartDirect): the socket writes the keys straight into page-locked memory,
// which the GPU reads by DMA. cudaHostAlloc costs milliseconds per tens of MiB, so buffers are kept
// after use and lent again; at most `max_bytes` are held in all (lent and kept), and past that a request
// gets none (and takes the staged path instead). A second pool holds the host runs of sorts larger than
// the GPUs (device_merged_sort.cc), made by touching (kernels::PinnedBuffer::AllocateTouched).
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "gpusort/kernels/memory.h"

namespace gpusort {

class PinnedPool {
 public:
  // How new buffers are made: kernels::PinnedBuffer::Allocate, or AllocateTouched (large buffers: the
  // runs of a sort larger than the GPUs, device_merged_sort.h).
  enum class Making { kByTheDriver, kTouchedByEveryCore };

  explicit PinnedPool(std::size_t max_bytes, Making making = Making::kByTheDriver)
      : max_bytes_(max_bytes), making_(making) {}

  // A buffer lent until this is destroyed.
  class Loan {
   public:
    Loan(PinnedPool* pool, kernels::PinnedBuffer buffer) : pool_(pool), buffer_(std::move(buffer)) {}
    Loan(Loan&& other) noexcept = default;
    Loan& operator=(Loan&&) = delete;
    ~Loan();
    std::span<std::byte> bytes() const { return std::span(buffer_.data(), buffer_.size()); }

   private:
    PinnedPool* pool_;
    kernels::PinnedBuffer buffer_;
  };

  // A buffer of at least `bytes`: the smallest kept one that holds them, else a new one; nullopt when a
  // new one would pass max_bytes, or cannot be had.
  std::optional<Loan> Take(std::size_t bytes);

 private:
  void Keep(kernels::PinnedBuffer buffer);

  const std::size_t max_bytes_;
  const Making making_;
  std::mutex mutex_;
  std::vector<kernels::PinnedBuffer> kept_;
  std::size_t held_bytes_ = 0;  // lent and kept
};

}  // namespace gpusort
