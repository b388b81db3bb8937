#include "server/backend/backend.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <memory>
#include <string>

#include "server/core/scratch.h"

namespace gpusort {

std::string_view BackendKindName(BackendKind kind) {
  return kind == BackendKind::kCuda ? "cuda" : "cpu";
}

namespace {

// Uninitialised room for a private copy (value-initialising gigabytes first would cost as much again).
// glibc serves blocks of up to 32 MiB (its largest dynamic mmap threshold) from the heap once one of
// that size was freed, so a copy below that reuses memory already faulted in; from there every block is
// a fresh mapping whose 4 KiB page faults cost more than the copy (the snapshot of a 16M-key top-k from
// shared memory: 37 ms on the H100 machine, 222 ms on the dev VM), so those go on huge pages
// (scratch.h): 7.5 ms on the dev VM (docs/benchmarks-log.md, issue 18).
constexpr std::size_t kFreshMappingFromBytes = std::size_t{32} << 20;

ScratchArray<std::byte> Room(std::size_t bytes) {
  if (bytes >= kFreshMappingFromBytes) return MakeScratch<std::byte>(bytes);
  void* room = std::malloc(bytes == 0 ? 1 : bytes);
  if (room == nullptr) throw std::bad_alloc();
  return ScratchArray<std::byte>(static_cast<std::byte*>(room));
}

}  // namespace

namespace {

// A registered-host Sort on private copies (RunInOwnMemory says why).
absl::Status SortOnCopies(const SortWork& work, const SortInOwnMemory& sort, ExecutionReport& report) {
  const SortBuffers& buffers = work.buffers;
  const std::span<const std::byte> keys_in = work.source();
  StageClock copy_in;
  const std::size_t n = buffers.count;
  ScratchArray<std::byte> keys = Room(keys_in.size());
  if (!keys_in.empty()) std::memcpy(keys.get(), keys_in.data(), keys_in.size());
  ScratchArray<std::byte> indices;
  SortBuffers mine = buffers;
  mine.keys = std::span(keys.get(), keys_in.size());
  if (!buffers.indices_out.empty()) {
    indices = Room(n * sizeof(int64_t));
    mine.indices_out = std::span(reinterpret_cast<int64_t*>(indices.get()), n);
  }
  report.AddStage(Stage::kSnapshot, copy_in.Seconds());
  absl::Status status = sort(work.spec, mine);
  if (!status.ok()) return status;
  StageClock copy_out;
  if (!keys_in.empty()) std::memcpy(buffers.keys.data(), keys.get(), keys_in.size());
  if (indices != nullptr) std::memcpy(buffers.indices_out.data(), indices.get(), n * sizeof(int64_t));
  report.AddStage(Stage::kWriteBack, copy_out.Seconds());
  return absl::OkStatus();
}

// A registered-host TopK on private copies: the keys read once, the results written once at the end.
absl::Status TopKOnCopies(const TopKWork& work, const TopKInOwnMemory& top_k, ExecutionReport& report) {
  const TopKBuffers& buffers = work.buffers;
  StageClock copy_in;
  ScratchArray<std::byte> keys = Room(buffers.keys.size());
  if (!buffers.keys.empty()) std::memcpy(keys.get(), buffers.keys.data(), buffers.keys.size());
  ScratchArray<std::byte> values = Room(buffers.values_out.size());
  ScratchArray<std::byte> indices = Room(buffers.indices_out.size_bytes());
  TopKBuffers mine = buffers;
  mine.keys = std::span<const std::byte>(keys.get(), buffers.keys.size());
  mine.values_out = std::span(values.get(), buffers.values_out.size());
  mine.indices_out = std::span(reinterpret_cast<int64_t*>(indices.get()), buffers.indices_out.size());
  report.AddStage(Stage::kSnapshot, copy_in.Seconds());
  absl::Status status = top_k(work.spec, mine);
  if (!status.ok()) return status;
  StageClock copy_out;
  if (!buffers.values_out.empty()) std::memcpy(buffers.values_out.data(), values.get(), buffers.values_out.size());
  if (!buffers.indices_out.empty()) {
    std::memcpy(buffers.indices_out.data(), indices.get(), buffers.indices_out.size_bytes());
  }
  report.AddStage(Stage::kWriteBack, copy_out.Seconds());
  return absl::OkStatus();
}

}  // namespace

std::size_t JobKeys(const Job& job) {
  if (const auto* work = std::get_if<SortWork>(&job.work)) return work->buffers.count;
  return std::get<TopKWork>(job.work).buffers.count;
}

DType JobDtype(const Job& job) {
  if (const auto* work = std::get_if<SortWork>(&job.work)) return work->spec.dtype;
  return std::get<TopKWork>(job.work).spec.dtype;
}

absl::Status RunSort(Backend& backend, const SortSpec& spec, const SortBuffers& buffers,
                     const Cancellation& cancellation, ExecutionReport& report, Memory memory,
                     std::span<const std::byte> keys_in) {
  return backend.Run(Job{.work = SortWork{spec, buffers, keys_in},
                         .memory = memory,
                         .cancellation = cancellation,
                         .report = report});
}

absl::Status RunTopK(Backend& backend, const TopKSpec& spec, const TopKBuffers& buffers,
                     const Cancellation& cancellation, ExecutionReport& report, Memory memory) {
  return backend.Run(
      Job{.work = TopKWork{spec, buffers}, .memory = memory, .cancellation = cancellation, .report = report});
}

absl::Status RunOnPrivateCopies(const Job& job, const SortInOwnMemory& sort, const TopKInOwnMemory& top_k) {
  if (job.memory == Memory::kDeviceRegion) {
    return absl::FailedPreconditionError("device regions need a GPU server; this one serves from the CPU");
  }
  if (const auto* work = std::get_if<SortWork>(&job.work)) return SortOnCopies(*work, sort, job.report);
  return TopKOnCopies(std::get<TopKWork>(job.work), top_k, job.report);
}

absl::Status AlgorithmUnavailable(std::string_view method, Algorithm asked,
                                  const std::vector<Algorithm>& available,
                                  std::string_view backend) {
  // Debian's abseil has its own string_view, so messages are built with std::string.
  std::string list = "auto";
  for (Algorithm a : available) (list += ", ") += AlgorithmName(a);
  std::string message(method);
  message += " algorithm '";
  message += AlgorithmName(asked);
  message += "' is not available on the ";
  message += backend;
  message += " backend; available: " + list;
  return absl::UnimplementedError(message);
}

}  // namespace gpusort
