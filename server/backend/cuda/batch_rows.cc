#include <algorithm>
#include <cstring>
#include <vector>

#include "gpusort/kernels/comparison_sorts.h"
#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"
#include "server/backend/cuda/batch_sort.h"
#include "server/backend/cuda/device_key_bits.h"
#include "server/backend/cuda/kernel_status.h"
#include "server/backend/cuda/staging.h"
#include "server/core/key_order.h"
#include "server/core/status_macros.h"

namespace gpusort {
namespace {

// Batched requests are small (batch_sort.h), so their keys convert on the calling thread: the staging
// converters (staging.h) split work over threads, which costs more than it saves here (measured: with
// them, 64 requests of 2048..4096 keys took 1.42 ms against the radix form's 1.09; batch_forms_bench).
// A row holds device bits (device_key_bits.h): narrow keys zero-extended to 32 bits.
template <typename T>
void ToRow(const std::byte* keys, std::size_t count, bool descending, std::byte* row) {
  using W = DeviceBitsType<T>;
  for (std::size_t j = 0; j < count; ++j) {
    T key;
    std::memcpy(&key, keys + j * sizeof(T), sizeof(T));
    const W bits = ToSortBits(key, descending);
    std::memcpy(row + j * sizeof(W), &bits, sizeof(W));
  }
}

template <typename T>
void FromRow(const std::byte* row, std::size_t count, bool descending, std::byte* keys) {
  using W = DeviceBitsType<T>;
  for (std::size_t j = 0; j < count; ++j) {
    W bits;
    std::memcpy(&bits, row + j * sizeof(W), sizeof(W));
    const T key = FromSortBits<T>(static_cast<OrderedBitsType<T>>(bits), descending);
    std::memcpy(keys + j * sizeof(T), &key, sizeof(T));
  }
}

}  // namespace

std::size_t BatchRowLength(std::span<const BatchItem> items) {
  std::size_t longest = 0;
  for (const BatchItem& item : items) longest = std::max(longest, item.buffers.count);
  return longest;
}

bool BatchFitsRows(std::span<const BatchItem> items) {
  const std::size_t row_length = BatchRowLength(items);
  std::size_t keys = 0;
  for (const BatchItem& item : items) keys += item.buffers.count;
  return row_length > 1 && row_length <= kernels::kBitonicRowsMaxLength &&
         items.size() * row_length <= kBatchRowsMaxPadding * keys;
}

absl::Status SortBatchAsRowsOnGpu(DeviceContext& context, const SortSpec& spec, std::span<BatchItem> items,
                                  const std::string& device_name) {
  const bool descending = spec.order == SortOrder::kDescending;
  const bool with_positions = spec.payload == SortPayload::kIndices;
  const std::size_t width = DeviceKeyBytes(spec.dtype);
  const std::size_t row_length = BatchRowLength(items), rows = items.size(), padded = rows * row_length;
  if (row_length > kernels::kBitonicRowsMaxLength) {
    return absl::InternalError("a batch's longest request is too long for the bitonic row sort");
  }
  if (padded == 0) return absl::OkStatus();

  // Each request becomes one row of ordered bits, padded with all-ones bits. Padding ranks after every
  // real key: above any other bits, and after an equal real key too, since the padding's positions
  // (its places in the row) are later and the network compares (key, position). So each row's first
  // `count` entries are exactly its request's stably sorted keys, whatever the others hold.
  StageClock prepare;
  std::vector<std::byte> host(padded * width, std::byte{0xFF});
  for (std::size_t r = 0; r < rows; ++r) {
    VisitDType(spec.dtype, [&](auto tag) {
      ToRow<decltype(tag)>(items[r].buffers.keys.data(), items[r].buffers.count, descending,
                           host.data() + r * row_length * width);
    });
  }

  const double prepare_seconds = prepare.Seconds();

  std::vector<std::uint32_t> positions(with_positions ? padded : 0);
  const PackedBatch batch{.keys = host, .key_bytes = width, .positions = positions};
  RETURN_IF_ERROR(RunPackedBatch(
      context, batch,
      [&](const kernels::Stream& stream, void* const keys[2], void* const pos[2], void*, int* result) {
        kernels::KeyRowsArgs args;
        args.key_width = width == 4 ? kernels::KeyWidth::k32 : kernels::KeyWidth::k64;
        args.rows = rows;
        args.row_length = row_length;
        args.keys = keys[0];
        args.positions = with_positions ? static_cast<std::uint32_t*>(pos[0]) : nullptr;
        *result = 0;  // in place
        GPUSORT_RETURN_IF_KERNEL_ERROR(kernels::BitonicSortRows(args, nullptr, 0, stream), "bitonic row sort");
        return absl::OkStatus();
      },
      items, Algorithm::kBitonic, device_name, prepare_seconds));

  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t count = items[r].buffers.count;
    VisitDType(spec.dtype, [&](auto tag) {
      FromRow<decltype(tag)>(host.data() + r * row_length * width, count, descending, items[r].buffers.keys.data());
    });
    if (with_positions) {
      const std::uint32_t* row_positions = positions.data() + r * row_length;
      std::copy(row_positions, row_positions + count, items[r].buffers.indices_out.begin());
    }
  }
  return absl::OkStatus();
}

}  // namespace gpusort
