#include "server/core/scratch.h"

#include <sys/mman.h>

namespace gpusort::scratch_internal {

void* Allocate(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  void* p = nullptr;
  if (bytes >= kHugeFrom) {
    const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    p = std::aligned_alloc(kHugePage, rounded);
    if (p != nullptr) (void)madvise(p, rounded, MADV_HUGEPAGE);  // advice only: may be refused
  } else {
    p = std::malloc(bytes);
  }
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace gpusort::scratch_internal
