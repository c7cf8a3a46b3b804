// Host-side cost of ccltune's interposer per collective call (Google Benchmark), on a stand-in NCCL
// that does no work: pass-through (a communicator ccltune does not manage), NCCL-default mode,
// while searching, and converged. The stand-in is defined here (pnccl* symbols found by the
// interposer's run-time resolution, NCCL's tuner calls made as NCCL makes them for an ungrouped call,
// a virtual clock for the simulated executor backend), so the figures are ccltune's own cost plus a
// few nanoseconds of stand-in. One rank: the sync ops are real all-reduce(MAX) calls of one rank.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "ccltune/ccltune.h"
#include "nccl.h"
#include "src/tuner_abi.h"

extern "C" ccltuneTuner_v5_t ncclTunerPlugin_v5;

namespace {

struct FakeComm {
  void* tuner_ctx = nullptr;
};

double g_clock_us = 0;

// NCCL's tuner call for an ungrouped collective: a cost table with Tree/Ring x LL/LL128/Simple valid.
void ConsultTuner(FakeComm* c, int func, size_t bytes) {
  float table[7][3];
  for (auto& row : table)
    for (float& v : row) v = -1.0f;
  for (int a = 0; a < 2; ++a)
    for (int p = 0; p < 3; ++p) table[a][p] = 10.0f + a + p;
  int nchannels = 0;
  ncclTunerPlugin_v5.getCollInfo(c->tuner_ctx, func, bytes, 1, reinterpret_cast<float**>(table), 7, 3, 0, &nchannels);
  g_clock_us += 10.0;  // a collective "takes" 10 us of virtual time
}

}  // namespace

// The stand-in NCCL. Default visibility with the executable's exports, so dlsym finds them.
extern "C" {
__attribute__((visibility("default"))) double simncclVirtualTimeUs(void) { return g_clock_us; }
__attribute__((visibility("default"))) ncclResult_t pncclGetVersion(int* v) {
  *v = 22809;
  return ncclSuccess;
}
__attribute__((visibility("default"))) ncclResult_t pncclCommInitRank(ncclComm_t* comm, int, ncclUniqueId, int) {
  auto* c = new FakeComm();
  ncclTunerPlugin_v5.init(&c->tuner_ctx, reinterpret_cast<uint64_t>(c), 1, 1, nullptr, nullptr, nullptr);
  *comm = reinterpret_cast<ncclComm_t>(c);
  return ncclSuccess;
}
__attribute__((visibility("default"))) ncclResult_t pncclCommUserRank(const ncclComm_t, int* r) {
  *r = 0;
  return ncclSuccess;
}
__attribute__((visibility("default"))) ncclResult_t pncclCommCount(const ncclComm_t, int* n) {
  *n = 1;
  return ncclSuccess;
}
__attribute__((visibility("default"))) ncclResult_t pncclCommDestroy(ncclComm_t comm) {
  auto* c = reinterpret_cast<FakeComm*>(comm);
  ncclTunerPlugin_v5.finalize(c->tuner_ctx);
  delete c;
  return ncclSuccess;
}
__attribute__((visibility("default"))) ncclResult_t pncclAllReduce(const void* s, void* r, size_t count,
                                                                   ncclDataType_t dt, ncclRedOp_t, ncclComm_t comm,
                                                                   cudaStream_t) {
  const size_t bytes = count * (dt == ncclUint64 || dt == ncclInt64 || dt == ncclFloat64 ? 8 : 4);
  if (s != r) std::memcpy(r, s, bytes);  // one rank: the reduction is a copy
  ConsultTuner(reinterpret_cast<FakeComm*>(comm), 4, bytes);
  return ncclSuccess;
}
}

namespace {

ncclComm_t NewComm(bool through_ccltune) {
  ncclComm_t comm = nullptr;
  ncclUniqueId id{};
  if (through_ccltune) {
    ncclCommInitRank(&comm, 1, id, 0);  // the interposer registers it
  } else {
    pncclCommInitRank(&comm, 1, id, 0);  // ccltune never sees it: pure pass-through
  }
  return comm;
}

std::vector<float> g_buf(1 << 16);

void Call(ncclComm_t comm, size_t count) {
  ncclAllReduce(g_buf.data(), g_buf.data(), count, ncclFloat32, ncclSum, comm, nullptr);
}

void BM_PassThrough(benchmark::State& state) {
  ncclComm_t comm = NewComm(false);
  for (auto _ : state) Call(comm, 1024);
  pncclCommDestroy(comm);
}
BENCHMARK(BM_PassThrough);

void BM_DefaultMode(benchmark::State& state) {
  ncclComm_t comm = NewComm(true);
  ccltuneSetMode(comm, ccltuneModeDefault, nullptr);
  for (auto _ : state) Call(comm, 1024);
  ncclCommDestroy(comm);
}
BENCHMARK(BM_DefaultMode);

// Searching: 64 workloads in turn, so every call belongs to a workload under search (scheduled
// candidates are timed, sync ops run at short intervals).
void BM_Searching(benchmark::State& state) {
  ncclComm_t comm = NewComm(true);
  size_t i = 0;
  for (auto _ : state) Call(comm, 256 + 16 * (i++ % 64));
  ncclCommDestroy(comm);
}
BENCHMARK(BM_Searching)->Iterations(4000);

// Converged: one workload tuned until converged first; then mostly untimed calls (one in 16 is a
// monitoring sample) and sync ops at long intervals.
void BM_Converged(benchmark::State& state) {
  ncclComm_t comm = NewComm(true);
  ccltuneWorkloadStats_t s{};
  for (int i = 0; i < 20000; ++i) {
    Call(comm, 1024);
    if (i % 64 == 0 && ccltuneGetWorkloadStats(comm, 4, ncclFloat32, ncclSum, 4096, &s) == ccltuneSuccess &&
        s.state == ccltuneStateConverged)
      break;
  }
  if (s.state != ccltuneStateConverged) state.SkipWithError("the workload did not converge");
  for (auto _ : state) Call(comm, 1024);
  ncclCommDestroy(comm);
}
BENCHMARK(BM_Converged);

}  // namespace

BENCHMARK_MAIN();
