// The stages a request can pass through, each with the one name that the reply's ExecutionInfo, the
// `gpusort_stage_duration_seconds{stage}` metric, the proto's StageTime comment and the docs use. A new
// stage is a new enumerator and a new row of kStageNames; nothing else spells a stage's name.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace gpusort {

enum class Stage {
  kReceive,       // a stream's messages taken in (SortStream, TopKStream)
  kValidate,      // the request decoded and checked
  kPartsWait,     // a part of a parted Sort waiting for its sibling parts
  kQueue,         // waiting for a worker thread
  kSnapshot,      // shared-memory keys copied into private memory before a CPU sort
  kStreamWait,    // waiting for one of the GPU's streams
  kPrepare,       // the reply's buffers made ready for the results (unary Sort)
  kH2d,           // keys copied to the GPU
  kKernel,        // the GPU's kernels
  kD2h,           // results copied back from the GPU
  kSort,          // a CPU sort
  kSelect,        // a CPU top-k selection
  kGather,        // values moved into their sorted order (CPU)
  kMerge,         // sorted runs merged on the host (an array split across GPUs, or larger than one GPU)
  kDeviceMerge,   // sorted runs merged on the GPU and copied back (runs kept on the GPU, or in pinned host
                  // memory where the GPU cannot hold them: too many keys for one pass)
  kWriteBack,     // results written back to a shared-memory region
  kSend,          // a stream's answer written out
};

inline constexpr std::size_t kStageCount = static_cast<std::size_t>(Stage::kSend) + 1;

inline constexpr std::array<std::string_view, kStageCount> kStageNames = {
    "receive", "validate", "parts_wait", "queue",        "snapshot",   "stream_wait", "prepare",
    "h2d",     "kernel",   "d2h",        "sort",         "select",     "gather",      "merge",
    "device_merge", "write_back", "send",
};

constexpr std::string_view StageName(Stage stage) { return kStageNames[static_cast<std::size_t>(stage)]; }

}  // namespace gpusort
