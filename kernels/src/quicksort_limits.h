// QUICKSORT's limits (quicksort.cu), and a way for tests to lower them so that small inputs take the
// paths only adversarial or very large ones would (the work list, one block's quicksort, the network
// fallback). Internal: not part of the kernels API.
#pragma once

namespace gpusort::kernels {

struct QuicksortLimits {
  // Device-launched grids nest at most this deep (the device runtime allows 24; the fill grids a
  // partition launches sit one level below it). A deeper range goes on the work list.
  int max_grid_depth = 20;
  // One block's quicksort of a work-list range recurses at most this deep before the bitonic fallback.
  int max_block_depth = 40;
  // Device launches one sort may make: partitions and fills. Keeps a sort far inside the device
  // runtime's default pool of 2048 pending launches (see quicksort.cu).
  unsigned launch_budget = 768;
};

// Every later Quicksort call in the process uses `limits`, each clamped to the defaults above.
void SetQuicksortLimitsForTesting(const QuicksortLimits& limits);

}  // namespace gpusort::kernels
