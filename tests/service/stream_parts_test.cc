// One Sort sent on several SortStream calls at once (proto StreamPart), through the raw stubs: every
// part gets back its range of the whole sorted array, and a part that misbehaves or goes away fails
// every part of its Sort with a status (never a hang: each call here has a deadline).
#include <chrono>
#include <future>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/service/http_get.h"
#include "tests/service/scripted_backend.h"
#include "tests/service/test_server.h"
#include "tests/support/inputs.h"
#include "tests/support/reference.h"

namespace gpusort::testing {
namespace {

constexpr auto kDeadline = std::chrono::seconds(30);

std::string JobId(int salt) {
  std::mt19937_64 random(std::random_device{}() + salt);
  std::string id(16, '\0');
  for (char& c : id) c = static_cast<char>(random());
  return id;
}

struct PartAnswer {
  grpc::Status status;
  uint64_t first_offset = 0;
  std::string keys, indices;
  bool contiguous = true;  // each response chunk started where the previous one ended
};

// Sends one part: `options` and `part` in the first message, then `keys` in pieces of `chunk` bytes
// (cut anywhere, also inside a key), and collects the answer.
PartAnswer SendPart(v1::SortService::Stub& stub, const v1::SortOptions& options, const v1::StreamPart& part,
                    const std::string& keys, std::size_t chunk, std::size_t key_width,
                    grpc::ClientContext* context = nullptr) {
  grpc::ClientContext own;
  if (context == nullptr) context = &own;
  context->set_deadline(std::chrono::system_clock::now() + kDeadline);
  auto stream = stub.SortStream(context);
  v1::SortStreamRequest m;
  *m.mutable_options() = options;
  *m.mutable_part() = part;
  m.set_response_chunk_bytes(4096 + 8);
  std::size_t pos = 0;
  do {
    m.set_keys(keys.substr(pos, chunk));
    pos += chunk;
    if (!stream->Write(m)) break;
    m.Clear();
  } while (pos < keys.size());
  stream->WritesDone();
  PartAnswer answer;
  v1::SortStreamResponse r;
  bool first = true;
  while (stream->Read(&r)) {
    if (first) answer.first_offset = r.offset();
    else if (r.offset() != answer.first_offset + answer.keys.size() / key_width) answer.contiguous = false;
    first = false;
    answer.keys += r.keys();
    answer.indices += r.indices();
  }
  answer.status = stream->Finish();
  return answer;
}

v1::StreamPart Part(const std::string& job, uint32_t index, uint32_t count, uint64_t total) {
  v1::StreamPart p;
  p.set_job(job);
  p.set_index(index);
  p.set_count(count);
  p.set_total_keys(total);
  return p;
}

// The sum of every series of `name` whose labels include each of `labels` (e.g. `method="SortStream"`).
double SumOfSeries(const std::string& text, const std::string& name, const std::vector<std::string>& labels) {
  std::istringstream in(text);
  std::string line;
  double sum = 0;
  while (std::getline(in, line)) {
    if (line.rfind(name + "{", 0) != 0) continue;
    const std::size_t close = line.find('}');
    if (close == std::string::npos) continue;
    const std::string label_text = line.substr(name.size() + 1, close - name.size() - 1);
    bool all = true;
    for (const std::string& label : labels) all = all && label_text.find(label) != std::string::npos;
    if (all) sum += std::stod(line.substr(close + 2));
  }
  return sum;
}

ServerConfig WithMetrics() {
  ServerConfig config = LoopbackConfig();
  config.metrics_listen = "127.0.0.1:0";
  return config;
}

class StreamParts : public ::testing::Test {
 protected:
  std::string Scrape() { return HttpGet(server_.server().metrics_port(), "/metrics"); }
  // Waits (up to 10 s) until `want` tickets are held: a Sort in parts holds one from its first part's
  // first message on (the job's). A fixed sleep was too short under ThreadSanitizer.
  bool WaitForInflight(double want) {
    for (int i = 0; i < 1000; ++i) {
      if (MetricValue(Scrape(), "gpusort_inflight_requests") == want) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  // Sorts `keys` in `count` parts, each on its own connection, and checks the joined answer.
  // With `rows`, the array is that many rows, each sorted alone; the parts cut across rows as they fall.
  template <typename T>
  void SortInParts(const std::vector<T>& keys, uint32_t count, std::size_t chunk, bool descending,
                   bool with_indices, std::size_t rows = 1) {
    const std::size_t n = keys.size();
    const std::string job = JobId(static_cast<int>(n + count));
    const std::string bytes = ToBytes(keys);
    auto options = TestSortOptions(WireDType<T>(), descending, with_indices ? v1::PAYLOAD_INDICES : v1::PAYLOAD_NONE);
    options.set_rows(rows);
    // Every stub exists before the first part starts: a part's thread reads stubs[i], and a later
    // push_back could move the vector under it (a data race; CI failed this test once, and this is
    // the only cause found).
    std::vector<std::unique_ptr<v1::SortService::Stub>> stubs;
    for (uint32_t i = 0; i < count; ++i) stubs.push_back(server_.NewStub());
    std::vector<std::future<PartAnswer>> parts;
    for (uint32_t i = 0; i < count; ++i) {
      const std::size_t begin = n * i / count, end = n * (i + 1) / count;
      parts.push_back(std::async(std::launch::async, [&, i, begin, end] {
        return SendPart(*stubs[i], options, Part(job, i, count, n),
                        bytes.substr(begin * sizeof(T), (end - begin) * sizeof(T)), chunk, sizeof(T));
      }));
    }
    std::string sorted, indices;
    for (uint32_t i = 0; i < count; ++i) {
      PartAnswer answer = parts[i].get();
      ASSERT_TRUE(answer.status.ok()) << "part " << i << ": " << answer.status.error_message();
      EXPECT_TRUE(answer.contiguous) << "part " << i;
      if (!answer.keys.empty()) {
        EXPECT_EQ(answer.first_offset, n * i / count) << "part " << i;
      }
      EXPECT_EQ(answer.keys.size(), (n * (i + 1) / count - n * i / count) * sizeof(T)) << "part " << i;
      sorted += answer.keys;
      indices += answer.indices;
    }
    const SortOrder order = descending ? SortOrder::kDescending : SortOrder::kAscending;
    EXPECT_TRUE(SameBits(FromBytes<T>(sorted), ReferenceRowSort(keys, rows, order)));
    if (with_indices) {
      // Positions in the whole array (or the row), in the order a stable sort gives (the CPU and radix
      // paths are both stable).
      EXPECT_EQ(FromBytes<int64_t>(indices), ReferenceRowStableArgsort(keys, rows, order));
    }
  }

  TestServer server_{WithMetrics()};
};

TEST_F(StreamParts, ThreePartsCutInsideKeysSortTheWholeArray) {
  SortInParts(MakeInput<uint32_t>(Pattern::kRandom, 100003), 3, 1001, false, false);
}

TEST_F(StreamParts, FloatsWithSpecialValuesDescendingWithIndices) {
  std::vector<float> keys = MakeInput<float>(Pattern::kRandom, 70001, 3);
  const std::vector<float> special = SpecialValues<float>();
  for (std::size_t i = 0; i < keys.size(); i += 97) keys[i] = special[i % special.size()];
  SortInParts(keys, 4, 4099, true, true);
}

TEST_F(StreamParts, SixtyFourBitKeysFewDistinct) {
  SortInParts(MakeInput<int64_t>(Pattern::kFewDistinct, 50001, 5), 2, 8 * 1000 + 3, false, true);
  SortInParts(MakeInput<double>(Pattern::kReversed, 40000, 6), 5, 65536, false, false);
}

TEST_F(StreamParts, RowsCutAcrossPartsAreEachSortedAlone) {
  SortInParts(MakeInput<uint32_t>(Pattern::kRandom, 7 * 3001, 12), 3, 4001, false, true, 7);
  SortInParts(MakeInput<Float16>(Pattern::kSpecials, 64 * 300, 13), 4, 999, true, true, 64);
}

TEST_F(StreamParts, SegmentsCutAcrossPartsAreEachSortedAlone) {
  const auto keys = MakeInput<int32_t>(Pattern::kFewDistinct, 30011, 14);
  const std::vector<uint64_t> offsets = SegmentOffsetsOf(keys.size(), {0, 1, 5000, 77, 0, 12000});
  const std::string job = JobId(91);
  auto options = TestSortOptions(v1::DTYPE_INT32, false, v1::PAYLOAD_INDICES);
  options.set_segment_offsets(std::string(reinterpret_cast<const char*>(offsets.data()), offsets.size() * 8));
  const std::string bytes = ToBytes(keys);
  std::vector<std::unique_ptr<v1::SortService::Stub>> stubs;
  for (int i = 0; i < 3; ++i) stubs.push_back(server_.NewStub());
  std::vector<std::future<PartAnswer>> parts;
  for (uint32_t i = 0; i < 3; ++i) {
    const std::size_t begin = keys.size() * i / 3, end = keys.size() * (i + 1) / 3;
    parts.push_back(std::async(std::launch::async, [&, i, begin, end] {
      return SendPart(*stubs[i], options, Part(job, i, 3, keys.size()), bytes.substr(begin * 4, (end - begin) * 4),
                      2999, 4);
    }));
  }
  std::string sorted, indices;
  for (auto& part : parts) {
    PartAnswer answer = part.get();
    ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
    sorted += answer.keys;
    indices += answer.indices;
  }
  EXPECT_EQ(FromBytes<int32_t>(sorted), ReferenceSegmentSort(keys, offsets, SortOrder::kAscending));
  EXPECT_EQ(FromBytes<int64_t>(indices), ReferenceSegmentStableArgsort(keys, offsets, SortOrder::kAscending));
}

TEST_F(StreamParts, RowsThatDoNotDivideThePartsTotalAreInvalidArgument) {
  auto options = TestSortOptions(v1::DTYPE_UINT32);
  options.set_rows(3);
  const PartAnswer answer =
      SendPart(*server_.NewStub(), options, Part(JobId(77), 0, 2, 10), std::string(20, '\1'), 1 << 20, 4);
  EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(answer.status.error_message(), ::testing::HasSubstr("does not divide the parts' 10 keys"));
}

TEST_F(StreamParts, PartsSmallerThanAChunkAndEmptyParts) {
  SortInParts(MakeInput<uint32_t>(Pattern::kRandom, 7, 9), 3, 1 << 20, false, false);
  SortInParts(MakeInput<uint32_t>(Pattern::kRandom, 2, 9), 4, 1 << 20, false, true);  // two parts empty
}

TEST_F(StreamParts, LargeArrayInEightParts) {
  SortInParts(MakeInput<uint32_t>(Pattern::kRandom, (1 << 20) + 1, 11), 8, 960 << 10, false, false);
}

// --- misuse ----------------------------------------------------------------------------------------

// The proto allows 64 parts; with a ticket a part, a 64-part Sort could never succeed from one caller
// under the default share (48 of 64; issue 41). The job holds one ticket, whatever its parts.
TEST_F(StreamParts, TheProtosMostPartsFromOneCallerUnderTheDefaultLimits) {
  ASSERT_EQ(PerCallerInflightLimit(ServerConfig{}), 48) << "the defaults this test is about changed";
  SortInParts(MakeInput<uint32_t>(Pattern::kRandom, 64 * 1000 + 7, 41), 64, 4096, false, false);
}

TEST_F(StreamParts, BadPartFieldsAreInvalidArgument) {
  const auto options = TestSortOptions(v1::DTYPE_UINT32);
  const std::string keys(40, '\1');
  auto expect = [&](const v1::SortOptions& o, const v1::StreamPart& part, const char* text) {
    PartAnswer a = SendPart(server_.stub(), o, part, keys, 40, 4);
    EXPECT_EQ(a.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << text;
    EXPECT_THAT(a.status.error_message(), ::testing::HasSubstr(text));
  };
  expect(options, Part("short", 0, 2, 20), "16 to 64 random bytes");
  expect(options, Part(JobId(1), 0, 1, 20), "part.count must be 2 to 64");
  expect(options, Part(JobId(2), 0, 65, 20), "part.count must be 2 to 64");
  expect(options, Part(JobId(3), 2, 2, 20), "not below part.count");
  auto with_values = options;
  with_values.set_payload(v1::PAYLOAD_VALUES);
  with_values.set_value_width(4);
  expect(with_values, Part(JobId(4), 0, 2, 20), "keys only");
}

TEST_F(StreamParts, OverTheRequestLimitIsResourceExhausted) {
  PartAnswer a = SendPart(server_.stub(), TestSortOptions(v1::DTYPE_UINT64), Part(JobId(5), 0, 2, uint64_t{1} << 40),
                          std::string(8, '\0'), 8, 8);
  EXPECT_EQ(a.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(a.status.error_message(), ::testing::HasSubstr("request limit"));
}

// A part that breaks the job fails it; the part that already sent everything and waits gets ABORTED.
struct BrokenJobCase {
  const char* what;
  std::function<PartAnswer(v1::SortService::Stub&, const std::string& job)> second_part;
  grpc::StatusCode second_code;
  const char* second_text;
};

TEST_F(StreamParts, APartThatBreaksTheJobFailsTheWaitingPart) {
  const auto options = TestSortOptions(v1::DTYPE_UINT32);
  const std::string half(40, '\2');  // 10 keys: total 20 in 2 parts
  const std::vector<BrokenJobCase> cases = {
      {"too many keys",
       [&](auto& stub, const std::string& job) { return SendPart(stub, options, Part(job, 1, 2, 20), half + "xxxx", 44, 4); },
       grpc::StatusCode::INVALID_ARGUMENT, "more than its 10 keys"},
      {"too few keys",
       [&](auto& stub, const std::string& job) { return SendPart(stub, options, Part(job, 1, 2, 20), half.substr(4), 36, 4); },
       grpc::StatusCode::INVALID_ARGUMENT, "carried 9 keys"},
      {"other options",
       [&](auto& stub, const std::string& job) {
         return SendPart(stub, TestSortOptions(v1::DTYPE_UINT32, true), Part(job, 1, 2, 20), half, 40, 4);
       },
       grpc::StatusCode::INVALID_ARGUMENT, "disagrees"},
      {"other total",
       [&](auto& stub, const std::string& job) { return SendPart(stub, options, Part(job, 1, 2, 21), half, 40, 4); },
       grpc::StatusCode::INVALID_ARGUMENT, "disagrees"},
      {"same index twice",
       [&](auto& stub, const std::string& job) { return SendPart(stub, options, Part(job, 0, 2, 20), half, 40, 4); },
       grpc::StatusCode::INVALID_ARGUMENT, "came twice"},
  };
  int salt = 100;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string job = JobId(++salt);
    auto first_stub = server_.NewStub();
    auto first = std::async(std::launch::async, [&] {
      return SendPart(*first_stub, options, Part(job, 0, 2, 20), half, 40, 4);
    });
    // Let the first part arrive and wait before the second one breaks the job.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto second_stub = server_.NewStub();
    PartAnswer second = c.second_part(*second_stub, job);
    EXPECT_EQ(second.status.error_code(), c.second_code) << second.status.error_message();
    EXPECT_THAT(second.status.error_message(), ::testing::HasSubstr(c.second_text));
    PartAnswer a = first.get();
    EXPECT_EQ(a.status.error_code(), grpc::StatusCode::ABORTED) << a.status.error_message();
    EXPECT_THAT(a.status.error_message(), ::testing::HasSubstr(c.second_text));
  }
}

// A Sort sent in parts is one request: one count, one latency sample, its keys once, each stage once;
// not one per part (a 10M-key CLI sort in 8 parts used to count 8 requests).
TEST_F(StreamParts, ASortInPartsCountsAsOneRequest) {
  const std::vector<std::string> sort_stream = {"method=\"SortStream\""};
  const std::vector<std::string> ok = {"method=\"SortStream\"", "code=\"OK\""};
  const std::string before = Scrape();
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 100003, 5);
  SortInParts(keys, 4, 4096 + 3, false, false);
  if (HasFatalFailure()) return;
  const std::string after = Scrape();
  auto delta = [&](const std::string& name, const std::vector<std::string>& labels) {
    return SumOfSeries(after, name, labels) - SumOfSeries(before, name, labels);
  };
  EXPECT_EQ(delta("gpusort_requests_total", sort_stream), 1);
  EXPECT_EQ(delta("gpusort_requests_total", ok), 1);
  EXPECT_EQ(delta("gpusort_request_duration_seconds_count", sort_stream), 1);
  EXPECT_EQ(delta("gpusort_keys_total", sort_stream), 100003);
  EXPECT_EQ(delta("gpusort_stage_duration_seconds_count", {"method=\"SortStream\"", "stage=\"receive\""}), 1);
  EXPECT_EQ(delta("gpusort_stage_duration_seconds_count", {"method=\"SortStream\"", "stage=\"send\""}), 1);
}

// A part that breaks its Sort fails its siblings with ABORTED; the one request counts once, under the
// breaking part's own code, which says what went wrong.
TEST_F(StreamParts, ABrokenSortInPartsCountsOnceUnderTheBreakingPartsCode) {
  const auto options = TestSortOptions(v1::DTYPE_UINT32);
  const std::string half(40, '\2');
  const std::string job = JobId(41);
  const std::string before = Scrape();
  auto first_stub = server_.NewStub();
  auto first = std::async(std::launch::async, [&] { return SendPart(*first_stub, options, Part(job, 0, 2, 20), half, 40, 4); });
  // The first part must have joined before the second breaks the job: a part that comes after its job
  // failed never joins it and counts on its own (docs/deployment.md, gpusort_requests_total).
  ASSERT_TRUE(WaitForInflight(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  PartAnswer second = SendPart(*server_.NewStub(), options, Part(job, 1, 2, 20), half + "xxxx", 44, 4);
  ASSERT_EQ(second.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << second.status.error_message();
  ASSERT_EQ(first.get().status.error_code(), grpc::StatusCode::ABORTED);
  const std::string after = Scrape();
  auto delta = [&](const std::vector<std::string>& labels) {
    return SumOfSeries(after, "gpusort_requests_total", labels) - SumOfSeries(before, "gpusort_requests_total", labels);
  };
  EXPECT_EQ(delta({"method=\"SortStream\""}), 1);
  EXPECT_EQ(delta({"method=\"SortStream\"", "code=\"INVALID_ARGUMENT\""}), 1);
  EXPECT_EQ(delta({"method=\"SortStream\"", "code=\"ABORTED\""}), 0);
  EXPECT_EQ(SumOfSeries(after, "gpusort_request_duration_seconds_count", {"method=\"SortStream\""}) -
                SumOfSeries(before, "gpusort_request_duration_seconds_count", {"method=\"SortStream\""}),
            1);
}

TEST_F(StreamParts, APartCancelledByItsCallerFailsTheWaitingPart) {
  const auto options = TestSortOptions(v1::DTYPE_UINT32);
  const std::string job = JobId(7);
  const std::string half(40, '\3');
  auto first_stub = server_.NewStub();
  auto first = std::async(std::launch::async, [&] {
    return SendPart(*first_stub, options, Part(job, 0, 2, 20), half, 40, 4);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto second_stub = server_.NewStub();
  grpc::ClientContext context;
  auto stream = second_stub->SortStream(&context);
  v1::SortStreamRequest m;
  *m.mutable_options() = options;
  *m.mutable_part() = Part(job, 1, 2, 20);
  m.set_keys(half.substr(0, 8));
  ASSERT_TRUE(stream->Write(m));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  context.TryCancel();
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  PartAnswer a = first.get();
  EXPECT_EQ(a.status.error_code(), grpc::StatusCode::ABORTED) << a.status.error_message();
  EXPECT_THAT(a.status.error_message(), ::testing::HasSubstr("part 1 of this sort failed"));
}

// Issue 14, item 7: a part that failed, and whose call ended, before a sibling's first message came was
// forgotten; the sibling started the job again and waited for it until its deadline (forever without).
TEST_F(StreamParts, ASiblingThatComesAfterAPartFailedAloneIsAborted) {
  const auto options = TestSortOptions(v1::DTYPE_UINT32);
  const std::string half(40, '\4');
  const std::string job = JobId(21);
  PartAnswer bad = SendPart(server_.stub(), options, Part(job, 0, 2, 20), half + "xxxx", 44, 4);
  ASSERT_EQ(bad.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad.status.error_message();
  const auto start = std::chrono::steady_clock::now();
  PartAnswer late = SendPart(*server_.NewStub(), options, Part(job, 1, 2, 20), half, 40, 4);
  EXPECT_EQ(late.status.error_code(), grpc::StatusCode::ABORTED) << late.status.error_message();
  EXPECT_THAT(late.status.error_message(), ::testing::HasSubstr("part 0 of this sort failed"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST_F(StreamParts, APartRefusedBeforeItJoinedFailsItsSiblings) {
  const std::string half(40, '\5');
  const std::string job = JobId(22);
  v1::SortOptions bad_options = TestSortOptions(v1::DTYPE_UINT32);
  bad_options.set_dtype(static_cast<v1::DType>(999));
  PartAnswer bad = SendPart(server_.stub(), bad_options, Part(job, 0, 2, 20), half, 40, 4);
  ASSERT_EQ(bad.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad.status.error_message();
  PartAnswer late = SendPart(*server_.NewStub(), TestSortOptions(v1::DTYPE_UINT32), Part(job, 1, 2, 20), half, 40, 4);
  EXPECT_EQ(late.status.error_code(), grpc::StatusCode::ABORTED) << late.status.error_message();
}

TEST_F(StreamParts, PartsSentTogetherWithOneBadNeverLeaveTheOtherWaiting) {
  const auto options = TestSortOptions(v1::DTYPE_UINT32);
  const std::string half(40, '\6');
  for (int round = 0; round < 10; ++round) {
    SCOPED_TRACE(round);
    const std::string job = JobId(300 + round);
    auto stub0 = server_.NewStub(), stub1 = server_.NewStub();
    auto good = std::async(std::launch::async, [&] { return SendPart(*stub1, options, Part(job, 1, 2, 20), half, 40, 4); });
    PartAnswer bad = SendPart(*stub0, options, Part(job, 0, 2, 20), half + "xxxx", 44, 4);
    EXPECT_EQ(bad.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    PartAnswer other = good.get();  // within SendPart's deadline, not at it
    EXPECT_EQ(other.status.error_code(), grpc::StatusCode::ABORTED) << other.status.error_message();
  }
}

TEST(StreamPartsTimeouts, ASiblingThatNeverComesEndsTheWaitAfterTheIdleTimeout) {
  ServerConfig config = LoopbackConfig();
  config.stream_idle_timeout_seconds = 0.5;
  TestServer server(config);
  const auto start = std::chrono::steady_clock::now();
  PartAnswer alone = SendPart(server.stub(), TestSortOptions(v1::DTYPE_UINT32), Part(JobId(23), 0, 2, 20),
                              std::string(40, '\7'), 40, 4);
  EXPECT_EQ(alone.status.error_code(), grpc::StatusCode::ABORTED) << alone.status.error_message();
  EXPECT_THAT(alone.status.error_message(), ::testing::HasSubstr("--stream-idle-timeout"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// Issue 43: every part of a Sort in parts took a worker once all had arrived, and all but one waited
// there for the sort, so with fewer workers than parts other callers queued behind them for the whole
// sort (`-v` showed the sort's time as "queue" on an idle server). Now one worker sorts and the parts'
// other steps wait off the workers. Two workers, four parts, a backend that holds each sort until
// released: an unrelated Sort must reach the backend on the second worker while the parted one is held.
TEST(StreamPartsWorkers, ASortInPartsHoldsOneWorkerWhileItSorts) {
  auto counters = std::make_shared<ScriptedBackend::Counters>();
  ServerConfig config = LoopbackConfig();
  config.workers = 2;
  config.inline_max_keys = 0;  // the unrelated Sort goes to a worker too
  TestServer server(config, std::make_unique<ScriptedBackend>(counters));
  constexpr uint32_t kParts = 4;
  const std::vector<uint32_t> keys = MakeInput<uint32_t>(Pattern::kRandom, 4000, 43);
  const std::string bytes = ToBytes(keys), job = JobId(43);
  auto options = TestSortOptions(v1::DTYPE_UINT32);
  options.set_algorithm(v1::ALGORITHM_AUTO);  // the scripted backend's (TestSortOptions asks RADIX on a GPU machine)
  std::vector<std::unique_ptr<v1::SortService::Stub>> stubs;
  for (uint32_t i = 0; i < kParts; ++i) stubs.push_back(server.NewStub());
  std::vector<std::future<PartAnswer>> parts;
  for (uint32_t i = 0; i < kParts; ++i) {
    parts.push_back(std::async(std::launch::async, [&, i] {
      const std::size_t begin = keys.size() * i / kParts, end = keys.size() * (i + 1) / kParts;
      return SendPart(*stubs[i], options, Part(job, i, kParts, keys.size()),
                      bytes.substr(begin * 4, (end - begin) * 4), 1024, 4);
    }));
  }
  auto wait_for_started = [&](int want) {
    for (int i = 0; i < 1000 && counters->started.load() < want; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return counters->started.load();
  };
  ASSERT_EQ(wait_for_started(1), 1) << "the parted Sort never reached the backend";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // time for other parts to take workers
  auto other_stub = server.NewStub();
  auto other = std::async(std::launch::async, [&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kDeadline);
    v1::SortRequest request;
    *request.mutable_options() = options;
    request.set_keys(ToBytes(std::vector<uint32_t>{3, 1, 2}));
    v1::SortResponse response;
    return other_stub->Sort(&context, request, &response);
  });
  EXPECT_EQ(wait_for_started(2), 2) << "the unrelated Sort found no free worker while the parted Sort sorted";
  counters->release = true;
  EXPECT_TRUE(other.get().ok());
  std::string sorted;
  for (uint32_t i = 0; i < kParts; ++i) {
    PartAnswer answer = parts[i].get();
    ASSERT_TRUE(answer.status.ok()) << "part " << i << ": " << answer.status.error_message();
    sorted += answer.keys;
  }
  EXPECT_TRUE(SameBits(FromBytes<uint32_t>(sorted), ReferenceRowSort(keys, 1, SortOrder::kAscending)));
  EXPECT_EQ(counters->started.load(), 2);  // one sort for the four parts
}

// Job ids are the caller's: the same id used again after its Sort finished starts a new Sort.
TEST_F(StreamParts, AJobIdCanBeUsedAgainAfterItsSortFinished) {
  const std::string job = JobId(8);
  const std::vector<uint32_t> first_keys = {5, 4, 3, 2}, second_keys = {9, 1, 8, 2};
  for (const auto& keys : {first_keys, second_keys}) {
    const std::string bytes = ToBytes(keys);
    auto other = server_.NewStub();
    auto part1 = std::async(std::launch::async, [&] {
      return SendPart(*other, TestSortOptions(v1::DTYPE_UINT32), Part(job, 1, 2, 4), bytes.substr(8), 8, 4);
    });
    PartAnswer part0 = SendPart(server_.stub(), TestSortOptions(v1::DTYPE_UINT32), Part(job, 0, 2, 4), bytes.substr(0, 8), 8, 4);
    PartAnswer a1 = part1.get();
    ASSERT_TRUE(part0.status.ok()) << part0.status.error_message();
    ASSERT_TRUE(a1.status.ok()) << a1.status.error_message();
    std::vector<uint32_t> expected = keys;
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(FromBytes<uint32_t>(part0.keys + a1.keys), expected);
  }
}

}  // namespace
}  // namespace gpusort::testing
