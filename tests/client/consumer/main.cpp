// Sorts five keys through the server at argv[1]; exit 0 when the answer is right.
#include <cstdio>
#include <vector>

#include <gpusort/client.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer HOST:PORT\n");
    return 2;
  }
  gpusort::Client client({.target = argv[1], .timeout = std::chrono::seconds(10)});
  const std::vector<int32_t> keys = {5, -3, 9, 0, -3};
  auto sorted = client.Sort(keys);
  if (!sorted.ok()) {
    std::fprintf(stderr, "sort failed: %s\n", sorted.status().ToString().c_str());
    return 1;
  }
  const std::vector<int32_t> expected = {-3, -3, 0, 5, 9};
  std::printf("consumer: sorted on %s\n", sorted->info.device().c_str());
  return sorted->keys == expected ? 0 : 1;
}
