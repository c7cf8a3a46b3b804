// Per-communicator state of the runtime: the protocol (coordinator), the leader's search, the
// timer, the config table, the mode set through the public API, and the in-band transport whose
// all-reduce(MAX) carries the payloads on the communicator itself.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "ccltune/ccltune.h"
#include "config_table/config_table.hpp"
#include "coordinator/coordinator.hpp"
#include "executor/executor.hpp"
#include "nccl.h"
#include "src/leader.hpp"
#include "vocab/types.hpp"

namespace ccltune {

struct PluginCtx;

// The in-band transport: a 512-byte device buffer per outstanding sync, an all-reduce(MAX) of
// uint64 on the user's stream, the result copied to page-locked host memory, a 16-byte memset (so that
// the user's next kernel does not follow a copy), an event to wait on.
class NcclTransport : public coordinator::Transport {
 public:
  static constexpr int kSlots = coordinator::kLag + 2;
  // `all_reduce_max` runs the internal all-reduce(MAX) of 64 uint64 words in place on `buffer`.
  using AllReduceFn = std::function<ncclResult_t(void* buffer, void* stream)>;
  NcclTransport(executor::Device* device, AllReduceFn all_reduce_max)
      : device_(device), all_reduce_max_(std::move(all_reduce_max)) {}
  ~NcclTransport() override;
  absl::Status Init();
  absl::Status Issue(uint64_t sync_id, const coordinator::Words& contribution, void* stream) override;
  absl::Status Wait(uint64_t sync_id, coordinator::Words* reduced, absl::Duration timeout) override;
  // Abort: never wait on anything, leak the device buffers (the context may be broken).
  void Leak();

 private:
  executor::Device* device_;
  AllReduceFn all_reduce_max_;
  void* dev_ = nullptr;
  uint64_t* host_in_ = nullptr;
  uint64_t* host_out_ = nullptr;
  std::array<executor::Event, kSlots> events_{};
  std::array<uint64_t, kSlots> slot_sync_{};
  std::array<bool, kSlots> slot_used_{};
  bool leaked_ = false;
};

struct CommOptions {
  int rank = 0;
  int nranks = 1;
  int channel_budget = 32;
  bool passthrough = false;
  std::string passthrough_reason;
};

// A measured call waiting for its events.
struct TimingRecord {
  uint64_t workload = 0;
  Config config;
  bool scheduled = false;
  uint64_t unit = 0;  // the communicator's unit count when the call was issued (for the trace)
};

class CommState {
 public:
  CommState(ncclComm_t comm, const CommOptions& o) : comm_(comm), o_(o), table_(config_table::Fingerprint{}) {}
  ~CommState();

  ncclComm_t comm() const { return comm_; }
  int rank() const { return o_.rank; }
  int nranks() const { return o_.nranks; }
  bool passthrough() const { return o_.passthrough; }
  const std::string& passthrough_reason() const { return o_.passthrough_reason; }
  int channel_budget() const { return o_.channel_budget; }
  void MarkPassthrough(std::string reason) {
    o_.passthrough = true;
    o_.passthrough_reason = std::move(reason);
  }

  std::mutex mu;                       // guards everything below; never held across a call into NCCL's collectives
  NcclTransport* transport = nullptr;  // owned by coord
  std::unique_ptr<coordinator::CommCoordinator> coord;
  std::unique_ptr<Leader> leader;
  std::unique_ptr<executor::Timer> timer;
  std::deque<TimingRecord> records;
  uint32_t calls_since_harvest = 0;  // Runtime::MaybeHarvest's throttle
  config_table::CommTable& table() { return table_; }
  ccltuneMode_t mode = ccltuneModeTune;
  Config forced;
  std::atomic<PluginCtx*> ctx{nullptr};  // the tuner context NCCL created for it, once bound
  bool stopped = false;                  // the protocol stopped tuning here (same on every rank)
  std::string stop_reason;
  bool imported_loaded = false;
  std::vector<config_table::CsvRule> csv_rules;    // leader: a CSV import's lines for this communicator
  std::unordered_map<uint64_t, WorkloadKey> keys;  // workloads seen, by hash
  int64_t updates_applied = 0;                     // schedule updates applied here (ccltuneGetSummary)

 private:
  ncclComm_t comm_;
  CommOptions o_;
  config_table::CommTable table_;
};

}  // namespace ccltune
