// A base for test stand-ins that implement a whole-array Sort and TopK, as engines did before the one
// seam (server/backend/backend.h): Run goes through RunInOwnMemory (registered memory on private copies,
// device regions refused), so that a stand-in writes only the two calls it cares about.
#pragma once

#include "server/backend/backend.h"

namespace gpusort::testing {

class OwnMemoryBackend : public Backend {
 public:
  absl::Status Run(const Job& job) override {
    return RunInOwnMemory(
        job, [&](const SortSpec& s, const SortBuffers& b) { return Sort(s, b, job.cancellation, job.report); },
        [&](const TopKSpec& s, const TopKBuffers& b) { return TopK(s, b, job.cancellation, job.report); });
  }
  virtual absl::Status Sort(const SortSpec& spec, const SortBuffers& buffers, const Cancellation& cancellation,
                            ExecutionReport& report) = 0;
  virtual absl::Status TopK(const TopKSpec& spec, const TopKBuffers& buffers, const Cancellation& cancellation,
                            ExecutionReport& report) = 0;
};

}  // namespace gpusort::testing
