// The calls this thread has in flight inside NCCL: the channel from the call path, which decides each
// call's config, to the plugin adapters, which NCCL consults while the call runs. For a blocking
// communicator NCCL consults the tuner and the profiler on the calling thread, inside the collective
// (ungrouped) or inside the outermost ncclGroupEnd (grouped), so a thread-local list is enough.
#pragma once

#include <cstdint>
#include <vector>

#include "nccl.h"
#include "vocab/types.hpp"

namespace ccltune {

class CommState;

// One decision for the calls in flight on this thread.
struct InFlight {
  CommState* comm = nullptr;
  Config config;
  uint64_t workload = 0;
  bool internal = false;      // ccltune's own sync op: NCCL's default, untouched
  bool record_space = false;  // the workload's cost table is not known yet: read it
  bool single = true;         // one collective (a group of several: NCCL may give a task more channels)
  // What the tuner plugin applied for this call: the subspace when every getCollInfo of the call
  // could set it (subspace_applied), the channel count written. Checked against what NCCL ran.
  int consults = 0;
  bool subspace_applied = false;
  int channels_applied = 0;
};

// A collective issued inside an open user group, launched at the group's end.
struct GroupColl {
  CommState* cs = nullptr;  // kept alive by the registry: destroying a communicator mid-group is NCCL misuse
  CallDesc call;
  void* stream = nullptr;
};

// A communicator created inside an open user group: NCCL initializes it at the group's end, so
// ccltune takes it on then (CallPath::GroupEnd), with a copy of the config it was created with.
struct CreatedInGroup {
  ncclComm_t comm = nullptr;
  bool has_config = false;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
};

// ccltune's channel probe (channel_budget.cc) in flight on this thread: the tuner asks every channel for its
// collective, and the profiler reports how many NCCL ran.
struct ChannelProbe {
  bool active = false;
  int ran = 0;
};

struct ThreadCalls {
  int group_depth = 0;
  ChannelProbe probe;
  std::vector<GroupColl> group;         // collectives of the open user group, in issue order
  std::vector<CreatedInGroup> created;  // communicators created in the open user group
  std::vector<InFlight> inflight;       // decisions the plugin may be asked about now
};

// This thread's calls. Its vectors keep their capacity, so a warm thread allocates nothing per call.
ThreadCalls& ThisThread();

}  // namespace ccltune
