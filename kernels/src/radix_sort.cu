// Entry points of radix_sort.h: dispatch by key width to the per-width files.
#include "gpusort/kernels/radix_sort.h"

#include "radix_sort_impl.cuh"

namespace gpusort::kernels {
namespace {

Status Dispatch(const RadixSortArgs& a, void* temp, std::size_t* temp_bytes, cudaStream_t stream,
                int* result) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(RefuseKeyWidth16(a.key_width, "radix sort"));
  return a.key_width == KeyWidth::k32 ? internal::RadixSort32(a, temp, temp_bytes, stream, result)
                                      : internal::RadixSort64(a, temp, temp_bytes, stream, result);
}

}  // namespace

Status RadixSortTempBytes(const RadixSortArgs& args, std::size_t* bytes) {
  *bytes = 0;
  return Dispatch(args, nullptr, bytes, nullptr, nullptr);
}

Status RadixSort(const RadixSortArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream,
                 int* result) {
  // CUB treats a null temp pointer as a size query; a sort that needs no temp still gets a non-null one.
  static char no_temp;
  if (temp == nullptr) temp = &no_temp;
  return Dispatch(args, temp, &temp_bytes, Native(stream), result);
}

}  // namespace gpusort::kernels
