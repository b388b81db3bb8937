// A Sort call's bytes off the network, through everything the server does with them before a backend
// sees them (unary_calls.cc, SortCall::Prepare): parse, decode the options, check the array sizes, size
// the answer, and for a shared-memory request resolve its regions, here against a server with none
// registered. Every step must answer with a status, never crash, and what it accepts must be consistent.
#include <cstddef>
#include <cstdint>
#include <limits>

#include "fuzz_check.h"
#include "gpusort/v1/sort.pb.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/transport/region_requests.h"
#include "server/transport/request_decode.h"
#include "server/service/shared_regions.h"

namespace {

using namespace gpusort;

SharedRegions& NoRegions() {
  static std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = 1});
  static SharedRegions regions(*backend, SharedRegionLimits{});
  return regions;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size > static_cast<std::size_t>(std::numeric_limits<int>::max())) return 0;
  v1::SortRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  absl::StatusOr<SortSpec> spec = DecodeSortOptions(request.options());
  if (!spec.ok()) {
    FUZZ_CHECK(spec.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  // What the backends take on trust from a decoded spec.
  if (spec->payload == SortPayload::kValues) {
    FUZZ_CHECK(spec->value_width >= 1 && spec->value_width <= 256);
  } else {
    FUZZ_CHECK(spec->value_width == 0);
  }
  if (request.has_keys_region()) {
    absl::StatusOr<SortRegions> regions = ResolveSortRegions(NoRegions(), request, *spec);
    FUZZ_CHECK(!regions.ok());  // no region is registered, so no request may resolve to one
    return 0;
  }
  const std::size_t key_bytes = request.keys().size(), value_bytes = request.values().size();
  absl::StatusOr<std::size_t> n = CheckSortSizes(*spec, key_bytes, value_bytes);
  if (!n.ok()) return 0;
  const std::size_t width = ElementSize(spec->dtype);
  FUZZ_CHECK(*n * width == key_bytes);
  FUZZ_CHECK(value_bytes == (spec->payload == SortPayload::kValues ? *n * spec->value_width : 0));
  const std::size_t answer = SortResponseBytes(*spec, *n);
  FUZZ_CHECK(answer == key_bytes + value_bytes + (spec->payload == SortPayload::kIndices ? *n * 8 : 0));
  return 0;
}
