// The call statistics of the test tuner plugin (test_tuner.cc), read by mpi_test.cc through dlsym of
// simtunerStats: one definition for both sides, so the caller's function type is the callee's (calling
// through a pointer to another type is undefined behaviour, and UBSan's function check reports it).
#pragma once

struct SimTunerStats {
  long inits, finalizes, collInfos, chunkCalls;
  long lastNumPipeOps, lastFunc;
  unsigned long lastNBytes, lastChunkNBytes, lastValidMask;
};

extern "C" {
using SimTunerStatsFn = const SimTunerStats* (*)();
}
