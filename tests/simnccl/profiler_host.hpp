// NCCL's side of the profiler-plugin interface, as NCCL 2.28 (ncclProfiler_v5) and 2.29+ (ncclProfiler_v6, else
// v5) drive it: loading (NCCL_PROFILER_PLUGIN), init and finalize per communicator, the API events of every call
// (GroupApi, CollApi, P2pApi) with NCCL's per-thread bookkeeping of group depth, and the events of a kernel plan's
// launch (KernelLaunch, Group, Coll with what NCCL really ran). Part of the simulated libnccl.so.2; what is not
// emulated is listed in docs/simulated-cluster.md.
#pragma once

#include <nccl.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "profiler_abi.h"

namespace simnccl {

// What a task keeps from its API events: NCCL's task fields eActivationMask, groupApiEventHandle and
// collApiEventHandle (p2pApiEventHandle for a send or receive).
struct ProfilerTag {
  int mask = 0;
  void* groupApi = nullptr;
  void* api = nullptr;
};

// A collective task of a plan at launch, as NCCL's task holds it.
struct ProfilerColl {
  ProfilerTag tag;
  int func = 0;  // simnccl::Coll
  const void* sendBuff = nullptr;
  void* recvBuff = nullptr;
  size_t count = 0;  // allgather and broadcast: bytes
  int root = 0;
  ncclDataType_t dtype = ncclInt8;  // allgather and broadcast: ncclInt8
  int nChannels = 0, nWarps = 0, algo = 0, proto = 0;
};

// One communicator's profiler state (NCCL's comm->profilerContext and comm->seqNumber).
struct ProfilerComm {
  void* ctx = nullptr;
  int rank = 0;
  uint64_t seqNumber[5] = {};  // per collective (simnccl::Coll): the next Coll event's seqNumber
};

// NCCL's spelling of a collective, algorithm, protocol, type (ncclFuncToString, ncclAlgoToString, ...).
const char* NcclFuncString(int func);  // simnccl::Coll, or 6 Send, 7 Recv
const char* NcclAlgoString(int algo);
const char* NcclProtoString(int proto);
const char* NcclDatatypeString(ncclDataType_t dtype);
// The name of a profiler event type the host emits ("GroupApi", "Coll", ...; "other" for the rest).
const char* ProfileTypeName(uint64_t type);

class ProfilerHost {
 public:
  using TraceFn = std::function<void(const std::string&)>;
  // ncclVersion as NCCL_VERSION_CODE (22809); trace gets one line per call into the plugin (may be empty).
  ProfilerHost(int ncclVersion, TraceFn trace);

  // Communicator init: loads the plugin on first use, then calls its init. Destroy and abort: finalize.
  void InitComm(ProfilerComm* comm, uint64_t commId, const char* commName, int nranks, int rank);
  void FinalizeComm(ProfilerComm* comm);
  bool Loaded() const { return version_ != 0; }
  int PluginVersion() const { return version_; }

  // One API call (ncclEnqueueCheck) on this thread: EnqueueBegin, then CollApi or P2pApi (taskAppend; not for the
  // collectives NCCL runs without a task: zero elements, one rank), then the call's implicit ncclGroupEnd:
  // GroupEndBegin, the launch if the group is closed, GroupEndExit. groupDepth is NCCL's group depth during the
  // call, its implicit group included. The user's outermost ncclGroupEnd: GroupEndBegin, launch, GroupEndExit.
  void EnqueueBegin();
  ProfilerTag CollApi(ProfilerComm* comm, int groupDepth, int func, size_t count, ncclDataType_t dtype, int root,
                      void* stream);
  ProfilerTag P2pApi(ProfilerComm* comm, int groupDepth, bool send, size_t count, ncclDataType_t dtype, void* stream);
  void GroupEndBegin();
  void GroupEndExit();

  // A kernel plan's launch on the calling thread: KernelLaunch, then Group, the Coll events (started in order,
  // then stopped), Group stopped. p2ps are the plan's send/receive tasks (their own events are not emulated, but
  // they count for the plan's mask). Advances the communicator's seqNumbers whether or not a plugin is loaded.
  void LaunchPlan(ProfilerComm* comm, void* stream, const std::vector<ProfilerColl>& colls,
                  const std::vector<ProfilerTag>& p2ps);

 private:
  void Load();
  void Unload();
  void Start(void* ctx, void** handle, const ncclProfilerEventDescr_v6_t& descr);
  void Stop(void* handle);
  void Record(ncclProfilerEventState_t state);
  void StartGroupApi(ProfilerComm* comm, int groupDepth);

  const int ncclVersion_;
  TraceFn trace_;
  int status_ = 0;  // 0 not loaded yet, 1 loaded, -1 failed (never retried)
  int refCount_ = 0;
  int version_ = 0;  // 5 or 6 while loaded
  void* lib_ = nullptr;
  ncclProfiler_v5_t* v5_ = nullptr;
  ncclProfiler_v6_t* v6_ = nullptr;
  std::string name_;
  int eventMask_ = 0;  // NCCL's process-wide ncclProfilerEventMask: every init gets its address
};

}  // namespace simnccl
