// Communicator lifecycle: what ccltune sets up when NCCL creates a communicator (the coordinator and its
// in-band transport, the timer every rank times with, on the leader the search and the import) and what
// it keeps when the communicator goes (the leader's table, for the export and the summary).
#pragma once

#include <atomic>
#include <string>

#include "absl/status/statusor.h"
#include "config_table/config_table.hpp"
#include "nccl.h"
#include "optimizer/optimizer.hpp"
#include "src/comm_state.hpp"
#include "src/settings.hpp"

namespace ccltune {

class Runtime;
class CommState;

// The search options `settings` ask for, as the leader of every communicator gets them (CCLTUNE_MIN_GAIN_PCT,
// CCLTUNE_GUARD, CCLTUNE_SCREEN_COST_RATIO, CCLTUNE_RACE_BUDGET); the others are optimizer::Options' defaults.
optimizer::Options SearchOptionsFrom(const Settings& settings);
// The leader's options `settings` ask for: the search's (SearchOptionsFrom), CCLTUNE_MAX_BATCH, CCLTUNE_MIN_INTERVAL,
// CCLTUNE_SETTLE_US and CCLTUNE_LOW_STAKES_PCT; those of the communicator (its channel budget, the plugin ABI, the
// timing, the trace) are set where it is known.
Leader::Options LeaderOptionsFrom(const Settings& settings);

class CommLifecycle {
 public:
  explicit CommLifecycle(Runtime& rt) : rt_(rt) {}
  // `multi_gpu_thread`: created by ncclCommInitAll, or inside a group that creates several on this thread.
  // A communicator created inside a group comes here at the group's end (CallPath::GroupEnd).
  // `baseline`: the channels NCCL gave it where RaiseBudget created it with more (else 0).
  void OnCommCreated(ncclComm_t comm, const ncclConfig_t* config, bool multi_gpu_thread, int baseline = 0);
  // CCLTUNE_CHANNEL_BUDGET (channel_budget.cc): `c0`, just created by NCCL from `user` (nullptr: no config)
  // on its own budget, or, where ccltune raises it, the communicator to hand to the user instead, created
  // with the budget's channels (`c0` is then destroyed) and *baseline the channels NCCL gave `c0`. Called
  // on every rank of a blocking communicator created outside a group, by the interposer.
  ncclComm_t RaiseBudget(ncclComm_t c0, const ncclConfig_t* user, int* baseline);
  void OnCommGone(ncclComm_t comm, bool abort);
  // Leader: ships the config of the first CSV line that matches `key` as an import; cs.mu held.
  void ApplyCsvImport(CommState& cs, const WorkloadKey& key);
  config_table::Fingerprint FingerprintOf(const CommState& cs) const;

 private:
  void SetUp(CommState& cs);
  // Whether a communicator created with `config` (nullptr: none) is blocking: its config, else NCCL_COMM_BLOCKING.
  static bool Blocking(const ncclConfig_t* config);
  // Why a communicator created from `user` keeps NCCL's budget ("" if it may be raised).
  std::string WhyNotRaise(const ncclConfig_t* user) const;
  // The channels NCCL gave `comm`, agreed by its ranks (0 where any rank could not read them).
  int ProbeChannels(ncclComm_t comm);
  // CCLTUNE_SYNC_COMM=split: the communicator the sync ops of `cs` run on, split off it (collective: every
  // rank of `cs` calls it at set-up), with a stream of ccltune's; *side_comm is the new communicator.
  absl::StatusOr<NcclTransport::SideRoute> SplitSyncComm(CommState& cs, ncclComm_t* side_comm);
  // Leader, first sync: reads CCLTUNE_IMPORT (JSON, or NCCL's example-tuner CSV for a .csv name).
  void LoadImport(CommState& cs);
  Runtime& rt_;
  std::atomic<bool> announced_{false};  // the start line (rank 0 of the first communicator) was printed
};

}  // namespace ccltune
