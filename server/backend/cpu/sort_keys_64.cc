// The CPU sort for the 64-bit key types (sort_typed.h says why the widths compile apart).
#include "server/backend/cpu/sort_typed.h"

namespace gpusort::cpu::sort_internal {

GPUSORT_CPU_SORT_KEYS_OF(int64_t);
GPUSORT_CPU_SORT_KEYS_OF(uint64_t);
GPUSORT_CPU_SORT_KEYS_OF(double);

}  // namespace gpusort::cpu::sort_internal
