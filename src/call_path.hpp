// The per-call path: every collective and user group of a communicator ccltune tunes. For each unit (an
// ungrouped collective, or a group's collectives of one communicator) it decides the config (the
// schedule's next call, the incumbent, or NCCL's default), times the call when the schedule says every
// rank times it, hands the decision to the plugin through this thread's calls in flight, calls NCCL,
// and at the unit's end runs the communicator's sync point. Nothing here allocates once a thread and a
// workload are warm, and the only lock taken per call is the communicator's own.
#pragma once

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "coordinator/coordinator.hpp"
#include "nccl.h"
#include "vocab/types.hpp"

namespace ccltune {

class Runtime;
class CommState;

using NcclCall = absl::FunctionRef<ncclResult_t()>;

class CallPath {
 public:
  explicit CallPath(Runtime& rt) : rt_(rt) {}
  // Collectives and groups (the interposer's re-entry guard is the caller's).
  ncclResult_t Collective(ncclComm_t comm, cudaStream_t stream, const CallDesc& call, NcclCall fn);
  ncclResult_t GroupStart(NcclCall fn);
  ncclResult_t GroupEnd(NcclCall fn, bool simulate);
  // True inside an open user group on this thread.
  bool InUserGroup() const;
  // A communicator created inside the open user group (ncclCommInitRank, ...Config, ...Scalable,
  // ncclCommSplit, ncclCommShrink): NCCL initializes it at the outermost ncclGroupEnd, which hands it
  // to the lifecycle. One communicator created in a group on its thread (nccl-tests, one process per
  // GPU) is tuned like any other; several created in one group on one thread (one thread driving
  // several GPUs) pass through.
  void CreatedInUserGroup(ncclComm_t comm, const ncclConfig_t* config);

  // The coordinator's sample hook: this rank's timings of timed calls first..first+n-1 (cs.mu held).
  void FillSamples(CommState& cs, uint64_t first, int n, int slot0, bool early, coordinator::SampleWords* words);

 private:
  struct Unit;
  // The outermost group end's collectives: one unit per communicator, decided, launched, synced.
  ncclResult_t LaunchGroup(NcclCall fn, bool simulate);
  // After the outermost group end: the communicators created in the group, to the lifecycle (none
  // when NCCL failed the group).
  void TakeOnCreated(ncclResult_t group_result);
  // Decides one unit's config; cs.mu held. `key_calls` describes the unit when it is seen first.
  Config Decide(CommState& cs, uint64_t hash, std::span<const CallDesc> key_calls, bool grouped, bool capturing,
                bool* timed, uint64_t* seq, bool* record_space);
  void AfterUnit(CommState& cs, void* stream);
  // Finished timings into cs.timings; on the leader, carried timings of completed syncs to the search.
  void Harvest(CommState& cs);
  // Harvest on every kHarvestEvery-th call only: querying a pending event costs a few hundred
  // nanoseconds per call on a GPU, and timings are needed only when a sync is issued (which harvests).
  void MaybeHarvest(CommState& cs);
  static constexpr uint32_t kHarvestEvery = 8;

  Runtime& rt_;
};

}  // namespace ccltune
