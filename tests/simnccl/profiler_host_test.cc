// Unit tests of the simulated NCCL's plugin support and profiler host, in one process without MPI: NCCL's plugin
// library names, the profiler ABI's layout, NCCL's spellings, which profiler version each NCCL version loads, what
// an init error does (2.28: nothing; 2.30: the plugin is dropped), and the group API bookkeeping of nested groups.
// The plugin is this program itself (NCCL_PROFILER_PLUGIN=STATIC_PLUGIN), which exports ncclProfiler_v5 and _v6.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstddef>
#include <string>
#include <vector>

#include "model.hpp"
#include "plugin_support.hpp"
#include "profiler_abi.h"
#include "profiler_host.hpp"

namespace {

// The layout the library side must match (profiler_abi.h's header comment).
static_assert(sizeof(ncclProfilerEventDescr_v5_t) == 112 && sizeof(ncclProfilerEventDescr_v6_t) == 112);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, type) == 0 &&
              offsetof(ncclProfilerEventDescr_v5_t, parentObj) == 8 &&
              offsetof(ncclProfilerEventDescr_v5_t, rank) == 16 && offsetof(ncclProfilerEventDescr_v5_t, coll) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.seqNumber) == 24 &&
              offsetof(ncclProfilerEventDescr_v5_t, coll.func) == 32 &&
              offsetof(ncclProfilerEventDescr_v5_t, coll.sendBuff) == 40 &&
              offsetof(ncclProfilerEventDescr_v5_t, coll.recvBuff) == 48 &&
              offsetof(ncclProfilerEventDescr_v5_t, coll.count) == 56 &&
              offsetof(ncclProfilerEventDescr_v5_t, coll.root) == 64 &&
              offsetof(ncclProfilerEventDescr_v5_t, coll.datatype) == 72 &&
              offsetof(ncclProfilerEventDescr_v5_t, coll.nChannels) == 80 &&
              offsetof(ncclProfilerEventDescr_v5_t, coll.nWarps) == 81 &&
              offsetof(ncclProfilerEventDescr_v5_t, coll.algo) == 88 &&
              offsetof(ncclProfilerEventDescr_v5_t, coll.proto) == 96 &&
              offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) == 104);
static_assert(offsetof(ncclProfilerEventDescr_v6_t, coll.parentGroup) == 104 &&
              offsetof(ncclProfilerEventDescr_v6_t, ceColl.stream) == 104);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, collApi.root) == 48 &&
              offsetof(ncclProfilerEventDescr_v5_t, collApi.stream) == 56 &&
              offsetof(ncclProfilerEventDescr_v5_t, groupApi.groupDepth) == 28);
static_assert(sizeof(ncclProfiler_v5_t) == 6 * sizeof(void*) && sizeof(ncclProfiler_v6_t) == 6 * sizeof(void*));

// What this program's profiler saw.
struct Seen {
  std::vector<std::string> calls;  // "init5", "init6", "start:<type>", "stop", "record:<state>", "finalize"
  int groupDepth = 0;
  bool failInit = false;
};
Seen gSeen;
int gIds = 0;

ncclResult_t Init(const char* which, void** ctx, int* mask) {
  gSeen.calls.push_back(which);
  *ctx = &gSeen;
  *mask = ncclProfileGroupApi | ncclProfileCollApi | ncclProfileColl | ncclProfileGroup;
  return gSeen.failInit ? ncclInternalError : ncclSuccess;
}
template <typename Descr>
ncclResult_t Start(void*, void** handle, Descr* d) {
  gSeen.calls.push_back("start:" + std::to_string(d->type));
  if (d->type == ncclProfileGroupApi) gSeen.groupDepth = d->groupApi.groupDepth;
  *handle = reinterpret_cast<void*>(static_cast<intptr_t>(++gIds));
  return ncclSuccess;
}
ncclResult_t Stop(void*) {
  gSeen.calls.push_back("stop");
  return ncclSuccess;
}
ncclResult_t Record(void*, ncclProfilerEventState_t state, ncclProfilerEventStateArgs_v5_t*) {
  gSeen.calls.push_back("record:" + std::to_string(static_cast<int>(state)));
  return ncclSuccess;
}
ncclResult_t Finalize(void*) {
  gSeen.calls.push_back("finalize");
  return ncclSuccess;
}

}  // namespace

extern "C" {
__attribute__((visibility("default")))
ncclProfiler_v5_t ncclProfiler_v5 = {"unit5",
                                     [](void** ctx, uint64_t, int* mask, const char*, int, int, int,
                                        ncclDebugLogger_t) { return Init("init5", ctx, mask); },
                                     Start<ncclProfilerEventDescr_v5_t>,
                                     Stop,
                                     Record,
                                     Finalize};
__attribute__((visibility("default")))
ncclProfiler_v6_t ncclProfiler_v6 = {"unit6",
                                     [](void** ctx, uint64_t, int* mask, const char*, int, int, int,
                                        ncclDebugLogger_t) { return Init("init6", ctx, mask); },
                                     Start<ncclProfilerEventDescr_v6_t>,
                                     Stop,
                                     Record,
                                     Finalize};
}

namespace simnccl {
namespace {

std::vector<std::string> Names(const char* prefix, const char* value) {
  std::vector<std::string> out;
  for (const auto& c : PluginLibCandidates(prefix, value)) out.push_back(c ? *c : "<program>");
  return out;
}

TEST(PluginLibCandidates, NcclsNameResolution) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Names("libnccl-profiler", nullptr), V{"libnccl-profiler.so"});
  EXPECT_EQ(Names("libnccl-profiler", ""), V{"libnccl-profiler.so"});
  EXPECT_EQ(Names("libnccl-profiler", "ccltune"), (V{"ccltune", "libnccl-profiler-ccltune.so"}));
  EXPECT_EQ(Names("libnccl-tuner", "/opt/x/libccltune.so"), V{"/opt/x/libccltune.so"});
  EXPECT_EQ(Names("libnccl-tuner", "./plug.so"), V{"./plug.so"});
  EXPECT_EQ(Names("libnccl-profiler", "libccltune.so"), V{"libccltune.so"});  // a library name: as given only
  EXPECT_EQ(Names("libnccl-profiler", "libccltune"), (V{"libccltune", "libnccl-profiler-libccltune.so"}));
  EXPECT_EQ(Names("libnccl-profiler", "plug.so"), (V{"plug.so", "libnccl-profiler-plug.so.so"}));
  // Any case-insensitive prefix of STATIC_PLUGIN names the program itself.
  EXPECT_EQ(Names("libnccl-profiler", "STATIC_PLUGIN"), (V{"<program>", "libnccl-profiler-STATIC_PLUGIN.so"}));
  EXPECT_EQ(Names("libnccl-profiler", "static"), (V{"<program>", "libnccl-profiler-static.so"}));
  EXPECT_EQ(Names("libnccl-profiler", "STATIC_PLUGINS"), (V{"STATIC_PLUGINS", "libnccl-profiler-STATIC_PLUGINS.so"}));
}

TEST(NcclStrings, AsNcclSpellsThem) {
  EXPECT_STREQ(NcclFuncString(kAllReduce), "AllReduce");
  EXPECT_STREQ(NcclFuncString(kReduceScatter), "ReduceScatter");
  EXPECT_STREQ(NcclFuncString(kBroadcast), "Broadcast");
  EXPECT_STREQ(NcclFuncString(6), "Send");
  EXPECT_STREQ(NcclFuncString(7), "Recv");
  EXPECT_STREQ(NcclAlgoString(0), "TREE");
  EXPECT_STREQ(NcclAlgoString(1), "RING");
  EXPECT_STREQ(NcclAlgoString(5), "NVLS_TREE");
  EXPECT_STREQ(NcclProtoString(2), "SIMPLE");
  EXPECT_STREQ(NcclProtoString(1), "LL128");
  EXPECT_STREQ(NcclDatatypeString(ncclFloat32), "ncclFloat32");
  EXPECT_STREQ(NcclDatatypeString(ncclBfloat16), "ncclBfloat16");
  EXPECT_STREQ(NcclDatatypeString(ncclUint8), "Unknown");  // NCCL's table has no ncclUint8
}

class ProfilerHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("NCCL_PROFILER_PLUGIN", "STATIC_PLUGIN", 1);
    gSeen = Seen{};
  }
  void TearDown() override { unsetenv("NCCL_PROFILER_PLUGIN"); }
  // One ungrouped collective's API events and launch, as simnccl's Enqueue makes them.
  void Collective(ProfilerHost& host, ProfilerComm* comm, int groupDepth) {
    host.EnqueueBegin();
    ProfilerColl c;
    c.func = kAllReduce;
    c.tag = host.CollApi(comm, groupDepth, kAllReduce, 10, ncclFloat32, 0, nullptr);
    host.GroupEndBegin();
    if (groupDepth == 1) host.LaunchPlan(comm, nullptr, {c}, {});
    host.GroupEndExit();
  }
};

TEST_F(ProfilerHostTest, Nccl228LoadsV5AndKeepsAPluginWhoseInitFailed) {
  ProfilerHost host(22809, nullptr);
  ProfilerComm comm;
  gSeen.failInit = true;
  host.InitComm(&comm, 1, nullptr, 4, 0);
  ASSERT_TRUE(host.Loaded());
  EXPECT_EQ(host.PluginVersion(), 5);
  Collective(host, &comm, 1);
  EXPECT_EQ(gSeen.calls, (std::vector<std::string>{"init5", "start:256", "record:23", "start:512", "stop", "record:24",
                                                   "start:1", "start:2", "stop", "stop", "stop"}));
  host.FinalizeComm(&comm);
  EXPECT_EQ(gSeen.calls.back(), "finalize");
  EXPECT_FALSE(host.Loaded()) << "unloaded with its last communicator";
}

TEST_F(ProfilerHostTest, Nccl230LoadsV6AndDropsAPluginWhoseInitFailed) {
  ProfilerHost host(23000, nullptr);
  ProfilerComm comm;
  host.InitComm(&comm, 1, "c", 4, 0);
  EXPECT_EQ(host.PluginVersion(), 6);
  host.FinalizeComm(&comm);
  gSeen = Seen{};
  gSeen.failInit = true;
  ProfilerComm failed;
  host.InitComm(&failed, 2, "c", 4, 0);
  EXPECT_FALSE(host.Loaded());
  Collective(host, &failed, 1);
  EXPECT_EQ(gSeen.calls, std::vector<std::string>{"init6"});
}

TEST_F(ProfilerHostTest, NoneAndAMissingLibraryLoadNothing) {
  setenv("NCCL_PROFILER_PLUGIN", "none", 1);
  ProfilerHost none(22809, nullptr);
  ProfilerComm comm;
  none.InitComm(&comm, 1, nullptr, 4, 0);
  EXPECT_FALSE(none.Loaded());
  setenv("NCCL_PROFILER_PLUGIN", "/nonexistent/libnccl-profiler-x.so", 1);
  ProfilerHost missing(22809, nullptr);
  missing.InitComm(&comm, 1, nullptr, 4, 0);
  missing.InitComm(&comm, 1, nullptr, 4, 0);  // never retried
  EXPECT_FALSE(missing.Loaded());
  EXPECT_TRUE(gSeen.calls.empty());
}

TEST_F(ProfilerHostTest, NestedGroupsMakeOneGroupApiEventAtTheFirstCall) {
  ProfilerHost host(22809, nullptr);
  ProfilerComm comm;
  host.InitComm(&comm, 1, nullptr, 4, 0);
  // ncclGroupStart x2, two collectives, inner and outer ncclGroupEnd (depths as simnccl passes them).
  std::vector<ProfilerColl> colls(2);
  for (ProfilerColl& c : colls) {
    c.func = kAllReduce;
    host.EnqueueBegin();
    c.tag = host.CollApi(&comm, 3, kAllReduce, 10, ncclFloat32, 0, nullptr);
    host.GroupEndBegin();
    host.GroupEndExit();
  }
  EXPECT_EQ(gSeen.groupDepth, 3);
  EXPECT_EQ(colls[0].tag.groupApi, colls[1].tag.groupApi);
  host.GroupEndBegin();  // inner ncclGroupEnd
  host.GroupEndExit();
  const size_t beforeOuter = gSeen.calls.size();
  host.GroupEndBegin();  // outer
  host.LaunchPlan(&comm, nullptr, colls, {});
  host.GroupEndExit();
  EXPECT_EQ(std::vector<std::string>(gSeen.calls.begin() + 1, gSeen.calls.begin() + beforeOuter),
            (std::vector<std::string>{"start:256", "record:23", "start:512", "stop", "start:512", "stop"}));
  EXPECT_EQ(std::vector<std::string>(gSeen.calls.begin() + beforeOuter, gSeen.calls.end()),
            (std::vector<std::string>{"record:24", "start:1", "start:2", "start:2", "stop", "stop", "stop", "stop"}));
  EXPECT_EQ(comm.seqNumber[kAllReduce], 2u);
  host.FinalizeComm(&comm);
}

}  // namespace
}  // namespace simnccl
