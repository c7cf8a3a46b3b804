// executor, simulated backend: for the simulated NCCL (tests/simnccl), whose "device" memory is plain
// host memory and whose collectives complete synchronously on the host. Events are timestamps of the
// simulated cluster's virtual clock taken at RecordEvent, so ElapsedUs is a difference of virtual times,
// independent of how loaded the host is. They are done when recorded, unless the simulated NCCL's GPU runs
// behind its host (SIMNCCL_HOST_AHEAD, simncclHostSyncs): then an event is done once the application synchronized
// with the device after it was recorded, or once the host waits for it (queried again with nothing recorded since:
// the polling loop of a wait), which also finishes every event recorded before it.
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "executor/internal/backends.hpp"

namespace ccltune::executor::internal {
namespace {

constexpr size_t kAlignment = 256;  // what cudaMalloc guarantees; NCCL and kernels may rely on it

struct SimStream {
  int id;  // only gives each stream its own non-null address
};

struct SimEvent {
  double time_us = 0;
  bool recorded = false;
  uint64_t order = 0;  // its place among the events recorded (SIMNCCL_HOST_AHEAD)
};

class SimulatedDevice final : public Device {
 public:
  SimulatedDevice(SimClockFn clock, SimClockFn start_clock)
      : clock_(clock),
        start_clock_(start_clock != nullptr ? start_clock : clock),
        stream_idle_(reinterpret_cast<SimStreamIdleFn>(dlsym(RTLD_DEFAULT, kSimStreamIdleSymbol))),
        host_syncs_(reinterpret_cast<SimHostSyncsFn>(dlsym(RTLD_DEFAULT, kSimHostSyncsSymbol))) {}

  Backend backend() const override { return Backend::kSimulated; }
  const char* name() const override { return "simulated"; }

  absl::Status SetDevice(int ordinal) override {
    if (ordinal < 0) return absl::InvalidArgumentError(absl::StrCat("device ordinal ", ordinal, " is negative"));
    return absl::OkStatus();
  }
  // One virtual device per process: ranks share nothing through it.
  absl::StatusOr<int> DeviceCount() override { return 1; }

  absl::StatusOr<void*> Alloc(size_t bytes) override { return AlignedAlloc(bytes); }
  void Free(void* ptr) override { std::free(ptr); }
  absl::StatusOr<void*> AllocHost(size_t bytes) override { return AlignedAlloc(bytes); }
  void FreeHost(void* ptr) override { std::free(ptr); }

  absl::Status CopyToDeviceAsync(void* dst, const void* src, size_t bytes, Stream s) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status CopyToHostAsync(void* dst, const void* src, size_t bytes, Stream s) override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return absl::OkStatus();
  }
  absl::Status MemsetAsync(void* dst, uint8_t value, size_t bytes, Stream s) override {
    if (bytes > 0) std::memset(dst, value, bytes);
    return absl::OkStatus();
  }

  absl::StatusOr<Stream> CreateStream() override { return static_cast<Stream>(new SimStream{++streams_created_}); }
  void DestroyStream(Stream s) override { delete static_cast<SimStream*>(s); }
  absl::Status StreamSynchronize(Stream s) override { return absl::OkStatus(); }

  absl::StatusOr<Event> CreateEvent() override { return static_cast<Event>(new SimEvent); }
  void DestroyEvent(Event e) override { delete static_cast<SimEvent*>(e); }
  absl::Status RecordEvent(Event e, Stream s) override { return Record(e, clock_, "RecordEvent"); }
  absl::Status RecordStartEvent(Event e, Stream s) override { return Record(e, start_clock_, "RecordStartEvent"); }
  absl::StatusOr<EventState> QueryEvent(Event e) override {
    if (e == nullptr) return absl::InvalidArgumentError("QueryEvent on a null event");
    if (!CatchUp()) return EventState::kDone;
    auto* ev = static_cast<SimEvent*>(e);
    if (ev->order <= done_upto_) return EventState::kDone;
    if (last_query_ == ev && recorded_at_last_query_ == recorded_) {
      done_upto_ = ev->order;  // the host waits for it: the GPU gets there
      return EventState::kDone;
    }
    last_query_ = ev;
    recorded_at_last_query_ = recorded_;
    return EventState::kPending;
  }
  absl::StatusOr<double> ElapsedUs(Event a, Event b) override {
    if (a == nullptr || b == nullptr) return absl::InvalidArgumentError("ElapsedUs on a null event");
    auto* ea = static_cast<SimEvent*>(a);
    auto* eb = static_cast<SimEvent*>(b);
    if (!ea->recorded || !eb->recorded) return absl::FailedPreconditionError("ElapsedUs on an event never recorded");
    return eb->time_us - ea->time_us;
  }

  bool IsCapturing(Stream s) override { return false; }
  bool StreamIdle(Stream s) override { return stream_idle_ != nullptr && stream_idle_() != 0; }

 private:
  absl::Status Record(Event e, SimClockFn clock, const char* what) {
    if (e == nullptr) return absl::InvalidArgumentError(absl::StrCat(what, " on a null event"));
    auto* ev = static_cast<SimEvent*>(e);
    ev->time_us = clock();
    ev->recorded = true;
    if (CatchUp()) ev->order = ++recorded_;  // nothing shared is written otherwise
    return absl::OkStatus();
  }
  // Whether the GPU runs behind the host; if so, every event recorded before the application's latest host sync is
  // done (none was recorded between that sync and this call: recording one calls this first).
  bool CatchUp() {
    const long long syncs = host_syncs_ != nullptr ? host_syncs_() : -1;
    if (syncs < 0) return false;
    if (syncs != seen_syncs_) seen_syncs_ = syncs, done_upto_ = recorded_;
    return true;
  }
  static absl::StatusOr<void*> AlignedAlloc(size_t bytes) {
    // aligned_alloc needs a size that is a multiple of the alignment (and non-zero).
    size_t rounded = ((bytes == 0 ? 1 : bytes) + kAlignment - 1) / kAlignment * kAlignment;
    void* p = std::aligned_alloc(kAlignment, rounded);
    if (p == nullptr) return absl::ResourceExhaustedError(absl::StrCat("host allocation of ", bytes, " bytes failed"));
    return p;
  }

  SimClockFn clock_;
  SimClockFn start_clock_;
  SimStreamIdleFn stream_idle_;
  SimHostSyncsFn host_syncs_;
  int streams_created_ = 0;
  // SIMNCCL_HOST_AHEAD: events recorded so far, the last one the GPU finished, the host syncs seen, and the last
  // event queried while pending with the record count then (queried again with none recorded since: a wait).
  uint64_t recorded_ = 0;
  uint64_t done_upto_ = 0;
  long long seen_syncs_ = -1;
  const SimEvent* last_query_ = nullptr;
  uint64_t recorded_at_last_query_ = 0;
};

}  // namespace

SimClockFn FindSimulatedClock() { return reinterpret_cast<SimClockFn>(dlsym(RTLD_DEFAULT, kSimClockSymbol)); }
SimClockFn FindSimulatedStartClock() { return reinterpret_cast<SimClockFn>(dlsym(RTLD_DEFAULT, kSimStartClockSymbol)); }

absl::StatusOr<std::unique_ptr<Device>> MakeSimulatedDevice(SimClockFn clock, SimClockFn start_clock) {
  if (clock == nullptr) return absl::InvalidArgumentError("simulated backend needs a clock");
  return std::unique_ptr<Device>(new SimulatedDevice(clock, start_clock));
}

}  // namespace ccltune::executor::internal
