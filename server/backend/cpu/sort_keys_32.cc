// The CPU sort for the 32-bit key types (sort_typed.h says why the widths compile apart).
#include "server/backend/cpu/sort_typed.h"

namespace gpusort::cpu::sort_internal {

GPUSORT_CPU_SORT_KEYS_OF(int32_t);
GPUSORT_CPU_SORT_KEYS_OF(uint32_t);
GPUSORT_CPU_SORT_KEYS_OF(float);

}  // namespace gpusort::cpu::sort_internal
