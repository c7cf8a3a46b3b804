// The one per-process runtime object. It owns the parts of ccltune's run time, each in files of its own:
//   comm_registry   the communicators ccltune knows (a lookup per call, lock-free when warm);
//   comm_lifecycle  communicator creation, set-up (coordinator, leader, timer, transport) and teardown;
//   call_path       every collective and group: decide, time, hand the decision to the plugin, count
//                   units and run the sync points;
//   plugin_bridge   NCCL's tuner and profiler plugins: apply the decision in flight, read the cost table,
//                   report what NCCL really ran;
//   api             the public C API's statistics and modes;
//   exporter        export (at exit, on request, periodically) and the exit summary.
// The interposer, the plugin adapters and public_api.cc are thin layers over it.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "ccltune/ccltune.h"
#include "config_table/trace_format.hpp"
#include "executor/executor.hpp"
#include "nccl.h"
#include "src/call_path.hpp"
#include "src/comm_lifecycle.hpp"
#include "src/comm_registry.hpp"
#include "src/exporter.hpp"
#include "src/plugin_bridge.hpp"
#include "src/settings.hpp"
#include "vocab/types.hpp"

namespace ccltune {

class Runtime {
 public:
  static Runtime& Get();
  // False when disabled or when no NCCL is in the process: everything passes straight through.
  bool active() const { return active_; }
  const Settings& settings() const { return settings_; }
  // NCCL_ALGO or NCCL_PROTO is set in this process's environment: NCCL's cost table leaves out what they
  // disable, and the search chooses among the rest (informative: the start line says so).
  bool nccl_env_limits_algo() const { return nccl_env_limits_algo_; }
  // The device backend, opened at the first communicator (nullptr if none could be; then `device_error`).
  executor::Device* device() {
    if (executor::Device* d = device_ptr_.load(std::memory_order_acquire)) return d;
    return OpenDeviceOnce();
  }
  const std::string& device_error() const { return device_error_; }
  // CCLTUNE_TRACE's writer, shared by the communicators this process leads; opened at the first call ("%p"
  // and "%h" in the path become the process id and the host name). Null when unset or not writable (said
  // once).
  config_table::TraceWriter* trace();

  CommRegistry& comms() { return comms_; }
  CallPath& calls() { return calls_; }
  PluginBridge& plugin() { return plugin_; }
  CommLifecycle& lifecycle() { return lifecycle_; }
  Exporter& exporter() { return exporter_; }

  // Public API (api.cc).
  int SetMode(ncclComm_t comm, ccltuneMode_t mode, const ccltuneConfig_t* forced);
  int GetMode(ncclComm_t comm, ccltuneMode_t* mode);
  int GetStats(ncclComm_t comm, const CallDesc& call, ccltuneWorkloadStats_t* out);
  int ListStats(ncclComm_t comm, ccltuneWorkloadStats_t* out, int max, int* count);
  int Summary(ccltuneSummary_t* out);

 private:
  Runtime();
  void FillStats(CommState& cs, const config_table::Entry& e, ccltuneWorkloadStats_t* out);

  Settings settings_;
  bool active_ = false;
  bool nccl_env_limits_algo_ = false;
  executor::Device* OpenDeviceOnce();
  std::mutex device_mu_;
  std::unique_ptr<executor::Device> device_;
  std::atomic<executor::Device*> device_ptr_{nullptr};
  std::string device_error_;
  bool device_tried_ = false;
  std::mutex trace_mu_;
  bool trace_tried_ = false;
  std::unique_ptr<config_table::TraceWriter> trace_;

  CommRegistry comms_;
  PluginBridge plugin_;
  CallPath calls_;
  CommLifecycle lifecycle_;
  Exporter exporter_;
};

}  // namespace ccltune
