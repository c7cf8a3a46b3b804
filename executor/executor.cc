// executor: backend selection (OpenDevice and friends). The backends live in internal/.
#include "executor/executor.hpp"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "executor/internal/backends.hpp"

namespace ccltune::executor {

absl::StatusOr<std::unique_ptr<Device>> OpenSimulatedDevice() {
  internal::SimClockFn clock = internal::FindSimulatedClock();
  if (clock == nullptr) {
    return absl::NotFoundError(absl::StrCat("simulated backend unavailable: symbol ", internal::kSimClockSymbol,
                                            " not found in the process (the simulated libnccl.so.2 is not loaded)"));
  }
  return internal::MakeSimulatedDevice(clock, internal::FindSimulatedStartClock());
}

absl::StatusOr<std::unique_ptr<Device>> OpenCudaDevice() { return internal::MakeCudaDevice(); }

absl::StatusOr<std::unique_ptr<Device>> OpenDevice() {
  if (internal::FindSimulatedClock() != nullptr) return OpenSimulatedDevice();
  absl::StatusOr<std::unique_ptr<Device>> cuda = OpenCudaDevice();
  if (cuda.ok()) return cuda;
  return absl::Status(cuda.status().code(),
                      absl::StrCat("no device backend: the simulated NCCL's clock (", internal::kSimClockSymbol,
                                   ") is not in the process, and CUDA failed: ", cuda.status().message()));
}

}  // namespace ccltune::executor
