// Every RPC and option through a real in-process server with the CPU backend, checked against the
// standard-library oracles on adversarial inputs.
#include <cstring>
#include <map>

#include "tests/service/rpc_calls.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

template <typename T>
class RpcCorrectness : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new TestServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static TestServer* server_;
};
template <typename T>
TestServer* RpcCorrectness<T>::server_ = nullptr;

using AllKeyTypes = ::testing::Types<int32_t, uint32_t, int64_t, uint64_t, float, double, Float16, BFloat16, int16_t,
                                     uint16_t, int8_t, uint8_t>;
TYPED_TEST_SUITE(RpcCorrectness, AllKeyTypes);

template <typename T>
v1::SortResponse CallSort(v1::SortService::Stub& stub, const std::vector<T>& keys,
                          v1::Order order, v1::Payload payload, bool stable,
                          const std::string& values = "", uint32_t value_width = 0) {
  v1::SortRequest request;
  request.mutable_options()->set_dtype(WireDType<T>());
  request.mutable_options()->set_order(order);
  request.mutable_options()->set_payload(payload);
  request.mutable_options()->set_stable(stable);
  request.mutable_options()->set_value_width(value_width);
  request.mutable_options()->set_algorithm(TestAlgorithm());
  request.set_keys(ToBytes(keys));
  request.set_values(values);
  v1::SortResponse response;
  grpc::ClientContext context;
  grpc::Status status = stub.Sort(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response;
}

TYPED_TEST(RpcCorrectness, SortKeysMatchesReferenceOnEveryPattern) {
  using T = TypeParam;
  for (Pattern pattern : kAllPatterns) {
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{33}, std::size_t{4097}}) {
      const auto keys = MakeInput<T>(pattern, n, 7 + n);
      for (auto order : {v1::ORDER_ASCENDING, v1::ORDER_DESCENDING}) {
        const auto response = CallSort(this->server_->stub(), keys, order, v1::PAYLOAD_NONE, false);
        const auto expected = ReferenceSort(
            keys, order == v1::ORDER_ASCENDING ? SortOrder::kAscending : SortOrder::kDescending);
        EXPECT_TRUE(SameBits(FromBytes<T>(response.keys()), expected))
            << PatternName(pattern) << " n=" << n << " order=" << order;
        EXPECT_EQ(response.info().backend(), ExpectedBackend());
        EXPECT_EQ(response.info().algorithm(), ExpectedAlgorithm());
        EXPECT_FALSE(response.info().request_id().empty());
      }
    }
  }
}

TYPED_TEST(RpcCorrectness, StableArgsortAndValuesFollowTheirKeys) {
  using T = TypeParam;
  for (Pattern pattern : {Pattern::kFewDistinct, Pattern::kSpecials, Pattern::kAllEqual}) {
    const auto keys = MakeInput<T>(pattern, 1025, 3);
    for (auto order : {v1::ORDER_ASCENDING, v1::ORDER_DESCENDING}) {
      const SortOrder o =
          order == v1::ORDER_ASCENDING ? SortOrder::kAscending : SortOrder::kDescending;
      const auto expected_perm = ReferenceStableArgsort(keys, o);

      const auto by_index = CallSort(this->server_->stub(), keys, order, v1::PAYLOAD_INDICES, true);
      EXPECT_EQ(FromBytes<int64_t>(by_index.indices()), expected_perm) << PatternName(pattern);

      // 12-byte values: each value names its key's input position, so the permutation shows.
      constexpr uint32_t kWidth = 12;
      std::string values(keys.size() * kWidth, '\0');
      for (std::size_t i = 0; i < keys.size(); ++i) {
        const uint64_t tag = i * 2654435761u;
        std::memcpy(&values[i * kWidth], &tag, sizeof tag);
        std::memcpy(&values[i * kWidth + 8], &i, 4);
      }
      const auto by_value =
          CallSort(this->server_->stub(), keys, order, v1::PAYLOAD_VALUES, true, values, kWidth);
      std::string expected_values;
      for (int64_t src : expected_perm) expected_values.append(values, src * kWidth, kWidth);
      EXPECT_EQ(by_value.values(), expected_values) << PatternName(pattern);
      EXPECT_TRUE(SameBits(FromBytes<T>(by_value.keys()), ReferenceSort(keys, o)));
    }
  }
}

// Sort with rows: each row alone, its indices from the row's start, its values within the row.
TYPED_TEST(RpcCorrectness, SortRowsSortsEachRowAlone) {
  using T = TypeParam;
  struct Shape { std::size_t rows, m; };
  for (Shape s : {Shape{3, 257}, Shape{64, 33}, Shape{2, 5000}, Shape{4, 0}}) {
    for (Pattern pattern : {Pattern::kSpecials, Pattern::kFewDistinct}) {
      const auto keys = MakeInput<T>(pattern, s.rows * s.m, 13 + s.m);
      for (auto order : {v1::ORDER_ASCENDING, v1::ORDER_DESCENDING}) {
        const SortOrder o = order == v1::ORDER_ASCENDING ? SortOrder::kAscending : SortOrder::kDescending;
        const std::string what = PatternName(pattern) + " rows=" + std::to_string(s.rows) + " m=" + std::to_string(s.m);
        v1::SortRequest request;
        auto* options = request.mutable_options();
        options->set_dtype(WireDType<T>());
        options->set_order(order);
        options->set_stable(true);
        options->set_payload(v1::PAYLOAD_INDICES);
        options->set_algorithm(TestAlgorithm());
        options->set_rows(s.rows);
        request.set_keys(ToBytes(keys));
        v1::SortResponse response;
        {
          grpc::ClientContext context;
          const grpc::Status status = this->server_->stub().Sort(&context, request, &response);
          ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
        }
        EXPECT_TRUE(SameBits(FromBytes<T>(response.keys()), ReferenceRowSort(keys, s.rows, o))) << what;
        const std::vector<int64_t> perm = ReferenceRowStableArgsort(keys, s.rows, o);
        EXPECT_EQ(FromBytes<int64_t>(response.indices()), perm) << what;
        // 3-byte values naming their element: each must land where its key did, within its row.
        std::string values(keys.size() * 3, '\0');
        for (std::size_t i = 0; i < keys.size(); ++i) std::memcpy(&values[i * 3], &i, 3);
        options->set_payload(v1::PAYLOAD_VALUES);
        options->set_value_width(3);
        request.set_values(values);
        {
          grpc::ClientContext context;
          const grpc::Status status = this->server_->stub().Sort(&context, request, &response);
          ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
        }
        std::string expected_values;
        for (std::size_t i = 0; i < perm.size(); ++i) {
          expected_values.append(values, (i / s.m * s.m + perm[i]) * 3, 3);
        }
        EXPECT_EQ(response.values(), expected_values) << what;
      }
    }
  }
}

TYPED_TEST(RpcCorrectness, TopKMatchesReferenceForRowsAndOutputs) {
  using T = TypeParam;
  struct Shape { std::size_t rows, m, k; };
  for (Shape s : {Shape{1, 1000, 1}, Shape{1, 1000, 1000}, Shape{1, 1000, 999}, Shape{8, 257, 10},
                  Shape{64, 1, 1}}) {
    for (Pattern pattern : {Pattern::kRandom, Pattern::kFewDistinct, Pattern::kSpecials}) {
      const auto keys = MakeInput<T>(pattern, s.rows * s.m, 11);
      for (bool largest : {true, false}) {
        v1::TopKRequest request;
        auto* o = request.mutable_options();
        o->set_dtype(WireDType<T>());
        o->set_k(s.k);
        o->set_rows(s.rows);
        o->set_largest(largest);
        o->set_sorted(true);
        o->set_algorithm(TestAlgorithm());
        request.set_keys(ToBytes(keys));
        v1::TopKResponse response;
        grpc::ClientContext context;
        ASSERT_TRUE(this->server_->stub().TopK(&context, request, &response).ok());
        const auto expected = ReferenceTopK(keys, s.rows, s.k, largest);
        EXPECT_TRUE(SameBits(FromBytes<T>(response.values()), expected.values))
            << PatternName(pattern) << " rows=" << s.rows << " k=" << s.k;
        EXPECT_EQ(FromBytes<int64_t>(response.indices()), expected.indices);

        // Unsorted, indices only: the same elements in some order.
        o->set_sorted(false);
        o->set_output(v1::TOPK_OUTPUT_INDICES);
        v1::TopKResponse unsorted;
        grpc::ClientContext context2;
        ASSERT_TRUE(this->server_->stub().TopK(&context2, request, &unsorted).ok());
        EXPECT_TRUE(unsorted.values().empty());
        auto got = FromBytes<int64_t>(unsorted.indices());
        ASSERT_EQ(got.size(), expected.indices.size());
        for (std::size_t r = 0; r < s.rows; ++r) {
          std::sort(got.begin() + r * s.k, got.begin() + (r + 1) * s.k);
          auto want = expected.indices;
          std::sort(want.begin() + r * s.k, want.begin() + (r + 1) * s.k);
          EXPECT_TRUE(std::equal(got.begin() + r * s.k, got.begin() + (r + 1) * s.k,
                                 want.begin() + r * s.k));
        }
      }
    }
  }
}

// --- streaming ---------------------------------------------------------------------------------

// Sends `keys` in chunks of `chunk` bytes (splitting elements), collects the answer by offset.
template <typename T>
grpc::Status StreamSort(v1::SortService::Stub& stub, const std::vector<T>& keys, std::size_t chunk,
                        v1::Payload payload, std::vector<T>* out_keys,
                        std::vector<int64_t>* out_indices, uint32_t response_chunk = 0, std::size_t rows = 1) {
  grpc::ClientContext context;
  auto stream = stub.SortStream(&context);
  const std::string bytes = ToBytes(keys);
  v1::SortStreamRequest first;
  first.mutable_options()->set_dtype(WireDType<T>());
  first.mutable_options()->set_payload(payload);
  first.mutable_options()->set_algorithm(TestAlgorithm());
  first.mutable_options()->set_rows(rows);
  first.set_response_chunk_bytes(response_chunk);
  std::size_t pos = 0;
  first.set_keys(bytes.substr(0, std::min(chunk, bytes.size())));
  pos = first.keys().size();
  if (!stream->Write(first)) return stream->Finish();
  while (pos < bytes.size()) {
    v1::SortStreamRequest next;
    next.set_keys(bytes.substr(pos, chunk));
    pos += next.keys().size();
    if (!stream->Write(next)) break;
  }
  stream->WritesDone();
  std::string got_keys, got_indices;
  v1::SortStreamResponse response;
  std::size_t expected_offset = 0;
  while (stream->Read(&response)) {
    EXPECT_EQ(response.offset(), expected_offset);
    expected_offset += response.keys().size() / sizeof(T);
    got_keys += response.keys();
    got_indices += response.indices();
    if (response.has_info()) {
      EXPECT_EQ(response.info().backend(), ExpectedBackend());
    }
  }
  *out_keys = FromBytes<T>(got_keys);
  *out_indices = FromBytes<int64_t>(got_indices);
  return stream->Finish();
}

std::string OffsetBytes(const std::vector<uint64_t>& offsets) {
  return std::string(reinterpret_cast<const char*>(offsets.data()), offsets.size() * sizeof(uint64_t));
}

// Segments by offsets: each alone, indices from its start, values within it; unary and streamed.
template <typename T>
void ExpectSegmentsSorted(TestServer& server, const std::vector<uint64_t>& offsets, Pattern pattern) {
  const std::size_t n = offsets.back();
  const auto keys = MakeInput<T>(pattern, n, n + 3);
  v1::SortRequest request;
  auto* options = request.mutable_options();
  options->set_dtype(WireDType<T>());
  options->set_order(v1::ORDER_DESCENDING);
  options->set_stable(true);
  options->set_payload(v1::PAYLOAD_INDICES);
  options->set_algorithm(TestAlgorithm());
  options->set_segment_offsets(OffsetBytes(offsets));
  request.set_keys(ToBytes(keys));
  v1::SortResponse response;
  grpc::ClientContext context;
  const grpc::Status status = server.stub().Sort(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(SameBits(FromBytes<T>(response.keys()), ReferenceSegmentSort(keys, offsets, SortOrder::kDescending)));
  EXPECT_EQ(FromBytes<int64_t>(response.indices()), ReferenceSegmentStableArgsort(keys, offsets, SortOrder::kDescending));
}

TEST(RpcSortSegments, EachSegmentIsSortedAlone) {
  TestServer server;
  ExpectSegmentsSorted<float>(server, SegmentOffsetsOf(20000, {0, 1, 17, 0, 4097, 300}), Pattern::kSpecials);
  ExpectSegmentsSorted<uint16_t>(server, SegmentOffsetsOf(5000, {2, 0, 0, 9}), Pattern::kFewDistinct);
  ExpectSegmentsSorted<double>(server, SegmentOffsetsOf(70001, {70001}), Pattern::kRandom);  // one segment
  ExpectSegmentsSorted<int8_t>(server, {0, 0, 0}, Pattern::kRandom);                          // nothing at all
}

TEST(RpcSortSegments, BadOffsetsAreInvalidArgumentSayingWhy) {
  TestServer server;
  auto sort = [&](const std::string& offsets, uint64_t rows, std::size_t n) {
    v1::SortRequest request;
    request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
    request.mutable_options()->set_segment_offsets(offsets);
    request.mutable_options()->set_rows(rows);
    request.mutable_options()->set_algorithm(TestAlgorithm());
    request.set_keys(std::string(n * 4, '\7'));
    v1::SortResponse response;
    grpc::ClientContext context;
    return server.stub().Sort(&context, request, &response);
  };
  const struct {
    std::string offsets;
    uint64_t rows;
    std::size_t n;
    const char* text;
  } cases[] = {
      {OffsetBytes({0, 5, 10}).substr(0, 20), 0, 10, "must be at least two little-endian uint64"},
      {OffsetBytes({0}), 0, 10, "must be at least two"},
      {OffsetBytes({1, 10}), 0, 10, "must start at 0, not 1"},
      {OffsetBytes({0, 6, 5, 10}), 0, 10, "decreases at entry 2 (6 then 5)"},
      {OffsetBytes({0, 5, 9}), 0, 10, "ends at 9, not at the 10 keys"},
      {OffsetBytes({0, 5, 11}), 0, 10, "ends at 11, not at the 10 keys"},
      {OffsetBytes({0, 5, 10}), 2, 10, "options.rows and options.segment_offsets exclude each other"},
  };
  for (const auto& c : cases) {
    const grpc::Status status = sort(c.offsets, c.rows, c.n);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.text;
    EXPECT_NE(status.error_message().find(c.text), std::string::npos) << status.error_message();
  }
  EXPECT_TRUE(sort(OffsetBytes({0, 5, 10}), 1, 10).ok());
}

// TopK of segments: min(k, length) results per segment, one after another, indices from the segment's
// start; unary and streamed (in chunks that cut keys), for k under, between and over the lengths.
template <typename T>
void ExpectSegmentTopK(TestServer& server, const std::vector<uint64_t>& offsets, std::size_t k, bool largest) {
  const std::size_t n = offsets.back();
  const auto keys = MakeInput<T>(Pattern::kSpecials, n, n + k);
  v1::TopKOptions options;
  options.set_dtype(WireDType<T>());
  options.set_k(k);
  options.set_largest(largest);
  options.set_sorted(true);
  options.set_algorithm(TestAlgorithm());
  options.set_segment_offsets(OffsetBytes(offsets));
  const auto expected = ReferenceSegmentTopK(keys, offsets, k, largest);
  const std::string what = "segments=" + std::to_string(offsets.size() - 1) + " k=" + std::to_string(k);
  v1::TopKRequest request;
  *request.mutable_options() = options;
  request.set_keys(ToBytes(keys));
  v1::TopKResponse response;
  grpc::ClientContext context;
  const grpc::Status status = server.stub().TopK(&context, request, &response);
  ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
  EXPECT_TRUE(SameBits(FromBytes<T>(response.values()), expected.values)) << what;
  EXPECT_EQ(FromBytes<int64_t>(response.indices()), expected.indices) << what;
  const CallResult streamed = CallTopKStream(server.stub(), options, ToBytes(keys), 1001);
  ASSERT_TRUE(streamed.status.ok()) << what << ": " << streamed.status.error_message();
  EXPECT_TRUE(SameBits(FromBytes<T>(streamed.keys), expected.values)) << what << " (streamed)";
  EXPECT_EQ(FromBytes<int64_t>(streamed.indices), expected.indices) << what << " (streamed)";
}

TEST(RpcTopKSegments, EachSegmentYieldsMinOfKAndItsLength) {
  TestServer server;
  for (std::size_t k : {std::size_t{1}, std::size_t{10}, std::size_t{5000}}) {
    ExpectSegmentTopK<float>(server, SegmentOffsetsOf(20000, {0, 1, 17, 0, 4097, 300}), k, true);
    ExpectSegmentTopK<int16_t>(server, SegmentOffsetsOf(5000, {2, 0, 0, 9}), k, false);
  }
  ExpectSegmentTopK<double>(server, SegmentOffsetsOf(70001, {70001}), 100, true);  // one segment
  ExpectSegmentTopK<uint8_t>(server, {0, 0, 0}, 3, true);                          // nothing at all
}

TEST(RpcTopKSegments, BadOffsetsAreInvalidArgumentSayingWhy) {
  TestServer server;
  auto top_k = [&](const std::string& offsets, uint64_t rows, std::size_t n) {
    v1::TopKRequest request;
    request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
    request.mutable_options()->set_k(2);
    request.mutable_options()->set_segment_offsets(offsets);
    request.mutable_options()->set_rows(rows);
    request.mutable_options()->set_algorithm(TestAlgorithm());
    request.set_keys(std::string(n * 4, '\7'));
    v1::TopKResponse response;
    grpc::ClientContext context;
    return server.stub().TopK(&context, request, &response);
  };
  const struct {
    std::string offsets;
    uint64_t rows;
    std::size_t n;
    const char* text;
  } cases[] = {
      {OffsetBytes({0, 5, 10}).substr(0, 20), 0, 10, "must be at least two little-endian uint64"},
      {OffsetBytes({1, 10}), 0, 10, "must start at 0, not 1"},
      {OffsetBytes({0, 6, 5, 10}), 0, 10, "decreases at entry 2 (6 then 5)"},
      {OffsetBytes({0, 5, 9}), 0, 10, "ends at 9, not at the 10 keys"},
      {OffsetBytes({0, 5, 10}), 2, 10, "options.rows and options.segment_offsets exclude each other"},
  };
  for (const auto& c : cases) {
    const grpc::Status status = top_k(c.offsets, c.rows, c.n);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.text;
    EXPECT_NE(status.error_message().find(c.text), std::string::npos) << status.error_message();
  }
  EXPECT_TRUE(top_k(OffsetBytes({0, 1, 10}), 1, 10).ok());  // k = 2 over a one-key segment
}

TEST(RpcSortRows, RowsThatCannotBeServedAreInvalidArgumentSayingWhy) {
  TestServer server;
  auto sort = [&](uint64_t rows, v1::Algorithm algorithm, std::size_t n) {
    v1::SortRequest request;
    request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
    request.mutable_options()->set_rows(rows);
    request.mutable_options()->set_algorithm(algorithm);
    request.set_keys(std::string(n * 4, '\7'));
    v1::SortResponse response;
    grpc::ClientContext context;
    return server.stub().Sort(&context, request, &response);
  };
  grpc::Status status = sort(3, TestAlgorithm(), 10);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("options.rows 3 does not divide the 10 keys"), std::string::npos)
      << status.error_message();
  EXPECT_TRUE(sort(0, TestAlgorithm(), 10).ok());  // 0 rows: one array, as for TopK
  if (!TestingCuda()) return;  // the named GPU sorts exist on the CUDA backend only
  status = sort(4, v1::ALGORITHM_MERGE, 4 * 100);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("merge sorts one array"), std::string::npos) << status.error_message();
  status = sort(2, v1::ALGORITHM_BITONIC, 2 * 5000);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("rows of at most 4096 keys"), std::string::npos) << status.error_message();
  EXPECT_TRUE(sort(2, v1::ALGORITHM_BITONIC, 2 * 4096).ok());
}

TEST(RpcStreaming, ArrayLargerThanOneMessageRoundTripsInOddChunks) {
  ServerConfig config = LoopbackConfig();
  config.max_message_bytes = 64 << 10;  // so that 1M keys (4 MiB) cannot travel in one message
  TestServer server(config);
  const auto keys = MakeInput<uint32_t>(Pattern::kRandom, (1 << 20) + 3, 5);

  // Unary is refused with a pointer to the streaming form.
  v1::SortRequest request;
  request.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  request.set_keys(ToBytes(keys));
  v1::SortResponse unary;
  grpc::ClientContext context;
  EXPECT_EQ(server.stub().Sort(&context, request, &unary).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);

  for (std::size_t chunk : {std::size_t{4093}, std::size_t{60000}}) {
    std::vector<uint32_t> got;
    std::vector<int64_t> indices;
    grpc::Status status =
        StreamSort(server.stub(), keys, chunk, v1::PAYLOAD_INDICES, &got, &indices, 10007);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(got, ReferenceSort(keys, SortOrder::kAscending));
    ASSERT_EQ(indices.size(), keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(keys[indices[i]], got[i]);
  }
}

TEST(RpcStreaming, RowsOfAStreamedSortAreEachSortedAlone) {
  TestServer server;
  const auto keys = MakeInput<int16_t>(Pattern::kRandom, 5 * 40001, 6);
  std::vector<int16_t> got;
  std::vector<int64_t> indices;
  grpc::Status status = StreamSort(server.stub(), keys, 9999, v1::PAYLOAD_INDICES, &got, &indices, 4096, 5);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(got, ReferenceRowSort(keys, 5, SortOrder::kAscending));
  EXPECT_EQ(indices, ReferenceRowStableArgsort(keys, 5, SortOrder::kAscending));
  // A stream whose keys the rows do not divide is refused when it ends.
  status = StreamSort(server.stub(), std::vector<int16_t>(keys.begin(), keys.begin() + 1001), 9999,
                      v1::PAYLOAD_INDICES, &got, &indices, 4096, 5);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("options.rows 5 does not divide the 1001 keys"), std::string::npos)
      << status.error_message();
}

TEST(RpcStreaming, TopKStreamAnswersInChunks) {
  TestServer server;
  const auto keys = MakeInput<float>(Pattern::kSpecials, 100000, 9);
  grpc::ClientContext context;
  auto stream = server.stub().TopKStream(&context);
  v1::TopKStreamRequest first;
  first.mutable_options()->set_dtype(v1::DTYPE_FLOAT32);
  first.mutable_options()->set_k(5000);
  first.mutable_options()->set_rows(4);
  first.mutable_options()->set_largest(true);
  first.mutable_options()->set_sorted(true);
  first.set_response_chunk_bytes(1000);
  ASSERT_TRUE(stream->Write(first));
  const std::string bytes = ToBytes(keys);
  for (std::size_t pos = 0; pos < bytes.size(); pos += 7777) {
    v1::TopKStreamRequest next;
    next.set_keys(bytes.substr(pos, 7777));
    ASSERT_TRUE(stream->Write(next));
  }
  stream->WritesDone();
  std::string values, indices;
  v1::TopKStreamResponse response;
  int chunks = 0;
  while (stream->Read(&response)) {
    values += response.values();
    indices += response.indices();
    ++chunks;
  }
  ASSERT_TRUE(stream->Finish().ok());
  EXPECT_GT(chunks, 10);
  const auto expected = ReferenceTopK(keys, 4, 5000, true);
  EXPECT_TRUE(SameBits(FromBytes<float>(values), expected.values));
  EXPECT_EQ(FromBytes<int64_t>(indices), expected.indices);
}

}  // namespace
}  // namespace gpusort::testing
