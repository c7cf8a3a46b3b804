// ccltune-bench: GPU work of its own. The interference load (--interference): a GEMM-like
// compute-bound kernel and a memory-bound triad, enqueued continuously on a stream of their own by
// a pump thread while collectives are timed, with a bounded queue of finite kernels (never a
// persistent kernel: NCCL's kernels need SMs). And the hold kernel of the overhead mode. The kernels
// are built with nvcc at compile time (bench/kernels/) and loaded with cuModuleLoadData; a build
// without nvcc has none (KernelsBuiltIn() is false).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "executor/executor.hpp"

namespace ccltune::bench {

bool KernelsBuiltIn();
std::string KernelsArch();  // "sm_90" or "" when not built in

// How the load meets the collectives. kStep (the default): in lockstep, every call of the bench is one
// "training step" whose compute kernels start together with the collective (StepLoad). kQueue: a pump
// thread keeps the GPU's queue full independently of the calls (BackgroundLoad); its timings depend on
// where in the queue each call lands, so its medians are much noisier.
enum class LoadMode { kStep, kQueue };

struct LoadOptions {
  bool gemm = false;
  bool mem = false;
  LoadMode mode = LoadMode::kStep;
  int gemm_n = 1024;                 // n x n float matrices, a multiple of 64
  uint64_t mem_bytes = 64ull << 20;  // bytes of each of the triad's three arrays
  int depth = 4;                     // kStep: compute kernels per step; kQueue: kernels in flight at most
  // Whether the load also runs while B is tuned (--interference-phase all); false (compare): only while the
  // converged calls are timed, a change of the machine's conditions between the tuning and the timing.
  bool while_tuning = true;
  // kStep: steps timed between two drains at most (the bench's timed sweep: iterations x communicators).
  int max_steps = 1 << 16;
  bool on() const { return gemm || mem; }
  std::string Kinds() const;  // "gemm,mem"
  const char* ModeName() const { return mode == LoadMode::kStep ? "step" : "queue"; }
  const char* PhaseName() const { return while_tuning ? "all" : "compare"; }
};

// The module of the bench's kernels, loaded in the current device's context.
class GpuKernels {
 public:
  static absl::StatusOr<std::unique_ptr<GpuKernels>> Load(executor::Device* device);
  ~GpuKernels();
  GpuKernels(const GpuKernels&) = delete;
  GpuKernels& operator=(const GpuKernels&) = delete;

  // Enqueues a one-thread kernel that spins for `ns` of GPU time on `s`.
  absl::Status Hold(executor::Device* device, executor::Stream s, uint64_t ns) const;

  executor::Kernel gemm = nullptr;
  executor::Kernel triad = nullptr;
  executor::Kernel hold = nullptr;

 private:
  GpuKernels() = default;
  executor::Device* device_ = nullptr;
  executor::Module module_ = nullptr;
};

// What the background kernels did: counts and summed kernel times (events around each kernel on
// the background stream), and the wall time the load was running.
struct LoadStats {
  int64_t gemm_kernels = 0;
  int64_t mem_kernels = 0;
  double gemm_us = 0;
  double mem_us = 0;
  double wall_us = 0;
  double gemm_flops = 0;
  double mem_bytes = 0;
  double GemmTflops() const { return gemm_us > 0 ? gemm_flops / gemm_us * 1e-6 : 0; }
  double MemGBps() const { return mem_us > 0 ? mem_bytes / mem_us * 1e-3 : 0; }
  // Fraction of the running wall time during which a background kernel was executing.
  double Busy() const { return wall_us > 0 ? (gemm_us + mem_us) / wall_us : 0; }
  LoadStats Minus(const LoadStats& o) const;
};

// The background load of one process on its device. Paused after Create; Resume() starts the
// stream of kernels, Pause() stops enqueueing and waits until every queued kernel has finished.
class BackgroundLoad {
 public:
  static absl::StatusOr<std::unique_ptr<BackgroundLoad>> Create(const LoadOptions& opt, int ordinal,
                                                                const GpuKernels* kernels);
  ~BackgroundLoad();
  BackgroundLoad(const BackgroundLoad&) = delete;
  BackgroundLoad& operator=(const BackgroundLoad&) = delete;

  void Resume();
  absl::Status Pause();
  LoadStats stats() const;  // totals so far (exact while paused)

 private:
  struct Impl;
  explicit BackgroundLoad(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Runs the load alone (no collectives) for about `ms` milliseconds: its undisturbed throughput.
absl::StatusOr<LoadStats> CalibrateLoad(BackgroundLoad* load, int ms);

// The load in lockstep with the calls (LoadMode::kStep), on the caller's thread and device. Each call
// of the bench becomes a step: Begin() enqueues `depth` compute kernels (GEMM and triad alternating) on
// the load's own stream and makes the collective's stream wait for the step's start only, so the
// collective runs while the compute does, as a gradient all-reduce overlaps backward compute; End()
// makes the load stream wait for the collective, so the next step starts when both are done. Every
// call meets the same load at the same phase, which keeps the medians of alternating default and tuned
// calls comparable. A step's makespan (start to both done) is what a training step pays; its samples
// carry the caller's tag.
class StepLoad {
 public:
  static absl::StatusOr<std::unique_ptr<StepLoad>> Create(const LoadOptions& opt, executor::Device* device,
                                                          const GpuKernels* kernels);
  ~StepLoad();
  StepLoad(const StepLoad&) = delete;
  StepLoad& operator=(const StepLoad&) = delete;

  absl::Status Begin(executor::Stream comm, uint64_t tag);
  absl::Status End(executor::Stream comm);
  // Waits until every step's compute has finished; appends the finished steps' makespans (in step order)
  // to `makespans` when given.
  absl::Status Drain(std::vector<executor::Sample>* makespans = nullptr);
  // Kernels launched so far and the work they did (flops, bytes); times are not per kernel here.
  LoadStats launched() const { return launched_; }

 private:
  StepLoad() = default;
  LoadOptions opt_;
  executor::Device* device_ = nullptr;
  const GpuKernels* kernels_ = nullptr;
  executor::Stream stream_ = nullptr;
  executor::Event start_ = nullptr;
  executor::Event comm_done_ = nullptr;
  std::unique_ptr<executor::Timer> steps_;
  void* mat_[3] = {};
  void* vec_[3] = {};
  uint64_t kernels_launched_ = 0;
  LoadStats launched_;
};

// Median makespan of `steps` steps of the load alone (nothing enqueued on `comm` between Begin and
// End): the compute a step holds.
absl::StatusOr<double> CalibrateStep(StepLoad* load, int steps, executor::Stream comm);

}  // namespace ccltune::bench
