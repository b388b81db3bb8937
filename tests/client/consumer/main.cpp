// Uses an installed gpusort the way another service would, against the server at argv[1]: a sort, a
// sort with typed values (the vector overload), and a top-k with the library's defaults (k = 10, as the
// CLI's). Exit 0 when every answer is right. Built with -Wall -Wextra -Werror as C++17 (CMakeLists.txt).
#include <algorithm>
#include <cstdio>
#include <numeric>
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

  const std::vector<double> values = {0.5, 1.5, 2.5, 3.5, 4.5};
  auto with_values = client.SortWithValues(keys, values, {.stable = true});
  if (!with_values.ok()) {
    std::fprintf(stderr, "sort with values failed: %s\n", with_values.status().ToString().c_str());
    return 1;
  }
  if (with_values->second != std::vector<double>{1.5, 4.5, 3.5, 0.5, 2.5}) return 1;

  std::vector<float> scores(1000);
  std::iota(scores.begin(), scores.end(), 0.0f);
  std::reverse(scores.begin(), scores.begin() + 500);
  auto top = client.TopK(scores);  // k = 10, largest first, sorted, values and indices
  if (!top.ok() || top->values.size() != 10 || top->values.front() != 999.0f || top->indices.front() != 999) {
    std::fprintf(stderr, "top-k failed or wrong\n");
    return 1;
  }
  std::printf("consumer: sorted on %s\n", sorted->info.device().c_str());
  return 0;
}
