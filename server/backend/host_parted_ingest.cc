// Backend::StartPartedSortIngest's default: the parts are gathered in one host array, which Sort then
// hands to the backend's own Sort. Any backend can take parted streams this way; the CUDA backend does
// better for arrays that go to the GPU (server/backend/cuda/sort_ingest.cc).
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "server/backend/backend.h"

namespace gpusort {
namespace {

class HostPartedSortIngest final : public PartedSortIngest {
 public:
  HostPartedSortIngest(Backend& backend, const SortSpec& spec, std::size_t total_keys,
                       std::unique_ptr<std::byte[]> keys)
      : backend_(backend),
        spec_(spec),
        count_(total_keys),
        width_(ElementSize(spec.dtype)),
        keys_(std::move(keys)) {}

  absl::Status Write(std::size_t first_key, std::span<const std::byte> keys) override {
    if (!keys.empty()) std::memcpy(keys_.get() + first_key * width_, keys.data(), keys.size());
    return absl::OkStatus();
  }

  absl::Status Sort(const Cancellation& cancellation, ExecutionReport& report) override {
    SortBuffers buffers;
    buffers.count = count_;
    buffers.keys = std::span(keys_.get(), count_ * width_);
    if (spec_.payload == SortPayload::kIndices) {
      indices_.resize(count_);
      buffers.indices_out = std::span(indices_);
    }
    return RunSort(backend_, spec_, buffers, cancellation, report);
  }

  absl::Status Read(std::size_t begin, std::size_t end, std::byte* keys, int64_t* indices) override {
    if (begin >= end) return absl::OkStatus();
    std::memcpy(keys, keys_.get() + begin * width_, (end - begin) * width_);
    return ReadDirect(begin, end, indices);
  }

  // Direct mode is the host array itself: the parts receive into it, and Sort sorts it in place.
  bool StartDirect() override { return true; }
  std::span<std::byte> DirectKeys() override { return std::span(keys_.get(), count_ * width_); }
  absl::Status CommitDirect(std::size_t, std::size_t) override { return absl::OkStatus(); }
  absl::Status ReadDirect(std::size_t begin, std::size_t end, int64_t* indices) override {
    if (indices != nullptr && begin < end) {
      std::memcpy(indices, indices_.data() + begin, (end - begin) * sizeof(int64_t));
    }
    return absl::OkStatus();
  }

 private:
  Backend& backend_;
  const SortSpec spec_;
  const std::size_t count_;
  const std::size_t width_;
  std::unique_ptr<std::byte[]> keys_;  // not zero-filled: every key is written by one part
  std::vector<int64_t> indices_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<PartedSortIngest>> Backend::StartPartedSortIngest(const SortSpec& spec,
                                                                                  std::size_t total_keys) {
  std::unique_ptr<std::byte[]> keys(new (std::nothrow) std::byte[std::max<std::size_t>(1, total_keys * ElementSize(spec.dtype))]);
  if (keys == nullptr) {
    return absl::ResourceExhaustedError("the server could not allocate host memory for " +
                                        std::to_string(total_keys) + " keys");
  }
  return std::make_unique<HostPartedSortIngest>(*this, spec, total_keys, std::move(keys));
}

}  // namespace gpusort
