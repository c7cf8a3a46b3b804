/* ccltune public C API.
 *
 * Everything here is optional: LD_PRELOAD=libccltune.so alone tunes a job. A program that wants
 * control links libccltune before -lnccl, or resolves these symbols with dlsym(RTLD_DEFAULT, ...)
 * so it runs unchanged without ccltune (what ccltune-bench does).
 *
 * Like NCCL's own settings, a per-communicator mode must be set the same way on every rank of the
 * communicator, at the same point of the program (outside a group), or ranks would run one
 * collective with different configurations. Return values: 0 on success, a negative
 * ccltuneResult_t otherwise. */
#ifndef CCLTUNE_CCLTUNE_H_
#define CCLTUNE_CCLTUNE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CCLTUNE_VERSION_MAJOR 0
#define CCLTUNE_VERSION_MINOR 1
#define CCLTUNE_VERSION_PATCH 0

struct ncclComm; /* ncclComm_t is struct ncclComm* */

typedef enum {
  ccltuneSuccess = 0,
  ccltuneInvalidArgument = -1, /* a NULL pointer, an out-of-range field */
  ccltuneNotFound = -2,        /* unknown communicator or workload */
  ccltuneUnavailable = -3,     /* ccltune is disabled or passing this communicator through */
  ccltuneIoError = -4,         /* export could not be written */
} ccltuneResult_t;

typedef enum {
  ccltuneModeTune = 0,    /* search and apply (the default) */
  ccltuneModeDefault = 1, /* NCCL exactly as without ccltune: no override, no timing, no sync */
  ccltuneModeFrozen = 2,  /* apply what is known, search nothing new */
  ccltuneModeForced = 3,  /* every call of the communicator runs the given config */
} ccltuneMode_t;

/* A configuration. -1 (algorithm, protocol) and 0 (channels, chunkBytes) mean "NCCL decides".
 * algorithm: NCCL_ALGO_* index (0 Tree, 1 Ring, ... 6 PAT); protocol: 0 LL, 1 LL128, 2 Simple. */
typedef struct {
  int algorithm;
  int protocol;
  int channels;
  int64_t chunkBytes;
} ccltuneConfig_t;

typedef enum {
  ccltuneStateDefault = 0, /* not tuned (yet): NCCL's default */
  ccltuneStateSearching = 1,
  ccltuneStateConverged = 2,
  ccltuneStateImported = 3,
  ccltuneStateForced = 4,
} ccltuneState_t;

typedef struct {
  int collective;          /* ncclFunc_t value: 0 Broadcast, 1 Reduce, 2 AllGather, 3 ReduceScatter, 4 AllReduce */
  int datatype;            /* ncclDataType_t */
  int op;                  /* ncclRedOp_t, -1 when the collective has none */
  size_t bytes;            /* count * element size of the user's call */
  int grouped;             /* 1: a user group; the fields above describe its first collective */
  int state;               /* ccltuneState_t */
  ccltuneConfig_t config;  /* the incumbent */
  double defaultUs;        /* median of NCCL's default, 0 if not measured (leader rank only) */
  double tunedUs;          /* median of the incumbent, 0 if not measured (leader rank only) */
  int64_t calls;           /* calls of the workload seen on this rank */
  int64_t samples;         /* measured calls (leader rank only) */
  int64_t convergeCalls;   /* calls until the final config applied; 0 while not converged */
  uint32_t validSubspaces; /* bit (algorithm * 3 + protocol): allowed by NCCL's cost table for this call */
  int ncclAlgorithm;       /* NCCL's own pick from the cost table, -1 if unknown */
  int ncclProtocol;
  int channelBudget; /* channels ccltune searches: [1, channelBudget] */
  int chunkTunable;  /* 1 when NCCL offers per-call chunk size (tuner v6) */
  /* Channel truth (ccltune is NCCL's profiler plugin too): what NCCL really ran for the latest call of
   * the workload on this rank; algorithm/protocol -1 and channels 0 while unknown. NCCL may run fewer
   * channels than a config asks for (never more than the communicator has). */
  ccltuneConfig_t lastRan;
  int channelTruth; /* 1 when ccltune sees what NCCL runs (its profiler plugin is loaded) */
} ccltuneWorkloadStats_t;

/* Version of the loaded library. */
int ccltuneGetVersion(int* major, int* minor, int* patch);
/* 1 when ccltune tunes this process (not disabled, NCCL found). */
int ccltuneIsActive(void);

int ccltuneSetMode(struct ncclComm* comm, ccltuneMode_t mode, const ccltuneConfig_t* forced);
int ccltuneGetMode(struct ncclComm* comm, ccltuneMode_t* mode);

/* Writes the JSON export (and the CSV next to it, path + ".csv" replaced from ".json") now.
 * path NULL: CCLTUNE_EXPORT's path. */
int ccltuneExport(const char* path);

/* Statistics of one ungrouped workload of `comm` (collective, datatype, op, bytes as above). */
int ccltuneGetWorkloadStats(struct ncclComm* comm, int collective, int datatype, int op, size_t bytes,
                            ccltuneWorkloadStats_t* out);
/* All workloads of `comm`: writes up to `max` entries, *count receives the total. */
int ccltuneListWorkloads(struct ncclComm* comm, ccltuneWorkloadStats_t* out, int max, int* count);

/* The whole process at a glance, over the live communicators ccltune tunes (not those passed
 * through): for a training loop that wants to know when tuning has settled without holding NCCL
 * communicator handles (PyTorch keeps them inside its process groups). Cheap enough to call once
 * per training step. The counts are this rank's view, which every rank shares: workload states
 * change only when a schedule update applies, at the same unit on every rank. */
typedef struct {
  int communicators; /* live communicators ccltune tunes in this process */
  int workloads;     /* workloads seen on them */
  int pending;       /* on NCCL's default, nothing scheduled for them yet */
  int searching;     /* a search is running */
  int converged;     /* converged or imported */
  int other;         /* on a communicator in default or forced mode */
  int64_t calls;     /* calls of those workloads seen (a user group counts once) */
  int64_t changes;   /* schedule updates applied so far, destroyed communicators included: grows while tuning */
} ccltuneSummary_t;
int ccltuneGetSummary(ccltuneSummary_t* out);

#ifdef __cplusplus
}
#endif
#endif /* CCLTUNE_CCLTUNE_H_ */
