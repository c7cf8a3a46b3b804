// Profiler-plugin ABI of NCCL (ncclProfiler_v5: NCCL 2.28; ncclProfiler_v6: NCCL 2.29 and later), declared
// locally like tuner_abi.h: the installed nccl.h does not carry it. Used by the simulated NCCL (loader side) and
// by the test profiler (provider side). The layouts (x86-64 / aarch64 LP64, checked in profiler_test.cc):
// a descriptor is type (8) | parentObj (8) | rank (4, padded to 8) | a union of 88 bytes = 112 bytes, the union
// at offset 24; the coll member is seqNumber 0, func 8, sendBuff 16, recvBuff 24, count 32, root 40, datatype 48,
// nChannels 56, nWarps 57, algo 64, proto 72, parentGroup 80 (offsets within the union).
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <nccl.h>

#include "nccl_log_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

// Event types, also the bits of the activation mask a plugin returns from init.
enum {
  ncclProfileGroup = 1 << 0,    // one per kernel plan (task events of a launch)
  ncclProfileColl = 1 << 1,     // a collective task, with what NCCL really ran
  ncclProfileP2p = 1 << 2,      // a send or receive task
  ncclProfileProxyOp = 1 << 3,  // proxy (network) events
  ncclProfileProxyStep = 1 << 4,
  ncclProfileProxyCtrl = 1 << 5,
  ncclProfileKernelCh = 1 << 6,  // per-channel GPU timestamps
  ncclProfileNetPlugin = 1 << 7,
  ncclProfileGroupApi = 1 << 8,       // the user's outermost group (or the implicit one of an ungrouped call)
  ncclProfileCollApi = 1 << 9,        // a collective API call
  ncclProfileP2pApi = 1 << 10,        // a send/recv API call
  ncclProfileKernelLaunch = 1 << 11,  // a kernel launch
  ncclProfileCeColl = 1 << 12,        // copy-engine collectives (v6)
  ncclProfileCeSync = 1 << 13,
  ncclProfileCeBatch = 1 << 14,
};

// Event states passed to recordEventState (one numbering for every version).
typedef enum {
  ncclProfilerProxyOpSendPosted = 0,
  ncclProfilerProxyOpSendRemFifoWait = 1,
  ncclProfilerProxyOpSendTransmitted = 2,
  ncclProfilerProxyOpSendDone = 3,
  ncclProfilerProxyOpRecvPosted = 4,
  ncclProfilerProxyOpRecvReceived = 5,
  ncclProfilerProxyOpRecvTransmitted = 6,
  ncclProfilerProxyOpRecvDone = 7,
  ncclProfilerProxyStepSendGPUWait = 8,
  ncclProfilerProxyStepSendWait = 9,
  ncclProfilerProxyStepRecvWait = 10,
  ncclProfilerProxyStepRecvFlushWait = 11,
  ncclProfilerProxyStepRecvGPUWait = 12,
  ncclProfilerProxyCtrlIdle = 13,
  ncclProfilerProxyCtrlActive = 14,
  ncclProfilerProxyCtrlSleep = 15,
  ncclProfilerProxyCtrlWakeup = 16,
  ncclProfilerProxyCtrlAppend = 17,
  ncclProfilerProxyCtrlAppendEnd = 18,
  ncclProfilerProxyOpInProgress_v4 = 19,
  ncclProfilerProxyStepSendPeerWait_v4 = 20,
  ncclProfilerNetPluginUpdate = 21,
  ncclProfilerKernelChStop = 22,
  ncclProfilerGroupStartApiStop = 23,  // the group API event: the calls that build the group are over
  ncclProfilerGroupEndApiStart = 24,   // the group API event: the outermost ncclGroupEnd has begun
  ncclProfilerCeCollStart = 25,
  ncclProfilerCeCollComplete = 26,
  ncclProfilerCeSyncStart = 27,
  ncclProfilerCeSyncComplete = 28,
  ncclProfilerCeBatchStart = 29,
  ncclProfilerCeBatchComplete = 30,
} ncclProfilerEventState_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v6_t;

// The union members both versions share, in the order and with the types of the documented ABI.
#define SIMNCCL_PROFILER_DESCR_COMMON_MEMBERS \
  struct {                                    \
    bool graphCaptured;                       \
    int groupDepth;                           \
  } groupApi;                                 \
  struct {                                    \
    const char* func;                         \
    size_t count;                             \
    const char* datatype;                     \
    int root;                                 \
    void* stream;                             \
    bool graphCaptured;                       \
  } collApi;                                  \
  struct {                                    \
    const char* func;                         \
    size_t count;                             \
    const char* datatype;                     \
    void* stream;                             \
    bool graphCaptured;                       \
  } p2pApi;                                   \
  struct {                                    \
    void* stream;                             \
  } kernelLaunch;                             \
  struct {                                    \
    uint64_t seqNumber;                       \
    const char* func;                         \
    void const* sendBuff;                     \
    void* recvBuff;                           \
    size_t count;                             \
    int root;                                 \
    const char* datatype;                     \
    uint8_t nChannels;                        \
    uint8_t nWarps;                           \
    const char* algo;                         \
    const char* proto;                        \
    void* parentGroup;                        \
  } coll;                                     \
  struct {                                    \
    const char* func;                         \
    void* buff;                               \
    const char* datatype;                     \
    size_t count;                             \
    int peer;                                 \
    uint8_t nChannels;                        \
    void* parentGroup;                        \
  } p2p;                                      \
  struct {                                    \
    pid_t pid;                                \
    uint8_t channelId;                        \
    int peer;                                 \
    int nSteps;                               \
    int chunkSize;                            \
    int isSend;                               \
  } proxyOp;                                  \
  struct {                                    \
    int step;                                 \
  } proxyStep;                                \
  struct {                                    \
    uint8_t channelId;                        \
    uint64_t pTimer;                          \
  } kernelCh;                                 \
  struct {                                    \
    int64_t id;                               \
    void* data;                               \
  } netPlugin;

typedef struct {
  uint64_t type;    // one ncclProfile* bit
  void* parentObj;  // the handle of the parent event (coll: its CollApi event), or NULL
  int rank;         // the communicator rank (task events)
  union {
    SIMNCCL_PROFILER_DESCR_COMMON_MEMBERS
  };
} ncclProfilerEventDescr_v5_t;

typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    SIMNCCL_PROFILER_DESCR_COMMON_MEMBERS
    struct {
      uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
    } ceColl;
    struct {
      bool isComplete;
      int nRanks;
    } ceCollSync;
    struct {
      int numOps;
      size_t totalBytes;
      bool useIntraSync;
    } ceCollBatch;
  };
} ncclProfilerEventDescr_v6_t;
#undef SIMNCCL_PROFILER_DESCR_COMMON_MEMBERS

typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
} ncclProfilerEventStateArgs_v5_t;
typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v6_t;

// init: per communicator. eActivationMask points at one process-wide mask (every init gets the same address);
// NCCL reads it again at every API call, so a plugin may change it later through the pointer.
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v5_t eState,
                                   ncclProfilerEventStateArgs_v5_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v6_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v6_t eState,
                                   ncclProfilerEventStateArgs_v6_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v6_t;

#ifdef __cplusplus
}
#endif
