// MakeBackend (server/backend/backend_factory.h): the names it takes, and what each gives on this machine.
#include "server/backend/backend_factory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpusort {
namespace {

TEST(BackendChoice, UnknownNamesAreInvalidArgument) {
  for (const char* name : {"", "bogus", "CPU", "gpu", "cuda "}) {
    auto backend = MakeBackend({.backend = name});
    EXPECT_EQ(backend.status().code(), absl::StatusCode::kInvalidArgument) << '"' << name << '"';
    EXPECT_THAT(backend.status().message(), ::testing::HasSubstr("auto, cpu or cuda")) << name;
  }
}

TEST(BackendChoice, CpuAlwaysAndAutoAlwaysGiveABackend) {
  auto cpu = MakeBackend({.backend = "cpu"});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ((*cpu)->kind(), BackendKind::kCpu);
  auto automatic = MakeBackend({.backend = "auto"});
  ASSERT_TRUE(automatic.ok()) << automatic.status();  // CUDA with a usable GPU, else the CPU
}

TEST(BackendChoice, CudaWithoutCudaIsAnErrorNotTheCpu) {
  auto cuda = MakeBackend({.backend = "cuda"});
  if (cuda.ok()) {
    EXPECT_EQ((*cuda)->kind(), BackendKind::kCuda);
    return;
  }
  // Built without nvcc: UNAVAILABLE saying so; built with it on a machine without a usable GPU: the
  // CUDA error. Never a CPU backend under the name cuda.
  if (!BuiltWithCuda()) {
    EXPECT_EQ(cuda.status().code(), absl::StatusCode::kUnavailable);
  }
  EXPECT_FALSE(cuda.status().message().empty());
}

}  // namespace
}  // namespace gpusort
