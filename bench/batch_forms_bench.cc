// The CUDA backend's two batch forms (server/backend/cuda/batch_sort.h) on the same batches: the row form
// (one segmented bitonic launch, each request a row padded to the longest) and the composite radix form
// (one radix sort over request << 32 | key bits). Whole call as the batcher makes it (host preparation,
// PCIe both ways, kernel), wall clock on the calling thread, and the kernel stage alone (CUDA events,
// from the report); median of 200 calls after 10 warm-up calls. u32 keys with indices, random.
// The result justifies AUTO's choice of the row form and its padding bound (kBatchRowsMaxPadding).
//
//   build/bin/batch_forms_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "server/backend/cuda/batch_sort.h"
#include "server/backend/cuda/device_context.h"
#include "server/core/dtype.h"
#include "tests/support/inputs.h"

namespace gpusort {
namespace {

struct Timing {
  double call_ms, kernel_ms;
};

double Median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

using FormFn = absl::Status (*)(DeviceContext&, const SortSpec&, std::span<BatchItem>, const std::string&);

Timing TimeForm(DeviceContext& context, FormFn form, const std::vector<std::vector<std::uint32_t>>& inputs) {
  SortSpec spec;
  spec.dtype = DType::kUInt32;
  spec.payload = SortPayload::kIndices;
  spec.stable = true;
  std::vector<std::vector<std::byte>> keys(inputs.size());
  std::vector<std::vector<std::int64_t>> indices(inputs.size());
  std::vector<ExecutionReport> reports(inputs.size());
  std::vector<BatchItem> items(inputs.size());
  std::vector<double> call_ms, kernel_ms;
  for (int run = 0; run < 210; ++run) {
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      keys[i].resize(inputs[i].size() * 4);
      std::memcpy(keys[i].data(), inputs[i].data(), keys[i].size());  // a fresh unsorted input every call
      indices[i].resize(inputs[i].size());
      reports[i] = ExecutionReport{};
      items[i].buffers.count = inputs[i].size();
      items[i].buffers.keys = keys[i];
      items[i].buffers.indices_out = indices[i];
      items[i].report = &reports[i];
    }
    const auto t0 = std::chrono::steady_clock::now();
    const absl::Status status = form(context, spec, items, "bench");
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!status.ok()) {
      std::fprintf(stderr, "batch failed: %s\n", std::string(status.message()).c_str());
      std::exit(1);
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {  // every request sorted, or the timing means nothing
      if (!std::is_sorted(reinterpret_cast<const std::uint32_t*>(keys[i].data()),
                          reinterpret_cast<const std::uint32_t*>(keys[i].data()) + inputs[i].size())) {
        std::fprintf(stderr, "FAIL: request %zu not sorted\n", i);
        std::exit(1);
      }
    }
    if (run < 10) continue;
    call_ms.push_back(ms);
    for (const StageTime& stage : reports[0].stages) {
      if (stage.stage == Stage::kKernel) kernel_ms.push_back(stage.seconds * 1e3);
    }
  }
  return {Median(call_ms), kernel_ms.empty() ? 0 : Median(kernel_ms)};
}

struct Shape {
  std::string name;
  std::vector<std::size_t> lengths;
};

std::vector<Shape> Shapes() {
  std::vector<Shape> shapes;
  for (std::size_t longest : {64, 256, 1024, 4096}) {  // 64 requests of longest/2 .. longest keys
    Shape s{"64 x " + std::to_string(longest / 2) + ".." + std::to_string(longest), {}};
    for (std::size_t i = 0; i < 64; ++i) s.lengths.push_back(longest / 2 + (i * 37) % (longest / 2 + 1));
    s.lengths[0] = longest;
    shapes.push_back(s);
  }
  for (std::size_t others : {2048, 1024, 512, 256, 128}) {  // one request of 4096 among 63 shorter
    Shape s{"4096 + 63 x " + std::to_string(others), std::vector<std::size_t>(64, others)};
    s.lengths[0] = 4096;
    shapes.push_back(s);
  }
  return shapes;
}

}  // namespace
}  // namespace gpusort

int main() {
  using namespace gpusort;
  auto context = DeviceContext::Create({});
  if (!context.ok()) {
    std::fprintf(stderr, "no GPU: %s\n", std::string(context.status().message()).c_str());
    return 2;
  }
  std::printf("| batch (requests x keys) | keys | padded / keys | rows call ms | radix call ms | rows kernel ms "
              "| radix kernel ms | radix / rows (call) |\n|---|---|---|---|---|---|---|---|\n");
  for (const Shape& shape : Shapes()) {
    std::vector<std::vector<std::uint32_t>> inputs;
    std::size_t keys = 0;
    for (std::size_t i = 0; i < shape.lengths.size(); ++i) {
      inputs.push_back(testing::MakeInput<std::uint32_t>(testing::Pattern::kRandom, shape.lengths[i], i + 1));
      keys += shape.lengths[i];
    }
    const std::size_t padded = shape.lengths.size() * *std::max_element(shape.lengths.begin(), shape.lengths.end());
    const Timing rows = TimeForm(**context, SortBatchAsRowsOnGpu, inputs);
    const Timing radix = TimeForm(**context, SortBatchOnGpu, inputs);
    std::printf("| %s | %zu | %.2f | %.3f | %.3f | %.4f | %.4f | %.2f |\n", shape.name.c_str(), keys,
                static_cast<double>(padded) / keys, rows.call_ms, radix.call_ms, rows.kernel_ms, radix.kernel_ms,
                radix.call_ms / rows.call_ms);
  }
  return 0;
}
