// executor: the device side of ccltune, behind one interface. It times calls with pairs of events on
// the call's stream, harvests finished timings without blocking, and gives the runtime and the bench
// device memory, streams and copies. Two backends:
//  - CUDA: the driver API (libcuda.so.1) loaded at run time, so nothing links against a CUDA version
//    and the library loads on machines without a GPU;
//  - simulated: the simulated NCCL's virtual clock (symbol `simncclVirtualTimeUs` found in the
//    process), plain host memory, events that are timestamps of that clock.
// No NCCL, no MPI here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ccltune::executor {

using Stream = void*;  // cudaStream_t / CUstream, or the simulated NCCL's opaque stream handle
using Event = void*;   // CUevent, or a simulated timestamp slot
using Module = void*;  // CUmodule (CUDA backend only)
using Kernel = void*;  // CUfunction (CUDA backend only); usable from any thread of the process

// Device memory as cuMemGetInfo reports it (the whole device, every process on it).
struct MemoryInfo {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
};

enum class Backend { kCuda, kSimulated };

enum class EventState { kDone, kPending };

// Device operations the runtime and the bench need. Every call is non-blocking unless its name
// says Synchronize. Implementations are thread-compatible (one per process, used under the
// runtime's locks or from one thread).
class Device {
 public:
  virtual ~Device() = default;
  virtual Backend backend() const = 0;
  virtual const char* name() const = 0;  // "NVIDIA H200", "simulated"

  // Makes `ordinal` the calling thread's current device (CUDA: retains its primary context, which
  // the CUDA runtime and NCCL then use). The simulated backend accepts any ordinal.
  virtual absl::Status SetDevice(int ordinal) = 0;
  virtual absl::StatusOr<int> DeviceCount() = 0;

  virtual absl::StatusOr<void*> Alloc(size_t bytes) = 0;
  virtual void Free(void* ptr) = 0;
  virtual absl::StatusOr<void*> AllocHost(size_t bytes) = 0;  // page-locked where the backend has it
  virtual void FreeHost(void* ptr) = 0;
  virtual absl::Status CopyToDeviceAsync(void* dst, const void* src, size_t bytes, Stream s) = 0;
  virtual absl::Status CopyToHostAsync(void* dst, const void* src, size_t bytes, Stream s) = 0;
  virtual absl::Status MemsetAsync(void* dst, uint8_t value, size_t bytes, Stream s) = 0;

  virtual absl::StatusOr<Stream> CreateStream() = 0;
  virtual void DestroyStream(Stream s) = 0;
  virtual absl::Status StreamSynchronize(Stream s) = 0;

  virtual absl::StatusOr<Event> CreateEvent() = 0;
  virtual void DestroyEvent(Event e) = 0;
  virtual absl::Status RecordEvent(Event e, Stream s) = 0;
  // Records the event that starts a timed region (Timer::Begin). A GPU stream reaches it once everything
  // before it ran, the rank's late finish of its last collective included: the same as RecordEvent. The
  // simulated backend reads its rank's clock after the lag it owes since its last collective (the stop event
  // of a region around that collective does not see it).
  virtual absl::Status RecordStartEvent(Event e, Stream s) { return RecordEvent(e, s); }
  // Non-blocking. Safe while another stream of the process captures a CUDA graph: the CUDA backend
  // switches the calling thread to relaxed capture mode around the query.
  virtual absl::StatusOr<EventState> QueryEvent(Event e) = 0;
  // Microseconds from a to b; both must be done.
  virtual absl::StatusOr<double> ElapsedUs(Event a, Event b) = 0;
  // Work enqueued on `s` after this call starts only once `e`'s latest record has completed. Backends
  // whose streams run nothing asynchronously (the simulated one) have nothing to order.
  virtual absl::Status StreamWaitEvent(Stream s, Event e) { return absl::OkStatus(); }

  // True while `s` is capturing a CUDA graph (never for the simulated backend).
  virtual bool IsCapturing(Stream s) = 0;
  // True when all work enqueued on `s` so far has completed, so that work enqueued now starts when the
  // host enqueues it. False when unknown, and always for the simulated backend (its streams run
  // nothing asynchronously). Never call it on a stream that captures.
  virtual bool StreamIdle(Stream s) { return false; }

  // Kernels of a module image (cubin, PTX or fatbin, as cuModuleLoadData takes) loaded into the
  // current device's context. Only the CUDA backend runs kernels: the others (the simulated one)
  // answer Unimplemented.
  virtual absl::StatusOr<Module> LoadModule(const void* image) { return NoKernels(); }
  virtual void UnloadModule(Module m) {}
  virtual absl::StatusOr<Kernel> GetKernel(Module m, const char* name) { return NoKernels(); }
  // Enqueues `k` on `s`; `args` as cuLaunchKernel's kernelParams (one pointer per parameter).
  virtual absl::Status Launch(Kernel k, const unsigned grid[3], const unsigned block[3], unsigned shared_bytes,
                              Stream s, void** args) {
    return NoKernels();
  }
  // Free and total memory of the current device (CUDA backend only).
  virtual absl::StatusOr<MemoryInfo> GetMemoryInfo() {
    return absl::UnimplementedError(std::string("no device memory information on the ") + name() + " backend");
  }

 private:
  absl::Status NoKernels() const {
    return absl::UnimplementedError(std::string("the ") + name() + " backend runs no GPU kernels");
  }
};

// Picks the backend for this process: simulated when the simulated NCCL's clock symbol is present,
// else CUDA through libcuda.so.1. NotFound / FailedPrecondition when neither works (no GPU, no driver).
absl::StatusOr<std::unique_ptr<Device>> OpenDevice();
absl::StatusOr<std::unique_ptr<Device>> OpenCudaDevice();
absl::StatusOr<std::unique_ptr<Device>> OpenSimulatedDevice();

// One measured call.
struct Sample {
  uint64_t tag = 0;  // the caller's tag (the runtime packs workload and candidate into it)
  double us = 0;
  // The stream was idle when the region began: its start event ran at once, so `us` also holds the
  // host's enqueueing of what the region times (for an NCCL call, its launch, and on a multi-rank
  // call the other ranks' late arrival), not only the device's run of it.
  bool idle = false;
};

// Which idle-stream samples a rank marks for dropping, kept per workload (the runtime's WorkloadSlot): those
// of a workload whose timed calls mostly start on a busy stream (one timed now and then right after a host
// synchronisation, say). Where most of them start on an idle stream (the first collective of every training
// step, right after the step's host synchronisation; a host-bound job), every config pays the same launch
// and nothing is marked: dropping them all would leave its search without samples.
// A call whose time the leader reads by its minimum over ranks (one that follows another workload's call) is never
// marked: the minimum is the time of the rank that arrived last, which waited for no other, so an idle start adds
// only that rank's own launch of the call. On the one-GPU testbed each rank's stream read idle on some iterations and
// busy on others for the first collective after the bench loop's host synchronisation, and the marks of any of four
// ranks dropped up to two fifths of that workload's samples (real NCCL 2.28.9; docs/results/search-testbed.md,
// fifty-first session).
class IdleFilter {
 public:
  // Notes the next sample in harvest order; true when it is idle and to be marked. `by_min`: its time is read by
  // the minimum over ranks: counted in the share, never marked.
  bool Mark(bool idle, bool by_min = false);
  double share() const { return share_; }

  // The latest sample's weight in the moving share: the plain mean of the samples so far while there are fewer
  // than 1 / kWeight, so a workload whose every timed call starts idle loses its first sample only.
  static constexpr double kWeight = 1.0 / 16;
  static constexpr double kMaxShare = 0.5;  // idle samples are marked while their share is below it

 private:
  double share_ = 0;  // share of idle samples before the one being noted (0 before the first)
  int seen_ = 0;      // samples noted, up to 1 / kWeight
};

// Times regions on streams with pooled event pairs; never synchronises a stream.
class Timer {
 public:
  // `max_pending` bounds the events in flight; Begin refuses (returns false) beyond it.
  explicit Timer(Device* device, int max_pending = 256);
  ~Timer();  // waits for nothing: events still pending are destroyed (CUDA allows it)
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // Records the start event on `s`. Returns false if the pool is exhausted or the device failed;
  // then the matching End must not be called.
  bool Begin(Stream s, uint64_t tag);
  // Records the end event of the region begun last on this Timer (regions do not nest).
  void End(Stream s);
  // Appends the finished regions, in the order they were begun, to `out`; stops at the first one
  // still pending. Never blocks.
  void Harvest(std::vector<Sample>* out);
  int pending() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ccltune::executor
