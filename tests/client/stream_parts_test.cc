// gpusort::Client sorting one array over several SortStream calls at once (ClientOptions::stream_parts,
// proto StreamPart) against an in-process server: every dtype's awkward values, descending, argsort
// with whole-array positions, stable ties, arrays too short to split, values (never split), errors,
// progress, and several split sorts from one Client at once. Then against a fake server: the StreamPart
// each call carries, which error wins, answers out of place.
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include <grpcpp/grpcpp.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpusort/client.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

constexpr int kParts = 3;

class ClientStreamParts : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new TestServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  // Every streamed sort of at least one key per part is split. Chunks of an odd size end in the middle
  // of keys of either width (1000 = 4 * 250 = 8 * 125 would not), both ways.
  static ClientOptions PartOptions() {
    ClientOptions options;
    options.target = server_->address();
    options.transport = Transport::kStream;
    options.stream_parts = kParts;
    options.stream_parts_from_bytes = 4;
    options.stream_chunk_bytes = 1003;
    options.timeout = std::chrono::seconds(60);  // a part left waiting fails the test instead of hanging it
    return options;
  }

  static TestServer* server_;
};
TestServer* ClientStreamParts::server_ = nullptr;

// The server adds a "parts_wait" stage to each part's answer: how long it waited for its sibling parts.
bool CameInParts(const client::ExecutionInfo& info) {
  return std::any_of(info.stages.begin(), info.stages.end(),
                     [](const client::StageTime& s) { return s.stage == "parts_wait"; });
}

// Indices are positions in the whole array: a permutation of [0, n), each pointing at its sorted key.
template <typename T>
void ExpectArgsortOf(const std::vector<T>& keys, const SortResult<T>& result, SortOrder order) {
  const std::vector<T> sorted = ReferenceSort(keys, order);
  ASSERT_TRUE(SameBits(result.keys, sorted));
  ASSERT_EQ(result.indices.size(), keys.size());
  std::vector<bool> seen(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const int64_t at = result.indices[i];
    ASSERT_TRUE(at >= 0 && static_cast<std::size_t>(at) < keys.size() && !seen[at]) << "index " << i;
    seen[at] = true;
    ASSERT_EQ(ToOrderedBits(keys[at]), ToOrderedBits(sorted[i])) << "keys[indices[" << i << "]]";
  }
}

TEST_F(ClientStreamParts, RandomUint32Sorts) {
  Client client(PartOptions());
  const auto keys = MakeInput<uint32_t>(Pattern::kRandom, 100003, 1);
  auto sorted = client.Sort(keys);
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_TRUE(CameInParts(sorted->info));
  EXPECT_EQ(sorted->info.backend, TestingCuda() ? client::Backend::kCuda : client::Backend::kCpu);
  std::vector<uint32_t> expected = keys;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(sorted->keys, expected);
}

TEST_F(ClientStreamParts, FloatNaNsZerosAndInfinitiesKeepTheirBits) {
  ClientOptions options = PartOptions();
  options.stream_parts_from_bytes = 0;
  Client client(options);
  auto keys = MakeInput<float>(Pattern::kSpecials, 50001, 2);
  // Certainly at the edges of the parts too: part 1 starts at 16667, part 2 at 33334.
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (std::size_t at : {0, 16666, 16667, 33333, 33334, 50000}) keys[at] = (at % 2) ? -0.0f : nan;
  keys[1] = -nan;
  keys[2] = inf;
  keys[3] = -inf;
  keys[4] = 0.0f;
  for (bool descending : {false, true}) {
    SCOPED_TRACE(descending ? "descending" : "ascending");
    auto sorted = client.Sort(keys, {.descending = descending});
    ASSERT_TRUE(sorted.ok()) << sorted.status();
    EXPECT_TRUE(CameInParts(sorted->info));
    EXPECT_TRUE(SameBits(sorted->keys,
                         ReferenceSort(keys, descending ? SortOrder::kDescending : SortOrder::kAscending)));
  }
}

TEST_F(ClientStreamParts, Int64Descending) {
  Client client(PartOptions());
  const auto keys = MakeInput<int64_t>(Pattern::kRandom, 70001, 3);
  auto sorted = client.Sort(keys, {.descending = true});
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_TRUE(CameInParts(sorted->info));
  std::vector<int64_t> expected = keys;
  std::sort(expected.begin(), expected.end(), std::greater<>());
  EXPECT_EQ(sorted->keys, expected);
}

TEST_F(ClientStreamParts, ArgsortIndicesArePositionsInTheWholeArray) {
  Client client(PartOptions());
  const auto u64 = MakeInput<uint64_t>(Pattern::kRandom, 30011, 4);
  auto u64_sorted = client.Argsort(u64);
  ASSERT_TRUE(u64_sorted.ok()) << u64_sorted.status();
  EXPECT_TRUE(CameInParts(u64_sorted->info));
  ExpectArgsortOf(u64, *u64_sorted, SortOrder::kAscending);

  const auto f64 = MakeInput<double>(Pattern::kSpecials, 30011, 5);
  auto f64_sorted = client.Argsort(f64, {.descending = true});
  ASSERT_TRUE(f64_sorted.ok()) << f64_sorted.status();
  EXPECT_TRUE(CameInParts(f64_sorted->info));
  ExpectArgsortOf(f64, *f64_sorted, SortOrder::kDescending);
}

TEST_F(ClientStreamParts, StableArgsortKeepsTiesInInputOrder) {
  Client client(PartOptions());
  const auto keys = MakeInput<int32_t>(Pattern::kFewDistinct, 40009, 6);  // ties across every part
  for (bool descending : {false, true}) {
    SCOPED_TRACE(descending ? "descending" : "ascending");
    const SortOrder order = descending ? SortOrder::kDescending : SortOrder::kAscending;
    auto sorted = client.Argsort(keys, {.descending = descending, .stable = true});
    ASSERT_TRUE(sorted.ok()) << sorted.status();
    EXPECT_TRUE(CameInParts(sorted->info));
    EXPECT_EQ(sorted->indices, ReferenceStableArgsort(keys, order));  // std::stable_sort
    EXPECT_TRUE(SameBits(sorted->keys, ReferenceSort(keys, order)));
  }
}

TEST_F(ClientStreamParts, FewerKeysThanPartsGoOnOneStream) {
  ClientOptions options = PartOptions();
  options.stream_parts_from_bytes = 0;
  Client client(options);
  for (std::size_t n : {0, 1, 2}) {
    SCOPED_TRACE(n);
    const auto keys = MakeInput<uint32_t>(Pattern::kRandom, n, 7);
    auto raw = client.SortRaw({.dtype = client::DType::kUint32,
                               .keys = {reinterpret_cast<const char*>(keys.data()), n * sizeof(uint32_t)},
                               .options = {},
                               .payload = client::Payload::kIndices,
                               .values = {},
                               .value_width = 0});
    ASSERT_TRUE(raw.ok()) << raw.status();
    EXPECT_TRUE(raw->streamed);
    EXPECT_FALSE(CameInParts(raw->info));
    EXPECT_EQ(FromBytes<uint32_t>(raw->keys), ReferenceSort(keys, SortOrder::kAscending));
    EXPECT_EQ(raw->indices.size(), n * sizeof(int64_t));
  }
  // Exactly one key per part is split.
  const std::vector<uint32_t> three = {9, 3, 6};
  auto sorted = client.Argsort(three);
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_TRUE(CameInParts(sorted->info));
  EXPECT_EQ(sorted->keys, (std::vector<uint32_t>{3, 6, 9}));
  EXPECT_EQ(sorted->indices, (std::vector<int64_t>{1, 2, 0}));
}

TEST_F(ClientStreamParts, BelowTheThresholdOrWithValuesOneStreamCarriesIt) {
  ClientOptions options = PartOptions();
  options.stream_parts_from_bytes = 40000;
  Client client(options);
  const auto small = MakeInput<uint32_t>(Pattern::kRandom, 9999, 8);  // 39996 bytes
  auto sorted = client.Sort(small);
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_FALSE(CameInParts(sorted->info));
  EXPECT_EQ(sorted->keys, ReferenceSort(small, SortOrder::kAscending));

  // PAYLOAD_VALUES cannot travel in parts (the proto has no ranges for values).
  const auto keys = MakeInput<uint32_t>(Pattern::kFewDistinct, 20000, 9);
  std::string values(keys.size(), '\0');
  for (std::size_t i = 0; i < keys.size(); ++i) values[i] = static_cast<char>(i * 7);
  auto with_values = client.SortWithValues(std::span<const uint32_t>(keys), values, 1, {.stable = true});
  ASSERT_TRUE(with_values.ok()) << with_values.status();
  EXPECT_FALSE(CameInParts(with_values->info));
  std::string expected;
  for (int64_t p : ReferenceStableArgsort(keys, SortOrder::kAscending)) expected += values[p];
  EXPECT_EQ(with_values->values, expected);
}

TEST_F(ClientStreamParts, StreamPartsOfOneNeverSplits) {
  ClientOptions options = PartOptions();
  options.stream_parts = 1;
  Client client(options);
  const auto keys = MakeInput<uint32_t>(Pattern::kRandom, 10007, 10);
  auto sorted = client.Sort(keys);
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_FALSE(CameInParts(sorted->info));
  EXPECT_EQ(sorted->keys, ReferenceSort(keys, SortOrder::kAscending));
}

TEST_F(ClientStreamParts, ProgressCountsEveryPart) {
  ClientOptions options = PartOptions();
  std::mutex mutex;
  std::map<std::string, std::pair<std::size_t, std::size_t>> last;  // stage -> (done, total)
  bool monotonic = true;
  options.progress = [&](std::string_view stage, std::size_t done, std::size_t total) {
    std::lock_guard lock(mutex);
    auto& [last_done, last_total] = last[std::string(stage)];
    if (done < last_done) monotonic = false;
    last_done = done;
    last_total = total;
  };
  Client client(options);
  const auto keys = MakeInput<uint32_t>(Pattern::kRandom, 20011, 11);
  auto sorted = client.Argsort(keys);
  ASSERT_TRUE(sorted.ok()) << sorted.status();
  EXPECT_TRUE(monotonic);
  const std::size_t key_bytes = keys.size() * sizeof(uint32_t);
  EXPECT_EQ(last["send"], std::make_pair(key_bytes, key_bytes));
  const std::size_t answer_bytes = key_bytes + keys.size() * sizeof(int64_t);
  EXPECT_EQ(last["receive"], std::make_pair(answer_bytes, answer_bytes));
}

TEST_F(ClientStreamParts, AFailingSortReportsTheServersErrorNotACancellation) {
  Client client(PartOptions());
  const auto keys = MakeInput<uint32_t>(Pattern::kRandom, 10007, 12);
  // The CPU backend refuses odd-even sort (UNIMPLEMENTED) and the CUDA backend 10007 keys of it
  // (INVALID_ARGUMENT): that (not the CANCELLED of the parts the client cancelled, nor the server's
  // ABORTED for the others) is the answer.
  const RawSortRequest request{
      .dtype = client::DType::kUint32,
      .keys = {reinterpret_cast<const char*>(keys.data()), keys.size() * sizeof(uint32_t)},
      .options = {.algorithm = client::Algorithm::kOddEven}};
  auto sorted = client.SortRaw(request);
  EXPECT_EQ(sorted.status().code(),
            TestingCuda() ? absl::StatusCode::kInvalidArgument : absl::StatusCode::kUnimplemented)
      << sorted.status();
  // And the Client is fine afterwards.
  auto again = client.Sort(keys);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(CameInParts(again->info));
  EXPECT_EQ(again->keys, ReferenceSort(keys, SortOrder::kAscending));
}

// SortInto writes each part's answer into the caller's memory; the same buffer serves sort after sort
// (whatever it held before is overwritten), in parts and on one stream alike.
TEST_F(ClientStreamParts, SortIntoFillsTheCallersMemoryAgainAndAgain) {
  for (int parts : {kParts, 1}) {
    SCOPED_TRACE(parts == 1 ? "one stream" : "in parts");
    ClientOptions options = PartOptions();
    options.stream_parts = parts;
    Client client(options);
    std::vector<float> out(40009, 12345.0f);
    for (uint64_t seed : {30, 31}) {
      auto keys = MakeInput<float>(Pattern::kSpecials, out.size(), seed);
      keys[0] = -std::numeric_limits<float>::quiet_NaN();
      for (bool descending : {false, true}) {
        auto info = client.SortInto(std::span<const float>(keys), std::span<float>(out), {.descending = descending});
        ASSERT_TRUE(info.ok()) << info.status();
        EXPECT_EQ(CameInParts(*info), parts > 1);
        EXPECT_TRUE(SameBits(out, ReferenceSort(keys, descending ? SortOrder::kDescending : SortOrder::kAscending)));
      }
    }
  }
}

TEST_F(ClientStreamParts, SortRawIntoWithIndicesMatchesArgsort) {
  Client client(PartOptions());
  const auto keys = MakeInput<int64_t>(Pattern::kFewDistinct, 30011, 32);
  RawSortRequest request{.dtype = client::DType::kInt64,
                         .keys = {reinterpret_cast<const char*>(keys.data()), keys.size() * sizeof(int64_t)},
                         .payload = client::Payload::kIndices};
  request.options.stable = true;
  SortResult<int64_t> result;
  result.keys.assign(keys.size(), -1);
  result.indices.assign(keys.size(), -1);
  auto info = client.SortRawInto(request, std::as_writable_bytes(std::span(result.keys)),
                                 std::as_writable_bytes(std::span(result.indices)));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(CameInParts(*info));
  ExpectArgsortOf(keys, result, SortOrder::kAscending);
  EXPECT_EQ(result.indices, ReferenceStableArgsort(keys, SortOrder::kAscending));
}

// Below the parts' threshold (a unary call here) the answer is copied into place once.
TEST_F(ClientStreamParts, SortIntoOfASmallArrayCopiesTheAnswerIntoPlace) {
  ClientOptions options = PartOptions();
  options.transport = Transport::kAuto;
  options.stream_parts_from_bytes = 1 << 20;
  Client client(options);
  for (std::size_t n : {0, 1, 1000}) {
    const auto keys = MakeInput<uint16_t>(Pattern::kReversed, n, 33);
    std::vector<uint16_t> out(n, 7);
    auto info = client.SortInto(std::span<const uint16_t>(keys), std::span<uint16_t>(out));
    ASSERT_TRUE(info.ok()) << n << ": " << info.status();
    EXPECT_FALSE(CameInParts(*info));
    EXPECT_EQ(out, ReferenceSort(keys, SortOrder::kAscending)) << n;
  }
}

TEST_F(ClientStreamParts, SortRawIntoRefusesWrongSizesValuesAndOverlapBeforeSending) {
  Client client(PartOptions());
  auto keys = MakeInput<uint32_t>(Pattern::kRandom, 1000, 34);
  const std::string_view bytes{reinterpret_cast<const char*>(keys.data()), keys.size() * sizeof(uint32_t)};
  std::vector<std::byte> out(bytes.size()), indices(keys.size() * sizeof(int64_t));
  const RawSortRequest plain{.dtype = client::DType::kUint32, .keys = bytes};
  EXPECT_EQ(client.SortRawInto(plain, std::span(out).first(out.size() - 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.SortRawInto(plain, out, indices).status().code(), absl::StatusCode::kInvalidArgument);
  RawSortRequest argsort = plain;
  argsort.payload = client::Payload::kIndices;
  EXPECT_EQ(client.SortRawInto(argsort, out).status().code(), absl::StatusCode::kInvalidArgument);
  RawSortRequest with_values = plain;
  with_values.payload = client::Payload::kValues;
  with_values.values = bytes;
  with_values.value_width = 4;
  EXPECT_EQ(client.SortRawInto(with_values, out).status().code(), absl::StatusCode::kInvalidArgument);
  // In place is refused: a part's answer could land on keys another part is still sending.
  auto in_place = client.SortRawInto(plain, std::as_writable_bytes(std::span(keys)));
  EXPECT_EQ(in_place.status().code(), absl::StatusCode::kInvalidArgument) << in_place.status();
  EXPECT_EQ(keys, MakeInput<uint32_t>(Pattern::kRandom, 1000, 34));  // untouched
}

TEST_F(ClientStreamParts, SplitSortsFromManyThreadsAtOnceKeepToTheirOwnJobs) {
  Client client(PartOptions());
  constexpr int kThreads = 4;
  std::vector<std::vector<uint32_t>> inputs;
  for (int t = 0; t < kThreads; ++t) inputs.push_back(MakeInput<uint32_t>(Pattern::kRandom, 20000 + t, 20 + t));
  std::vector<absl::StatusOr<SortResult<uint32_t>>> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 3 && (round == 0 || results[t].ok()); ++round)
        results[t] = client.Argsort(inputs[t]);
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    SCOPED_TRACE(t);
    ASSERT_TRUE(results[t].ok()) << results[t].status();
    EXPECT_TRUE(CameInParts(results[t]->info));
    ExpectArgsortOf(inputs[t], *results[t], SortOrder::kAscending);
  }
}

// A SortStream server that answers each part as a test says, to see what the client makes of answers
// the real server does not give: a part's own failure after the others' ABORTED, answers out of range.
class FakePartsServer {
 public:
  using Stream = grpc::ServerReaderWriter<v1::SortStreamResponse, v1::SortStreamRequest>;
  // Answers one part once it has read all of it: its StreamPart and its keys.
  using Answer = std::function<grpc::Status(grpc::ServerContext&, const v1::StreamPart&,
                                            const std::string& keys, Stream&)>;

  explicit FakePartsServer(Answer answer) : service_(std::move(answer)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~FakePartsServer() { server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1)); }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // The StreamPart of every call so far.
  std::vector<v1::StreamPart> parts() {
    std::lock_guard lock(service_.mutex);
    return service_.parts;
  }

  // Sends keys [begin, end) of the whole array, whose part `keys` starts at element `first`.
  static void SendRange(Stream& stream, const std::string& keys, std::size_t first, std::size_t begin,
                        std::size_t end) {
    v1::SortStreamResponse out;
    out.set_offset(begin);
    out.set_keys(keys.substr((begin - first) * 4, (end - begin) * 4));
    out.mutable_info()->set_device("fake");
    stream.Write(out);
  }
  static std::size_t Begin(const v1::StreamPart& p, uint32_t index) {
    return p.total_keys() * index / p.count();
  }

 private:
  struct Service final : v1::SortService::Service {
    explicit Service(Answer a) : answer(std::move(a)) {}
    grpc::Status SortStream(grpc::ServerContext* context, Stream* stream) override {
      v1::SortStreamRequest in;
      v1::StreamPart part;
      std::string keys;
      while (stream->Read(&in)) {
        if (in.has_part()) part = in.part();
        keys += in.keys();
      }
      {
        std::lock_guard lock(mutex);
        parts.push_back(part);
      }
      return answer(*context, part, keys, *stream);
    }
    Answer answer;
    std::mutex mutex;
    std::vector<v1::StreamPart> parts;
  };

  Service service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// Waits (at most 10 s) until the caller cancels the call: a part kept waiting, as the real server keeps
// the parts that are in while another is missing.
grpc::Status WaitForCancellation(grpc::ServerContext& context) {
  for (int i = 0; i < 1000 && !context.IsCancelled(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "the client never cancelled");
}

ClientOptions FakeOptions(const FakePartsServer& server) {
  ClientOptions options;
  options.target = server.address();
  options.transport = Transport::kStream;
  options.stream_parts = kParts;
  options.stream_parts_from_bytes = 0;
  options.stream_chunk_bytes = 1003;
  options.timeout = std::chrono::seconds(30);
  return options;
}

const std::vector<uint32_t> kFakeKeys = MakeInput<uint32_t>(Pattern::kRandom, 3001, 30);

TEST(ClientStreamPartsAgainstAFakeServer, EveryPartCarriesTheSameJobAndItsOwnRange) {
  FakePartsServer server([](grpc::ServerContext&, const v1::StreamPart& p, const std::string& keys,
                            FakePartsServer::Stream& stream) {
    const std::size_t begin = FakePartsServer::Begin(p, p.index());
    const std::size_t end = FakePartsServer::Begin(p, p.index() + 1);
    if (keys.size() != (end - begin) * 4) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "wrong range");
    const std::size_t middle = (begin + end) / 2;  // two chunks, to see them placed one after the other
    FakePartsServer::SendRange(stream, keys, begin, begin, middle);
    FakePartsServer::SendRange(stream, keys, begin, middle, end);
    return grpc::Status::OK;
  });
  Client client(FakeOptions(server));
  auto echoed = client.Sort(kFakeKeys);
  ASSERT_TRUE(echoed.ok()) << echoed.status();
  EXPECT_EQ(echoed->keys, kFakeKeys);  // each part's range back in its place
  EXPECT_EQ(echoed->info.device, "fake");
  std::vector<v1::StreamPart> parts = server.parts();
  ASSERT_EQ(parts.size(), static_cast<std::size_t>(kParts));
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.index() < b.index(); });
  for (uint32_t i = 0; i < kParts; ++i) {
    EXPECT_EQ(parts[i].index(), i);
    EXPECT_EQ(parts[i].count(), static_cast<uint32_t>(kParts));
    EXPECT_EQ(parts[i].total_keys(), kFakeKeys.size());
    EXPECT_EQ(parts[i].job().size(), 16u);
    EXPECT_EQ(parts[i].job(), parts[0].job());
  }
  auto again = client.Sort(kFakeKeys);  // a new Sort, a new job id
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NE(server.parts().back().job(), parts[0].job());
}

TEST(ClientStreamPartsAgainstAFakeServer, TheFailingPartsErrorWinsOverTheOthersAborted) {
  FakePartsServer server([](grpc::ServerContext&, const v1::StreamPart& p, const std::string&,
                            FakePartsServer::Stream&) {
    if (p.index() != 1) return grpc::Status(grpc::StatusCode::ABORTED, "part 1 of this sort failed");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // its own answer comes last
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "part 1 is too much");
  });
  Client client(FakeOptions(server));
  auto sorted = client.Sort(kFakeKeys);
  EXPECT_EQ(sorted.status().code(), absl::StatusCode::kResourceExhausted) << sorted.status();
  EXPECT_THAT(std::string(sorted.status().message()), ::testing::HasSubstr("part 1 is too much"));
}

TEST(ClientStreamPartsAgainstAFakeServer, AnAnswerOutOfPlaceIsDataLossAndCancelsTheOtherParts) {
  for (const char* fault : {"offset", "beyond", "short"}) {
    SCOPED_TRACE(fault);
    const std::string f = fault;
    FakePartsServer server([f](grpc::ServerContext& context, const v1::StreamPart& p, const std::string& keys,
                               FakePartsServer::Stream& stream) {
      if (p.index() != 2) return WaitForCancellation(context);
      const std::size_t begin = FakePartsServer::Begin(p, 2), end = FakePartsServer::Begin(p, 3);
      if (f == "offset") FakePartsServer::SendRange(stream, keys, begin, begin + 1, end);
      if (f == "beyond") FakePartsServer::SendRange(stream, keys + "abcd", begin, begin, end + 1);
      if (f == "short") FakePartsServer::SendRange(stream, keys, begin, begin, end - 1);
      return grpc::Status::OK;
    });
    Client client(FakeOptions(server));
    const auto start = std::chrono::steady_clock::now();
    auto sorted = client.Sort(kFakeKeys);
    EXPECT_EQ(sorted.status().code(), absl::StatusCode::kDataLoss) << sorted.status();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));  // the others cancelled
  }
}

}  // namespace
}  // namespace gpusort::testing
