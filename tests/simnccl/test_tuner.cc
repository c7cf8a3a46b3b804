// Test tuner plugin for the simnccl sim tests. SIMTUNER_MODE=force: Ring/LL128 (Tree/LL128 unavailable → first
// valid), nChannels 4 (SIMTUNER_CHANNELS, read at every call, asks for another count), chunk 10 grains;
// SIMTUNER_MODE=inconsistent: like force, but rank 1 (OMPI_COMM_WORLD_RANK) asks for 3 channels on its 5th
// getCollInfo. Exposes its call statistics (with each call's communicator) through simtunerStats(); built with the
// test profiler (test_profiler.cc), it also logs its calls into the profiler's log.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "test_tuner_stats.hpp"
#include "tuner_abi.h"

// Defined when the test profiler is built into the same library.
// value: nBytes (getCollInfo, getChunkSize) or the communicator id (init).
extern "C" __attribute__((weak)) void simtestLogTunerCall(char op, int nChannels, uint64_t value);

namespace {
SimTunerStats g;
int Rank() {
  const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
  return r ? std::atoi(r) : 0;
}

ncclResult_t Init(void** ctx, uint64_t commId, size_t, size_t, ncclDebugLogger_t, ncclNvlDomainInfo_v5_t*,
                  ncclTunerConstants_v5_t*) {
  unsigned long long* slot = &g.initComms[std::min<long>(g.inits, SimTunerStats::kHistory - 1)];
  g.inits++;
  *slot = commId;
  *ctx = slot;  // which communicator a later call is for
  if (simtestLogTunerCall) simtestLogTunerCall('I', 0, commId);
  return ncclSuccess;
}
ncclResult_t GetCollInfo(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table, int numAlgo,
                         int numProto, int, int* nChannels) {
  g.callComms[g.collInfos % SimTunerStats::kHistory] = *static_cast<unsigned long long*>(ctx);
  g.collInfos++;
  g.lastFunc = coll, g.lastNBytes = nBytes, g.lastNumPipeOps = numPipeOps;
  float(*t)[3] = (float(*)[3])table;
  unsigned long mask = 0;
  for (int a = 0; a < numAlgo; a++)
    for (int p = 0; p < numProto; p++)
      if (t[a][p] >= 0) mask |= 1ul << (a * numProto + p);
  g.lastValidMask = mask;
  if (t[1][1] >= 0) t[1][1] = 0;  // Ring / LL128
  const char* channels = std::getenv("SIMTUNER_CHANNELS");
  *nChannels = channels ? std::atoi(channels) : 4;
  const char* mode = std::getenv("SIMTUNER_MODE");
  if (mode && std::strcmp(mode, "inconsistent") == 0 && Rank() == 1 && g.collInfos == 5) *nChannels = 3;
  if (simtestLogTunerCall) simtestLogTunerCall('T', *nChannels, nBytes);
  return ncclSuccess;
}
ncclResult_t GetChunkSize(void*, ncclFunc_t, size_t nBytes, int, int proto, int nChannels, size_t* chunk) {
  g.chunkCalls++;
  g.lastChunkNBytes = nBytes;
  if (nChannels != 1) return ncclInternalError;  // NCCL calls it per slice
  *chunk = proto == 1 ? 1920 * 10 : proto == 0 ? 4096 : 65536;
  if (simtestLogTunerCall) simtestLogTunerCall('C', nChannels, nBytes);
  return ncclSuccess;
}
ncclResult_t Finalize(void*) {
  g.finalizes++;
  if (simtestLogTunerCall) simtestLogTunerCall('F', 0, 0);
  return ncclSuccess;
}
}  // namespace

extern "C" {
__attribute__((visibility("default"))) const SimTunerStats* simtunerStats() { return &g; }
#ifndef SIMTUNER_NO_V6
__attribute__((visibility("default")))
ncclTuner_v6_t ncclTunerPlugin_v6 = {"simtest", Init, GetCollInfo, Finalize, GetChunkSize};
#endif
__attribute__((visibility("default"))) ncclTuner_v5_t ncclTunerPlugin_v5 = {"simtest", Init, GetCollInfo, Finalize};
}
