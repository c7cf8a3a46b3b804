// The call log of the test profiler plugin (test_profiler.cc), read by mpi_test.cc through dlsym of
// simprofilerLog: one definition for both sides. Built with the test tuner into one library (as ccltune exports a
// tuner and a profiler from one library), the tuner's calls go into the same log, so their order is checked too.
#pragma once

#include <cstddef>
#include <cstdint>

struct SimProfCall {
  char op;        // profiler: 'i' init, 'f' finalize, 's' startEvent, 'e' stopEvent, 'r' recordEventState;
                  // tuner: 'I' init, 'T' getCollInfo, 'C' getChunkSize, 'F' finalize
  int comm;       // index of the communicator (by init order) whose context the call got; -1 none
  long tid;       // the calling thread
  int id;         // startEvent: the new handle's id; stopEvent/recordEventState: the handle's id
  uint64_t type;  // startEvent: the event type; recordEventState: the state
  int parentId, parentGroupId;                    // ids of the handles in parentObj and coll.parentGroup (0: NULL)
  int rank, root, nChannels, nWarps, groupDepth;  // descriptor fields (init: rank, nNodes as groupDepth;
                                                  // tuner: the nChannels asked)
  uint64_t seqNumber, commId;                     // commId: init (profiler and tuner)
  size_t count;                                   // descriptor count; init: nranks; tuner: nBytes
  const void* sendBuff;
  void* recvBuff;
  void* stream;
  char func[16], datatype[16], algo[16], proto[16], commName[32];
};

struct SimProfLog {
  int n;  // calls logged (at most kMax; more are counted in dropped)
  int dropped;
  int version;  // 5 or 6: the profiler entry point NCCL called init through
  static constexpr int kMax = 4096;
  SimProfCall calls[kMax];
};

extern "C" {
using SimProfLogFn = SimProfLog* (*)();
using SimProfSetMaskFn = void (*)(int);
}
