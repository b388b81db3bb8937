#include "server/backend/cuda/device_context.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstddef>

#include "server/backend/cuda/kernel_status.h"

namespace gpusort {

absl::StatusOr<std::unique_ptr<DeviceContext>> DeviceContext::Create(const DeviceContextOptions& options) {
  std::unique_ptr<DeviceContext> context(new DeviceContext());
  context->ordinal_ = options.ordinal;
  context->memory_limit_bytes_ = options.memory_limit_bytes;
  context->kept_block_bytes_ = options.memory_limit_bytes > 0 ? 0 : options.kept_block_bytes;
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::UseDevice(options.ordinal), "selecting the GPU");
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::GetDeviceProperties(options.ordinal, &context->properties_),
                                 "reading the GPU's properties");
  GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::DeviceMemoryPool::Create(options.ordinal, &context->pool_),
                                 "setting up the device memory pool");
  if (options.streams < 1) return absl::InvalidArgumentError("--cuda-streams must be at least 1");
  for (int i = 0; i < options.streams; ++i) {
    auto slot = std::make_unique<StreamSlot>();
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::Stream::Create(&slot->stream), "creating a stream");
    GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::Stream::Create(&slot->side), "creating a stream");
    for (kernels::Event* e : {&slot->kernel_start, &slot->kernel_stop}) {
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::Event::CreateForTiming(e), "creating an event");
    }
    for (kernels::Event* e : {&slot->egress_stop, &slot->staging_free[0], &slot->staging_free[1], &slot->side_done[0],
                              &slot->side_done[1], &slot->side_done[2]}) {
      GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::Event::Create(e), "creating an event");
    }
    for (int b = 0; b < 2; ++b) {
      GPUSORT_RETURN_IF_KERNEL_ERROR(
          kernels::PinnedBuffer::Allocate(options.staging_bytes, &slot->staging[b]),
          "allocating pinned staging memory");
      // Recorded once so that the first wait on it returns at once.
      GPUSORT_RETURN_IF_KERNEL_ERROR(slot->staging_free[b].Record(slot->stream), "recording an event");
    }
    context->free_slots_.push_back(slot.get());
    context->slots_.push_back(std::move(slot));
  }
  return context;
}

DeviceContext::~DeviceContext() {
  for (const auto& slot : slots_) CountKept(-static_cast<std::ptrdiff_t>(slot->kept.size()));
}

DeviceContext::Lease DeviceContext::Acquire() {
  std::unique_lock lock(mutex_);
  slot_returned_.wait(lock, [&] { return !free_slots_.empty(); });
  StreamSlot* slot = free_slots_.back();
  free_slots_.pop_back();
  slot->kept_lent = 0;  // what the last lease borrowed is free again (its work is ordered before ours)
  return Lease(*this, *slot);
}

namespace {

// Kept bytes by GPU ordinal (--cuda-devices takes 0-255), over every context of the process.
std::atomic<std::size_t>& KeptOn(int ordinal) {
  static std::array<std::atomic<std::size_t>, 256> kept{};
  return kept[static_cast<std::size_t>(ordinal) % kept.size()];
}

constexpr std::size_t kKeptAlignment = 256;  // as cudaMalloc's: CUB's temporary storage and vector loads
constexpr std::size_t kKeptSmallestBlock = std::size_t{1} << 20;

std::size_t AlignedUp(std::size_t bytes) { return (bytes + kKeptAlignment - 1) / kKeptAlignment * kKeptAlignment; }

}  // namespace

std::size_t DeviceContext::KeptOnDevice() const { return KeptOn(ordinal_).load(std::memory_order_relaxed); }

std::size_t DeviceContext::PoolUsedByRequests() const {
  const std::size_t used = pool_.Counters().used_bytes;
  return used - std::min(used, KeptOnDevice());
}

void DeviceContext::CountKept(std::ptrdiff_t bytes) {
  KeptOn(ordinal_).fetch_add(static_cast<std::size_t>(bytes), std::memory_order_relaxed);  // wraps for a decrease
}

absl::Status DeviceContext::AllocateForJob(StreamSlot& slot, const std::vector<std::size_t>& sizes,
                                           std::vector<kernels::DeviceAllocation>* out) {
  std::size_t need = 0;
  for (std::size_t s : sizes) need += AlignedUp(s);
  const std::size_t wanted = slot.kept_lent + need;
  if (kept_block_bytes_ == 0 || wanted > kept_block_bytes_) return AllocateAll(slot.stream, sizes, out);
  slot.kept_wanted = std::max(slot.kept_wanted, wanted);
  // The block grows only while this lease has borrowed nothing from it: earlier buffers of the same job
  // point into it. A job that outgrows it mid-way takes the rest from the pool, and the next gets more.
  if (slot.kept.size() < wanted && (slot.kept_lent > 0 || !GrowKeptBlock(slot, slot.kept_wanted))) {
    return AllocateAll(slot.stream, sizes, out);
  }
  out->clear();
  out->reserve(sizes.size());
  auto* block = static_cast<std::byte*>(slot.kept.data());
  for (std::size_t s : sizes) {
    out->push_back(s == 0 ? kernels::DeviceAllocation()
                          : kernels::DeviceAllocation::Borrowed(block + slot.kept_lent, s));
    slot.kept_lent += AlignedUp(s);
  }
  return absl::OkStatus();
}

bool DeviceContext::GrowKeptBlock(StreamSlot& slot, std::size_t bytes) {
  std::size_t size = kKeptSmallestBlock;
  while (size < bytes) size *= 2;
  size = std::min(size, kept_block_bytes_);
  CountKept(-static_cast<std::ptrdiff_t>(slot.kept.size()));
  slot.kept.Reset();  // freed after the work queued on the slot's stream, which may still read it
  // Straight from the pool: no trim and no warning when it has no room (the job then takes the pool's
  // memory as it did before there were kept blocks).
  if (!pool_.Allocate(size, slot.stream, &slot.kept).ok()) {
    slot.kept.Reset();
    slot.kept_wanted = 0;
    return false;
  }
  CountKept(static_cast<std::ptrdiff_t>(size));
  return true;
}

void DeviceContext::ReleaseIdleKeptBlocks() {
  std::lock_guard lock(mutex_);
  for (StreamSlot* slot : free_slots_) {
    CountKept(-static_cast<std::ptrdiff_t>(slot->kept.size()));
    slot->kept.Reset();
    slot->kept_wanted = 0;
  }
}

void DeviceContext::Return(StreamSlot* slot) {
  {
    std::lock_guard lock(mutex_);
    free_slots_.push_back(slot);
  }
  slot_returned_.notify_one();
}

absl::Status DeviceContext::AllocateAll(const kernels::Stream& stream, const std::vector<std::size_t>& sizes,
                                        std::vector<kernels::DeviceAllocation>* out) {
  std::size_t total = 0;
  for (std::size_t s : sizes) total += s;
  if (memory_limit_bytes_ > 0 && total > memory_limit_bytes_) {
    return absl::ResourceExhaustedError("the request needs " + std::to_string(total) +
                                        " bytes of device memory, over this server's limit of " +
                                        std::to_string(memory_limit_bytes_) + " (--cuda-memory-limit-bytes)");
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    out->clear();
    out->resize(sizes.size());
    kernels::Status failed;
    if (memory_limit_bytes_ > 0 && PoolUsedByRequests() + total > memory_limit_bytes_) {
      // Other requests hold the rest of the share: the same answer as a full GPU.
      failed = kernels::Status(kernels::StatusCode::kOutOfMemory, "over --cuda-memory-limit-bytes");
    }
    for (std::size_t i = 0; i < sizes.size() && failed.ok(); ++i) {
      failed = pool_.Allocate(sizes[i], stream, &(*out)[i]);
    }
    if (failed.ok()) return absl::OkStatus();
    out->clear();  // give back what this attempt got before trimming or failing
    if (failed.code() != kernels::StatusCode::kOutOfMemory) return ToAbslStatus(failed, "device memory");
    if (attempt == 0) {
      std::lock_guard lock(trim_mutex_);
      spdlog::warn("GPU out of memory for {} bytes: trimming the pool and trying once more", total);
      ReleaseIdleKeptBlocks();
      pool_.Trim();
    }
  }
  std::size_t free_bytes = 0, total_bytes = 0;
  (void)kernels::DeviceMemoryInfo(&free_bytes, &total_bytes);
  return absl::ResourceExhaustedError("the GPU has no room for this request: it needs " +
                                      std::to_string(total) + " bytes of device memory, " +
                                      std::to_string(free_bytes) + " of " + std::to_string(total_bytes) +
                                      " are free");
}

absl::Status DeviceContext::Watch(absl::Status status) {
  if (status.ok() || !IsDeviceLost(status) || lost_.load()) return status;
  std::lock_guard lock(lost_mutex_);
  if (!lost_.load()) {
    lost_message_ = std::string(status.message());
    lost_.store(true);
    spdlog::critical("GPU {} failed: {}; this process's CUDA context is unusable until it is restarted", ordinal_,
                     lost_message_);
  }
  return status;
}

absl::Status DeviceContext::Health() const {
  if (!lost_.load()) return absl::OkStatus();
  std::lock_guard lock(lost_mutex_);
  return absl::UnavailableError("the GPU failed: " + lost_message_ + "; this replica must be restarted");
}

}  // namespace gpusort
