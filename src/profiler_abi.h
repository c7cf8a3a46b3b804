/* NCCL profiler-plugin ABI, the part ccltune uses, declared by ccltune from NCCL's documented plugin
 * interface (the structs are not in the installed nccl.h). NCCL 2.28 looks up ncclProfiler_v5 first
 * (then v4..v1); NCCL 2.30 looks up v6 first and still takes v5, whose event descriptor is the common
 * prefix of both. ccltune asks only for collective task events (what NCCL really ran: algorithm,
 * protocol, channels) and reads nothing else of the descriptor. */
#ifndef CCLTUNE_SRC_PROFILER_ABI_H_
#define CCLTUNE_SRC_PROFILER_ABI_H_

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"
#include "src/tuner_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Event type bits (eActivationMask and the descriptor's type). */
#define CCLTUNE_PROFILE_GROUP (1 << 0)
#define CCLTUNE_PROFILE_COLL (1 << 1)

/* The descriptor of a collective task event: the fields NCCL fills for ncclProfileColl. The union in
 * NCCL's descriptor holds larger members for other event types; ccltune only reads `coll`, and only
 * when the type says it is a collective, so declaring that member alone keeps the layout of what is read. */
typedef struct {
  uint64_t seqNumber;
  const char* func; /* "AllReduce", "AllGather", ... */
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype; /* "ncclFloat32", ... */
  uint8_t nChannels;    /* channels the task really runs on */
  uint8_t nWarps;
  const char* algo;  /* "TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT" */
  const char* proto; /* "LL", "LL128", "SIMPLE" */
  void* parentGroup;
} ccltuneProfilerCollDescr_v5_t;

typedef struct {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    ccltuneProfilerCollDescr_v5_t coll;
  };
} ccltuneProfilerEventDescr_v5_t;

/* Opaque: ccltune records no state transitions. */
typedef struct ccltuneProfilerEventStateArgs_v5 ccltuneProfilerEventStateArgs_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, ccltuneNcclLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ccltuneProfilerEventDescr_v5_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, int eState, ccltuneProfilerEventStateArgs_v5_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ccltuneProfiler_v5_t;

#ifdef __cplusplus
}
#endif
#endif /* CCLTUNE_SRC_PROFILER_ABI_H_ */
