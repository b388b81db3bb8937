// SMALL_K top-k (kernels/top_k.h): radix select in registers and shared memory, one group of threads
// per row, or per slice of a long row followed by levels that select among the slices' candidates
// (top_k_levels.h). The device side is top_k_small_select.cuh.
//
// Group shapes (threads x entries per thread) by row length: a warp of 1 to 16 entries a lane for rows
// of up to 512 (four independent warps a block, so no block barriers), blocks of 128 x 8 to 512 x 16
// for rows of up to 8192, and slices of 8192 for longer rows; levels after the first read candidate
// lists with a block shape fitted to the list. A tile of 8192 holds 8 x kSmallTopKMaxK, so each level
// cuts a row's candidates at least eightfold.
#include <cstdint>
#include <vector>

#include "cuda_status.h"
#include "gpusort/kernels/top_k.h"
#include "top_k_levels.h"
#include "top_k_small_select.cuh"

namespace gpusort::kernels {
namespace small_top_k {
namespace {

enum class Shape : int { kWarp1, kWarp2, kWarp4, kWarp8, kWarp16, kWarp32, kBlock128x8, kBlock256x8, kBlock256x16, kBlock512x16 };
constexpr int kShapes = 10;
constexpr int kThreadsOf[kShapes] = {32, 32, 32, 32, 32, 32, 128, 256, 256, 512};
constexpr int kItemsOf[kShapes] = {1, 2, 4, 8, 16, 32, 8, 8, 16, 16};

std::size_t Tile(Shape s) {
  const int i = static_cast<int>(s);
  return static_cast<std::size_t>(kThreadsOf[i]) * kItemsOf[i];
}

// The shape whose tile first holds a row of `length` (level 0).
Shape FirstShape(std::size_t length) {
  if (length <= 32) return Shape::kWarp1;
  if (length <= 64) return Shape::kWarp2;
  if (length <= 128) return Shape::kWarp4;
  if (length <= 256) return Shape::kWarp8;
  if (length <= 512) return Shape::kWarp16;
  if (length <= 1024) return Shape::kBlock128x8;
  if (length <= 2048) return Shape::kBlock256x8;
  if (length <= 4096) return Shape::kBlock256x16;
  return Shape::kBlock512x16;
}

// Levels after the first read candidate lists (kReadPositions). Lists of up to 512 go to one warp
// each (four rows a block, no block barriers): on bfloat16 rows of 32000, k = 50, a 128-thread block
// per 200-candidate list left most of its threads idle through the barriers of the select and sort
// (H100: 0.1125 ms against 0.1134 with blocks; other shapes unchanged, BENCHMARKS.md).
Shape MergeShape(std::size_t length) {
  if (length <= 256) return Shape::kWarp8;
  if (length <= 512) return Shape::kWarp16;
  if (length <= 1024) return Shape::kBlock128x8;
  if (length <= 2048) return Shape::kBlock256x8;
  if (length <= 4096) return Shape::kBlock256x16;
  return Shape::kBlock512x16;
}

struct Plan {
  std::vector<top_k::Level> levels;
  std::vector<Shape> shapes;
  std::size_t temp_bytes = 0;
};

// first_shape < 0: by row length; else that shape for level 0 (timing experiments), where its tile
// holds at least 8k.
Plan MakePlan(const TopKArgs& a, int first_shape) {
  Plan plan;
  plan.levels = top_k::PlanLevels(a.row_length, a.k, [&](std::size_t length, bool first) {
    Shape s = first ? FirstShape(length) : MergeShape(length);
    if (first && first_shape >= 0 && first_shape < kShapes && Tile(static_cast<Shape>(first_shape)) >= 8 * a.k) {
      s = static_cast<Shape>(first_shape);
    }
    plan.shapes.push_back(s);
    return Tile(s);
  });
  plan.temp_bytes = top_k::CandidateTempBytes(plan.levels, a.rows, a.key_width);
  return plan;
}

template <typename Key, int kG, int kR, bool kRead>
Status Launch(const Key* in, const std::uint32_t* in_positions, const SelectJob& job, cudaStream_t stream) {
  constexpr int kPerBlock = GroupsPerBlock(kG);
  const std::uint64_t groups = job.rows * job.slices;
  const std::uint64_t blocks = (groups + kPerBlock - 1) / kPerBlock;
  const unsigned shared = kPerBlock * GroupSharedBytes<Key>(kR * (kG / 32), job.sort_size);
  auto* kernel = SelectKernel<Key, kG, kR, kRead>;
  if (shared > 48 * 1024) {
    GPUSORT_CUDA_RETURN_IF_ERROR(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared)));
  }
  kernel<<<static_cast<unsigned>(blocks), kG * kPerBlock, shared, stream>>>(in, in_positions, job);
  GPUSORT_CUDA_RETURN_IF_LAUNCH_FAILED("SMALL_K top-k select");
  return Status::Ok();
}

template <typename Key, bool kRead>
Status LaunchShape(Shape shape, const Key* in, const std::uint32_t* in_positions, const SelectJob& job,
                   cudaStream_t stream) {
  switch (shape) {
    case Shape::kBlock128x8: return Launch<Key, 128, 8, kRead>(in, in_positions, job, stream);
    case Shape::kBlock256x8: return Launch<Key, 256, 8, kRead>(in, in_positions, job, stream);
    case Shape::kBlock256x16: return Launch<Key, 256, 16, kRead>(in, in_positions, job, stream);
    case Shape::kBlock512x16: return Launch<Key, 512, 16, kRead>(in, in_positions, job, stream);
    default: break;
  }
  switch (shape) {  // candidate lists (kRead) take the warp shapes of MergeShape only
    case Shape::kWarp8: return Launch<Key, 32, 8, kRead>(in, in_positions, job, stream);
    case Shape::kWarp16: return Launch<Key, 32, 16, kRead>(in, in_positions, job, stream);
    default: break;
  }
  if constexpr (!kRead) {
    switch (shape) {
      case Shape::kWarp1: return Launch<Key, 32, 1, false>(in, in_positions, job, stream);
      case Shape::kWarp2: return Launch<Key, 32, 2, false>(in, in_positions, job, stream);
      case Shape::kWarp4: return Launch<Key, 32, 4, false>(in, in_positions, job, stream);
      case Shape::kWarp32: return Launch<Key, 32, 32, false>(in, in_positions, job, stream);
      default: break;
    }
  }
  return Status(StatusCode::kInternal, "SMALL_K top-k: no kernel for this shape");
}

template <typename Key>
Status RunLevels(const TopKArgs& a, const Plan& plan, void* temp, cudaStream_t stream) {
  const top_k::CandidateBuffers buffers = top_k::CarveCandidates(plan.levels, a.rows, a.key_width, temp);
  const std::size_t count = plan.levels.size();
  for (std::size_t j = 0; j < count; ++j) {
    const top_k::Level& level = plan.levels[j];
    SelectJob job;
    job.rows = a.rows;
    job.length = static_cast<std::uint32_t>(level.length);
    job.in_stride = level.length;
    job.slices = static_cast<std::uint32_t>(level.slices);
    job.k = static_cast<std::uint32_t>(a.k);
    job.last = j + 1 == count;
    if (job.last) {
      job.sort_size = a.sorted && a.k > 1 ? static_cast<std::uint32_t>(top_k::NextPow2(a.k)) : 0;
      job.out_keys = a.out_keys;
      job.out_positions = a.out_positions;
    } else {
      job.out_keys = buffers.keys[j % 2];
      job.candidate_positions = buffers.positions[j % 2];
      job.out_stride = plan.levels[j + 1].length;
    }
    if (j == 0) {
      const Status s = LaunchShape<Key, false>(plan.shapes[j], static_cast<const Key*>(a.keys), nullptr, job, stream);
      if (!s.ok()) return s;
    } else {
      const Status s = LaunchShape<Key, true>(plan.shapes[j], static_cast<const Key*>(buffers.keys[(j - 1) % 2]),
                                              buffers.positions[(j - 1) % 2], job, stream);
      if (!s.ok()) return s;
    }
  }
  return Status::Ok();
}

}  // namespace

// SmallTopK with level 0's shape chosen by the caller (timing experiments; -1: SmallTopK's choice).
// Not in the public header: the choice by row length is the API.
Status RunWithFirstShape(const TopKArgs& args, int first_shape, void* temp, std::size_t temp_bytes,
                         const Stream& stream) {
  GPUSORT_KERNELS_RETURN_IF_ERROR(top_k::CheckArgs(args, "SMALL_K", "kSmallTopKMaxK", kSmallTopKMaxK, true, true));
  if (args.rows == 0) return Status::Ok();
  const Plan plan = MakePlan(args, first_shape);
  GPUSORT_KERNELS_RETURN_IF_ERROR(top_k::CheckTemp("SMALL_K", temp, temp_bytes, plan.temp_bytes));
  if (args.out_keys == nullptr && args.out_positions == nullptr) return Status::Ok();  // nothing asked
  switch (args.key_width) {
    case KeyWidth::k16: return RunLevels<std::uint16_t>(args, plan, temp, Native(stream));
    case KeyWidth::k32: return RunLevels<std::uint32_t>(args, plan, temp, Native(stream));
    default: return RunLevels<std::uint64_t>(args, plan, temp, Native(stream));
  }
}

}  // namespace small_top_k

Status SmallTopKTempBytes(const TopKArgs& args, std::size_t* bytes) {
  if (bytes == nullptr) return Status(StatusCode::kInvalidArgument, "SMALL_K top-k: bytes is null");
  *bytes = 0;
  GPUSORT_KERNELS_RETURN_IF_ERROR(top_k::CheckArgs(args, "SMALL_K", "kSmallTopKMaxK", kSmallTopKMaxK, false, true));
  if (args.rows == 0) return Status::Ok();
  *bytes = small_top_k::MakePlan(args, -1).temp_bytes;
  return Status::Ok();
}

Status SmallTopK(const TopKArgs& args, void* temp, std::size_t temp_bytes, const Stream& stream) {
  return small_top_k::RunWithFirstShape(args, -1, temp, temp_bytes, stream);
}

}  // namespace gpusort::kernels
