// The call statistics of the test tuner plugin (test_tuner.cc), read by mpi_test.cc through dlsym of
// simtunerStats: one definition for both sides, so the caller's function type is the callee's (calling
// through a pointer to another type is undefined behaviour, and UBSan's function check reports it).
#pragma once

struct SimTunerStats {
  static constexpr int kHistory = 32;
  long inits, finalizes, collInfos, chunkCalls;
  long lastNumPipeOps, lastFunc;
  unsigned long lastNBytes, lastChunkNBytes, lastValidMask;
  // The commId of each communicator's init, in init order (from the kHistory-th on, the last slot is reused); a
  // communicator's plugin context points at its slot. Call i's (from 0) communicator: callComms[i % kHistory].
  unsigned long long initComms[kHistory];
  unsigned long long callComms[kHistory];
};

extern "C" {
using SimTunerStatsFn = const SimTunerStats* (*)();
}
