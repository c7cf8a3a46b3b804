// The one per-process runtime object: settings, the device, the communicators ccltune knows, the
// thread-local channel from the interposer to the plugin, and export at exit. The interposer,
// the plugin adapters and the public API are thin layers over it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/functional/function_ref.h"
#include "ccltune/ccltune.h"
#include "executor/executor.hpp"
#include "nccl.h"
#include "src/comm_state.hpp"
#include "src/settings.hpp"
#include "vocab/types.hpp"

namespace ccltune {

// A tuner context NCCL created (one per communicator, on whatever thread NCCL initialises it).
struct PluginCtx {
  uint64_t comm_id = 0;
  size_t nranks = 0;
  size_t nnodes = 0;
  int abi = 0;
  CommState* bound = nullptr;  // guarded by Runtime::mu_
};

// One decision for the calls in flight on this thread.
struct InFlight {
  CommState* comm = nullptr;
  Config config;
  uint64_t workload = 0;
  bool internal = false;  // ccltune's own sync op: NCCL's default, untouched
  bool record_space = false;
};

using NcclCall = absl::FunctionRef<ncclResult_t()>;

class Runtime {
 public:
  static Runtime& Get();
  // False when disabled or when no NCCL is in the process: everything passes straight through.
  bool active() const { return active_; }
  const Settings& settings() const { return settings_; }

  // Lifecycle.
  void OnCommCreated(ncclComm_t comm, const ncclConfig_t* config, bool multi_gpu_thread);
  void OnCommGone(ncclComm_t comm, bool abort);

  // Collectives and groups (the re-entry guard is the caller's).
  ncclResult_t Collective(ncclComm_t comm, cudaStream_t stream, const CallDesc& call, NcclCall fn);
  ncclResult_t GroupStart(NcclCall fn);
  ncclResult_t GroupEnd(NcclCall fn, bool simulate);
  // Init calls made inside a user group are one thread driving several communicators.
  bool InUserGroup() const;

  // Plugin adapters.
  void* PluginInit(int abi, uint64_t comm_id, size_t nranks, size_t nnodes);
  void PluginGetCollInfo(void* ctx, int coll, size_t nbytes, int num_pipe_ops, float** table, int num_algo,
                         int num_proto, int* nchannels);
  void PluginGetChunkSize(void* ctx, int coll, size_t nbytes, int algo, int proto, int nchannels, size_t* chunk);
  void PluginFinalize(void* ctx);

  // Public API.
  int SetMode(ncclComm_t comm, ccltuneMode_t mode, const ccltuneConfig_t* forced);
  int GetMode(ncclComm_t comm, ccltuneMode_t* mode);
  int Export(const char* path);
  int GetStats(ncclComm_t comm, const CallDesc& call, ccltuneWorkloadStats_t* out);
  int ListStats(ncclComm_t comm, ccltuneWorkloadStats_t* out, int max, int* count);
  int Summary(ccltuneSummary_t* out);

  void AtExit();

 private:
  Runtime();
  std::shared_ptr<CommState> Find(ncclComm_t comm);
  void SetUp(CommState& cs);
  config_table::Fingerprint FingerprintOf(const CommState& cs) const;
  // Per-call steps shared by ungrouped calls and groups; cs.mu held.
  Config Decide(CommState& cs, const WorkloadKey& key, uint64_t hash, bool capturing, bool* scheduled, bool* timed);
  void AfterUnit(CommState& cs, void* stream);
  void Harvest(CommState& cs);
  // Harvest on every kHarvestEvery-th call only: querying a pending event costs the leader a few
  // hundred nanoseconds per call on a GPU, and samples are consumed only when a payload is built
  // (which harvests first), so querying on every call buys nothing.
  void MaybeHarvest(CommState& cs);
  static constexpr uint32_t kHarvestEvery = 8;
  void FillStats(CommState& cs, const config_table::Entry& e, ccltuneWorkloadStats_t* out);
  void SnapshotForExport(CommState& cs);
  // Leader, first sync: reads CCLTUNE_IMPORT (JSON, or NCCL's example-tuner CSV for a .csv name).
  void LoadImport(CommState& cs);
  // Leader: ships the config of the first CSV line that matches `key` as an import; cs.mu held.
  void ApplyCsvImport(CommState& cs, const WorkloadKey& key);
  // The periodic export (CCLTUNE_EXPORT_INTERVAL): a thread that sleeps between exports.
  void StartFlusher();
  void StopFlusher();

  Settings settings_;
  bool active_ = false;
  std::unique_ptr<executor::Device> device_;
  std::string device_error_;
  bool device_tried_ = false;
  int plugin_abi_ = 0;
  bool user_forced_algo_ = false;
  bool announced_ = false;

  std::mutex mu_;  // guards comms_, contexts_, retired_, device_ set-up
  std::unordered_map<ncclComm_t, std::shared_ptr<CommState>> comms_;
  std::vector<std::unique_ptr<PluginCtx>> contexts_;
  config_table::ExportSet retired_;  // tables of destroyed communicators this process led
  int64_t retired_changes_ = 0;      // schedule updates applied on destroyed communicators

  std::mutex export_mu_;  // one export at a time (exit, ccltuneExport, the flusher)
  int exports_ = 0;       // exports written or attempted, guarded by export_mu_

  std::mutex flush_mu_;  // guards flush_stop_; the flusher sleeps on flush_cv_
  std::condition_variable flush_cv_;
  bool flush_stop_ = false;
  std::thread flusher_;  // started once (guarded by mu_), by the process that owns it
  pid_t flusher_pid_ = 0;
};

}  // namespace ccltune
