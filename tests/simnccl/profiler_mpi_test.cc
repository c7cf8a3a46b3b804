// Multi-rank checks of the simulated NCCL's profiler-plugin emulation and of the channels it reports, run as
// `mpirun -np 4 simnccl_profiler_mpi_test` with the test profiler+tuner library (test_profiler.cc, test_tuner.cc in
// force mode) loaded as NCCL_PROFILER_PLUGIN and NCCL_TUNER_PLUGIN. Each rank reads the library's call log and
// checks the calls NCCL would make, in NCCL's order, on the calling thread: init per communicator before the
// tuner's, the API events of every call, the tuner's calls in the launch, then the plan's KernelLaunch, Group and
// Coll events with what really ran, finalize at destroy after the tuner's. SIMPROF_EXPECT_VERSION: the profiler
// entry point (5 or 6) the run must use.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <nccl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mpi_gtest_main.hpp"
#include "profiler_abi.h"
#include "profiler_host.hpp"
#include "test_profiler_log.hpp"

extern "C" {
long long simncclMismatchCount(void);
double simncclLastModelUs(void);
}

namespace {

int gRank = 0, gSize = 1;
ncclComm_t gWorld = nullptr;
const auto kStream = reinterpret_cast<cudaStream_t>(0x5eed);  // simulated streams are labels

int Version() {
  const char* v = std::getenv("SIMNCCL_VERSION");
  return v ? std::atoi(v) : 22809;
}
bool V230() { return Version() >= 23000; }
long Tid() { return static_cast<long>(syscall(SYS_gettid)); }

// The test library as simnccl loaded it (NCCL_PROFILER_PLUGIN: a path or a bare name).
void* PluginLib() {
  const char* name = std::getenv("NCCL_PROFILER_PLUGIN");
  if (!name) return nullptr;
  void* lib = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
  if (!lib) lib = dlopen((std::string("libnccl-profiler-") + name + ".so").c_str(), RTLD_NOW | RTLD_NOLOAD);
  return lib;
}
SimProfLog* Log() {
  static SimProfLog* log = [] {
    void* lib = PluginLib();
    auto fn = lib ? reinterpret_cast<SimProfLogFn>(dlsym(lib, "simprofilerLog")) : nullptr;
    return fn ? fn() : nullptr;
  }();
  return log;
}
void SetMask(int mask) {
  auto fn = reinterpret_cast<SimProfSetMaskFn>(dlsym(PluginLib(), "simprofilerSetMask"));
  ASSERT_NE(fn, nullptr);
  fn(mask);
}
void AskChannels(int n) { setenv("SIMTUNER_CHANNELS", std::to_string(n).c_str(), 1); }

// The calls logged since index `from`, and a one-word picture of each: "s:Coll", "e", "r:23", "T", "C", "i", ...
std::vector<SimProfCall> Since(int from) {
  const SimProfLog* log = Log();
  return std::vector<SimProfCall>(log->calls + from, log->calls + log->n);
}
std::vector<std::string> Picture(const std::vector<SimProfCall>& calls) {
  std::vector<std::string> out;
  for (const SimProfCall& c : calls) {
    std::string s(1, c.op);
    if (c.op == 's') s += std::string(":") + simnccl::ProfileTypeName(c.type);
    if (c.op == 'r') s += ":" + std::to_string(c.type);
    out.push_back(s);
  }
  return out;
}
const SimProfCall* Find(const std::vector<SimProfCall>& calls, char op, uint64_t type, int nth = 0) {
  for (const SimProfCall& c : calls)
    if (c.op == op && (op != 's' || c.type == type) && nth-- == 0) return &c;
  return nullptr;
}
// Find returns a pointer into `calls`: never into a temporary (ASan caught Find(Since(...)) reading freed memory).
const SimProfCall* Find(std::vector<SimProfCall>&& calls, char op, uint64_t type, int nth = 0) = delete;
// The getChunkSize calls of tuner v6 (NCCL >= 2.30): `n` of them.
std::vector<std::string> Chunks(int n) {
  return V230() ? std::vector<std::string>(n, "C") : std::vector<std::string>{};
}
std::vector<std::string> Cat(std::vector<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

class Profiler : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(Log(), nullptr) << "the test profiler was not loaded";
    ASSERT_EQ(Log()->dropped, 0);
    AskChannels(4);
    SetMask(ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi | ncclProfileKernelLaunch | ncclProfileGroup |
            ncclProfileColl);
    from_ = Log()->n;
  }
  void TearDown() override { EXPECT_EQ(simncclMismatchCount(), 0); }
  int from_ = 0;
};

TEST_F(Profiler, InitPerCommunicatorBeforeTheTunersWithNcclsArguments) {
  const char* want = std::getenv("SIMPROF_EXPECT_VERSION");
  ASSERT_NE(want, nullptr);
  EXPECT_EQ(Log()->version, std::atoi(want)) << "the profiler entry point NCCL used";
  const std::vector<SimProfCall> all = Since(0);
  const SimProfCall* init = Find(all, 'i', 0);
  const SimProfCall* tunerInit = Find(all, 'I', 0);
  ASSERT_NE(init, nullptr);
  ASSERT_NE(tunerInit, nullptr);
  EXPECT_LT(init, tunerInit) << "NCCL inits the profiler before the tuner";
  EXPECT_EQ(init->comm, 0);
  EXPECT_EQ(init->rank, gRank);
  EXPECT_EQ(init->count, static_cast<size_t>(gSize)) << "nranks";
  EXPECT_EQ(init->groupDepth, 1) << "nNodes";
  EXPECT_STREQ(init->commName, "(null)") << "no ncclConfig_t commName";
  EXPECT_EQ(init->commId, tunerInit->commId) << "both get the communicator's hash";
  EXPECT_NE(init->commId, 0u);
  // A communicator made with a config: its commName.
  ncclUniqueId id;
  if (gRank == 0) ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.commName = "simprof-named";
  ncclComm_t named;
  ASSERT_EQ(ncclCommInitRankConfig(&named, gSize, id, gRank, &config), ncclSuccess);
  const std::vector<SimProfCall> calls = Since(from_);
  ASSERT_EQ(Picture(calls), (std::vector<std::string>{"i", "I"}));
  EXPECT_STREQ(calls[0].commName, "simprof-named");
  EXPECT_NE(calls[0].commId, init->commId);
  ASSERT_EQ(ncclCommDestroy(named), ncclSuccess);
}

TEST_F(Profiler, UngroupedCallEventsInNcclOrderOnTheCallingThread) {
  std::vector<float> a(1000, 1), b(1000);
  ASSERT_EQ(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, gWorld, kStream), ncclSuccess);
  const std::vector<SimProfCall> calls = Since(from_);
  // API events inside the call, the tuner in the launch, then the plan's events, the group API event last.
  EXPECT_EQ(Picture(calls), Cat({{"s:GroupApi", "r:23", "s:CollApi", "e", "r:24", "T"},
                                 Chunks(1),
                                 {"s:KernelLaunch", "e", "s:Group", "s:Coll", "e", "e", "e"}}));
  for (const SimProfCall& c : calls) EXPECT_EQ(c.tid, Tid()) << c.op << " not on the calling thread";
  const SimProfCall* groupApi = Find(calls, 's', ncclProfileGroupApi);
  const SimProfCall* collApi = Find(calls, 's', ncclProfileCollApi);
  const SimProfCall* launch = Find(calls, 's', ncclProfileKernelLaunch);
  const SimProfCall* group = Find(calls, 's', ncclProfileGroup);
  const SimProfCall* coll = Find(calls, 's', ncclProfileColl);
  ASSERT_TRUE(groupApi && collApi && launch && group && coll);
  EXPECT_EQ(groupApi->groupDepth, 1) << "the call's own implicit group";
  EXPECT_EQ(groupApi->parentId, 0);
  EXPECT_EQ(collApi->parentId, groupApi->id);
  EXPECT_STREQ(collApi->func, "AllReduce");
  EXPECT_EQ(collApi->count, 1000u);
  EXPECT_STREQ(collApi->datatype, "ncclFloat32");
  EXPECT_EQ(collApi->root, 0);
  EXPECT_EQ(collApi->stream, kStream);
  EXPECT_EQ(launch->parentId, groupApi->id);
  EXPECT_EQ(launch->stream, kStream);
  EXPECT_EQ(group->parentId, 0);
  EXPECT_EQ(coll->parentId, collApi->id);
  EXPECT_EQ(coll->parentGroupId, group->id);
  EXPECT_EQ(coll->rank, gRank);
  EXPECT_STREQ(coll->func, "AllReduce");
  EXPECT_EQ(coll->sendBuff, a.data());
  EXPECT_EQ(coll->recvBuff, b.data());
  EXPECT_EQ(coll->count, 1000u);
  EXPECT_EQ(coll->root, 0);
  EXPECT_STREQ(coll->datatype, "ncclFloat32");
  EXPECT_STREQ(coll->algo, "RING");
  EXPECT_STREQ(coll->proto, "LL128");
  // Asked 4; 4000 bytes are less than one channel's minimum traffic: it runs on 1. LL128 at 4000 bytes: 640
  // threads halved once (4000 < 640 x 8), 10 warps.
  EXPECT_EQ(Find(calls, 'T', 0)->nChannels, 4);
  EXPECT_EQ(coll->nChannels, 1);
  EXPECT_EQ(coll->nWarps, 10);
  // The stops: Coll, Group, then the group API event.
  EXPECT_EQ(calls[calls.size() - 3].id, coll->id);
  EXPECT_EQ(calls[calls.size() - 2].id, group->id);
  EXPECT_EQ(calls.back().id, groupApi->id);
  EXPECT_EQ(calls[1].id, groupApi->id);

  // seqNumber counts this communicator's allreduces; ccltune's sync op (64 uint64) is one like any other.
  std::vector<uint64_t> sync(64, 1), syncOut(64);
  int from = Log()->n;
  ASSERT_EQ(ncclAllReduce(sync.data(), syncOut.data(), 64, ncclUint64, ncclSum, gWorld, kStream), ncclSuccess);
  const std::vector<SimProfCall> after = Since(from);  // Find points into it: it must outlive `next`
  const SimProfCall* next = Find(after, 's', ncclProfileColl);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->seqNumber, coll->seqNumber + 1);
  EXPECT_STREQ(next->datatype, "ncclUint64");
  EXPECT_EQ(next->count, 64u);
}

TEST_F(Profiler, GroupedCallsGetTaskEventsInTheOutermostGroupEnd) {
  std::vector<float> big(1 << 18, 1), bigOut(1 << 18), small(256, 1), gathered(256 * gSize);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(big.data(), bigOut.data(), big.size(), ncclFloat32, ncclSum, gWorld, kStream), ncclSuccess);
  ASSERT_EQ(ncclAllGather(small.data(), gathered.data(), small.size(), ncclFloat32, gWorld, kStream), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  std::vector<SimProfCall> calls = Since(from_);
  EXPECT_EQ(Picture(calls), (std::vector<std::string>{"s:GroupApi", "r:23", "s:CollApi", "e", "s:CollApi", "e"}))
      << "inside the group: API events only";
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  calls = Since(from_);
  // Two bins (allreduce, allgather), largest first: two getCollInfo; then one plan with both tasks.
  EXPECT_EQ(Picture(calls), Cat({{"s:GroupApi", "r:23", "s:CollApi", "e", "s:CollApi", "e", "r:24", "T", "T"},
                                 Chunks(3),  // the allreduce's first, last and middle channels; the allgather's one
                                 Chunks(1),
                                 {"s:KernelLaunch", "e", "s:Group", "s:Coll", "s:Coll", "e", "e", "e", "e"}}));
  const SimProfCall* groupApi = Find(calls, 's', ncclProfileGroupApi);
  ASSERT_NE(groupApi, nullptr);
  EXPECT_EQ(groupApi->groupDepth, 3) << "two user groups and the call's own";
  EXPECT_EQ(Find(calls, 's', ncclProfileCollApi, 1)->parentId, groupApi->id);
  const SimProfCall* ar = Find(calls, 's', ncclProfileColl, 0);
  const SimProfCall* ag = Find(calls, 's', ncclProfileColl, 1);
  ASSERT_TRUE(ar && ag);
  EXPECT_STREQ(ar->func, "AllReduce");
  EXPECT_STREQ(ag->func, "AllGather");
  EXPECT_EQ(ag->count, 256u * 4) << "NCCL counts an allgather task in bytes";
  EXPECT_STREQ(ag->datatype, "ncclInt8");
  EXPECT_EQ(ag->seqNumber, 0u) << "the first allgather of the communicator";
  EXPECT_EQ(ar->parentGroupId, ag->parentGroupId);
  // Each asked 4; the plan has 4 + 4 = 8 channels and 2 MiB + 16 KiB of traffic, 264192 B per channel (2.30: 2 MiB
  // + 32 KiB, 266240 B): the allreduce spreads over all 8, more than it asked for, and the allgather's one cell
  // goes on the last. LL128: 20 warps for 1 MiB, 10 for the allgather's 4 KiB.
  EXPECT_EQ(ar->nChannels, 8);
  EXPECT_EQ(ag->nChannels, 1);
  EXPECT_EQ(ar->nWarps, 20);
  EXPECT_EQ(ag->nWarps, 10);
  for (const SimProfCall& c : calls) EXPECT_EQ(c.tid, Tid());
}

TEST_F(Profiler, ReportsTheCommunicatorsChannelsWhenAskedForMore) {
  ncclUniqueId id;
  if (gRank == 0) ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.maxCTAs = 8;
  ncclComm_t eight;
  ASSERT_EQ(ncclCommInitRankConfig(&eight, gSize, id, gRank, &config), ncclSuccess);
  AskChannels(24);
  std::vector<float> a(1 << 20, 1), b(1 << 20);  // 4 MiB: 8 MiB of traffic, 1 MiB per channel on 8
  const int from = Log()->n;
  ASSERT_EQ(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, eight, kStream), ncclSuccess);
  const std::vector<SimProfCall> calls = Since(from);
  const SimProfCall* coll = Find(calls, 's', ncclProfileColl);
  ASSERT_NE(coll, nullptr);
  EXPECT_EQ(Find(calls, 'T', 0)->nChannels, 24);
  EXPECT_EQ(coll->nChannels, 8);
  EXPECT_EQ(b[0], gSize);
  ASSERT_EQ(ncclCommDestroy(eight), ncclSuccess);
}

TEST_F(Profiler, AliasedRequestsRunAndTimeAlike) {
  // 1 MiB allreduce on 24 channels, cell rounding (2.28: cells of 16 KiB of traffic; 2.30: 32 KiB): asking 16 or
  // 18 runs 16, 22 or 24 runs 22; 21 runs 19 on 2.28 and 16 on 2.30.
  std::vector<float> a(1 << 18, 1), b(1 << 18);
  auto run = [&](int ask, int* ran, double* modelUs) {
    AskChannels(ask);
    const int from = Log()->n;
    ASSERT_EQ(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, gWorld, kStream), ncclSuccess);
    const std::vector<SimProfCall> after = Since(from);
    const SimProfCall* coll = Find(after, 's', ncclProfileColl);
    ASSERT_NE(coll, nullptr);
    *ran = coll->nChannels;
    *modelUs = simncclLastModelUs();
  };
  int ran16, ran18, ran21, ran22, ran24;
  double t16, t18, t21, t22, t24;
  run(16, &ran16, &t16);
  run(18, &ran18, &t18);
  run(21, &ran21, &t21);
  run(22, &ran22, &t22);
  run(24, &ran24, &t24);
  EXPECT_EQ(ran16, 16);
  EXPECT_EQ(ran18, 16);
  EXPECT_EQ(ran21, V230() ? 16 : 19);
  EXPECT_EQ(ran22, 22);
  EXPECT_EQ(ran24, 22);
  EXPECT_EQ(t18, t16) << "aliased requests: the model times the same config";
  EXPECT_EQ(t24, t22);
  EXPECT_NE(t16, t22);
  if (V230()) {
    EXPECT_EQ(t21, t16);
  } else {
    EXPECT_NE(t21, t16);
    EXPECT_NE(t21, t22);
  }
}

TEST_F(Profiler, SendRecvMakeApiEventsAndAPlan) {
  std::vector<int32_t> s(1000, gRank), r(1000, -1);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  ASSERT_EQ(ncclSend(s.data(), s.size(), ncclInt32, (gRank + 1) % gSize, gWorld, kStream), ncclSuccess);
  ASSERT_EQ(ncclRecv(r.data(), r.size(), ncclInt32, (gRank + gSize - 1) % gSize, gWorld, kStream), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  const std::vector<SimProfCall> calls = Since(from_);
  EXPECT_EQ(Picture(calls), (std::vector<std::string>{"s:GroupApi", "r:23", "s:P2pApi", "e", "s:P2pApi", "e", "r:24",
                                                      "s:KernelLaunch", "e", "s:Group", "e", "e"}));
  const SimProfCall* send = Find(calls, 's', ncclProfileP2pApi, 0);
  const SimProfCall* recv = Find(calls, 's', ncclProfileP2pApi, 1);
  ASSERT_TRUE(send && recv);
  EXPECT_STREQ(send->func, "Send");
  EXPECT_STREQ(recv->func, "Recv");
  EXPECT_EQ(send->count, 1000u);
  EXPECT_STREQ(send->datatype, "ncclInt32");
  EXPECT_EQ(r[0], (gRank + gSize - 1) % gSize);
}

TEST_F(Profiler, TheMaskIsReadAtEveryCall) {
  std::vector<float> a(1000, 1), b(1000);
  // Coll alone still brings its parents (GroupApi, CollApi) and the Group, but no KernelLaunch.
  SetMask(ncclProfileColl);
  ASSERT_EQ(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, gWorld, kStream), ncclSuccess);
  std::vector<SimProfCall> calls = Since(from_);
  EXPECT_EQ(
      Picture(calls),
      Cat({{"s:GroupApi", "r:23", "s:CollApi", "e", "r:24", "T"}, Chunks(1), {"s:Group", "s:Coll", "e", "e", "e"}}));
  const SimProfCall* collApi = Find(calls, 's', ncclProfileCollApi);
  ASSERT_NE(collApi, nullptr);
  const auto collApiId = collApi->id;  // `calls` is reassigned below: collApi would point into freed memory
  // Nothing wanted: no event starts, but NCCL stops the last CollApi handle again (it never clears it).
  SetMask(0);
  const int from = Log()->n;
  ASSERT_EQ(ncclAllReduce(a.data(), b.data(), a.size(), ncclFloat32, ncclSum, gWorld, kStream), ncclSuccess);
  calls = Since(from);
  EXPECT_EQ(Picture(calls), Cat({{"e", "T"}, Chunks(1)}));
  if (!calls.empty()) EXPECT_EQ(calls[0].id, collApiId);
}

TEST_F(Profiler, FinalizeAtDestroyAfterTheTuners) {
  ncclComm_t half;
  ASSERT_EQ(ncclCommSplit(gWorld, 0, gRank, &half, nullptr), ncclSuccess);
  std::vector<SimProfCall> calls = Since(from_);
  ASSERT_EQ(Picture(calls), (std::vector<std::string>{"i", "I"}));
  const int comm = calls[0].comm;
  ASSERT_EQ(ncclCommDestroy(half), ncclSuccess);
  calls = Since(from_);
  EXPECT_EQ(Picture(calls), (std::vector<std::string>{"i", "I", "F", "f"}));
  EXPECT_EQ(calls.back().comm, comm);
}

}  // namespace

int main(int argc, char** argv) { return simnccl_test::RunMpiTests(argc, argv, &gRank, &gSize, &gWorld); }
