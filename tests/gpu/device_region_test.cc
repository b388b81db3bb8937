// Device regions end to end (issue 16; sort.proto, "Device memory"): this process plays the caller on the
// same node. It allocates device memory exportable as a descriptor (kernels::ExportableDeviceMemory),
// registers it with an in-process server on the CUDA backend over the shared-memory socket, names ranges
// of it in Sort and TopK requests, and reads the answers back from the device to check them against
// the references. Skips where no GPU is usable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gpusort/kernels/memory.h"
#include "gpusort/kernels/runtime.h"
#include "gpusort/kernels/shared_device_memory.h"
#include "gpusort/shared_memory.h"
#include "server/backend/cuda_backend.h"
#include "tests/service/health_check.h"
#include "tests/service/rpc_calls.h"
#include "tests/service/shm_test_support.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

using ::testing::HasSubstr;

// Device memory of this "caller", registered as a device region of `server`.
class DeviceArray {
 public:
  DeviceArray(const TestServer& server, std::size_t bytes, int device = 0) : device_(device) {
    const kernels::Status allocated = kernels::ExportableDeviceMemory::Allocate(bytes, device, &memory_);
    if (!allocated.ok()) {
      ADD_FAILURE() << "allocating exportable device memory: " << allocated.message();
      return;
    }
    int fd = -1;
    const kernels::Status exported = memory_.ExportFd(&fd);
    if (!exported.ok()) {
      ADD_FAILURE() << "exporting it: " << exported.message();
      return;
    }
    auto registration = SharedMemoryRegistration::RegisterDeviceMemory(server.shm_socket(), fd, bytes);
    close(fd);  // the server holds the memory from here on
    status_ = registration.status();
    if (registration.ok()) registration_ = *std::move(registration);
  }

  const absl::Status& status() const { return status_; }
  // As a raw request names it (the test calls the service's stub itself).
  v1::RegionRef Ref(std::size_t offset, std::size_t length) const {
    return WireRef(registration_->Ref(offset, length));
  }
  v1::RegionRef Whole() const { return Ref(0, memory_.size()); }
  void Unregister() { registration_.reset(); }
  void FreeOnTheCallersSide() { memory_ = kernels::ExportableDeviceMemory(); }

  template <typename T>
  void Put(const std::vector<T>& v, std::size_t offset = 0) {
    Copy(static_cast<std::byte*>(memory_.data()) + offset, v.data(), v.size() * sizeof(T));
  }
  template <typename T>
  std::vector<T> Get(std::size_t count, std::size_t offset = 0) const {
    std::vector<T> v(count);
    Copy(v.data(), static_cast<const std::byte*>(memory_.data()) + offset, count * sizeof(T));
    return v;
  }

 private:
  // On the memory's own GPU (the only one its mapping in this process grants access to), then back to
  // GPU 0, this thread's GPU otherwise.
  void Copy(void* dst, const void* src, std::size_t bytes) const {
    ASSERT_TRUE(kernels::UseDevice(device_).ok());
    {
      kernels::Stream stream;
      ASSERT_TRUE(kernels::Stream::Create(&stream).ok());
      ASSERT_TRUE(kernels::CopyAnyAsync(dst, src, bytes, stream).ok());
      ASSERT_TRUE(stream.Synchronize().ok());
    }
    ASSERT_TRUE(kernels::UseDevice(0).ok());
  }

  int device_;
  kernels::ExportableDeviceMemory memory_;
  std::unique_ptr<SharedMemoryRegistration> registration_;
  absl::Status status_ = absl::UnknownError("not registered");
};

// A server on the CUDA backend with the shared-memory socket, or nullptr (and a skip) without a GPU.
std::unique_ptr<TestServer> GpuServer() {
  auto backend = MakeCudaBackend({});
  if (!backend.ok()) return nullptr;
  ServerConfig config = ShmConfig();
  config.backend = "cuda";
  return std::make_unique<TestServer>(config, std::move(*backend));
}

void ExpectServing(TestServer& server) {
  EXPECT_EQ(CheckHealth(server.channel(), "gpusort.v1.SortService"), HealthStatus::SERVING);
}

#define GPU_SERVER_OR_SKIP(name)                                  \
  std::unique_ptr<TestServer> name = GpuServer();                 \
  if (name == nullptr) GTEST_SKIP() << "no usable GPU (CUDA backend did not start)"

v1::SortRequest SortRequestOf(v1::DType dtype, v1::Order order, v1::Payload payload) {
  v1::SortRequest request;
  request.mutable_options()->set_dtype(dtype);
  request.mutable_options()->set_order(order);
  request.mutable_options()->set_payload(payload);
  return request;
}

TEST(DeviceRegions, SortReadsAndWritesTheCallersDeviceMemory) {
  GPU_SERVER_OR_SKIP(server);
  // In place with indices (u32), and into another range of another region (floats with every special
  // value, descending); sizes off powers of two.
  for (std::size_t n : {std::size_t{1}, std::size_t{4097}, (std::size_t{1} << 20) + 3}) {
    const auto keys = MakeInput<uint32_t>(Pattern::kRandom, n, n);
    DeviceArray region(*server, n * 4 + 64);
    DeviceArray indices(*server, n * 8);
    ASSERT_TRUE(region.status().ok()) << region.status();
    ASSERT_TRUE(indices.status().ok()) << indices.status();
    region.Put(keys, 64);
    v1::SortRequest request = SortRequestOf(v1::DTYPE_UINT32, v1::ORDER_ASCENDING, v1::PAYLOAD_INDICES);
    *request.mutable_keys_region() = region.Ref(64, n * 4);
    *request.mutable_output_region() = region.Ref(64, n * 4);
    *request.mutable_indices_region() = indices.Ref(0, n * 8);
    const CallResult call = CallSort(server->stub(), request, "device-sort-u32");
    ASSERT_TRUE(call.status.ok()) << n << ": " << call.status.error_message();
    EXPECT_EQ(call.info.backend(), v1::BACKEND_CUDA);
    EXPECT_TRUE(call.keys.empty());
    EXPECT_EQ(region.Get<uint32_t>(n, 64), ReferenceSort(keys, SortOrder::kAscending)) << n;
    EXPECT_EQ(indices.Get<int64_t>(n), ReferenceStableArgsort(keys, SortOrder::kAscending)) << n;
  }
  const std::size_t n = (std::size_t{1} << 18) + 5;
  const auto floats = MakeInput<float>(Pattern::kSpecials, n, 7);
  DeviceArray in(*server, n * 4), out(*server, n * 4);
  ASSERT_TRUE(in.status().ok() && out.status().ok());
  in.Put(floats);
  v1::SortRequest request = SortRequestOf(v1::DTYPE_FLOAT32, v1::ORDER_DESCENDING, v1::PAYLOAD_NONE);
  *request.mutable_keys_region() = in.Whole();
  *request.mutable_output_region() = out.Whole();
  const CallResult call = CallSort(server->stub(), request, "device-sort-f32");
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  EXPECT_TRUE(SameBits(out.Get<float>(n), ReferenceSort(floats, SortOrder::kDescending)));
  EXPECT_TRUE(SameBits(in.Get<float>(n), floats)) << "the keys' own range was written";

  // 16-bit keys (widened to 32 bits on the device and narrowed back into the caller's range), descending,
  // with indices, in place.
  const auto shorts = MakeInput<int16_t>(Pattern::kFewDistinct, n, 9);
  DeviceArray narrow(*server, n * 2), narrow_indices(*server, n * 8);
  ASSERT_TRUE(narrow.status().ok() && narrow_indices.status().ok());
  narrow.Put(shorts);
  v1::SortRequest narrow_request = SortRequestOf(v1::DTYPE_INT16, v1::ORDER_DESCENDING, v1::PAYLOAD_INDICES);
  *narrow_request.mutable_keys_region() = narrow.Whole();
  *narrow_request.mutable_output_region() = narrow.Whole();
  *narrow_request.mutable_indices_region() = narrow_indices.Whole();
  const CallResult narrow_call = CallSort(server->stub(), narrow_request, "device-sort-i16");
  ASSERT_TRUE(narrow_call.status.ok()) << narrow_call.status.error_message();
  EXPECT_EQ(narrow.Get<int16_t>(n), ReferenceSort(shorts, SortOrder::kDescending));
  EXPECT_EQ(narrow_indices.Get<int64_t>(n), ReferenceStableArgsort(shorts, SortOrder::kDescending));
}

// Unsigned keys alone, ascending, from one range into another: the ordered bits are the keys, so the
// sort reads the caller's input and writes its output with nothing copied (SortJob::SortsWhereKeysLie).
// Every pattern (all equal and sorted included: few or no varying bits), both widths, one key and
// none-varying sizes; an input left as it was; and an in-place sort, which must take the copying path.
TEST(DeviceRegions, UnsignedKeysSortFromTheCallersInputIntoItsOutput) {
  GPU_SERVER_OR_SKIP(server);
  for (Pattern pattern : kAllPatterns) {
    for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{4099}, (std::size_t{1} << 20) + 7}) {
      const auto u32 = MakeInput<uint32_t>(pattern, n, n + 1);
      const auto u64 = MakeInput<uint64_t>(pattern, n, n + 2);
      DeviceArray in(*server, n * 8), out(*server, n * 8 + 8);
      ASSERT_TRUE(in.status().ok() && out.status().ok());
      in.Put(u32);
      v1::SortRequest request = SortRequestOf(v1::DTYPE_UINT32, v1::ORDER_ASCENDING, v1::PAYLOAD_NONE);
      *request.mutable_keys_region() = in.Ref(0, n * 4);
      *request.mutable_output_region() = out.Ref(8, n * 4);  // an offset: not the start of the mapping
      CallResult call = CallSort(server->stub(), request, "device-sort-u32-direct");
      ASSERT_TRUE(call.status.ok()) << PatternName(pattern) << " " << n << ": " << call.status.error_message();
      EXPECT_EQ(out.Get<uint32_t>(n, 8), ReferenceSort(u32, SortOrder::kAscending)) << PatternName(pattern) << n;
      EXPECT_EQ(in.Get<uint32_t>(n), u32) << "the input changed: " << PatternName(pattern) << n;
      in.Put(u64);
      request.mutable_options()->set_dtype(v1::DTYPE_UINT64);
      *request.mutable_keys_region() = in.Ref(0, n * 8);
      *request.mutable_output_region() = out.Ref(8, n * 8);
      call = CallSort(server->stub(), request, "device-sort-u64-direct");
      ASSERT_TRUE(call.status.ok()) << PatternName(pattern) << " " << n << ": " << call.status.error_message();
      EXPECT_EQ(out.Get<uint64_t>(n, 8), ReferenceSort(u64, SortOrder::kAscending)) << PatternName(pattern) << n;
      EXPECT_EQ(in.Get<uint64_t>(n), u64) << "the input changed: " << PatternName(pattern) << n;
      if (HasFailure()) return;
    }
  }
  // In place (the output is the input's own range; a partial overlap is refused before this): sorted
  // through the job's own buffers, since CUB cannot read and write one range.
  const std::size_t n = 100003;
  const auto keys = MakeInput<uint32_t>(Pattern::kRandom, n, 3);
  DeviceArray region(*server, n * 4);
  ASSERT_TRUE(region.status().ok());
  region.Put(keys);
  v1::SortRequest request = SortRequestOf(v1::DTYPE_UINT32, v1::ORDER_ASCENDING, v1::PAYLOAD_NONE);
  *request.mutable_keys_region() = region.Whole();
  *request.mutable_output_region() = region.Whole();
  const CallResult call = CallSort(server->stub(), request, "device-sort-in-place");
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  EXPECT_EQ(region.Get<uint32_t>(n), ReferenceSort(keys, SortOrder::kAscending));
}

// Rows and segments where the keys lie (RowSortJob between the caller's ranges): rows in place with
// indices per row, segments of every kind of length into another range, a named BITONIC, on GPU
// `device` (the server works on GPU 0).
void ExpectDeviceRowsAndSegments(TestServer& server, int device) {
  const std::size_t rows = 513, length = 300, n = rows * length;
  const auto floats = MakeInput<float>(Pattern::kSpecials, n, 23);
  DeviceArray keys(server, n * 4, device), indices(server, n * 8, device), out(server, n * 8, device);
  ASSERT_TRUE(keys.status().ok() && indices.status().ok() && out.status().ok());
  keys.Put(floats);
  v1::SortRequest request = SortRequestOf(v1::DTYPE_FLOAT32, v1::ORDER_DESCENDING, v1::PAYLOAD_INDICES);
  request.mutable_options()->set_rows(rows);
  request.mutable_options()->set_stable(true);  // indices of equal keys in input order, as the reference's
  *request.mutable_keys_region() = keys.Whole();
  *request.mutable_output_region() = keys.Whole();
  *request.mutable_indices_region() = indices.Whole();
  const CallResult by_rows = CallSort(server.stub(), request, "device-rows");
  ASSERT_TRUE(by_rows.status.ok()) << by_rows.status.error_message();
  EXPECT_EQ(by_rows.info.algorithm(), v1::ALGORITHM_BITONIC);
  EXPECT_TRUE(SameBits(keys.Get<float>(n), ReferenceRowSort(floats, rows, SortOrder::kDescending)));
  EXPECT_EQ(indices.Get<int64_t>(n), ReferenceRowStableArgsort(floats, rows, SortOrder::kDescending));

  // Segments, one longer than a tile (CUB's segmented sort for it, tiles for the rest), u64 keys.
  const auto longs = MakeInput<uint64_t>(Pattern::kRandom, n, 29);
  const std::vector<uint64_t> offsets = SegmentOffsetsOf(n, {0, 1, 9, 5000, 0, 4096, 257, 1});
  keys.Put(std::vector<uint32_t>(n, 7));  // not read: the keys are in `out`
  out.Put(longs);
  v1::SortRequest segments = SortRequestOf(v1::DTYPE_UINT64, v1::ORDER_ASCENDING, v1::PAYLOAD_INDICES);
  segments.mutable_options()->set_segment_offsets(
      std::string(reinterpret_cast<const char*>(offsets.data()), offsets.size() * sizeof(uint64_t)));
  segments.mutable_options()->set_stable(true);
  DeviceArray sorted(server, n * 8, device);
  ASSERT_TRUE(sorted.status().ok());
  *segments.mutable_keys_region() = out.Whole();
  *segments.mutable_output_region() = sorted.Whole();
  *segments.mutable_indices_region() = indices.Whole();
  const CallResult by_segments = CallSort(server.stub(), segments, "device-segments");
  ASSERT_TRUE(by_segments.status.ok()) << by_segments.status.error_message();
  EXPECT_EQ(sorted.Get<uint64_t>(n), ReferenceSegmentSort(longs, offsets, SortOrder::kAscending));
  EXPECT_EQ(indices.Get<int64_t>(n), ReferenceSegmentStableArgsort(longs, offsets, SortOrder::kAscending));
  EXPECT_EQ(out.Get<uint64_t>(n), longs) << "the input range was changed";

  // BITONIC by name, int16 rows of 1024, keys only, in place.
  const auto shorts = MakeInput<int16_t>(Pattern::kFewDistinct, 64 * 1024, 31);
  keys.Put(shorts);
  v1::SortRequest bitonic = SortRequestOf(v1::DTYPE_INT16, v1::ORDER_ASCENDING, v1::PAYLOAD_NONE);
  bitonic.mutable_options()->set_rows(64);
  bitonic.mutable_options()->set_algorithm(v1::ALGORITHM_BITONIC);
  *bitonic.mutable_keys_region() = keys.Ref(0, shorts.size() * 2);
  *bitonic.mutable_output_region() = keys.Ref(0, shorts.size() * 2);
  const CallResult named = CallSort(server.stub(), bitonic, "device-rows-bitonic");
  ASSERT_TRUE(named.status.ok()) << named.status.error_message();
  EXPECT_EQ(keys.Get<int16_t>(shorts.size()), ReferenceRowSort(shorts, 64, SortOrder::kAscending));
}

TEST(DeviceRegions, RowsAndSegmentsSortWhereTheKeysLie) {
  GPU_SERVER_OR_SKIP(server);
  ExpectDeviceRowsAndSegments(*server, 0);
  ExpectServing(*server);
}

template <typename T>
void ExpectDeviceTopK(TestServer& server, v1::DType dtype, std::size_t rows, std::size_t length, std::size_t k,
                      bool largest, Pattern pattern, int device = 0) {
  const std::size_t n = rows * length, results = rows * k;
  const auto keys = MakeInput<T>(pattern, n, n + k);
  DeviceArray in(server, n * sizeof(T), device), values(server, results * sizeof(T), device),
      indices(server, results * 8, device);
  ASSERT_TRUE(in.status().ok() && values.status().ok() && indices.status().ok()) << in.status();
  in.Put(keys);
  v1::TopKRequest request;
  request.mutable_options()->set_dtype(dtype);
  request.mutable_options()->set_k(k);
  request.mutable_options()->set_rows(rows);
  request.mutable_options()->set_largest(largest);
  request.mutable_options()->set_sorted(true);
  *request.mutable_keys_region() = in.Whole();
  *request.mutable_values_region() = values.Whole();
  *request.mutable_indices_region() = indices.Whole();
  const std::string what = "rows=" + std::to_string(rows) + " length=" + std::to_string(length) +
                           " k=" + std::to_string(k) + " " + PatternName(pattern) + " on GPU " +
                           std::to_string(device);
  const CallResult call = CallTopK(server.stub(), request, "device-top-k");
  ASSERT_TRUE(call.status.ok()) << what << ": " << call.status.error_message();
  EXPECT_EQ(call.info.backend(), v1::BACKEND_CUDA) << what;
  const TopKAnswer<T> want = ReferenceTopK(keys, rows, k, largest);
  EXPECT_TRUE(SameBits(values.Get<T>(results), want.values)) << what;
  EXPECT_EQ(indices.Get<int64_t>(results), want.indices) << what;
}

TEST(DeviceRegions, TopKSelectsFromTheCallersDeviceMemory) {
  GPU_SERVER_OR_SKIP(server);
  for (Pattern pattern : {Pattern::kRandom, Pattern::kSpecials, Pattern::kFewDistinct}) {
    // One long row (radix select reading the raw keys where they lie, bfloat16 and float16 at 16 bits),
    // many rows (SMALL_K), a k past SMALL_K's limit (sorted rows).
    ExpectDeviceTopK<float>(*server, v1::DTYPE_FLOAT32, 1, (1 << 20) + 3, 200, true, pattern);
    ExpectDeviceTopK<BFloat16>(*server, v1::DTYPE_BFLOAT16, 1, (1 << 20) + 5, 300, true, pattern);
    ExpectDeviceTopK<Float16>(*server, v1::DTYPE_FLOAT16, 1, (1 << 20) + 1, 100, false, pattern);
    ExpectDeviceTopK<Float16>(*server, v1::DTYPE_FLOAT16, 1, (1 << 22) + 1, 100, true, pattern);
    ExpectDeviceTopK<BFloat16>(*server, v1::DTYPE_BFLOAT16, 128, 4099, 150, false, pattern);
    ExpectDeviceTopK<int64_t>(*server, v1::DTYPE_INT64, 64, 3000, 2000, true, pattern);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(DeviceRegions, BadReferencesAndMixedKindsAreInvalidArgument) {
  GPU_SERVER_OR_SKIP(server);
  const std::size_t n = 4096;
  DeviceArray device(*server, n * 4);
  ASSERT_TRUE(device.status().ok()) << device.status();
  auto host = SharedMemoryRegion::Create(server->shm_socket(), n * 4);
  ASSERT_TRUE(host.ok()) << host.status();
  auto refused = [&](v1::SortRequest request, const std::string& text) {
    const CallResult call = CallSort(server->stub(), request, "device-bad");
    EXPECT_EQ(call.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << text;
    EXPECT_THAT(call.status.error_message(), HasSubstr(text));
  };
  v1::SortRequest request = SortRequestOf(v1::DTYPE_UINT32, v1::ORDER_ASCENDING, v1::PAYLOAD_NONE);
  *request.mutable_keys_region() = device.Whole();
  *request.mutable_output_region() = WireRef((*host)->Ref(0, n * 4));
  refused(request, "all host memory or all device memory");
  *request.mutable_output_region() = device.Ref(4, n * 4);
  refused(request, "runs past the end");
  *request.mutable_keys_region() = device.Ref(2, 4);
  *request.mutable_output_region() = device.Ref(2, 4);
  refused(request, "multiple of");
  ExpectServing(*server);
}

TEST(DeviceRegions, WhatTheyDoNotTakeIsRefusedByName) {
  GPU_SERVER_OR_SKIP(server);
  const std::size_t n = 1 << 16;
  DeviceArray device(*server, n * 4);
  ASSERT_TRUE(device.status().ok()) << device.status();
  v1::SortRequest request = SortRequestOf(v1::DTYPE_UINT32, v1::ORDER_ASCENDING, v1::PAYLOAD_NONE);
  request.mutable_options()->set_algorithm(v1::ALGORITHM_MERGE);
  *request.mutable_keys_region() = device.Whole();
  *request.mutable_output_region() = device.Whole();
  const CallResult call = CallSort(server->stub(), request, "device-merge");
  EXPECT_EQ(call.status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(call.status.error_message(), HasSubstr("device regions"));

  // A registration larger than the allocation behind the descriptor; and a memfd passed as device memory.
  kernels::ExportableDeviceMemory small;
  ASSERT_TRUE(kernels::ExportableDeviceMemory::Allocate(4096, 0, &small).ok());
  int fd = -1;
  ASSERT_TRUE(small.ExportFd(&fd).ok());
  UniqueFd exported(fd);
  auto too_big = SharedMemoryRegistration::RegisterDeviceMemory(server->shm_socket(), fd, std::size_t{1} << 30);
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kInvalidArgument) << too_big.status();
  UniqueFd memfd = Memfd(4096);
  auto not_device = SharedMemoryRegistration::RegisterDeviceMemory(server->shm_socket(), memfd.get(), 4096);
  EXPECT_EQ(not_device.status().code(), absl::StatusCode::kInvalidArgument) << not_device.status();
  EXPECT_THAT(std::string(not_device.status().message()), HasSubstr("not CUDA device memory"));
  ExpectServing(*server);
}

// The caller frees its memory while registered: the server's import keeps the allocation alive, so its
// requests still run (on memory no one else can reach now); once unregistered, the id is refused. The
// server never faults.
TEST(DeviceRegions, ACallerThatFreesOrUnregistersFailsOnlyItsOwnRequests) {
  GPU_SERVER_OR_SKIP(server);
  const std::size_t n = 1 << 20;
  DeviceArray device(*server, n * 4);
  ASSERT_TRUE(device.status().ok()) << device.status();
  device.Put(MakeInput<uint32_t>(Pattern::kRandom, n, 3));
  v1::SortRequest request = SortRequestOf(v1::DTYPE_UINT32, v1::ORDER_ASCENDING, v1::PAYLOAD_NONE);
  *request.mutable_keys_region() = device.Whole();
  *request.mutable_output_region() = device.Whole();
  device.FreeOnTheCallersSide();
  const CallResult after_free = CallSort(server->stub(), request, "device-after-free");
  EXPECT_TRUE(after_free.status.ok()) << after_free.status.error_message();
  device.Unregister();
  const CallResult after_unregister = CallSort(server->stub(), request, "device-after-unregister");
  EXPECT_EQ(after_unregister.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(after_unregister.status.error_message(), HasSubstr("not registered"));
  ExpectServing(*server);
}

// Memory on another GPU of the node: the server (on GPU 0) maps it where peer access allows and works
// on it there; where it does not, the registration says so. Each way the engine reaches device memory,
// across the GPUs: a sort in place with indices (copy in, convert out), unsigned keys from an input into
// an output range (CUB reading and writing the other GPU's memory), keys on one GPU answered into the
// other's, and top-k by radix select reading the keys where they lie and by SMALL_K over rows.
// One GPU: nothing to test.
TEST(DeviceRegions, MemoryOnAnotherGpuIsServedOrRefusedSayingWhy) {
  std::string why;
  if (kernels::CountDevices(&why) < 2) GTEST_SKIP() << "this machine has fewer than 2 GPUs";
  GPU_SERVER_OR_SKIP(server);
  const std::size_t n = (1 << 20) + 1;
  const auto keys = MakeInput<uint32_t>(Pattern::kRandom, n, 11);
  DeviceArray other(*server, n * 4, /*device=*/1);
  if (!other.status().ok()) {
    EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition) << other.status();
    EXPECT_THAT(std::string(other.status().message()), HasSubstr("peer access"));
    return;
  }
  other.Put(keys);
  v1::SortRequest request = SortRequestOf(v1::DTYPE_UINT32, v1::ORDER_ASCENDING, v1::PAYLOAD_NONE);
  *request.mutable_keys_region() = other.Whole();
  *request.mutable_output_region() = other.Whole();
  const CallResult call = CallSort(server->stub(), request, "device-other-gpu");
  ASSERT_TRUE(call.status.ok()) << call.status.error_message();
  EXPECT_EQ(other.Get<uint32_t>(n), ReferenceSort(keys, SortOrder::kAscending));

  // Floats with every special value, descending, in place, with indices on GPU 1.
  const auto floats = MakeInput<float>(Pattern::kSpecials, n, 12);
  DeviceArray float_keys(*server, n * 4, 1), float_indices(*server, n * 8, 1);
  ASSERT_TRUE(float_keys.status().ok() && float_indices.status().ok());
  float_keys.Put(floats);
  v1::SortRequest with_indices = SortRequestOf(v1::DTYPE_FLOAT32, v1::ORDER_DESCENDING, v1::PAYLOAD_INDICES);
  *with_indices.mutable_keys_region() = float_keys.Whole();
  *with_indices.mutable_output_region() = float_keys.Whole();
  *with_indices.mutable_indices_region() = float_indices.Whole();
  const CallResult indexed = CallSort(server->stub(), with_indices, "device-other-gpu-indices");
  ASSERT_TRUE(indexed.status.ok()) << indexed.status.error_message();
  EXPECT_TRUE(SameBits(float_keys.Get<float>(n), ReferenceSort(floats, SortOrder::kDescending)));
  EXPECT_EQ(float_indices.Get<int64_t>(n), ReferenceStableArgsort(floats, SortOrder::kDescending));

  // Unsigned keys from GPU 1's input into an output on GPU 0 (the sort where the keys lie), and back
  // from GPU 0 into GPU 1.
  const auto u64 = MakeInput<uint64_t>(Pattern::kFewDistinct, n, 13);
  DeviceArray input_there(*server, n * 8, 1), output_here(*server, n * 8, 0), output_there(*server, n * 8, 1);
  ASSERT_TRUE(input_there.status().ok() && output_here.status().ok() && output_there.status().ok());
  input_there.Put(u64);
  v1::SortRequest across = SortRequestOf(v1::DTYPE_UINT64, v1::ORDER_ASCENDING, v1::PAYLOAD_NONE);
  *across.mutable_keys_region() = input_there.Whole();
  *across.mutable_output_region() = output_here.Whole();
  const CallResult there_to_here = CallSort(server->stub(), across, "device-gpu1-to-gpu0");
  ASSERT_TRUE(there_to_here.status.ok()) << there_to_here.status.error_message();
  EXPECT_EQ(output_here.Get<uint64_t>(n), ReferenceSort(u64, SortOrder::kAscending));
  EXPECT_EQ(input_there.Get<uint64_t>(n), u64) << "the input on GPU 1 changed";
  output_here.Put(u64);
  *across.mutable_keys_region() = output_here.Whole();
  *across.mutable_output_region() = output_there.Whole();
  const CallResult here_to_there = CallSort(server->stub(), across, "device-gpu0-to-gpu1");
  ASSERT_TRUE(here_to_there.status.ok()) << here_to_there.status.error_message();
  EXPECT_EQ(output_there.Get<uint64_t>(n), ReferenceSort(u64, SortOrder::kAscending));

  ExpectDeviceRowsAndSegments(*server, 1);

  // Top-k: one long row read in place by radix select (float32, and bfloat16 at 16 bits), rows by
  // SMALL_K, k past SMALL_K's limit.
  for (Pattern pattern : {Pattern::kRandom, Pattern::kSpecials}) {
    ExpectDeviceTopK<float>(*server, v1::DTYPE_FLOAT32, 1, (1 << 20) + 3, 200, true, pattern, 1);
    ExpectDeviceTopK<BFloat16>(*server, v1::DTYPE_BFLOAT16, 1, (1 << 20) + 5, 300, true, pattern, 1);
    ExpectDeviceTopK<BFloat16>(*server, v1::DTYPE_BFLOAT16, 128, 4099, 150, false, pattern, 1);
    ExpectDeviceTopK<int64_t>(*server, v1::DTYPE_INT64, 64, 3000, 2000, true, pattern, 1);
  }
  ExpectServing(*server);
}

}  // namespace
}  // namespace gpusort::testing
