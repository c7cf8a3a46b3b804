// Test profiler plugin for the simnccl sim tests: logs every call NCCL makes into it (init, startEvent with the
// descriptor's fields, stopEvent, recordEventState, finalize) for the test program (simprofilerLog). The activation
// mask comes from SIMPROFILER_MASK (default: every API event, Group, Coll and KernelLaunch); simprofilerSetMask
// writes a new one through the pointer NCCL gave init. Handles are event ids (1, 2, ...) cast to pointers, so a
// parent pointer in a descriptor names the event it came from. Built with the test tuner into one library whose
// tuner calls go into the same log (simtestLogTunerCall); SIMPROFILER_NO_V6 leaves out ncclProfiler_v6.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "profiler_abi.h"
#include "test_profiler_log.hpp"

namespace {

constexpr int kDefaultMask = ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi | ncclProfileKernelLaunch |
                             ncclProfileGroup | ncclProfileColl;

SimProfLog gLog;
SimProfCall gOverflow;
std::mutex gMu;
int* gMask = nullptr;  // NCCL's mask, as init got it
int gComms = 0;
int gNextId = 0;
int gCtx[64];  // a context per communicator: its index

int Id(const void* handle) { return static_cast<int>(reinterpret_cast<intptr_t>(handle)); }
int CommOf(void* context) { return context ? *static_cast<int*>(context) : -1; }

SimProfCall& Append(char op, int comm) {
  SimProfCall& c = gLog.n < SimProfLog::kMax ? gLog.calls[gLog.n++] : (gLog.dropped++, gOverflow);
  c = SimProfCall{};
  c.op = op;
  c.comm = comm;
  c.tid = static_cast<long>(syscall(SYS_gettid));
  return c;
}
template <size_t N>
void Copy(char (&dst)[N], const char* s) {
  std::snprintf(dst, N, "%s", s ? s : "(null)");
}

ncclResult_t Init(int version, void** context, uint64_t commId, int* mask, const char* commName, int nNodes, int nranks,
                  int rank) {
  std::lock_guard<std::mutex> lock(gMu);
  const char* m = std::getenv("SIMPROFILER_MASK");
  *mask = m ? static_cast<int>(std::strtol(m, nullptr, 0)) : kDefaultMask;
  gMask = mask;
  gLog.version = version;
  if (gComms >= 64) return ncclInternalError;
  gCtx[gComms] = gComms;
  *context = &gCtx[gComms];
  SimProfCall& c = Append('i', gComms++);
  c.commId = commId;
  c.rank = rank;
  c.count = static_cast<size_t>(nranks);
  c.groupDepth = nNodes;
  Copy(c.commName, commName);
  return ncclSuccess;
}
ncclResult_t InitV5(void** context, uint64_t commId, int* mask, const char* commName, int nNodes, int nranks, int rank,
                    ncclDebugLogger_t) {
  return Init(5, context, commId, mask, commName, nNodes, nranks, rank);
}
ncclResult_t InitV6(void** context, uint64_t commId, int* mask, const char* commName, int nNodes, int nranks, int rank,
                    ncclDebugLogger_t) {
  return Init(6, context, commId, mask, commName, nNodes, nranks, rank);
}

template <typename Descr>
ncclResult_t StartEvent(void* context, void** handle, Descr* d) {
  std::lock_guard<std::mutex> lock(gMu);
  SimProfCall& c = Append('s', CommOf(context));
  c.type = d->type;
  c.parentId = Id(d->parentObj);
  c.rank = d->rank;
  switch (d->type) {
    case ncclProfileGroupApi:
      c.groupDepth = d->groupApi.groupDepth;
      break;
    case ncclProfileCollApi:
      Copy(c.func, d->collApi.func);
      c.count = d->collApi.count;
      Copy(c.datatype, d->collApi.datatype);
      c.root = d->collApi.root;
      c.stream = d->collApi.stream;
      break;
    case ncclProfileP2pApi:
      Copy(c.func, d->p2pApi.func);
      c.count = d->p2pApi.count;
      Copy(c.datatype, d->p2pApi.datatype);
      c.stream = d->p2pApi.stream;
      break;
    case ncclProfileKernelLaunch:
      c.stream = d->kernelLaunch.stream;
      break;
    case ncclProfileColl:
      c.seqNumber = d->coll.seqNumber;
      Copy(c.func, d->coll.func);
      c.sendBuff = d->coll.sendBuff;
      c.recvBuff = d->coll.recvBuff;
      c.count = d->coll.count;
      c.root = d->coll.root;
      Copy(c.datatype, d->coll.datatype);
      c.nChannels = d->coll.nChannels;
      c.nWarps = d->coll.nWarps;
      Copy(c.algo, d->coll.algo);
      Copy(c.proto, d->coll.proto);
      c.parentGroupId = Id(d->coll.parentGroup);
      break;
    default:
      break;
  }
  c.id = ++gNextId;
  *handle = reinterpret_cast<void*>(static_cast<intptr_t>(c.id));
  return ncclSuccess;
}

ncclResult_t StopEvent(void* handle) {
  std::lock_guard<std::mutex> lock(gMu);
  Append('e', -1).id = Id(handle);
  return ncclSuccess;
}

ncclResult_t RecordEventState(void* handle, ncclProfilerEventState_t state, ncclProfilerEventStateArgs_v5_t*) {
  std::lock_guard<std::mutex> lock(gMu);
  SimProfCall& c = Append('r', -1);
  c.id = Id(handle);
  c.type = static_cast<uint64_t>(state);
  return ncclSuccess;
}

ncclResult_t Finalize(void* context) {
  std::lock_guard<std::mutex> lock(gMu);
  Append('f', CommOf(context));
  return ncclSuccess;
}

}  // namespace

extern "C" {
__attribute__((visibility("default"))) SimProfLog* simprofilerLog() { return &gLog; }
__attribute__((visibility("default"))) void simprofilerSetMask(int mask) {
  std::lock_guard<std::mutex> lock(gMu);
  if (gMask) *gMask = mask;
}
// The test tuner's calls, when it is built into this library (test_tuner.cc calls it if defined).
__attribute__((visibility("default"))) void simtestLogTunerCall(char op, int nChannels, uint64_t value) {
  std::lock_guard<std::mutex> lock(gMu);
  SimProfCall& c = Append(op, -1);
  c.nChannels = nChannels;
  if (op == 'I') {
    c.commId = value;
  } else {
    c.count = static_cast<size_t>(value);
  }
}

#ifndef SIMPROFILER_NO_V6
__attribute__((visibility("default"))) ncclProfiler_v6_t ncclProfiler_v6 = {
    "simtest", InitV6, StartEvent<ncclProfilerEventDescr_v6_t>, StopEvent, RecordEventState, Finalize};
#endif
__attribute__((visibility("default"))) ncclProfiler_v5_t ncclProfiler_v5 = {
    "simtest", InitV5, StartEvent<ncclProfilerEventDescr_v5_t>, StopEvent, RecordEventState, Finalize};
}
