// NCCL's tuner and profiler plugins on ccltune's side (src/plugin.cc and src/profiler.cc are the ABI
// adapters). The tuner part binds each tuner context NCCL creates to its communicator, applies the
// decision of the call in flight (cost-table entry, channels, chunk size) and reads the workload's cost
// table once. The profiler part is channel truth: for every collective task NCCL launches on the calling
// thread it reports the algorithm, protocol and channels NCCL really runs; every rank checks them against
// what ccltune decided, and the leader's searches learn which configs NCCL runs identically.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace ccltune {

class Runtime;
class CommState;

// A tuner context NCCL created (one per communicator, on whatever thread NCCL initialises it).
struct PluginCtx {
  uint64_t comm_id = 0;
  size_t nranks = 0;
  size_t nnodes = 0;
  int abi = 0;
  std::atomic<CommState*> bound{nullptr};  // set once, under PluginBridge's lock
};

// A profiler context NCCL created for a communicator: its hash (the tuner context's comm_id) and rank.
struct ProfilerCtx {
  uint64_t comm_id = 0;
  int rank = 0;
  int nranks = 0;
};

class PluginBridge {
 public:
  // The channels ccltune's channel probe asks for: NCCL's most (it runs the communicator's count).
  static constexpr int kProbeChannels = 64;
  explicit PluginBridge(Runtime& rt) : rt_(rt) {}

  void* TunerInit(int abi, uint64_t comm_id, size_t nranks, size_t nnodes);
  void GetCollInfo(void* ctx, int coll, size_t nbytes, int num_pipe_ops, float** table, int num_algo, int num_proto,
                   int* nchannels);
  void GetChunkSize(void* ctx, int coll, size_t nbytes, int algo, int proto, int nchannels, size_t* chunk);
  void TunerFinalize(void* ctx);
  // Called when a communicator goes away: its tuner context no longer points at it.
  void Unbind(CommState* cs);

  void* ProfilerInit(uint64_t comm_id, int rank, int nranks);
  void ProfilerColl(void* ctx, int algo, int proto, int channels);
  void ProfilerFinalize(void* ctx);

  int abi() const { return abi_.load(); }
  bool channel_truth() const { return profiler_loaded_.load(); }

 private:
  // The communicator of `ctx`, binding it at its first consultation while exactly one matching
  // communicator has a call in flight on this thread. Lock-free once bound.
  CommState* Bound(PluginCtx* ctx);

  Runtime& rt_;
  std::atomic<int> abi_{0};
  std::atomic<bool> profiler_loaded_{false};
  std::mutex mu_;  // guards the context lists and binding
  std::vector<std::unique_ptr<PluginCtx>> contexts_;
  std::vector<std::unique_ptr<ProfilerCtx>> profiler_contexts_;
};

}  // namespace ccltune
