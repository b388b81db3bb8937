// BENCHMARK ONLY: the write-up's one-thread-per-partition quicksort (quicksort_writeup.h says why it is
// kept and what was changed for CUDA 12). Not QUICKSORT: that is quicksort.cu.
#include "gpusort/kernels/quicksort_writeup.h"

#include <cuda_runtime.h>

#include <climits>

#include "cuda_status.h"

namespace gpusort::kernels {
namespace {

constexpr int kMaxDepth = 16;          // the write-up's MAX_DEPTH
constexpr int kSelectionSortMax = 32;  // the write-up's INSERTION_SORT: right - left at most this

// [left, right] inclusive throughout, as in the write-up.
__device__ void SelectionSort(unsigned* data, int left, int right) {
  for (int i = left; i <= right; ++i) {
    int smallest = i;
    for (int j = i + 1; j <= right; ++j) {
      if (data[j] < data[smallest]) smallest = j;
    }
    const unsigned v = data[smallest];
    data[smallest] = data[i];
    data[i] = v;
  }
}

__device__ void SiftDown(unsigned* heap, int root, int size) {
  for (int child = 2 * root + 1; child < size; root = child, child = 2 * root + 1) {
    if (child + 1 < size && heap[child] < heap[child + 1]) ++child;
    if (!(heap[root] < heap[child])) return;
    const unsigned v = heap[root];
    heap[root] = heap[child];
    heap[child] = v;
  }
}

// The safety net: O(m log m) in one thread whatever the input.
__device__ void HeapSort(unsigned* data, int left, int right) {
  unsigned* heap = data + left;
  const int size = right - left + 1;
  for (int i = size / 2 - 1; i >= 0; --i) SiftDown(heap, i, size);
  for (int end = size - 1; end > 0; --end) {
    const unsigned v = heap[0];
    heap[0] = heap[end];
    heap[end] = v;
    SiftDown(heap, 0, end);
  }
}

// What the write-up's thread does with a range it does not split: selection sort (for a long range
// that only happens past the depth limit or when a launch was refused; then heap sort).
__device__ void SortInThread(unsigned* data, int left, int right) {
  if (right - left <= kSelectionSortMax) {
    SelectionSort(data, left, right);
  } else {
    HeapSort(data, left, right);
  }
}

__global__ void WriteupQuicksortKernel(unsigned* data, int left, int right, int depth) {
  if (depth >= kMaxDepth || right - left <= kSelectionSortMax) {
    SortInThread(data, left, right);
    return;
  }
  // Partition around the middle key: i and j meet somewhere in the range, every key left of i is at
  // most the pivot and every key right of j at least it. The pivot stops both scans on the first pass.
  const unsigned pivot = data[left + (right - left) / 2];
  int i = left, j = right;
  while (i <= j) {
    while (data[i] < pivot) ++i;
    while (data[j] > pivot) --j;
    if (i <= j) {
      const unsigned v = data[i];
      data[i] = data[j];
      data[j] = v;
      ++i;
      --j;
    }
  }
  // The two sides, [left, j] and [i, right], each in a one-thread child of its own.
  if (left < j) {
    WriteupQuicksortKernel<<<1, 1, 0, cudaStreamFireAndForget>>>(data, left, j, depth + 1);
    if (cudaGetLastError() != cudaSuccess) SortInThread(data, left, j);
  }
  if (i < right) {
    WriteupQuicksortKernel<<<1, 1, 0, cudaStreamFireAndForget>>>(data, i, right, depth + 1);
    if (cudaGetLastError() != cudaSuccess) SortInThread(data, i, right);
  }
}

}  // namespace

Status WriteupQuicksort(std::uint32_t* keys, std::size_t count, const Stream& stream) {
  if (count > static_cast<std::size_t>(INT_MAX)) {
    return Status(StatusCode::kInvalidArgument, "write-up quicksort of more than 2^31-1 keys");
  }
  if (count < 2) return Status::Ok();
  if (keys == nullptr) return Status(StatusCode::kInvalidArgument, "write-up quicksort without keys");
  WriteupQuicksortKernel<<<1, 1, 0, Native(stream)>>>(keys, 0, static_cast<int>(count) - 1, 0);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("write-up quicksort kernel");
  return Status::Ok();
}

}  // namespace gpusort::kernels
