#include "server/transport/descriptor_limit.h"

#include <sys/resource.h>

#include <algorithm>

#include <spdlog/spdlog.h>

namespace gpusort {

std::size_t DescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1 << 20;
  return static_cast<std::size_t>(limit.rlim_cur);
}

std::size_t RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return DescriptorLimit();
  const rlim_t before = limit.rlim_cur;
  if (limit.rlim_cur != limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) limit.rlim_cur = before;
  }
  if (limit.rlim_cur != before) {
    spdlog::info("descriptor limit raised from {} to {} (the hard limit)", before, limit.rlim_cur);
  } else {
    spdlog::info("descriptor limit {} (the hard limit)", limit.rlim_cur);
  }
  if (DescriptorLimit() < kDescriptorsForThePromises) {
    spdlog::warn("a descriptor limit of {} is below {}: callers holding connections open can leave too few "
                 "descriptors for the server's own work (SECURITY.md, \"Running out of descriptors\")",
                 DescriptorLimit(), kDescriptorsForThePromises);
  }
  return DescriptorLimit();
}

DescriptorShares SharesOf(std::size_t limit) {
  const std::size_t usable = limit > kDescriptorReserve ? limit - kDescriptorReserve : 0;
  const auto share = [usable](std::size_t parts) { return std::max<std::size_t>(16, usable / parts); };
  return {.grpc_connections = std::max<std::size_t>(16, usable / 8 * 3),
          .health_connections = share(32),
          .data_connections = share(8),
          .shm_call_connections = share(8),
          .shm_pending_connections = share(16),
          .caller_descriptors_closing = share(16),
          .metrics_connections = share(64)};
}

}  // namespace gpusort
