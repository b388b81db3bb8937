// mixed_load_bench: a server's capacity under a mixed load (issue 18), as a node serving many callers
// sees it: sizes drawn log-uniform between --min-keys and --max-keys, sorts and top-k (k = --k, one row)
// mixed, several dtypes, --concurrency requests in flight over --connections connections, for
// --duration seconds after --warmup. Reports requests/s, keys/s (keys sent, summed over the answered
// requests) and latency percentiles, overall and per method; run it against a CUDA server and a CPU
// server on the same node and compare the two lines.
//
//   mixed_load_bench --server 127.0.0.1:50051 [--duration 20] [--warmup 3] [--concurrency 64]
//                    [--connections 8] [--min-keys 1K] [--max-keys 16M] [--dtypes u32,f32,i64,bf16]
//                    [--topk-share 0.5] [--k 100] [--pool 64] [--seed 1] [--check] [--json FILE]
//                    [--shm-socket PATH [--in-region | --in-device [--gpus N]]]
//
// The server must take the load: --max-inflight and --max-inflight-per-caller of at least 64 times the
// stream parts of the largest sorts (8), e.g. 1024, and with --shm-socket as many --shm-max-regions(-per-
// user) and bytes; under the defaults (48 calls a caller, 16 regions a user) refusals are counted as
// errors and the exit code is 1.
//
// With --shm-socket (the server's), the arrays travel through shared memory (the client library's
// Transport::kSharedMemory: copied into regions it registered, and the answers out of them) instead of
// gRPC messages: the same node's capacity without the socket's limits.
// With --in-region too, the client copies nothing per call: each array of the pool is written once into
// a region of its own, each worker has an output region, and every call is SortInRegion / TopKInRegion
// (keys read where they lie, answers written into the worker's region): the node's capacity for
// callers whose data already lives in shared memory, without the client's two copies per call.
// With --in-device instead, the arrays live in GPU memory of this node, registered as device regions
// (sort.proto, "Device memory"): every array of the pool on each of --gpus GPUs, and worker w's output on
// GPU w % gpus, which its calls use with that GPU's copy of each array. The node's capacity for callers
// whose keys are already on its GPUs: no PCIe crossing at all, so what a second GPU adds is not bounded by
// the host's copy bandwidth (needs a build with CUDA).
// The arrays are made up front (a pool of --pool requests, each with its size, dtype and method drawn
// once from --seed), so that every server measured sees the same requests in the same order per worker.
// Each call goes through gpusort::Client with its defaults: unary under 4 MiB, streamed above, a sort of
// 16 MiB or more in 8 parts. --check compares every answer with a reference made before the load (the
// sorted keys, or the k largest in rank order).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "client/cli/bench_device_memory.h"
#include "client/cli/dtype_names.h"
#include "client/cli/generate.h"
#include "client/cli/key_order.h"
#include "gpusort/client.h"
#include "gpusort/shared_memory.h"

namespace gpusort::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string server = "127.0.0.1:50051";
  double duration = 20, warmup = 3;
  int concurrency = 64, connections = 8;
  bool shm_calls_on_socket = true;  // --shm-calls: the region calls on the shared-memory socket, or gRPC
  std::size_t min_keys = 1 << 10, max_keys = 1 << 24;
  std::vector<DType> dtypes = {DType::kUint32, DType::kFloat32, DType::kInt64, DType::kBFloat16};
  double topk_share = 0.5;
  uint64_t k = 100;
  int pool = 64;
  uint64_t seed = 1;
  bool check = false;
  std::string json;
  std::string shm_socket;
  bool in_region = false;  // with shm_socket: keys and answers stay in registered regions
  bool in_device = false;  // with shm_socket: keys and answers stay in device regions on the GPUs
  int gpus = 1;            // --in-device: how many GPUs hold the arrays
};

struct Job {
  bool topk = false;
  DType dtype = DType::kUint32;
  std::size_t count = 0;
  std::string keys;
  std::vector<uint64_t> reference;  // --check: the answer's keys as ordered bits, in answer order
};

struct Sample {
  bool topk;
  std::size_t keys;
  double ms;
  bool cpu;  // the reply's ExecutionInfo.backend
};

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "mixed_load_bench: %s\nusage: mixed_load_bench --server HOST:PORT [--duration S] [--warmup S] "
               "[--concurrency N] [--connections N] [--min-keys N] [--max-keys N] [--dtypes LIST] "
               "[--topk-share F] [--k N] [--pool N] [--seed N] [--check] [--json FILE] [--shm-socket PATH "
               "[--in-region | --in-device [--gpus N]] [--shm-calls socket|grpc]]\n",
               why.c_str());
  std::exit(2);
}

std::size_t ParseCount(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const std::string unit = end;
  const double scale = unit == "K" ? 1024.0 : unit == "M" ? 1048576.0 : unit == "G" ? 1073741824.0 : 1.0;
  if (!(v >= 1) || (scale == 1.0 && !unit.empty())) Usage("not a count: " + text);
  return static_cast<std::size_t>(v * scale);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--check") {
      o.check = true;
      continue;
    }
    if (a == "--in-region") {
      o.in_region = true;
      continue;
    }
    if (a == "--in-device") {
      o.in_device = true;
      continue;
    }
    if (i + 1 >= argc) Usage(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--server") o.server = v;
    else if (a == "--duration") o.duration = std::atof(v.c_str());
    else if (a == "--warmup") o.warmup = std::atof(v.c_str());
    else if (a == "--concurrency") o.concurrency = std::atoi(v.c_str());
    else if (a == "--connections") o.connections = std::atoi(v.c_str());
    else if (a == "--min-keys") o.min_keys = ParseCount(v);
    else if (a == "--max-keys") o.max_keys = ParseCount(v);
    else if (a == "--topk-share") o.topk_share = std::atof(v.c_str());
    else if (a == "--k") o.k = ParseCount(v);
    else if (a == "--pool") o.pool = std::atoi(v.c_str());
    else if (a == "--seed") o.seed = ParseCount(v);
    else if (a == "--shm-calls" && (v == "socket" || v == "grpc")) o.shm_calls_on_socket = v == "socket";
    else if (a == "--json") o.json = v;
    else if (a == "--shm-socket") o.shm_socket = v;
    else if (a == "--gpus") o.gpus = std::atoi(v.c_str());
    else if (a == "--dtypes") {
      o.dtypes.clear();
      for (std::size_t at = 0; at <= v.size();) {
        const std::size_t comma = std::min(v.find(',', at), v.size());
        auto dtype = ParseDTypeFlag(v.substr(at, comma - at));
        if (!dtype.ok()) Usage(std::string(dtype.status().message()));
        o.dtypes.push_back(*dtype);
        at = comma + 1;
      }
    } else Usage("unknown flag " + a);
  }
  if (!(o.duration > 0) || o.warmup < 0 || o.concurrency < 1 || o.connections < 1 || o.pool < 1 ||
      o.min_keys > o.max_keys || o.topk_share < 0 || o.topk_share > 1 || o.k < 1 || o.k > o.min_keys)
    Usage("bad values (need duration > 0, concurrency, connections, pool >= 1, 1 <= k <= min-keys <= max-keys, "
          "topk-share in [0, 1])");
  if ((o.in_region || o.in_device) && o.shm_socket.empty()) Usage("--in-region and --in-device need --shm-socket");
  if (o.in_region && o.in_device) Usage("--in-region or --in-device, not both");
  if (o.gpus < 1) Usage("--gpus must be at least 1");
  return o;
}

// The reference answer of `job`, as ordered bits: all keys ascending (sort), or the k largest, largest
// first (top-k).
std::vector<uint64_t> Reference(const Job& job, uint64_t k) {
  return VisitDType(job.dtype, [&](auto tag) {
    using T = decltype(tag);
    std::vector<uint64_t> bits(job.count);
    for (std::size_t i = 0; i < job.count; ++i) {
      T x;
      std::memcpy(&x, job.keys.data() + i * sizeof(T), sizeof(T));
      bits[i] = OrderedBits(x);
    }
    std::sort(bits.begin(), bits.end());
    if (job.topk) {
      std::reverse(bits.begin(), bits.end());
      bits.resize(k);
    }
    return bits;
  });
}

bool Matches(const Job& job, const std::string& answer) {
  return VisitDType(job.dtype, [&](auto tag) {
    using T = decltype(tag);
    if (answer.size() != job.reference.size() * sizeof(T)) return false;
    for (std::size_t i = 0; i < job.reference.size(); ++i) {
      T x;
      std::memcpy(&x, answer.data() + i * sizeof(T), sizeof(T));
      if (static_cast<uint64_t>(OrderedBits(x)) != job.reference[i]) return false;
    }
    return true;
  });
}

std::vector<Job> MakePool(const Options& o) {
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> log_size(std::log(static_cast<double>(o.min_keys)),
                                                  std::log(static_cast<double>(o.max_keys)));
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<Job> pool(o.pool);
  for (int p = 0; p < o.pool; ++p) {
    Job& job = pool[p];
    job.count = std::clamp<std::size_t>(static_cast<std::size_t>(std::llround(std::exp(log_size(rng)))),
                                        o.min_keys, o.max_keys);
    job.dtype = o.dtypes[rng() % o.dtypes.size()];
    job.topk = unit(rng) < o.topk_share;
    auto keys = Generate(job.dtype, job.count, "uniform", o.seed * 1000 + p);
    if (!keys.ok()) Usage(std::string(keys.status().message()));
    job.keys = std::move(*keys);
  }
  if (o.check) {
    std::vector<std::thread> threads;
    const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned w = 0; w < workers; ++w)
      threads.emplace_back([&, w] {
        for (std::size_t p = w; p < pool.size(); p += workers) pool[p].reference = Reference(pool[p], o.k);
      });
    for (auto& t : threads) t.join();
  }
  return pool;
}

double Percentile(std::vector<double> v, double p) {  // nearest rank, as gpusort bench's
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100 * static_cast<double>(v.size())));
  return v[std::max<std::size_t>(rank, 1) - 1];
}

struct Summary {
  std::size_t requests = 0;
  double keys = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

Summary Summarize(const std::vector<Sample>& samples, int which) {  // which: 0 sort, 1 top-k, 2 both
  Summary s;
  std::vector<double> ms;
  for (const Sample& x : samples) {
    if (which != 2 && x.topk != (which == 1)) continue;
    ms.push_back(x.ms);
    s.keys += static_cast<double>(x.keys);
  }
  s.requests = ms.size();
  s.p50 = Percentile(ms, 50);
  s.p90 = Percentile(ms, 90);
  s.p99 = Percentile(ms, 99);
  s.max = ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end());
  return s;
}

// --in-device: device memory registered as a device region, and what a call needs of it.
struct DeviceRegion {
  std::unique_ptr<BenchDeviceMemory> memory;
  std::unique_ptr<SharedMemoryRegistration> registration;
};

DeviceRegion NewDeviceRegion(const Options& o, std::size_t bytes, int gpu, const std::string& keys) {
  DeviceRegion region;
  auto memory = BenchDeviceMemory::Allocate(bytes, gpu);
  if (!memory.ok()) Usage("--in-device: " + std::string(memory.status().message()));
  region.memory = std::move(*memory);
  if (!keys.empty()) {
    if (absl::Status s = region.memory->Write(0, keys.data(), keys.size()); !s.ok())
      Usage("--in-device: writing keys to GPU " + std::to_string(gpu) + ": " + std::string(s.message()));
  }
  auto fd = region.memory->ExportFd();
  if (!fd.ok()) Usage("--in-device: " + std::string(fd.status().message()));
  auto registration = SharedMemoryRegistration::RegisterDeviceMemory(o.shm_socket, *fd, bytes);
  close(*fd);
  if (!registration.ok()) Usage("--in-device: " + std::string(registration.status().message()));
  region.registration = std::move(*registration);
  return region;
}

// One call whose keys lie in a region (`in`, from its start) and whose answer goes to another (`out`:
// a reference to a range of the worker's output region): a host region (--in-region) or a device region
// (--in-device) alike.
using RefFn = std::function<client::RegionRef(std::size_t offset, std::size_t length)>;
std::size_t AnswerBytes(const Options& o, const Job& job) {
  return job.topk ? o.k * (job.keys.size() / job.count) : job.keys.size();
}
absl::StatusOr<client::ExecutionInfo> CallInRegions(Client& client, const Options& o, const Job& job, const RefFn& in,
                                                    const RefFn& out) {
  const std::size_t answer_bytes = AnswerBytes(o, job);
  if (!job.topk) {
    return client.SortInRegion(job.dtype, SortOptions{}, client::Payload::kNone, in(0, job.keys.size()),
                               out(0, answer_bytes));
  }
  TopKOptions options;
  options.k = o.k;
  options.output = client::TopKOutput::kValuesAndIndices;
  const client::RegionRef values = out(0, answer_bytes);
  const client::RegionRef indices = out((answer_bytes + 63) / 64 * 64, o.k * 8);
  return client.TopKInRegion(job.dtype, options, in(0, job.keys.size()), &values, &indices);
}

// One call on device regions: the job's keys on the worker's GPU, the answer into the worker's output.
absl::StatusOr<client::ExecutionInfo> CallInDevice(Client& client, const Options& o, const Job& job,
                                                   const DeviceRegion& in, const DeviceRegion& out,
                                                   std::string* answer) {
  absl::StatusOr<client::ExecutionInfo> info = CallInRegions(
      client, o, job, [&](std::size_t at, std::size_t n) { return in.registration->Ref(at, n); },
      [&](std::size_t at, std::size_t n) { return out.registration->Ref(at, n); });
  if (info.ok() && o.check) {
    answer->resize(AnswerBytes(o, job));
    if (absl::Status s = out.memory->Read(0, answer->data(), answer->size()); !s.ok()) return s;
  }
  return info;
}

int Run(const Options& o) {
  const std::vector<Job> pool = MakePool(o);
  double pool_keys = 0;
  for (const Job& job : pool) pool_keys += static_cast<double>(job.count);
  std::vector<std::unique_ptr<Client>> clients;
  for (int c = 0; c < o.connections; ++c) {
    ClientOptions options;
    options.target = o.server;
    options.max_message_bytes = std::size_t{1} << 30;
    options.channel_arguments = {{"gpusort.mixed_load_connection", c}};  // a connection each
    if (!o.shm_socket.empty()) {
      options.shm_socket = o.shm_socket;
      options.transport = Transport::kSharedMemory;
      options.shm_calls_on_socket = o.shm_calls_on_socket;
    }
    clients.push_back(std::make_unique<Client>(options));
    if (!clients.back()->status().ok()) Usage(std::string(clients.back()->status().message()));
  }
  // --in-region: each array in a region of its own, written once; an output region per worker.
  std::vector<std::unique_ptr<SharedMemoryRegion>> job_regions, out_regions;
  if (o.in_region) {
    std::size_t largest = 0;
    for (const Job& job : pool) largest = std::max(largest, job.keys.size() + o.k * (8 + 8) + 64);
    for (std::size_t p = 0; p < pool.size(); ++p) {
      auto region = clients[p % clients.size()]->CreateSharedMemory(pool[p].keys.size());
      if (!region.ok()) Usage("--in-region: " + std::string(region.status().message()));
      std::memcpy((*region)->data(), pool[p].keys.data(), pool[p].keys.size());
      job_regions.push_back(std::move(*region));
    }
    for (int w = 0; w < o.concurrency; ++w) {
      auto region = clients[w % clients.size()]->CreateSharedMemory(largest);
      if (!region.ok()) Usage("--in-region: " + std::string(region.status().message()));
      out_regions.push_back(std::move(*region));
    }
  }
  // --in-device: every array on each GPU; worker w's output on GPU w % gpus.
  std::vector<std::vector<DeviceRegion>> device_jobs(o.in_device ? o.gpus : 0);
  std::vector<DeviceRegion> device_outs;
  if (o.in_device) {
    std::size_t largest = 0;
    for (const Job& job : pool) largest = std::max(largest, job.keys.size() + o.k * (8 + 8) + 64);
    for (int g = 0; g < o.gpus; ++g) {
      for (const Job& job : pool) device_jobs[g].push_back(NewDeviceRegion(o, job.keys.size(), g, job.keys));
    }
    for (int w = 0; w < o.concurrency; ++w) device_outs.push_back(NewDeviceRegion(o, largest, w % o.gpus, ""));
  }
  std::string backend;
  std::mutex mutex;
  std::vector<Sample> samples;
  std::atomic<uint64_t> errors{0}, wrong{0};
  std::string first_error;
  const auto start = Clock::now();
  const auto measure_from = start + std::chrono::duration<double>(o.warmup);
  const auto stop = measure_from + std::chrono::duration<double>(o.duration);
  std::vector<std::thread> workers;
  for (int w = 0; w < o.concurrency; ++w) {
    workers.emplace_back([&, w] {
      Client& client = *clients[w % o.connections];
      std::vector<Sample> mine;
      // Each worker walks the pool from its own place, so the 64 in flight are a mix at every moment.
      for (std::size_t i = static_cast<std::size_t>(w) * 7919;; ++i) {
        const auto t0 = Clock::now();
        if (t0 >= stop) break;
        const Job& job = pool[i % pool.size()];
        std::string answer;
        absl::Status status;
        std::string device;
        bool on_cpu = false;
        if (o.in_device) {
          auto info = CallInDevice(client, o, job, device_jobs[w % o.gpus][i % pool.size()], device_outs[w], &answer);
          status = info.status();
          if (info.ok()) device = info->device, on_cpu = info->backend == client::Backend::kCpu;
        } else if (o.in_region) {
          const SharedMemoryRegion& in = *job_regions[i % pool.size()];
          const SharedMemoryRegion& out = *out_regions[w];
          const std::size_t answer_bytes = AnswerBytes(o, job);
          absl::StatusOr<client::ExecutionInfo> info =
              CallInRegions(client, o, job, [&](std::size_t at, std::size_t n) { return in.Ref(at, n); },
                            [&](std::size_t at, std::size_t n) { return out.Ref(at, n); });
          status = info.status();
          if (info.ok()) {
            device = info->device;
            on_cpu = info->backend == client::Backend::kCpu;
            if (o.check) answer.assign(reinterpret_cast<const char*>(out.data()), answer_bytes);
          }
        } else if (job.topk) {
          TopKOptions options;
          options.k = o.k;
          options.output = client::TopKOutput::kValuesAndIndices;
          auto r = client.TopKRaw(job.dtype, job.keys, options);
          status = r.status();
          if (r.ok()) answer = std::move(r->values), device = r->info.device;
          if (r.ok()) on_cpu = r->info.backend == client::Backend::kCpu;
        } else {
          RawSortRequest request;
          request.dtype = job.dtype;
          request.keys = job.keys;
          auto r = client.SortRaw(request);
          status = r.status();
          if (r.ok()) answer = std::move(r->keys), device = r->info.device;
          if (r.ok()) on_cpu = r->info.backend == client::Backend::kCpu;
        }
        const auto t1 = Clock::now();
        if (t0 < measure_from) continue;  // warm-up
        if (!status.ok()) {
          if (errors++ == 0) {
            std::lock_guard lock(mutex);
            first_error = status.ToString();
          }
          continue;
        }
        if (o.check && !Matches(job, answer)) {
          wrong++;
          continue;
        }
        mine.push_back({job.topk, job.count, std::chrono::duration<double, std::milli>(t1 - t0).count(), on_cpu});
        if (!on_cpu || mine.size() == 1) {  // the server's device: its GPU where any answer came from one
          std::lock_guard lock(mutex);
          if (backend.empty() || !on_cpu) backend = device;
        }
      }
      std::lock_guard lock(mutex);
      samples.insert(samples.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : workers) t.join();
  // The window: from the end of the warm-up to the last answer (calls started before `stop` finish).
  const double seconds = std::chrono::duration<double>(Clock::now() - measure_from).count();

  std::string dtypes;
  for (DType d : o.dtypes) {
    if (!dtypes.empty()) dtypes += ',';
    dtypes += DTypeName(d);
  }
  std::size_t answered_by_cpu = 0;
  for (const Sample& x : samples) answered_by_cpu += x.cpu;
  const std::string transport = o.shm_socket.empty() ? "grpc"
                                : o.in_region        ? "shm, in regions"
                                : o.in_device        ? "device regions on " + std::to_string(o.gpus) + " GPU(s)"
                                                     : "shm";
  std::printf("mixed load on %s (%s), %s: %d in flight on %d connections, %zu..%zu keys log-uniform, %s, "
              "top-k share %.2f (k=%llu), pool %d (%.3g keys), %.1f s; %zu of %zu answers from the CPU engine\n",
              o.server.c_str(), backend.c_str(), transport.c_str(), o.concurrency, o.connections, o.min_keys, o.max_keys,
              dtypes.c_str(), o.topk_share, static_cast<unsigned long long>(o.k), o.pool, pool_keys, seconds,
              answered_by_cpu, samples.size());
  std::string json_rows;
  for (int which : {2, 0, 1}) {
    const Summary s = Summarize(samples, which);
    const char* name = which == 2 ? "all" : which == 0 ? "sort" : "topk";
    std::printf("  %-4s %8zu answered %9.1f req/s %12.4g keys/s  p50 %9.3f ms  p90 %9.3f ms  p99 %9.3f ms  max %9.3f ms\n",
                name, s.requests, s.requests / seconds, s.keys / seconds, s.p50, s.p90, s.p99, s.max);
    char row[512];
    std::snprintf(row, sizeof row,
                  "%s{\"method\":\"%s\",\"requests\":%zu,\"requests_per_s\":%.3f,\"keys_per_s\":%.1f,"
                  "\"latency_ms\":{\"p50\":%.6f,\"p90\":%.6f,\"p99\":%.6f,\"max\":%.6f}}",
                  json_rows.empty() ? "" : ",", name, s.requests, s.requests / seconds, s.keys / seconds, s.p50, s.p90,
                  s.p99, s.max);
    json_rows += row;
  }
  std::printf("  errors %llu, wrong answers %llu%s%s\n", static_cast<unsigned long long>(errors.load()),
              static_cast<unsigned long long>(wrong.load()), first_error.empty() ? "" : "; first: ",
              first_error.c_str());
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << "{\"tool\":\"mixed_load_bench\",\"server\":\"" << o.server << "\",\"device\":\"" << backend
        << "\",\"transport\":\"" << transport << "\",\"answered_by_cpu\":" << answered_by_cpu
        << ",\"shm_calls\":\"" << (o.shm_calls_on_socket ? "socket" : "grpc") << "\""
        << ",\"concurrency\":" << o.concurrency << ",\"connections\":" << o.connections
        << ",\"min_keys\":" << o.min_keys << ",\"max_keys\":" << o.max_keys << ",\"dtypes\":\"" << dtypes
        << "\",\"topk_share\":" << o.topk_share << ",\"k\":" << o.k << ",\"pool\":" << o.pool
        << ",\"seed\":" << o.seed << ",\"check\":" << (o.check ? "true" : "false") << ",\"seconds\":" << seconds
        << ",\"errors\":" << errors.load() << ",\"wrong\":" << wrong.load() << ",\"rows\":[" << json_rows << "]}\n";
  }
  return errors.load() == 0 && wrong.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace gpusort::cli

int main(int argc, char** argv) { return gpusort::cli::Run(gpusort::cli::Parse(argc, argv)); }
