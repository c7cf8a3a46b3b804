// Recording tuner plugin: appends one line per call NCCL makes to it (init, getCollInfo, finalize) to
// $FIDELITY_TRACE.<rank>, and leaves NCCL's choice alone (the cost table and nChannels are not touched).
// Exports the v5 and v4 ABIs; the `init` line says which one NCCL took. Line format (trace.hpp parses it):
//   <rank> <thread> init abi=5 comm=<i> nRanks=.. nNodes=.. nvl=<domains>/<min>/<max> constants=<0|1>
//   <rank> <thread> getCollInfo comm=<i> coll=<name> bytes=.. numPipeOps=.. numAlgo=.. numProto=..
//                   valid=<algo-major 0/1 per protocol, '/' between algorithms> regBuff=.. nChannelsIn=..
//   <rank> <thread> finalize comm=<i>
// <thread> is "main" for the process's initial thread, else "t<k>", k counting threads by first call.
// <i> numbers this process's tuner contexts in init order.
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include "trace_file.hpp"
#include "tuner_abi.h"

namespace {

struct Context {
  int index;
};

struct Recorder {
  std::mutex mu;
  int fd = -1;
  bool opened = false;
  int nextContext = 0;
  int nextThread = 0;
};

Recorder& R() {
  static Recorder* r = new Recorder();  // never destroyed: NCCL may finalize from atexit handlers
  return *r;
}

std::string ThreadLabel() {
  thread_local int index = -1;
  if (syscall(SYS_gettid) == getpid()) return "main";
  if (index < 0) {
    std::lock_guard<std::mutex> lock(R().mu);
    index = R().nextThread++;
  }
  return "t" + std::to_string(index);
}

void Emit(const std::string& body) {
  const std::string line =
      std::to_string(ccltune::fidelity::LauncherRank() < 0 ? 0 : ccltune::fidelity::LauncherRank()) + " " +
      ThreadLabel() + " " + body;
  Recorder& r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.opened) {
    r.opened = true;
    const std::string path = ccltune::fidelity::TracePath();
    if (path.empty()) {
      std::fprintf(stderr, "fidelity recorder: FIDELITY_TRACE is not set; recording nothing\n");
    } else {
      r.fd = ccltune::fidelity::OpenTrace(path, false);
      if (r.fd < 0) std::fprintf(stderr, "fidelity recorder: cannot open %s; recording nothing\n", path.c_str());
    }
  }
  if (r.fd >= 0 && !ccltune::fidelity::AppendLine(r.fd, line))
    std::fprintf(stderr, "fidelity recorder: write failed; the trace is incomplete\n");
}

const char* CollName(ncclFunc_t f) {
  switch (f) {
    case ncclFuncBroadcast:
      return "Broadcast";
    case ncclFuncReduce:
      return "Reduce";
    case ncclFuncAllGather:
      return "AllGather";
    case ncclFuncReduceScatter:
      return "ReduceScatter";
    case ncclFuncAllReduce:
      return "AllReduce";
    case ncclFuncSendRecv:
      return "SendRecv";
    case ncclFuncSend:
      return "Send";
    case ncclFuncRecv:
      return "Recv";
    default:
      return "Unknown";
  }
}

void* NewContext() {
  std::lock_guard<std::mutex> lock(R().mu);
  return new Context{R().nextContext++};
}
int Index(void* ctx) { return ctx ? static_cast<Context*>(ctx)->index : -1; }

ncclResult_t InitV5(void** ctx, uint64_t, size_t nRanks, size_t nNodes, ncclDebugLogger_t, ncclNvlDomainInfo_v5_t* nvl,
                    ncclTunerConstants_v5_t* constants) {
  *ctx = NewContext();
  char nvlText[64] = "-";
  if (nvl)
    std::snprintf(nvlText, sizeof nvlText, "%d/%d/%d", nvl->nNvlDomains, nvl->minRanksPerNvlDomain,
                  nvl->maxRanksPerNvlDomain);
  Emit("init abi=5 comm=" + std::to_string(Index(*ctx)) + " nRanks=" + std::to_string(nRanks) +
       " nNodes=" + std::to_string(nNodes) + " nvl=" + nvlText + " constants=" + (constants ? "1" : "0"));
  return ncclSuccess;
}

ncclResult_t InitV4(size_t nRanks, size_t nNodes, ncclDebugLogger_t, void** ctx) {
  *ctx = NewContext();
  Emit("init abi=4 comm=" + std::to_string(Index(*ctx)) + " nRanks=" + std::to_string(nRanks) +
       " nNodes=" + std::to_string(nNodes) + " nvl=- constants=0");
  return ncclSuccess;
}

ncclResult_t GetCollInfo(void* ctx, ncclFunc_t coll, size_t nBytes, int numPipeOps, float** table, int numAlgo,
                         int numProto, int regBuff, int* nChannels) {
  // NCCL passes a float[numAlgo][numProto] array cast to float**; -1 marks an entry NCCL will not use.
  const float* cost = reinterpret_cast<const float*>(table);
  std::string valid;
  for (int a = 0; a < numAlgo; a++) {
    if (a) valid.push_back('/');
    for (int p = 0; p < numProto; p++) valid.push_back(cost && cost[a * numProto + p] >= 0 ? '1' : '0');
  }
  Emit("getCollInfo comm=" + std::to_string(Index(ctx)) + " coll=" + CollName(coll) + " bytes=" +
       std::to_string(nBytes) + " numPipeOps=" + std::to_string(numPipeOps) + " numAlgo=" + std::to_string(numAlgo) +
       " numProto=" + std::to_string(numProto) + " valid=" + valid + " regBuff=" + std::to_string(regBuff) +
       " nChannelsIn=" + (nChannels ? std::to_string(*nChannels) : std::string("null")));
  return ncclSuccess;
}

ncclResult_t Finalize(void* ctx) {
  Emit("finalize comm=" + std::to_string(Index(ctx)));
  delete static_cast<Context*>(ctx);
  return ncclSuccess;
}

}  // namespace

extern "C" {
__attribute__((visibility("default")))
ncclTuner_v5_t ncclTunerPlugin_v5 = {"fidelity-recorder", InitV5, GetCollInfo, Finalize};
__attribute__((visibility("default")))
ncclTuner_v4_t ncclTunerPlugin_v4 = {"fidelity-recorder", InitV4, GetCollInfo, Finalize};
}
