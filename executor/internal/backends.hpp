// executor internals: the two Device implementations and how OpenDevice finds them. Only
// executor.cc and the backends include this.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "executor/executor.hpp"

namespace ccltune::executor::internal {

// Name of the simulated NCCL's clock: `extern "C" double simncclVirtualTimeUs(void)`, this process's
// virtual time in microseconds.
inline constexpr char kSimClockSymbol[] = "simncclVirtualTimeUs";
using SimClockFn = double (*)();
// Its clock for the start of a timed region: `extern "C" double simncclVirtualStartTimeUs(void)`, the virtual
// time once the rank's lag after its last collective has passed (simulated NCCLs without it: kSimClockSymbol).
inline constexpr char kSimStartClockSymbol[] = "simncclVirtualStartTimeUs";

// Whether the simulated streams are idle: `extern "C" int simncclStreamIdle(void)`, 1 after the application
// synchronized with the device and before the next launch (simulated NCCLs without it: never idle).
inline constexpr char kSimStreamIdleSymbol[] = "simncclStreamIdle";
using SimStreamIdleFn = int (*)();

// Whether its GPU runs behind its host: `extern "C" long long simncclHostSyncs(void)`, the application's host syncs so
// far under SIMNCCL_HOST_AHEAD (events recorded before one are done, later ones only once the host waits for them), -1
// (or the symbol absent) when every event is done when recorded.
inline constexpr char kSimHostSyncsSymbol[] = "simncclHostSyncs";
using SimHostSyncsFn = long long (*)();

// The simulated NCCL's clock when it is loaded in this process (dlsym(RTLD_DEFAULT)), else nullptr.
SimClockFn FindSimulatedClock();
SimClockFn FindSimulatedStartClock();

absl::StatusOr<std::unique_ptr<Device>> MakeCudaDevice();
absl::StatusOr<std::unique_ptr<Device>> MakeSimulatedDevice(SimClockFn clock, SimClockFn start_clock = nullptr);

}  // namespace ccltune::executor::internal
