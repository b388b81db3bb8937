// Uses an installed gpusort the way another service would, against the server at argv[1]: a sort, a
// sort with typed values (the vector overload), a raw float16 sort with the client's own dtype names,
// and a top-k with the library's defaults (k = 10, as the CLI's). Exit 0 when every answer is right.
// Built with -Wall -Wextra -Werror as C++17 (CMakeLists.txt), from gpusort/client.h alone: no gRPC or
// protobuf type is named here, and the header needs none (consumer_test.sh checks what it includes).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <gpusort/client.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer HOST:PORT\n");
    return 2;
  }
  // The header's designated-initializer style, which must not warn (-Wmissing-field-initializers).
  gpusort::Client client({.target = argv[1], .timeout = std::chrono::seconds(10)});
  const std::vector<int32_t> keys = {5, -3, 9, 0, -3};
  auto sorted = client.Sort(keys);
  if (!sorted.ok()) {
    std::fprintf(stderr, "sort failed: %s\n", sorted.status().ToString().c_str());
    return 1;
  }
  if (sorted->keys != std::vector<int32_t>{-3, -3, 0, 5, 9}) return 1;
  static_assert(gpusort::WireDTypeOf<int32_t>() == gpusort::client::DType::kInt32);
  if (sorted->info.backend != gpusort::client::Backend::kCpu || sorted->info.stages.empty()) {
    std::fprintf(stderr, "the sort's ExecutionInfo says %s with %zu stages\n",
                 std::string(gpusort::client::WireName(sorted->info.backend)).c_str(), sorted->info.stages.size());
    return 1;
  }

  const std::vector<double> values = {0.5, 1.5, 2.5, 3.5, 4.5};
  auto with_values = client.SortWithValues(keys, values, {.stable = true});
  if (!with_values.ok()) {
    std::fprintf(stderr, "sort with values failed: %s\n", with_values.status().ToString().c_str());
    return 1;
  }
  if (with_values->second != std::vector<double>{1.5, 4.5, 3.5, 0.5, 2.5}) return 1;

  // float16 has no C++17 type: its bits go through the raw call (1.0, -2.0, 0.5, -0.0, +0.0).
  const std::vector<uint16_t> halves = {0x3C00, 0xC000, 0x3800, 0x8000, 0x0000};
  std::string half_bytes(halves.size() * sizeof(uint16_t), '\0');
  std::memcpy(half_bytes.data(), halves.data(), half_bytes.size());
  auto raw = client.SortRaw({.dtype = gpusort::client::DType::kFloat16,
                             .keys = half_bytes,
                             .options = {.descending = true},
                             .payload = gpusort::client::Payload::kIndices});
  if (!raw.ok()) {
    std::fprintf(stderr, "raw float16 sort failed: %s\n", raw.status().ToString().c_str());
    return 1;
  }
  std::vector<uint16_t> sorted_halves(halves.size());
  std::vector<int64_t> order(halves.size());
  if (raw->keys.size() != half_bytes.size() || raw->indices.size() != order.size() * sizeof(int64_t)) return 1;
  std::memcpy(sorted_halves.data(), raw->keys.data(), raw->keys.size());
  std::memcpy(order.data(), raw->indices.data(), raw->indices.size());
  if (sorted_halves != std::vector<uint16_t>{0x3C00, 0x3800, 0x0000, 0x8000, 0xC000}) return 1;
  if (order != std::vector<int64_t>{0, 2, 4, 3, 1}) return 1;

  std::vector<float> scores(1000);
  std::iota(scores.begin(), scores.end(), 0.0f);
  std::reverse(scores.begin(), scores.begin() + 500);
  auto top = client.TopK(scores);  // k = 10, largest first, sorted, values and indices
  if (!top.ok() || top->values.size() != 10 || top->values.front() != 999.0f || top->indices.front() != 999) {
    std::fprintf(stderr, "top-k failed or wrong\n");
    return 1;
  }
  std::printf("consumer: sorted on %s (%s)\n", sorted->info.device.c_str(),
              std::string(gpusort::client::WireName(sorted->info.algorithm)).c_str());
  return 0;
}
