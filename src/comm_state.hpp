// Per-communicator state of the runtime: the protocol (coordinator), the leader's search, the
// timer, the config table, the mode set through the public API, and the in-band transport whose
// all-reduce(MAX) carries the payloads on the communicator itself.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
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

// The in-band transport: a device buffer per outstanding sync (coordinator::kExtendedWords words), an
// all-reduce(MAX) of uint64 on the user's stream, the result copied to page-locked host memory, a 16-byte
// memset (so that the user's next kernel does not follow a copy), an event to wait on.
// With a side route (CCLTUNE_SYNC_COMM=split) the same steps run on a stream of ccltune's, on a communicator
// split off the tuned one, without the memset: that stream waits at issue for the user's stream (the calls
// before the sync op still complete before it, as the coordinator's sample windows require), and the user's
// stream never waits for it, so the user's next call follows the last one as it would without ccltune.
class NcclTransport : public coordinator::Transport {
 public:
  static constexpr int kSlots = coordinator::kLag + 2;
  // `all_reduce_max` runs the internal all-reduce(MAX) of `words` uint64 words in place on `buffer`.
  using AllReduceFn = std::function<ncclResult_t(void* buffer, int words, void* stream)>;
  // The side route: the stream the sync ops run on (owned by the transport from Init on), the side
  // communicator's asynchronous error, and its release: destroy, or abort where `abort` (after an abort,
  // or when a sync op of ours never completed).
  struct SideRoute {
    executor::Stream stream = nullptr;
    std::function<ncclResult_t()> async_error;
    std::function<void(bool abort)> release;
  };
  // `async_error`: the communicator's asynchronous error (ncclCommGetAsyncError), asked while a wait
  // lasts: a failed communicator (a peer killed, a network error) never completes the sync op, and a
  // wait that did not look would hold the user's call forever where NCCL alone would have returned it
  // (a framework's watchdog then sees NCCL's error). Empty: never asked.
  using AsyncErrorFn = std::function<ncclResult_t()>;
  NcclTransport(executor::Device* device, AllReduceFn all_reduce_max, AsyncErrorFn async_error = {},
                std::optional<SideRoute> side = std::nullopt)
      : device_(device),
        all_reduce_max_(std::move(all_reduce_max)),
        async_error_(std::move(async_error)),
        side_(std::move(side)) {}
  ~NcclTransport() override;
  absl::Status Init();
  absl::Status Issue(uint64_t sync_id, const coordinator::Payload& contribution, void* stream) override;
  absl::Status Wait(uint64_t sync_id, coordinator::Payload* reduced, absl::Duration timeout) override;
  absl::StatusOr<bool> Poll(uint64_t sync_id, coordinator::Payload* reduced) override;
  // Abort: never wait on anything, leak the device buffers (the context may be broken); a side
  // communicator is aborted.
  void Leak();
  bool side() const { return side_.has_value(); }

 private:
  int Slot(uint64_t sync_id, absl::Status* st) const;
  void Read(int slot, coordinator::Payload* reduced) const;
  executor::Device* device_;
  AllReduceFn all_reduce_max_;
  AsyncErrorFn async_error_;
  std::optional<SideRoute> side_;
  void* dev_ = nullptr;
  uint64_t* host_in_ = nullptr;
  uint64_t* host_out_ = nullptr;
  std::array<executor::Event, kSlots> events_{};
  std::array<executor::Event, kSlots> issued_after_{};  // side route: recorded on the user's stream at issue
  std::array<uint64_t, kSlots> slot_sync_{};
  std::array<bool, kSlots> slot_used_{};
  std::array<bool, kSlots> slot_extended_{};
  bool leaked_ = false;
};

struct CommOptions {
  int rank = 0;
  int nranks = 1;
  int channel_budget = 32;
  // The channels NCCL gave the communicator on its own, where ccltune created it with more
  // (CCLTUNE_CHANNEL_BUDGET); 0 where it did not. NCCL's default then runs as on these.
  int baseline_channels = 0;
  // What the user created it with (NCCL_CONFIG_INITIALIZER for none): a split of a raised communicator
  // without a config of its own is created as NCCL would have created it from this one.
  ncclConfig_t creation_config = NCCL_CONFIG_INITIALIZER;
  bool passthrough = false;
  std::string passthrough_reason;
};

// What the call path knows of a workload of this communicator, touched on every call (under mu).
struct WorkloadSlot {
  WorkloadKey key;
  uint64_t calls = 0;        // calls seen on this rank (the API's count)
  bool space_known = false;  // NCCL's cost table for it was read
  // The latest call's config and what NCCL ran for it (channel truth), recorded on change only.
  bool ran_known = false;
  Config last_asked, last_ran;
  // On a communicator with a raised budget: the channels NCCL ran its own default on, read on the first
  // call that ran it untouched (0 until then). NCCL's default at its own budget runs min(this, baseline).
  int own_channels = 0;
  coordinator::BackToBack back_to_back;  // whether its calls that follow another workload's are held
  // Which of its timings from an idle stream this rank marks (CallPath::Harvest): per workload, since one that is
  // always the first call after the host synchronizes (a training step's first collective) starts on an idle stream
  // every time, and every config it tries pays that alike, while the others of the communicator rarely do.
  executor::IdleFilter idle_filter;
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
  int baseline_channels() const { return o_.baseline_channels; }
  const ncclConfig_t& creation_config() const { return o_.creation_config; }
  void MarkPassthrough(std::string reason) {
    o_.passthrough = true;
    o_.passthrough_reason = std::move(reason);
  }

  std::mutex mu;                       // guards everything below; never held across a call into NCCL's collectives
  NcclTransport* transport = nullptr;  // owned by coord
  std::unique_ptr<coordinator::CommCoordinator> coord;
  std::unique_ptr<Leader> leader;
  // Every rank times the calls the schedule says (the same on every rank), numbered by the coordinator;
  // timings wait here until a sync carries them.
  std::unique_ptr<executor::Timer> timer;
  struct RankTiming {
    double us = 0;
    bool idle = false;  // timed from an idle stream and marked by idle_filter: carried as idle, no time
  };
  std::map<uint64_t, RankTiming> timings;  // timed-call number -> this rank's timing, not yet carried
  // The timer's regions in flight at most (Begin refuses more).
  static constexpr int kTimerDepth = 512;
  // The workload (hash) of each recent timed-call number, at number % kTimerDepth: whose idle filter marks the
  // timing when it is harvested (a slot taken over by a later number falls back to idle_filter).
  struct TimedWorkload {
    uint64_t seq = ~uint64_t{0};
    uint64_t workload = 0;
    bool follows_other = false;  // it followed a call of another workload (read by the minimum over ranks)
  };
  std::array<TimedWorkload, kTimerDepth> timed_workload{};
  executor::IdleFilter idle_filter;  // the fallback: which idle-stream timings of an unknown workload are marked
  // How the leader reads a timed call over ranks (CCLTUNE_TIMING), set once at creation on every rank: the
  // leader's search and every rank's idle filter (Leader::ReadByMinimum) must read a call alike.
  Leader::Timing timing = Leader::Timing::kMaxOverRanks;
  uint64_t carried_below = 0;                            // numbers below this were carried (or dropped) already
  uint32_t calls_since_harvest = 0;                      // CallPath's harvest throttle
  std::unordered_map<uint64_t, WorkloadSlot> workloads;  // by WorkloadKey hash
  uint64_t last_unit_workload = 0;                       // the workload of the latest tuned unit (its hash)
  uint64_t syncs_at_last_unit = 0;                       // sync ops issued before the latest tuned unit started
  config_table::CommTable& table() { return table_; }
  ccltuneMode_t mode = ccltuneModeTune;
  Config forced;
  std::atomic<PluginCtx*> ctx{nullptr};  // the tuner context NCCL created for it, once bound
  bool stopped = false;                  // the protocol stopped tuning here (same on every rank)
  std::string stop_reason;
  bool imported_loaded = false;
  std::vector<config_table::CsvRule> csv_rules;  // leader: a CSV import's lines for this communicator
  int64_t updates_applied = 0;                   // schedule updates applied here (ccltuneGetSummary)
  bool ran_mismatch = false;                     // NCCL ran something else than decided (said once)
  int max_ran_channels = 0;                      // most channels NCCL ran a call with (channel truth)

 private:
  ncclComm_t comm_;
  CommOptions o_;
  config_table::CommTable table_;
};

}  // namespace ccltune
