/* NCCL tuner-plugin ABI, declared by ccltune from NCCL's documented plugin interface (the structs
 * are not in the installed nccl.h). One struct per ABI version; NCCL looks up the newest symbol it
 * knows first: ncclTunerPlugin_v6 (NCCL >= 2.30, adds getChunkSize), _v5 (2.28/2.29, init takes the
 * communicator hash), _v4 (2.27). */
#ifndef CCLTUNE_SRC_TUNER_ABI_H_
#define CCLTUNE_SRC_TUNER_ABI_H_

#include <stddef.h>
#include <stdint.h>

#include "nccl.h"
#include "src/nccl_log_level.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NCCL's logger callback: level, subsystem flags, file, line, printf format. */
typedef void (*ccltuneNcclLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                    const char* fmt, ...);

#define CCLTUNE_ABI_NUM_ALGOS 7
#define CCLTUNE_ABI_NUM_PROTOS 3

typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} ccltuneNvlDomainInfo_v5_t;

/* Opaque to ccltune (NCCL lets a tuner edit its model constants; ccltune never does). */
typedef struct ccltuneTunerConstants_v5 ccltuneTunerConstants_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ccltuneNcclLogger_t logFunction,
                       ccltuneNvlDomainInfo_v5_t* nvlDomainInfo, ccltuneTunerConstants_v5_t* constants);
  ncclResult_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* ctx);
  ncclResult_t (*getChunkSize)(void* ctx, int collType, size_t nBytes, int algo, int proto, int nChannels,
                               size_t* chunkSize);
} ccltuneTuner_v6_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ccltuneNcclLogger_t logFunction,
                       ccltuneNvlDomainInfo_v5_t* nvlDomainInfo, ccltuneTunerConstants_v5_t* constants);
  ncclResult_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*finalize)(void* ctx);
} ccltuneTuner_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ccltuneNcclLogger_t logFunction, void** ctx);
  ncclResult_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*destroy)(void* ctx);
} ccltuneTuner_v4_t;

#ifdef __cplusplus
}
#endif
#endif /* CCLTUNE_SRC_TUNER_ABI_H_ */
