// NCCL profiler-plugin adapter: the exported ncclProfiler_v5. ccltune uses NCCL's profiler interface
// for one thing, channel truth: for every collective task NCCL launches it reports the algorithm,
// protocol and number of channels it really runs, which a tuner cannot see (NCCL clamps the tuner's
// channel count to the communicator's and spreads small messages over fewer channels). Only
// collective task events are asked for; every entry point returns ncclSuccess and no event handle.
#include <cstring>

#include "src/nccl_log.hpp"
#include "src/profiler_abi.h"
#include "src/runtime.hpp"

namespace {

using ccltune::Runtime;

// NCCL's spellings (ncclAlgoToString / ncclProtoToString) to its indices; -1 if unknown.
int AlgoIndex(const char* s) {
  static constexpr const char* kNames[] = {"TREE",      "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS",
                                           "NVLS_TREE", "PAT"};
  if (s == nullptr) return -1;
  for (int i = 0; i < static_cast<int>(std::size(kNames)); ++i)
    if (std::strcmp(s, kNames[i]) == 0) return i;
  return -1;
}

int ProtoIndex(const char* s) {
  static constexpr const char* kNames[] = {"LL", "LL128", "SIMPLE"};
  if (s == nullptr) return -1;
  for (int i = 0; i < static_cast<int>(std::size(kNames)); ++i)
    if (std::strcmp(s, kNames[i]) == 0) return i;
  return -1;
}

ncclResult_t Init(void** ctx, uint64_t comm_id, int* mask, const char*, int, int nranks, int rank,
                  ccltuneNcclLogger_t log) {
  // NCCL hands its profiler plugins the same logger as its tuner plugins; whichever init comes first
  // routes ccltune's lines into NCCL's output.
  ccltune::SetNcclLogger(log);
  *ctx = nullptr;
  if (Runtime::Get().active()) {
    *ctx = Runtime::Get().plugin().ProfilerInit(comm_id, rank, nranks);
    *mask = CCLTUNE_PROFILE_COLL;
  }
  return ncclSuccess;
}

ncclResult_t StartEvent(void* ctx, void** handle, ccltuneProfilerEventDescr_v5_t* d) {
  *handle = nullptr;
  if (ctx == nullptr || d == nullptr || d->type != CCLTUNE_PROFILE_COLL) return ncclSuccess;
  const int algo = AlgoIndex(d->coll.algo);
  const int proto = ProtoIndex(d->coll.proto);
  if (algo >= 0 && proto >= 0) Runtime::Get().plugin().ProfilerColl(ctx, algo, proto, d->coll.nChannels);
  return ncclSuccess;
}

ncclResult_t StopEvent(void*) { return ncclSuccess; }

ncclResult_t RecordEventState(void*, int, ccltuneProfilerEventStateArgs_v5_t*) { return ncclSuccess; }

ncclResult_t Finalize(void* ctx) {
  if (ctx != nullptr) Runtime::Get().plugin().ProfilerFinalize(ctx);
  return ncclSuccess;
}

}  // namespace

extern "C" {
__attribute__((visibility("default")))
ccltuneProfiler_v5_t ncclProfiler_v5 = {"ccltune", Init, StartEvent, StopEvent, RecordEventState, Finalize};
}
