// Region ids (RegionRef.region_id): 128 bits from the kernel's random source, as 32 lowercase hex
// digits. An id is the only thing a Sort or TopK call shows to use a region, so it must not be
// guessable, not even by a caller who saw many others (ids used to come from a generator seeded with
// 32 bits).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace gpusort {

inline constexpr std::size_t kRegionIdHexDigits = 32;

// INTERNAL only when the kernel gives no random bytes (getrandom failing is not expected on Linux).
absl::StatusOr<std::string> NewRegionId();

// The first few digits of an id, for log lines: enough to follow a region through the log without
// writing there the whole id, which is what grants use of the region.
std::string RegionIdForLog(const std::string& id);

}  // namespace gpusort
