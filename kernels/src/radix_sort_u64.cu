#include "radix_sort_impl.cuh"

namespace gpusort::kernels::internal {

Status RadixSort64(const RadixSortArgs& a, void* temp, std::size_t* temp_bytes, cudaStream_t stream,
                   int* result) {
  return RadixSortImpl<std::uint64_t>(a, temp, temp_bytes, stream, result);
}

}  // namespace gpusort::kernels::internal
