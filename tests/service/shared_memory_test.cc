// The shared-memory transport through a real in-process server (either backend, GPUSORT_TEST_BACKEND):
// answers written into the caller's region match the references; every misuse of a region reference
// (unregistered id, out of bounds, wrong size, misaligned, overlapping, outputs without keys_region) is
// answered with a status while the region's bytes stay untouched; ids are 128 random bits; the limits
// hold and a closed registration frees its slot. Registration itself: shared_memory_registration_test.cc.
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "tests/service/shm_test_support.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

// The client's names for what most calls below send: uint32 keys, with or without indices.
constexpr client::DType kU32 = client::DType::kUint32;
constexpr client::Payload kKeysOnly = client::Payload::kNone;
constexpr client::Payload kWithIndices = client::Payload::kIndices;

SortOptions Sorting(bool descending = false) {
  SortOptions o;
  o.descending = descending;
  o.algorithm = ClientTestAlgorithm();
  return o;
}

TEST(SharedMemory, SortsInPlaceAndIntoAnotherRangeWithIndices) {
  TestServer server(ShmConfig());
  Client client = ShmClientFor(server);
  const auto keys = MakeInput<float>(Pattern::kSpecials, 100003, 3);
  const std::size_t bytes = keys.size() * sizeof(float);
  auto region = client.CreateSharedMemory(4 * bytes + 64);
  ASSERT_TRUE(region.ok()) << region.status();
  SharedMemoryRegion& r = **region;

  // Into another range, with int64 positions after it; the input stays as it was.
  Put(r, 0, keys);
  const std::size_t out = bytes, idx = (2 * bytes + 7) / 8 * 8;
  const client::RegionRef indices = r.Ref(idx, keys.size() * 8);
  auto info = client.SortInRegion(client::DType::kFloat32, Sorting(true), client::Payload::kIndices, r.Ref(0, bytes),
                                  r.Ref(out, bytes), &indices);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->backend, ClientExpectedBackend());
  const auto sorted = Get<float>(r, out, keys.size());
  EXPECT_TRUE(SameBits(sorted, ReferenceSort(keys, SortOrder::kDescending)));
  EXPECT_TRUE(SameBits(Get<float>(r, 0, keys.size()), keys)) << "the input range was changed";
  const auto positions = Get<int64_t>(r, idx, keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(SameBits(std::vector<float>{keys[positions[i]]}, std::vector<float>{sorted[i]})) << i;
  }

  // In place.
  auto in_place = client.SortInRegion(client::DType::kFloat32, Sorting(), client::Payload::kNone, r.Ref(0, bytes),
                                      r.Ref(0, bytes));
  ASSERT_TRUE(in_place.ok()) << in_place.status();
  EXPECT_TRUE(SameBits(Get<float>(r, 0, keys.size()), ReferenceSort(keys, SortOrder::kAscending)));
}

// Narrow keys in a region (on the CUDA backend they cross by DMA as they are and widen on the device):
// ranges need only start at a multiple of their own element size, so 2-byte keys at offset 2 and
// 1-byte keys at offset 1.
template <typename T>
void SortNarrowInRegion(client::DType dtype, std::size_t offset) {
  TestServer server(ShmConfig());
  Client client = ShmClientFor(server);
  const auto keys = MakeInput<T>(Pattern::kSpecials, 70001, 5);
  const std::size_t bytes = keys.size() * sizeof(T), idx = (offset + 2 * bytes + 7) / 8 * 8;
  auto region = client.CreateSharedMemory(idx + keys.size() * 8);
  ASSERT_TRUE(region.ok()) << region.status();
  SharedMemoryRegion& r = **region;
  Put(r, offset, keys);
  const client::RegionRef indices = r.Ref(idx, keys.size() * 8);
  SortOptions stable_descending = Sorting(true);
  stable_descending.stable = true;
  auto info = client.SortInRegion(dtype, stable_descending, client::Payload::kIndices, r.Ref(offset, bytes),
                                  r.Ref(offset + bytes, bytes), &indices);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->backend, ClientExpectedBackend());
  EXPECT_TRUE(SameBits(Get<T>(r, offset + bytes, keys.size()), ReferenceSort(keys, SortOrder::kDescending)));
  EXPECT_EQ(Get<int64_t>(r, idx, keys.size()), ReferenceStableArgsort(keys, SortOrder::kDescending));
}

TEST(SharedMemory, SortsNarrowKeysAtTheirOwnAlignment) {
  SortNarrowInRegion<BFloat16>(client::DType::kBFloat16, 2);
  SortNarrowInRegion<Float16>(client::DType::kFloat16, 6);
  SortNarrowInRegion<uint8_t>(client::DType::kUint8, 1);
  SortNarrowInRegion<int8_t>(client::DType::kInt8, 3);
}

// Rows and segments in a region (on the CUDA backend the row sort's copies go straight from and to the
// region, as the radix sort's do): rows in place with indices per row, then segments of every kind of
// length (empty, one key, longer than a bitonic tile) into another range with indices per segment.
TEST(SharedMemory, SortsRowsAndSegmentsInARegion) {
  TestServer server(ShmConfig());
  Client client = ShmClientFor(server);
  const std::size_t rows = 301, length = 257, n = rows * length;
  const auto keys = MakeInput<float>(Pattern::kSpecials, n, 17);
  const std::size_t bytes = n * sizeof(float), idx = (2 * bytes + 7) / 8 * 8;
  auto region = client.CreateSharedMemory(idx + n * 8);
  ASSERT_TRUE(region.ok()) << region.status();
  SharedMemoryRegion& r = **region;
  Put(r, 0, keys);
  SortOptions by_rows;
  by_rows.descending = true;
  by_rows.stable = true;  // indices of equal keys in input order, as the reference has them
  by_rows.rows = rows;
  const client::RegionRef indices = r.Ref(idx, n * 8);
  auto info = client.SortInRegion(client::DType::kFloat32, by_rows, kWithIndices, r.Ref(0, bytes), r.Ref(0, bytes),
                                  &indices);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->backend, ClientExpectedBackend());
  EXPECT_TRUE(SameBits(Get<float>(r, 0, n), ReferenceRowSort(keys, rows, SortOrder::kDescending)));
  EXPECT_EQ(Get<int64_t>(r, idx, n), ReferenceRowStableArgsort(keys, rows, SortOrder::kDescending));

  const auto shorts = MakeInput<uint16_t>(Pattern::kFewDistinct, n, 19);
  const std::vector<uint64_t> offsets = SegmentOffsetsOf(n, {0, 1, 7, 5000, 0, 300, 4096, 1, 2});
  Put(r, 0, shorts);
  SortOptions by_segments;
  by_segments.stable = true;
  by_segments.segment_offsets = offsets;
  const std::size_t out = (n * 2 + 63) / 64 * 64;
  auto segmented = client.SortInRegion(client::DType::kUint16, by_segments, kWithIndices, r.Ref(0, n * 2),
                                       r.Ref(out, n * 2), &indices);
  ASSERT_TRUE(segmented.ok()) << segmented.status();
  EXPECT_EQ(Get<uint16_t>(r, out, n), ReferenceSegmentSort(shorts, offsets, SortOrder::kAscending));
  EXPECT_EQ(Get<int64_t>(r, idx, n), ReferenceSegmentStableArgsort(shorts, offsets, SortOrder::kAscending));
  EXPECT_EQ(Get<uint16_t>(r, 0, n), shorts) << "the input range was changed";
}

TEST(SharedMemory, TopKWritesValuesAndIndices) {
  TestServer server(ShmConfig());
  Client client = ShmClientFor(server);
  const auto keys = MakeInput<int64_t>(Pattern::kFewDistinct, 4 * 5000, 7);
  const std::size_t bytes = keys.size() * 8;
  auto region = client.CreateSharedMemory(bytes + 2 * 4 * 100 * 8);
  ASSERT_TRUE(region.ok()) << region.status();
  SharedMemoryRegion& r = **region;
  Put(r, 0, keys);
  TopKOptions o;
  o.k = 100;
  o.rows = 4;
  o.algorithm = ClientTestAlgorithm();
  const client::RegionRef values = r.Ref(bytes, 400 * 8), indices = r.Ref(bytes + 400 * 8, 400 * 8);
  auto info = client.TopKInRegion(client::DType::kInt64, o, r.Ref(0, bytes), &values, &indices);
  ASSERT_TRUE(info.ok()) << info.status();
  const auto expected = ReferenceTopK(keys, 4, 100, true);
  EXPECT_EQ(Get<int64_t>(r, bytes, 400), expected.values);
  EXPECT_EQ(Get<int64_t>(r, bytes + 400 * 8, 400), expected.indices);
}

// ClientOptions::wait_spin: the region calls go through gRPC's async API and a polled completion queue.
// The answers, and a refusal's status, are the same as the blocking calls'; a spin shorter than the call
// (1 us against a sort of 256K keys) ends in the blocking wait, a spin longer than it never gets there.
TEST(SharedMemory, ACallerThatPollsForItsAnswerGetsTheSameAnswers) {
  TestServer server(ShmConfig());
  for (const auto spin : {std::chrono::microseconds(1), std::chrono::microseconds(1'000'000)}) {
    SCOPED_TRACE("wait_spin " + std::to_string(spin.count()) + " us");
    ClientOptions options;
    options.target = server.address();
    options.shm_socket = server.shm_socket();
    options.wait_spin = spin;
    Client client(options);
    const auto keys = MakeInput<uint32_t>(Pattern::kRandom, 1 << 18, 5);
    const std::size_t bytes = keys.size() * 4;
    auto region = client.CreateSharedMemory(3 * bytes);
    ASSERT_TRUE(region.ok()) << region.status();
    SharedMemoryRegion& r = **region;
    Put(r, 0, keys);
    auto info = client.SortInRegion(kU32, Sorting(true), kKeysOnly, r.Ref(0, bytes), r.Ref(bytes, bytes));
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(Get<uint32_t>(r, bytes, keys.size()), ReferenceSort(keys, SortOrder::kDescending));
    TopKOptions o;
    o.k = 50;
    o.output = client::TopKOutput::kValues;
    o.algorithm = ClientTestAlgorithm();
    const client::RegionRef values = r.Ref(2 * bytes, 50 * 4);
    auto top = client.TopKInRegion(kU32, o, r.Ref(0, bytes), &values, nullptr);
    ASSERT_TRUE(top.ok()) << top.status();
    EXPECT_EQ(Get<uint32_t>(r, 2 * bytes, 50), ReferenceTopK(keys, 1, 50, true).values);
    EXPECT_CODE(client.SortInRegion(kU32, Sorting(), kKeysOnly, r.Ref(0, 402), r.Ref(0, 402)), kInvalidArgument,
                "whole number");
  }
}

TEST(SharedMemory, TheClientTransportOptionRoundTrips) {
  TestServer server(ShmConfig());
  ClientOptions options;
  options.target = server.address();
  options.shm_socket = server.shm_socket();
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

TEST(SharedMemory, BadReferencesAreInvalidArgumentAndTouchNothing) {
  TestServer server(ShmConfig());
  Client client = ShmClientFor(server);
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
  client::RegionRef unknown = r.Ref(0, 400);
  unknown.region_id = "0123456789abcdef0123456789abcdef";
  EXPECT_CODE(client.SortInRegion(kU32, o, kKeysOnly, unknown, r.Ref(0, 400)), kInvalidArgument,
              "not registered");
  EXPECT_CODE(client.SortInRegion(kU32, o, kKeysOnly, r.Ref(4000, 400), r.Ref(4000, 400)),
              kInvalidArgument, "past the end");
  EXPECT_CODE(client.SortInRegion(kU32, o, kKeysOnly, r.Ref(~0ull - 3, 400), r.Ref(0, 400)),
              kInvalidArgument, "past the end");
  EXPECT_CODE(client.SortInRegion(kU32, o, kKeysOnly, r.Ref(0, 402), r.Ref(0, 402)),
              kInvalidArgument, "whole number");
  EXPECT_CODE(client.SortInRegion(kU32, o, kKeysOnly, r.Ref(0, 400), r.Ref(800, 404)),
              kInvalidArgument, "needs 400");
  EXPECT_CODE(client.SortInRegion(client::DType::kUint64, o, client::Payload::kNone, r.Ref(4, 400), r.Ref(4, 400)),
              kInvalidArgument, "not a multiple");
  EXPECT_CODE(client.SortInRegion(kU32, o, kKeysOnly, r.Ref(0, 400), r.Ref(200, 400)),
              kInvalidArgument, "overlap");
  const client::RegionRef overlapping = r.Ref(392, 800);
  EXPECT_CODE(client.SortInRegion(kU32, o, kWithIndices, r.Ref(0, 400), r.Ref(0, 400),
                                  &overlapping),
              kInvalidArgument, "overlap");
  EXPECT_CODE(client.SortInRegion(kU32, o, kWithIndices, r.Ref(0, 400), r.Ref(0, 400)),
              kInvalidArgument, "needs indices_region");
  TopKOptions t;
  t.k = 10;
  EXPECT_CODE(client.TopKInRegion(kU32, t, r.Ref(0, 400), nullptr, nullptr), kInvalidArgument,
              "needs values_region");
  EXPECT_TRUE(untouched()) << "a refused request wrote into the region";
}

// Issue 14 item 9: output ranges without keys_region were ignored without a word, the request served
// from its bytes.
TEST(SharedMemory, OutputRegionsWithoutKeysRegionAreInvalidArgument) {
  TestServer server(ShmConfig());
  Client client = ShmClientFor(server);
  auto region = client.CreateSharedMemory(4096);
  ASSERT_TRUE(region.ok()) << region.status();
  SharedMemoryRegion& r = **region;
  std::memset(r.data(), 0x5A, r.size());
  const std::vector<uint32_t> keys = {3, 1, 2};

  auto sort = [&](auto&& set_regions) {
    v1::SortRequest request;
    request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
    request.set_keys(ToBytes(keys));
    set_regions(request);
    v1::SortResponse response;
    grpc::ClientContext context;
    return server.stub().Sort(&context, request, &response);
  };
  grpc::Status output_only = sort([&](v1::SortRequest& q) { *q.mutable_output_region() = WireRef(r.Ref(0, 12)); });
  EXPECT_EQ(output_only.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << output_only.error_message();
  EXPECT_THAT(output_only.error_message(), ::testing::HasSubstr("output_region is set but keys_region is not"));
  grpc::Status indices_only = sort([&](v1::SortRequest& q) {
    q.mutable_options()->set_payload(v1::PAYLOAD_INDICES);
    *q.mutable_indices_region() = WireRef(r.Ref(0, 24));
  });
  EXPECT_EQ(indices_only.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << indices_only.error_message();
  EXPECT_THAT(indices_only.error_message(), ::testing::HasSubstr("indices_region"));

  for (int field = 0; field < 2; ++field) {
    v1::TopKRequest request;
    request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
    request.mutable_options()->set_k(1);
    request.set_keys(ToBytes(keys));
    *(field == 0 ? request.mutable_values_region() : request.mutable_indices_region()) = WireRef(r.Ref(0, 8));
    v1::TopKResponse response;
    grpc::ClientContext context;
    grpc::Status status = server.stub().TopK(&context, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << field << ": " << status.error_message();
    EXPECT_THAT(status.error_message(), ::testing::HasSubstr(field == 0 ? "values_region" : "indices_region"));
  }
  for (std::size_t i = 0; i < r.size(); ++i) ASSERT_EQ(r.data()[i], std::byte{0x5A}) << "byte " << i << " written";

  // The same requests without the stray fields are served as usual.
  grpc::Status plain = sort([](v1::SortRequest&) {});
  EXPECT_TRUE(plain.ok()) << plain.error_message();
}

TEST(SharedMemory, RegionIdsAre128RandomBitsInHex) {
  TestServer server(ShmConfig());
  Client client = ShmClientFor(server);
  std::set<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    auto region = client.CreateSharedMemory(4096);
    ASSERT_TRUE(region.ok()) << region.status();
    const std::string& id = (*region)->id();
    ASSERT_EQ(id.size(), 32u) << id;
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 20u) << "an id came twice";
}

TEST(SharedMemory, TheServersLimitsHoldAndAClosedRegistrationFreesItsSlot) {
  ServerConfig config = ShmConfig();
  config.shm_max_regions = 1;
  TestServer server(config);
  Client client = ShmClientFor(server);
  auto first = client.CreateSharedMemory(8192);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_CODE(client.CreateSharedMemory(8192), kResourceExhausted, "--shm-max-regions");

  // Unregistering (destroying the region closes its connection) frees the slot and retires the id.
  const client::RegionRef stale = (*first)->Ref(0, 400);
  first->reset();
  bool registered = false;
  for (int i = 0; i < 100 && !registered; ++i) {  // the server lets go when the connection's end reaches it
    auto again = client.CreateSharedMemory(8192);
    registered = again.ok();
    if (!registered) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(registered) << "the unregistered region's slot was not given back";
  EXPECT_CODE(client.SortInRegion(kU32, Sorting(), kKeysOnly, stale, stale), kInvalidArgument,
              "not registered");

  ServerConfig bytes = ShmConfig();
  bytes.shm_max_bytes = 1 << 20;
  TestServer small(bytes);
  Client small_client = ShmClientFor(small);
  EXPECT_CODE(small_client.CreateSharedMemory((1 << 20) + 1), kResourceExhausted, "--shm-max-bytes");
  EXPECT_TRUE(small_client.CreateSharedMemory(1 << 20).ok());
}

TEST(SharedMemory, IsOffWithoutTheSocketAndTheClientSaysSo) {
  TestServer server;  // no --shm-socket
  ClientOptions options;
  options.target = server.address();
  EXPECT_CODE(Client(options).CreateSharedMemory(4096), kFailedPrecondition, "shm_socket");
  options.shm_socket = TestShmSocketPath();  // nothing listens there
  EXPECT_CODE(Client(options).CreateSharedMemory(4096), kUnavailable, "shared-memory socket");
}

}  // namespace
}  // namespace gpusort::testing
