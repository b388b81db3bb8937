// The CPU sort for the 8-bit key types (sort_typed.h says why the widths compile apart).
#include "server/backend/cpu/sort_typed.h"

namespace gpusort::cpu::sort_internal {

GPUSORT_CPU_SORT_KEYS_OF(int8_t);
GPUSORT_CPU_SORT_KEYS_OF(uint8_t);

}  // namespace gpusort::cpu::sort_internal
