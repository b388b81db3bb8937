// A PartedSortIngest that hands every call to another: the base of the wrappers that add something to
// one call (the router's in-flight charge, a GPU set's device name around Sort) and pass the rest on,
// direct mode included.
#pragma once

#include <memory>
#include <utility>

#include "server/backend/backend.h"

namespace gpusort {

class ForwardingPartedSortIngest : public PartedSortIngest {
 public:
  explicit ForwardingPartedSortIngest(std::unique_ptr<PartedSortIngest> inner) : inner_(std::move(inner)) {}

  absl::Status Write(std::size_t first_key, std::span<const std::byte> keys) override {
    return inner_->Write(first_key, keys);
  }
  absl::Status Sort(const Cancellation& cancellation, ExecutionReport& report) override {
    return inner_->Sort(cancellation, report);
  }
  absl::Status Read(std::size_t begin, std::size_t end, std::byte* keys, int64_t* indices) override {
    return inner_->Read(begin, end, keys, indices);
  }
  bool StartDirect() override { return inner_->StartDirect(); }
  std::span<std::byte> DirectKeys() override { return inner_->DirectKeys(); }
  absl::Status CommitDirect(std::size_t first_key, std::size_t count) override {
    return inner_->CommitDirect(first_key, count);
  }
  absl::Status ReadDirect(std::size_t begin, std::size_t end, int64_t* indices) override {
    return inner_->ReadDirect(begin, end, indices);
  }

 private:
  std::unique_ptr<PartedSortIngest> inner_;
};

}  // namespace gpusort
