// RankInSortedRunsAsync: one binary search per thread; a few thousand threads at most, latency bound.
#include "gpusort/kernels/sorted_runs.h"

#include "cuda_status.h"

namespace gpusort::kernels {
namespace {

template <typename Key>
__global__ void RankInSortedRunsKernel(SortedRuns runs, const std::uint64_t* queries, std::size_t query_count,
                                       bool inclusive, std::uint64_t* ranks) {
  const std::size_t total = query_count * static_cast<std::size_t>(runs.count);
  for (std::size_t t = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; t < total;
       t += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t q = t / runs.count;
    const int r = static_cast<int>(t - q * runs.count);
    const Key* keys = static_cast<const Key*>(runs.keys[r]);
    const Key value = static_cast<Key>(queries[q]);
    // First position whose key is >= value (> value when inclusive).
    std::uint64_t lo = 0, hi = runs.length[r];
    while (lo < hi) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      const Key k = keys[mid];
      if (k < value || (inclusive && k == value)) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    ranks[t] = lo;
  }
}

}  // namespace

Status RankInSortedRunsAsync(KeyWidth width, const SortedRuns& runs, const std::uint64_t* queries,
                             std::size_t query_count, bool inclusive, std::uint64_t* ranks, const Stream& stream) {
  if (runs.count < 0 || runs.count > kMaxSortedRuns) {
    return Status(StatusCode::kInvalidArgument, "more sorted runs than one search takes");
  }
  const std::size_t total = query_count * static_cast<std::size_t>(runs.count);
  if (total == 0) return Status::Ok();
  constexpr int kThreads = 128;
  const unsigned blocks = static_cast<unsigned>((total + kThreads - 1) / kThreads);
  cudaStream_t s = Native(stream);
  switch (width) {
    case KeyWidth::k32:
      RankInSortedRunsKernel<std::uint32_t><<<blocks, kThreads, 0, s>>>(runs, queries, query_count, inclusive, ranks);
      break;
    case KeyWidth::k64:
      RankInSortedRunsKernel<std::uint64_t><<<blocks, kThreads, 0, s>>>(runs, queries, query_count, inclusive, ranks);
      break;
    default: return RefuseKeyWidth16(width, "the sorted-run search");
  }
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("sorted-run search kernel");
  return Status::Ok();
}

}  // namespace gpusort::kernels
