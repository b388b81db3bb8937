#include "server/service/region_id.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace gpusort {

absl::StatusOr<std::string> NewRegionId() {
  std::uint8_t bytes[kRegionIdHexDigits / 2];
  std::size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::InternalError(std::string("no random bytes for a region id: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  id.reserve(kRegionIdHexDigits);
  for (std::uint8_t b : bytes) {
    id.push_back(kHex[b >> 4]);
    id.push_back(kHex[b & 0xf]);
  }
  return id;
}

std::string RegionIdForLog(const std::string& id) { return id.substr(0, 8) + "..."; }

}  // namespace gpusort
