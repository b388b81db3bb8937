// SortStream and TopKStream calls' messages off the network, taken in as stream_calls.cc takes them in
// (Accept, DoPendingWork, EndOfInput) but without gRPC, and parted Sorts (StreamPart) joined, written,
// failed and arrived through the server's PartedSorts on the CPU backend. A job whose parts all arrive
// is sorted and its answer checked against std::sort of the keys the parts wrote.
//
// Input: records of [flags][length, 2 bytes little-endian][length bytes: one serialized message].
// flags bit 0: the message is a TopKStreamRequest (else a SortStreamRequest); bit 1: it starts a new
// call (the previous one half-closes); bit 2: the call comes from a second caller host. The first
// record always starts a call; the end of the input half-closes the last one.
//
// The server's request limit is 1 MiB here, so that no message can make the ingest allocate more.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "gpusort/v1/sort.pb.h"
#include "server/backend/cpu/cpu_backend.h"
#include "server/core/key_order.h"
#include "server/core/status_macros.h"
#include "server/transport/request_decode.h"
#include "server/transport/sort_parts.h"

namespace {

using namespace gpusort;

constexpr std::size_t kMaxRequestBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxPartedJobs = 4;

Backend& Cpu() {
  static std::unique_ptr<Backend> backend = MakeCpuBackend({.threads = 1});
  return *backend;
}

// The job's one ticket of --max-inflight (the scheduler is not under test here): any non-null token,
// so that a job keeps the same kind of ticket the server's do.
absl::StatusOr<JobTicket> TakeTicket() { return JobTicket(std::make_shared<int>(0)); }

bool CpuRuns(Algorithm a) { return a == Algorithm::kAuto || a == Algorithm::kCpu; }

// One parted job as the calls saw it: the keys each part wrote, and which parts were resumed.
struct JobRecord {
  std::shared_ptr<PartedSort> job;
  std::string keys;  // total_keys * width bytes, as written by the parts
  std::vector<bool> written, resumed;
};

struct Streams {
  PartedSorts parted{kMaxPartedJobs};
  std::vector<std::shared_ptr<JobRecord>> jobs;

  std::shared_ptr<JobRecord> Record(const std::shared_ptr<PartedSort>& job, std::size_t width) {
    for (auto& r : jobs)
      if (r->job == job) return r;
    auto r = std::make_shared<JobRecord>();
    r->job = job;
    r->keys.assign(job->total_keys() * width, '\0');
    r->written.assign(job->parts(), false);
    r->resumed.assign(job->parts(), false);
    jobs.push_back(r);
    return r;
  }
};

// SortStreamCall's input side (stream_calls.cc), one message at a time.
class SortStream {
 public:
  SortStream(Streams& streams, std::string host) : streams_(streams), host_(std::move(host)) {}

  absl::Status Accept(v1::SortStreamRequest& m) {
    const bool first = first_;
    first_ = false;
    if (first) {
      if (!m.has_options()) return absl::InvalidArgumentError("first message without options");
      ASSIGN_OR_RETURN(spec_, DecodeSortOptions(m.options()));
      if (!CpuRuns(spec_.algorithm)) return absl::UnimplementedError("not on the CPU");  // CheckSortAlgorithm
      if (m.has_part()) RETURN_IF_ERROR(JoinParts(m.part()));
    } else if (m.has_options() || m.response_chunk_bytes() != 0 || m.has_part()) {
      return absl::InvalidArgumentError("options again");
    }
    received_ += m.keys().size() + m.values().size();
    if (received_ > kMaxRequestBytes) return absl::ResourceExhaustedError("over the request limit");
    key_bytes_ += m.keys().size();
    values_.append(m.values());
    const std::size_t width = ElementSize(spec_.dtype);
    if (record_ != nullptr && key_bytes_ > part_keys_ * width) return absl::InvalidArgumentError("part too long");
    if (record_ == nullptr) {
      keys_.append(m.keys());
      return absl::OkStatus();
    }
    // DoPendingWork: whole keys go to the job's ingest, a piece of a key waits for the rest.
    carry_.append(m.keys());
    const std::size_t whole = carry_.size() / width * width;
    const auto keys = std::as_bytes(std::span(carry_.data(), whole));
    const std::size_t first_key = part_first_ + part_written_;
    RETURN_IF_ERROR(record_->job->ingest().Write(first_key, keys));
    std::memcpy(record_->keys.data() + first_key * width, carry_.data(), whole);
    part_written_ += whole / width;
    carry_.erase(0, whole);
    return absl::OkStatus();
  }

  // The caller half-closed: EndOfInput, then (a whole Sort on one stream) the sort itself, or (a part)
  // Arrive, which resumes the part once every part of its job has arrived.
  absl::Status End() {
    if (first_) return absl::InvalidArgumentError("no first message");
    ASSIGN_OR_RETURN(const std::size_t n, CheckSortSizes(spec_, key_bytes_, values_.size()));
    if (record_ != nullptr) {
      if (n != part_keys_) return absl::InvalidArgumentError("part carried the wrong number of keys");
      FUZZ_CHECK(part_written_ == part_keys_ && carry_.empty());
      record_->written[part_index_] = true;
      // A plain pointer: the job keeps this function, and the record keeps the job (Streams::jobs
      // outlives every call of it).
      JobRecord* record = record_.get();
      const uint32_t index = part_index_;
      record_->job->Arrive([record, index] { record->resumed[index] = true; });
      return absl::OkStatus();
    }
    return SortWhole(n);
  }

  // What the call does on a failure after it joined a job: the job fails, so no part waits forever.
  void Fail(const absl::Status& status) {
    if (record_ != nullptr) record_->job->Fail(part_index_, status);
  }

 private:
  absl::Status JoinParts(const v1::StreamPart& part) {
    const PartRef ref{.job = part.job(), .index = part.index(), .count = part.count(), .total_keys = part.total_keys()};
    ASSIGN_OR_RETURN(std::shared_ptr<PartedSort> job, streams_.parted.Join(host_, spec_, ref, Cpu(), kMaxRequestBytes, TakeTicket));
    FUZZ_CHECK(ref.index < job->parts() && job->total_keys() * ElementSize(spec_.dtype) <= kMaxRequestBytes);
    part_index_ = ref.index;
    part_first_ = job->Begin(ref.index);
    part_keys_ = job->Begin(ref.index + 1) - part_first_;
    FUZZ_CHECK(job->Begin(ref.index + 1) >= part_first_ && job->Begin(job->parts()) == job->total_keys());
    record_ = streams_.Record(job, ElementSize(spec_.dtype));
    return absl::OkStatus();
  }

  // A Sort on one stream, as StreamCall::Execute runs it on a backend without an ingest.
  absl::Status SortWhole(std::size_t n) {
    SortBuffers buffers;
    buffers.count = n;
    buffers.keys = std::as_writable_bytes(std::span(keys_.data(), keys_.size()));
    std::string values_out;
    std::vector<int64_t> indices(spec_.payload == SortPayload::kIndices ? n : 0);
    if (spec_.payload == SortPayload::kValues) {
      buffers.values = std::as_bytes(std::span(values_.data(), values_.size()));
      values_out.resize(values_.size());
      buffers.values_out = std::as_writable_bytes(std::span(values_out.data(), values_out.size()));
    } else if (spec_.payload == SortPayload::kIndices) {
      buffers.indices_out = std::span(indices);
    }
    ExecutionReport report;
    absl::Status status = RunSort(Cpu(), spec_, buffers, Cancellation(), report);
    FUZZ_CHECK(status.ok());  // the decode functions accepted it, so the backend must serve it
    return status;
  }

  Streams& streams_;
  const std::string host_;
  bool first_ = true;
  SortSpec spec_;
  std::size_t received_ = 0, key_bytes_ = 0;
  std::string keys_, values_, carry_;
  std::shared_ptr<JobRecord> record_;
  uint32_t part_index_ = 0;
  std::size_t part_first_ = 0, part_keys_ = 0, part_written_ = 0;
};

// TopKStreamCall's input side, then its Execute on the CPU backend.
class TopKStream {
 public:
  absl::Status Accept(v1::TopKStreamRequest& m) {
    const bool first = first_;
    first_ = false;
    if (first) {
      if (!m.has_options()) return absl::InvalidArgumentError("first message without options");
      ASSIGN_OR_RETURN(spec_, DecodeTopKOptions(m.options()));
      if (!CpuRuns(spec_.algorithm)) return absl::UnimplementedError("not on the CPU");  // CheckTopKAlgorithm
    } else if (m.has_options() || m.response_chunk_bytes() != 0) {
      return absl::InvalidArgumentError("options again");
    }
    if (keys_.size() + m.keys().size() > kMaxRequestBytes) return absl::ResourceExhaustedError("over the limit");
    keys_.append(m.keys());
    return absl::OkStatus();
  }

  absl::Status End() {
    if (first_) return absl::InvalidArgumentError("no first message");
    ASSIGN_OR_RETURN(const std::size_t n, CheckTopKShape(spec_, keys_.size()));
    const std::size_t results = spec_.rows * spec_.k;
    FUZZ_CHECK(results <= n);
    std::string values(spec_.wants_values() ? results * ElementSize(spec_.dtype) : 0, '\0');
    std::vector<int64_t> indices(spec_.wants_indices() ? results : 0);
    TopKBuffers buffers;
    buffers.count = n;
    buffers.keys = std::as_bytes(std::span(keys_.data(), keys_.size()));
    buffers.values_out = std::as_writable_bytes(std::span(values.data(), values.size()));
    buffers.indices_out = std::span(indices);
    ExecutionReport report;
    absl::Status status = RunTopK(Cpu(), spec_, buffers, Cancellation(), report);
    FUZZ_CHECK(status.ok());  // the decode functions accepted it, so the backend must serve it
    for (int64_t index : indices) FUZZ_CHECK(index >= 0 && static_cast<std::size_t>(index) < n / spec_.rows);
    return status;
  }

 private:
  bool first_ = true;
  TopKSpec spec_;
  std::string keys_;
};

// Every job whose parts all arrived: one sort, then each part's range read back must be the job's keys
// in order (bit for bit: equal keys in the service's order have equal bits).
template <typename T>
void CheckSorted(JobRecord& record) {
  PartedSort& job = *record.job;
  const bool descending = job.spec().order == SortOrder::kDescending;
  std::vector<T> expected(job.total_keys());
  std::memcpy(expected.data(), record.keys.data(), record.keys.size());
  std::sort(expected.begin(), expected.end(), [&](T a, T b) { return ToSortBits(a, descending) < ToSortBits(b, descending); });
  std::vector<T> got(job.total_keys());
  std::vector<int64_t> indices(job.spec().payload == SortPayload::kIndices ? job.total_keys() : 0);
  for (uint32_t part = 0; part < job.parts(); ++part) {
    const std::size_t begin = job.Begin(part), end = job.Begin(part + 1);
    absl::Status read = job.ingest().Read(begin, end, reinterpret_cast<std::byte*>(got.data() + begin),
                                          indices.empty() ? nullptr : indices.data() + begin);
    FUZZ_CHECK(read.ok());
  }
  FUZZ_CHECK(std::memcmp(got.data(), expected.data(), expected.size() * sizeof(T)) == 0);
  for (std::size_t i = 0; i < indices.size(); ++i) {
    FUZZ_CHECK(indices[i] >= 0 && static_cast<std::size_t>(indices[i]) < indices.size());
    FUZZ_CHECK(std::memcmp(&got[i], record.keys.data() + indices[i] * sizeof(T), sizeof(T)) == 0);
  }
}

void FinishJobs(Streams& streams) {
  for (auto& record : streams.jobs) {
    const bool all_written = std::all_of(record->written.begin(), record->written.end(), [](bool b) { return b; });
    const bool any_resumed = std::any_of(record->resumed.begin(), record->resumed.end(), [](bool b) { return b; });
    // Parts resume when all have arrived (then every one does) or when the job failed.
    if (all_written) FUZZ_CHECK(std::all_of(record->resumed.begin(), record->resumed.end(), [](bool b) { return b; }));
    if (!any_resumed) continue;
    ExecutionReport report;
    // A job that failed (a part broke, or did not fit it) answers every part with that failure; one that
    // sorts must have had every key written.
    if (!record->job->SortOnce(Cancellation(), report).ok()) continue;
    FUZZ_CHECK(all_written);
    VisitDType(record->job->spec().dtype, [&](auto tag) { CheckSorted<decltype(tag)>(*record); });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  Streams streams;
  std::unique_ptr<SortStream> sort;
  std::unique_ptr<TopKStream> topk;
  absl::Status status;  // the open call's first failure; it reads no more once failed
  auto close = [&] {
    if (sort != nullptr) {
      if (status.ok()) status = sort->End();
      if (!status.ok()) sort->Fail(status);
    } else if (topk != nullptr && status.ok()) {
      status = topk->End();
    }
    sort.reset();
    topk.reset();
    status = absl::OkStatus();
  };
  std::size_t at = 0;
  bool any = false;
  while (at + 3 <= size) {
    const uint8_t flags = data[at];
    const std::size_t length = std::min<std::size_t>(data[at + 1] | (data[at + 2] << 8), size - at - 3);
    const char* bytes = reinterpret_cast<const char*>(data + at + 3);
    at += 3 + length;
    const bool is_topk = flags & 1;
    if (!any || (flags & 2) || is_topk != (topk != nullptr)) {
      close();
      if (is_topk) {
        topk = std::make_unique<TopKStream>();
      } else {
        sort = std::make_unique<SortStream>(streams, flags & 4 ? "ipv4:10.0.0.2" : "ipv4:127.0.0.1");
      }
      any = true;
    }
    if (!status.ok()) continue;
    if (is_topk) {
      v1::TopKStreamRequest m;
      // gRPC fails a call whose message does not parse.
      status = m.ParseFromArray(bytes, static_cast<int>(length)) ? topk->Accept(m) : absl::InternalError("parse");
    } else {
      v1::SortStreamRequest m;
      status = m.ParseFromArray(bytes, static_cast<int>(length)) ? sort->Accept(m) : absl::InternalError("parse");
    }
  }
  close();
  FinishJobs(streams);
  return 0;
}
