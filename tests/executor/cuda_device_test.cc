// executor tests: the CUDA backend on a machine without the NVIDIA driver must fail cleanly (a
// status naming libcuda.so.1), never crash or abort.
#include <dlfcn.h>

#include "executor/executor.hpp"
#include "gtest/gtest.h"

namespace ccltune::executor {
namespace {

TEST(CudaDeviceTest, OpenWithoutDriverReturnsCleanError) {
  if (void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); lib != nullptr) {
    dlclose(lib);
    GTEST_SKIP() << "libcuda.so.1 is present here; executor_gpu_test covers the CUDA backend";
  }
  absl::StatusOr<std::unique_ptr<Device>> dev = OpenCudaDevice();
  ASSERT_FALSE(dev.ok());
  EXPECT_EQ(dev.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(dev.status().message().find("libcuda.so.1"), absl::string_view::npos) << dev.status();
}

}  // namespace
}  // namespace ccltune::executor
