// Writes the seed corpora of the proto fuzzers and the caller-text fuzzer: small valid requests of every
// kind, and near-valid ones (a byte short, options twice, a part that does not fit its job), so that the
// fuzzers start from inputs that reach deep into the decoders. Run once by hand; the output is checked in
// (tests/fuzz/corpus/). The .npy and text seeds come from npy_seeds.py (NumPy's own writer).
// usage: fuzz_seed_generator CORPUS_DIR
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "client/cli/dtype_names.h"
#include "gpusort/v1/sort.pb.h"

namespace {

namespace fs = std::filesystem;
using namespace gpusort;

fs::path root;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  fs::create_directories(root / target);
  std::ofstream(root / target / name, std::ios::binary) << bytes;
}

// n little-endian keys of `width` bytes: a descending run with a repeat, so sorting has work to do.
std::string Keys(std::size_t n, std::size_t width) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    const uint64_t v = (n - i) / 2 * 0x0101010101010101ull;
    out.append(reinterpret_cast<const char*>(&v), width);
  }
  return out;
}

// The client's dtypes carry the proto's numbers (gpusort/types.h).
std::size_t Width(v1::DType d) { return client::ElementSize(static_cast<client::DType>(d)); }

constexpr v1::DType kDTypes[] = {v1::DTYPE_INT32,   v1::DTYPE_UINT32,  v1::DTYPE_INT64,    v1::DTYPE_UINT64,
                                 v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT64, v1::DTYPE_FLOAT16,  v1::DTYPE_BFLOAT16,
                                 v1::DTYPE_INT16,   v1::DTYPE_UINT16,  v1::DTYPE_INT8,     v1::DTYPE_UINT8};

void SortRequests() {
  for (v1::DType d : kDTypes) {
    v1::SortRequest r;
    r.mutable_options()->set_dtype(d);
    r.set_keys(Keys(6, Width(d)));
    Write("sort_request_fuzzer", "keys_" + v1::DType_Name(d), r.SerializeAsString());
  }
  v1::SortRequest values;
  values.mutable_options()->set_dtype(v1::DTYPE_UINT32);
  values.mutable_options()->set_payload(v1::PAYLOAD_VALUES);
  values.mutable_options()->set_value_width(3);
  values.mutable_options()->set_order(v1::ORDER_DESCENDING);
  values.mutable_options()->set_stable(true);
  values.set_keys(Keys(4, 4));
  values.set_values(std::string(12, 'v'));
  Write("sort_request_fuzzer", "values", values.SerializeAsString());
  values.set_values(std::string(11, 'v'));  // a byte short
  Write("sort_request_fuzzer", "values_short", values.SerializeAsString());

  v1::SortRequest argsort;
  argsort.mutable_options()->set_dtype(v1::DTYPE_FLOAT64);
  argsort.mutable_options()->set_payload(v1::PAYLOAD_INDICES);
  argsort.mutable_options()->set_algorithm(v1::ALGORITHM_CPU);
  argsort.set_keys(Keys(3, 8));
  Write("sort_request_fuzzer", "indices", argsort.SerializeAsString());
  argsort.mutable_keys()->pop_back();  // not a whole number of keys
  Write("sort_request_fuzzer", "keys_ragged", argsort.SerializeAsString());

  v1::SortRequest shm;
  shm.mutable_options()->set_dtype(v1::DTYPE_INT32);
  shm.mutable_options()->set_payload(v1::PAYLOAD_INDICES);
  auto ref = [](v1::RegionRef* r, uint64_t offset, uint64_t length) {
    r->set_region_id("region-1-00000000deadbeef");
    r->set_offset(offset);
    r->set_length(length);
  };
  ref(shm.mutable_keys_region(), 0, 64);
  ref(shm.mutable_output_region(), 64, 64);
  ref(shm.mutable_indices_region(), 128, 128);
  Write("sort_request_fuzzer", "regions", shm.SerializeAsString());
}

void TopKRequests() {
  for (v1::DType d : kDTypes) {
    v1::TopKRequest r;
    r.mutable_options()->set_dtype(d);
    r.mutable_options()->set_k(2);
    r.set_keys(Keys(8, Width(d)));
    Write("topk_request_fuzzer", "keys_" + v1::DType_Name(d), r.SerializeAsString());
  }
  v1::TopKRequest rows;
  rows.mutable_options()->set_dtype(v1::DTYPE_FLOAT32);
  rows.mutable_options()->set_k(3);
  rows.mutable_options()->set_rows(4);
  rows.mutable_options()->set_largest(true);
  rows.mutable_options()->set_sorted(true);
  rows.mutable_options()->set_output(v1::TOPK_OUTPUT_INDICES);
  rows.set_keys(Keys(12, 4));
  Write("topk_request_fuzzer", "rows", rows.SerializeAsString());
  rows.mutable_options()->set_k(4);  // k above the row length
  Write("topk_request_fuzzer", "k_too_large", rows.SerializeAsString());

  v1::TopKRequest shm;
  shm.mutable_options()->set_dtype(v1::DTYPE_UINT64);
  shm.mutable_options()->set_k(1);
  shm.mutable_keys_region()->set_region_id("region-1-00000000deadbeef");
  shm.mutable_keys_region()->set_length(64);
  shm.mutable_values_region()->set_region_id("region-1-00000000deadbeef");
  shm.mutable_values_region()->set_offset(64);
  shm.mutable_values_region()->set_length(8);
  shm.mutable_indices_region()->set_region_id("region-1-00000000deadbeef");
  shm.mutable_indices_region()->set_offset(72);
  shm.mutable_indices_region()->set_length(8);
  Write("topk_request_fuzzer", "regions", shm.SerializeAsString());
}

// stream_request_fuzzer's framing: [flags][length LE16][message].
enum : uint8_t { kTopK = 1, kNewCall = 2, kOtherHost = 4 };
std::string Record(uint8_t flags, const std::string& message) {
  std::string out(1, static_cast<char>(flags));
  out += static_cast<char>(message.size() & 0xff);
  out += static_cast<char>(message.size() >> 8);
  return out + message;
}

v1::SortStreamRequest SortFirst(v1::DType d, const std::string& keys) {
  v1::SortStreamRequest m;
  m.mutable_options()->set_dtype(d);
  m.set_keys(keys);
  return m;
}

// One parted Sort's part `index` of `count`, carrying keys [first, first + n) of `all`.
std::string Part(const std::string& job, uint32_t index, uint32_t count, const std::string& all, std::size_t width,
                 uint8_t flags = kNewCall) {
  const std::size_t total = all.size() / width;
  const std::size_t first = total * index / count, end = total * (index + 1) / count;
  const std::string keys = all.substr(first * width, (end - first) * width);
  v1::SortStreamRequest m = SortFirst(v1::DTYPE_INT64, keys.substr(0, keys.size() / 2 + 3));  // cut inside a key
  m.mutable_options()->set_payload(v1::PAYLOAD_INDICES);
  m.mutable_part()->set_job(job);
  m.mutable_part()->set_index(index);
  m.mutable_part()->set_count(count);
  m.mutable_part()->set_total_keys(total);
  v1::SortStreamRequest rest;
  rest.set_keys(keys.substr(keys.size() / 2 + 3));
  return Record(flags, m.SerializeAsString()) + Record(0, rest.SerializeAsString());
}

void StreamRequests() {
  for (v1::DType d : kDTypes) {
    v1::SortStreamRequest rest;
    rest.set_keys(Keys(5, Width(d)));
    Write("stream_request_fuzzer", "sort_" + v1::DType_Name(d),
          Record(kNewCall, SortFirst(d, Keys(3, Width(d))).SerializeAsString()) + Record(0, rest.SerializeAsString()));
  }
  v1::SortStreamRequest again = SortFirst(v1::DTYPE_UINT32, Keys(2, 4));
  Write("stream_request_fuzzer", "options_twice",
        Record(kNewCall, again.SerializeAsString()) + Record(0, again.SerializeAsString()));

  v1::TopKStreamRequest topk;
  topk.mutable_options()->set_dtype(v1::DTYPE_FLOAT64);
  topk.mutable_options()->set_k(2);
  topk.mutable_options()->set_rows(2);
  topk.set_keys(Keys(3, 8));
  v1::TopKStreamRequest topk_rest;
  topk_rest.set_keys(Keys(5, 8));
  Write("stream_request_fuzzer", "topk_rows",
        Record(kTopK | kNewCall, topk.SerializeAsString()) + Record(kTopK, topk_rest.SerializeAsString()));

  const std::string job(16, 'j'), all = Keys(10, 8);
  Write("stream_request_fuzzer", "parts_2", Part(job, 1, 2, all, 8) + Part(job, 0, 2, all, 8));
  Write("stream_request_fuzzer", "parts_3", Part(job, 0, 3, all, 8) + Part(job, 2, 3, all, 8) + Part(job, 1, 3, all, 8));
  // The same job id from another host is another job: neither completes.
  Write("stream_request_fuzzer", "parts_two_hosts", Part(job, 0, 2, all, 8) + Part(job, 1, 2, all, 8, kNewCall | kOtherHost));
  // A part that comes twice fails its job; the part still waiting resumes with the failure.
  Write("stream_request_fuzzer", "parts_twice", Part(job, 0, 3, all, 8) + Part(job, 0, 3, all, 8) + Part(job, 1, 3, all, 8));
  // Then a mix: a whole Sort, the TopK, and a parted Sort, one after the other.
  Write("stream_request_fuzzer", "mixed",
        Record(kNewCall, SortFirst(v1::DTYPE_FLOAT32, Keys(4, 4)).SerializeAsString()) +
            Record(kTopK | kNewCall, topk.SerializeAsString()) + Record(kTopK, topk_rest.SerializeAsString()) +
            Part(job, 0, 2, all, 8) + Part(job, 1, 2, all, 8));
}

void CallerTexts() {
  // First byte: CallerText's limit (255: none).
  Write("caller_text_fuzzer", "request_id", std::string("\x40") + "3f2a9c1e-7d7b-4d55-9a43-1f0e4a2b6c11");
  Write("caller_text_fuzzer", "control_bytes", std::string("\x08") + "a\nb\x1b[31m\\'\"\x7f\x80\xff");
  Write("caller_text_fuzzer", "long", std::string("\x02") + std::string(200, 'r'));
  Write("caller_text_fuzzer", "unlimited", std::string("\xff") + "region-1-0123456789abcdef");
  Write("caller_text_fuzzer", "empty", std::string("\x00", 1));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  root = argv[1];
  SortRequests();
  TopKRequests();
  StreamRequests();
  CallerTexts();
  return 0;
}
