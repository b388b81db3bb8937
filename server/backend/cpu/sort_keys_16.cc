// The CPU sort for the 16-bit key types (sort_typed.h says why the widths compile apart).
#include "server/backend/cpu/sort_typed.h"

namespace gpusort::cpu::sort_internal {

GPUSORT_CPU_SORT_KEYS_OF(int16_t);
GPUSORT_CPU_SORT_KEYS_OF(uint16_t);
GPUSORT_CPU_SORT_KEYS_OF(Float16);
GPUSORT_CPU_SORT_KEYS_OF(BFloat16);

}  // namespace gpusort::cpu::sort_internal
