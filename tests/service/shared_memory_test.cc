// The shared-memory transport through a real in-process server (either backend, GPUSORT_TEST_BACKEND):
// answers written into the caller's region match the references, and every misuse (unregistered id,
// out of bounds, wrong size, misaligned, overlapping, bad or missing object, shrunk object, limits) is
// answered with a status while the region's other bytes stay untouched.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "gpusort/client.h"
#include "gpusort/shared_memory.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

Client ClientFor(TestServer& server) {
  ClientOptions options;
  options.target = server.address();
  return Client(options);
}

template <typename T>
void Put(SharedMemoryRegion& region, std::size_t offset, const std::vector<T>& v) {
  std::memcpy(region.data() + offset, v.data(), v.size() * sizeof(T));
}
template <typename T>
std::vector<T> Get(const SharedMemoryRegion& region, std::size_t offset, std::size_t count) {
  std::vector<T> v(count);
  std::memcpy(v.data(), region.data() + offset, count * sizeof(T));
  return v;
}

SortOptions Sorting(bool descending = false) {
  SortOptions o;
  o.descending = descending;
  o.algorithm = TestAlgorithm();
  return o;
}

TEST(SharedMemory, SortsInPlaceAndIntoAnotherRangeWithIndices) {
  TestServer server;
  Client client = ClientFor(server);
  const auto keys = MakeInput<float>(Pattern::kSpecials, 100003, 3);
  const std::size_t bytes = keys.size() * sizeof(float);
  auto region = client.CreateSharedMemory(4 * bytes + 64);
  ASSERT_TRUE(region.ok()) << region.status();
  SharedMemoryRegion& r = **region;

  // Into another range, with int64 positions after it; the input stays as it was.
  Put(r, 0, keys);
  const std::size_t out = bytes, idx = (2 * bytes + 7) / 8 * 8;
  const v1::RegionRef indices = r.Ref(idx, keys.size() * 8);
  auto info = client.SortInRegion(v1::DTYPE_FLOAT32, Sorting(true), v1::PAYLOAD_INDICES, r.Ref(0, bytes),
                                  r.Ref(out, bytes), &indices);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->backend(), ExpectedBackend());
  const auto sorted = Get<float>(r, out, keys.size());
  EXPECT_TRUE(SameBits(sorted, ReferenceSort(keys, SortOrder::kDescending)));
  EXPECT_TRUE(SameBits(Get<float>(r, 0, keys.size()), keys)) << "the input range was changed";
  const auto positions = Get<int64_t>(r, idx, keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(SameBits(std::vector<float>{keys[positions[i]]}, std::vector<float>{sorted[i]})) << i;
  }

  // In place.
  auto in_place = client.SortInRegion(v1::DTYPE_FLOAT32, Sorting(), v1::PAYLOAD_NONE, r.Ref(0, bytes),
                                      r.Ref(0, bytes));
  ASSERT_TRUE(in_place.ok()) << in_place.status();
  EXPECT_TRUE(SameBits(Get<float>(r, 0, keys.size()), ReferenceSort(keys, SortOrder::kAscending)));
}

TEST(SharedMemory, TopKWritesValuesAndIndices) {
  TestServer server;
  Client client = ClientFor(server);
  const auto keys = MakeInput<int64_t>(Pattern::kFewDistinct, 4 * 5000, 7);
  const std::size_t bytes = keys.size() * 8;
  auto region = client.CreateSharedMemory(bytes + 2 * 4 * 100 * 8);
  ASSERT_TRUE(region.ok()) << region.status();
  SharedMemoryRegion& r = **region;
  Put(r, 0, keys);
  TopKOptions o;
  o.k = 100;
  o.rows = 4;
  o.algorithm = TestAlgorithm();
  const v1::RegionRef values = r.Ref(bytes, 400 * 8), indices = r.Ref(bytes + 400 * 8, 400 * 8);
  auto info = client.TopKInRegion(v1::DTYPE_INT64, o, r.Ref(0, bytes), &values, &indices);
  ASSERT_TRUE(info.ok()) << info.status();
  const auto expected = ReferenceTopK(keys, 4, 100, true);
  EXPECT_EQ(Get<int64_t>(r, bytes, 400), expected.values);
  EXPECT_EQ(Get<int64_t>(r, bytes + 400 * 8, 400), expected.indices);
}

TEST(SharedMemory, TheClientTransportOptionRoundTrips) {
  TestServer server;
  ClientOptions options;
  options.target = server.address();
  options.transport = Transport::kSharedMemory;
  Client client(options);
  const auto keys = MakeInput<uint32_t>(Pattern::kRandom, 300001, 1);
  SortOptions sort_options = Sorting();
  auto sorted = client.Argsort(keys, sort_options);
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_EQ(sorted->keys, ReferenceSort(keys, SortOrder::kAscending));
  for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(keys[sorted->indices[i]], sorted->keys[i]);
  TopKOptions o;
  o.k = 10;
  auto top = client.TopK(keys, o);
  ASSERT_TRUE(top.ok()) << top.status();
  EXPECT_EQ(top->values, ReferenceTopK(keys, 1, 10, true).values);
}

#define EXPECT_CODE(expr, want, text)                                              \
  do {                                                                             \
    auto _r = (expr);                                                              \
    ASSERT_FALSE(_r.ok()) << "expected " #want;                                    \
    EXPECT_EQ(_r.status().code(), absl::StatusCode::want) << _r.status();          \
    EXPECT_THAT(std::string(_r.status().message()), ::testing::HasSubstr(text));   \
  } while (0)

TEST(SharedMemory, BadReferencesAreInvalidArgumentAndTouchNothing) {
  TestServer server;
  Client client = ClientFor(server);
  auto region = client.CreateSharedMemory(4096);
  ASSERT_TRUE(region.ok()) << region.status();
  SharedMemoryRegion& r = **region;
  std::memset(r.data(), 0x5A, r.size());
  const auto untouched = [&] {
    for (std::size_t i = 0; i < r.size(); ++i)
      if (r.data()[i] != std::byte{0x5A}) return false;
    return true;
  };
  const SortOptions o = Sorting();
  v1::RegionRef unknown = r.Ref(0, 400);
  unknown.set_region_id("region-404-0000000000000000");
  EXPECT_CODE(client.SortInRegion(v1::DTYPE_UINT32, o, v1::PAYLOAD_NONE, unknown, r.Ref(0, 400)), kInvalidArgument,
              "not registered");
  EXPECT_CODE(client.SortInRegion(v1::DTYPE_UINT32, o, v1::PAYLOAD_NONE, r.Ref(4000, 400), r.Ref(4000, 400)),
              kInvalidArgument, "past the end");
  EXPECT_CODE(client.SortInRegion(v1::DTYPE_UINT32, o, v1::PAYLOAD_NONE, r.Ref(~0ull - 3, 400), r.Ref(0, 400)),
              kInvalidArgument, "past the end");
  EXPECT_CODE(client.SortInRegion(v1::DTYPE_UINT32, o, v1::PAYLOAD_NONE, r.Ref(0, 402), r.Ref(0, 402)),
              kInvalidArgument, "whole number");
  EXPECT_CODE(client.SortInRegion(v1::DTYPE_UINT32, o, v1::PAYLOAD_NONE, r.Ref(0, 400), r.Ref(800, 404)),
              kInvalidArgument, "needs 400");
  EXPECT_CODE(client.SortInRegion(v1::DTYPE_UINT64, o, v1::PAYLOAD_NONE, r.Ref(4, 400), r.Ref(4, 400)),
              kInvalidArgument, "not a multiple");
  EXPECT_CODE(client.SortInRegion(v1::DTYPE_UINT32, o, v1::PAYLOAD_NONE, r.Ref(0, 400), r.Ref(200, 400)),
              kInvalidArgument, "overlap");
  const v1::RegionRef overlapping = r.Ref(392, 800);
  EXPECT_CODE(client.SortInRegion(v1::DTYPE_UINT32, o, v1::PAYLOAD_INDICES, r.Ref(0, 400), r.Ref(0, 400),
                                  &overlapping),
              kInvalidArgument, "overlap");
  EXPECT_CODE(client.SortInRegion(v1::DTYPE_UINT32, o, v1::PAYLOAD_INDICES, r.Ref(0, 400), r.Ref(0, 400)),
              kInvalidArgument, "needs indices_region");
  TopKOptions t;
  t.k = 10;
  EXPECT_CODE(client.TopKInRegion(v1::DTYPE_UINT32, t, r.Ref(0, 400), nullptr, nullptr), kInvalidArgument,
              "needs values_region");
  EXPECT_TRUE(untouched()) << "a refused request wrote into the region";
}

absl::StatusCode RegisterRaw(TestServer& server, const std::string& name, uint64_t size) {
  grpc::ClientContext context;
  v1::RegisterRegionRequest request;
  request.set_name(name);
  request.set_size(size);
  auto reader = server.stub().RegisterRegion(&context, request);
  v1::RegisterRegionEvent event;
  if (reader->Read(&event)) {
    context.TryCancel();
    (void)reader->Finish();
    return absl::StatusCode::kOk;
  }
  return static_cast<absl::StatusCode>(reader->Finish().error_code());
}

TEST(SharedMemory, RegistrationChecksNamesSizesAndLimits) {
  ServerConfig config = LoopbackConfig();
  config.shm_max_regions = 1;
  TestServer server(config);
  EXPECT_EQ(RegisterRaw(server, "no-slash", 10), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RegisterRaw(server, "/../etc/passwd", 10), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RegisterRaw(server, "/gpusort-test-does-not-exist", 10), absl::StatusCode::kNotFound);

  const std::string name = "/gpusort-test-" + std::to_string(getpid());
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8192), 0);
  close(fd);
  EXPECT_EQ(RegisterRaw(server, name, 8193), absl::StatusCode::kInvalidArgument) << "larger than the object";
  EXPECT_EQ(RegisterRaw(server, name, 0), absl::StatusCode::kInvalidArgument);
  shm_unlink(name.c_str());

  Client client = ClientFor(server);
  auto first = client.CreateSharedMemory(8192);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = client.CreateSharedMemory(8192);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted) << second.status();

  // Unregistering (destroying the region) frees the slot and retires the id.
  const v1::RegionRef stale = (*first)->Ref(0, 400);
  first->reset();
  bool registered = false;
  for (int i = 0; i < 100 && !registered; ++i) {  // the server lets go when the call's end reaches it
    auto again = client.CreateSharedMemory(8192);
    registered = again.ok();
    if (!registered) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(registered) << "the unregistered region's slot was not given back";
  EXPECT_CODE(client.SortInRegion(v1::DTYPE_UINT32, Sorting(), v1::PAYLOAD_NONE, stale, stale), kInvalidArgument,
              "not registered");
}

TEST(SharedMemory, OwnerRemovingOrShrinkingTheObjectIsAnsweredCleanly) {
  TestServer server;
  Client client = ClientFor(server);
  auto region = client.CreateSharedMemory(1 << 20);
  ASSERT_TRUE(region.ok()) << region.status();
  SharedMemoryRegion& r = **region;
  const auto keys = MakeInput<uint32_t>(Pattern::kReversed, 1000, 2);
  Put(r, 0, keys);
  // Unlinked by its owner: both sides still map it, so it keeps working until unregistered.
  ASSERT_EQ(shm_unlink(r.name().c_str()), 0);
  auto info = client.SortInRegion(v1::DTYPE_UINT32, Sorting(), v1::PAYLOAD_NONE, r.Ref(0, 4000), r.Ref(0, 4000));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(Get<uint32_t>(r, 0, 1000), ReferenceSort(keys, SortOrder::kAscending));

  // Shrunk by its owner: refused rather than touched (a page past the end would be SIGBUS).
  auto other = client.CreateSharedMemory(1 << 20);
  ASSERT_TRUE(other.ok()) << other.status();
  const int fd = shm_open((*other)->name().c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  close(fd);
  EXPECT_CODE(client.SortInRegion(v1::DTYPE_UINT32, Sorting(), v1::PAYLOAD_NONE, (*other)->Ref(0, 4000),
                                  (*other)->Ref(0, 4000)),
              kFailedPrecondition, "smaller");
}

}  // namespace
}  // namespace gpusort::testing
