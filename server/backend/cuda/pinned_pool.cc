#include "server/backend/cuda/pinned_pool.h"

#include <algorithm>

namespace gpusort {
namespace {

// New buffers are rounded up to this, so that requests of nearby sizes share them.
constexpr std::size_t kGrain = std::size_t{16} << 20;

}  // namespace

PinnedPool::Loan::~Loan() {
  if (pool_ != nullptr && buffer_.size() > 0) pool_->Keep(std::move(buffer_));
}

std::optional<PinnedPool::Loan> PinnedPool::Take(std::size_t bytes) {
  bytes = std::max<std::size_t>(bytes, 1);
  {
    std::lock_guard lock(mutex_);
    auto best = kept_.end();
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->size() >= bytes && (best == kept_.end() || it->size() < best->size())) best = it;
    }
    if (best != kept_.end()) {
      kernels::PinnedBuffer buffer = std::move(*best);
      kept_.erase(best);
      return Loan(this, std::move(buffer));
    }
  }
  const std::size_t size = (bytes + kGrain - 1) / kGrain * kGrain;
  {
    std::lock_guard lock(mutex_);
    // Kept buffers too small for this one give their room to it: freeing pinned memory is cheap.
    while (held_bytes_ + size > max_bytes_ && !kept_.empty()) {
      held_bytes_ -= kept_.back().size();
      kept_.pop_back();
    }
    if (held_bytes_ + size > max_bytes_) return std::nullopt;
    held_bytes_ += size;
  }
  kernels::PinnedBuffer buffer;
  const kernels::Status made = making_ == Making::kTouchedByEveryCore
                                   ? kernels::PinnedBuffer::AllocateTouched(size, &buffer)
                                   : kernels::PinnedBuffer::Allocate(size, &buffer);
  if (!made.ok()) {
    std::lock_guard lock(mutex_);
    held_bytes_ -= size;
    return std::nullopt;
  }
  return Loan(this, std::move(buffer));
}

void PinnedPool::Keep(kernels::PinnedBuffer buffer) {
  std::lock_guard lock(mutex_);
  kept_.push_back(std::move(buffer));
}

}  // namespace gpusort
