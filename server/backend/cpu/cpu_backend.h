// The CPU backend: exact Sort and TopK for every option of the API, on a TBB arena of its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/backend/backend.h"

namespace gpusort {

struct CpuBackendOptions {
  int threads = 0;  // 0 = all cores
};

std::unique_ptr<Backend> MakeCpuBackend(const CpuBackendOptions& options = {});

}  // namespace gpusort
