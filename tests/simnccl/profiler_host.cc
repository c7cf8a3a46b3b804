// NCCL's side of the profiler-plugin interface (profiler_host.hpp), following NCCL 2.28's src/plugin/profiler.cc
// and its callers (enqueue.cc, group.cc, init.cc), with 2.29/2.30's differences.
#include "profiler_host.hpp"

#include <dlfcn.h>
#include <strings.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "plugin_support.hpp"

namespace simnccl {

namespace {

// Per thread, like NCCL's ncclProfilerApiState.
struct ApiState {
  int profilerGroupDepth = 0;  // NCCL's group depth once this group's GroupApi event started, else 0
  enum { kReset, kStarted, kStopped } state = kReset;
  int mask = 0;  // the activation mask read at the last API call
  void* groupApi = nullptr;
  void* collApi = nullptr;  // never cleared after its stop, as in NCCL
  void* p2pApi = nullptr;
};
thread_local ApiState tApi;

// Which events each start needs in the activation mask (NCCL's masks for the parents of the events wanted).
constexpr int kTaskBits = ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileKernelCh | ncclProfileNetPlugin;
constexpr int kCeBits = ncclProfileCeColl | ncclProfileCeSync | ncclProfileCeBatch;
constexpr int kCollApiBits = ncclProfileCollApi | ncclProfileColl | kTaskBits;
constexpr int kP2pApiBits = ncclProfileP2pApi | ncclProfileP2p | kTaskBits;
constexpr int kGroupBits = ncclProfileGroup | ncclProfileColl | ncclProfileP2p | kTaskBits;
constexpr int kCollBits = ncclProfileColl | kTaskBits;
int GroupApiBits(int ncclVersion) {
  const int bits = ncclProfileGroupApi | ncclProfileP2pApi | ncclProfileCollApi | ncclProfileKernelLaunch | kGroupBits;
  return ncclVersion >= 22900 ? bits | kCeBits : bits;
}
int CollApiBits(int ncclVersion) { return ncclVersion >= 22900 ? kCollApiBits | kCeBits : kCollApiBits; }

// v5's descriptor is v6's without the copy-engine members: the same header and the same union members (one macro
// in profiler_abi.h declares both), so the events emitted here copy over byte for byte.
static_assert(sizeof(ncclProfilerEventDescr_v5_t) == sizeof(ncclProfilerEventDescr_v6_t));
ncclProfilerEventDescr_v5_t ToV5(const ncclProfilerEventDescr_v6_t& d) {
  ncclProfilerEventDescr_v5_t v5;
  std::memcpy(&v5, &d, sizeof v5);
  return v5;
}

ncclProfilerEventDescr_v6_t Descr(uint64_t type) {
  ncclProfilerEventDescr_v6_t d;
  std::memset(&d, 0, sizeof d);
  d.type = type;
  return d;
}

}  // namespace

const char* ProfileTypeName(uint64_t type) {
  switch (type) {
    case ncclProfileGroup:
      return "Group";
    case ncclProfileColl:
      return "Coll";
    case ncclProfileGroupApi:
      return "GroupApi";
    case ncclProfileCollApi:
      return "CollApi";
    case ncclProfileP2pApi:
      return "P2pApi";
    case ncclProfileKernelLaunch:
      return "KernelLaunch";
    default:
      return "other";
  }
}

const char* NcclFuncString(int func) {
  static const char* const kNames[] = {"Broadcast", "Reduce",   "AllGather", "ReduceScatter",
                                       "AllReduce", "SendRecv", "Send",      "Recv"};
  return func >= 0 && func < 8 ? kNames[func] : "Invalid";
}
const char* NcclAlgoString(int algo) {
  static const char* const kNames[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
  return algo >= 0 && algo < 7 ? kNames[algo] : "Unknown";
}
const char* NcclProtoString(int proto) {
  static const char* const kNames[] = {"LL", "LL128", "SIMPLE"};
  return proto >= 0 && proto < 3 ? kNames[proto] : "Unknown";
}
const char* NcclDatatypeString(ncclDataType_t dtype) {
  switch (dtype) {  // NCCL's table has no entry for ncclUint8: it prints "Unknown"
    case ncclInt8:
      return "ncclInt8";
    case ncclInt32:
      return "ncclInt32";
    case ncclUint32:
      return "ncclUint32";
    case ncclInt64:
      return "ncclInt64";
    case ncclUint64:
      return "ncclUint64";
    case ncclFloat16:
      return "ncclFloat16";
    case ncclFloat32:
      return "ncclFloat32";
    case ncclFloat64:
      return "ncclFloat64";
    case ncclBfloat16:
      return "ncclBfloat16";
    case ncclFloat8e4m3:
      return "ncclFloat8e4m3";
    case ncclFloat8e5m2:
      return "ncclFloat8e5m2";
    default:
      return "Unknown";
  }
}

ProfilerHost::ProfilerHost(int ncclVersion, TraceFn trace) : ncclVersion_(ncclVersion), trace_(std::move(trace)) {}

void ProfilerHost::Load() {
  if (status_ == -1) return;
  if (status_ == 1) {
    ++refCount_;
    return;
  }
  const char* name = std::getenv("NCCL_PROFILER_PLUGIN");
  if (name && strcasecmp(name, "none") == 0) {
    status_ = -1;
    return;
  }
  std::string tried;
  void* lib = OpenPluginLib("libnccl-profiler", name, &tried);
  if (!lib) {
    if (name)
      std::fprintf(stderr, "simnccl: WARN NCCL_PROFILER_PLUGIN: could not load %s; no profiler\n", tried.c_str());
    status_ = -1;
    return;
  }
  // Newest first: NCCL 2.29+ tries v6, every version v5 then v4 .. v1.
  if (ncclVersion_ >= 22900) v6_ = reinterpret_cast<ncclProfiler_v6_t*>(dlsym(lib, "ncclProfiler_v6"));
  if (!v6_) v5_ = reinterpret_cast<ncclProfiler_v5_t*>(dlsym(lib, "ncclProfiler_v5"));
  if (!v6_ && !v5_) {
    const char* older = nullptr;
    for (const char* sym : {"ncclProfiler_v4", "ncclProfiler_v3", "ncclProfiler_v2", "ncclProfiler_v1"})
      if (!older && dlsym(lib, sym)) older = sym;
    if (older)
      std::fprintf(stderr,
                   "simnccl: WARN profiler plugin %s exports only %s, which NCCL would use but simnccl "
                   "does not emulate; no profiler\n",
                   tried.c_str(), older);
    else if (name)
      std::fprintf(stderr, "simnccl: WARN profiler plugin %s exports no supported symbol; no profiler\n",
                   tried.c_str());
    dlclose(lib);
    status_ = -1;
    return;
  }
  lib_ = lib;
  version_ = v6_ ? 6 : 5;
  name_ = v6_ ? v6_->name : v5_->name;
  ++refCount_;
  status_ = 1;
  if (std::getenv("SIMNCCL_DEBUG"))
    std::fprintf(stderr, "simnccl: loaded profiler plugin %s (v%d)\n", name_.c_str(), version_);
}

void ProfilerHost::Unload() {
  if (--refCount_ != 0) return;
  if (lib_) dlclose(lib_);
  lib_ = nullptr, v5_ = nullptr, v6_ = nullptr, version_ = 0;
  status_ = 0;  // a later communicator loads it again
}

void ProfilerHost::InitComm(ProfilerComm* comm, uint64_t commId, const char* commName, int nranks, int rank) {
  comm->rank = rank;
  Load();
  if (!Loaded()) return;
  const ncclResult_t rc =
      v6_ ? CallPlugin(v6_->init, &comm->ctx, commId, &eventMask_, commName, 1, nranks, rank, PluginLog)
          : CallPlugin(v5_->init, &comm->ctx, commId, &eventMask_, commName, 1, nranks, rank, PluginLog);
  if (trace_) {
    char line[160];
    std::snprintf(line, sizeof line, "profiler init commId 0x%llx nranks %d rank %d -> %d mask 0x%x",
                  static_cast<unsigned long long>(commId), nranks, rank, static_cast<int>(rc), eventMask_);
    trace_(line);
  }
  if (rc != ncclSuccess) {
    // NCCL logs it and goes on; from 2.30 it also drops this communicator's reference to the plugin.
    if (std::getenv("SIMNCCL_DEBUG"))
      std::fprintf(stderr, "simnccl: profiler init failed (%d); going on as NCCL does\n", static_cast<int>(rc));
    if (ncclVersion_ >= 23000) Unload();
  }
}

void ProfilerHost::FinalizeComm(ProfilerComm* comm) {
  if (Loaded() && comm->ctx) {
    if (v6_)
      CallPlugin(v6_->finalize, comm->ctx);
    else
      CallPlugin(v5_->finalize, comm->ctx);
    if (trace_) trace_("profiler finalize");
  }
  Unload();
}

void ProfilerHost::Start(void* ctx, void** handle, const ncclProfilerEventDescr_v6_t& descr) {
  ncclProfilerEventDescr_v6_t d6 = descr;
  if (v6_) {
    CallPlugin(v6_->startEvent, ctx, handle, &d6);
  } else {
    ncclProfilerEventDescr_v5_t d5 = ToV5(descr);
    CallPlugin(v5_->startEvent, ctx, handle, &d5);
  }
  if (!trace_) return;
  char line[320];
  if (descr.type == ncclProfileColl) {
    std::snprintf(line, sizeof line,
                  "profiler startEvent Coll seq %llu %s count %zu %s root %d algo %s proto %s nChannels %d nWarps "
                  "%d -> %p",
                  static_cast<unsigned long long>(descr.coll.seqNumber), descr.coll.func, descr.coll.count,
                  descr.coll.datatype, descr.coll.root, descr.coll.algo, descr.coll.proto, descr.coll.nChannels,
                  descr.coll.nWarps, *handle);
  } else if (descr.type == ncclProfileCollApi) {
    std::snprintf(line, sizeof line, "profiler startEvent CollApi %s count %zu %s root %d -> %p", descr.collApi.func,
                  descr.collApi.count, descr.collApi.datatype, descr.collApi.root, *handle);
  } else if (descr.type == ncclProfileGroupApi) {
    std::snprintf(line, sizeof line, "profiler startEvent GroupApi depth %d -> %p", descr.groupApi.groupDepth, *handle);
  } else {
    std::snprintf(line, sizeof line, "profiler startEvent %s -> %p", ProfileTypeName(descr.type), *handle);
  }
  trace_(line);
}

void ProfilerHost::Stop(void* handle) {
  if (v6_)
    CallPlugin(v6_->stopEvent, handle);
  else
    CallPlugin(v5_->stopEvent, handle);
  if (trace_) {
    char line[64];
    std::snprintf(line, sizeof line, "profiler stopEvent %p", handle);
    trace_(line);
  }
}

// NCCL's group API state machine: StartApiStop once after the group's first call, EndApiStart once when the
// outermost ncclGroupEnd begins.
void ProfilerHost::Record(ncclProfilerEventState_t state) {
  bool record = false;
  if (state == ncclProfilerGroupStartApiStop && tApi.state == ApiState::kStarted) {
    tApi.state = ApiState::kStopped, record = true;
  } else if (state == ncclProfilerGroupEndApiStart && tApi.state == ApiState::kStopped) {
    tApi.state = ApiState::kReset, record = true;
  }
  if (!record || !Loaded() || !tApi.groupApi) return;
  if (v6_)
    CallPlugin(v6_->recordEventState, tApi.groupApi, state, nullptr);
  else
    CallPlugin(v5_->recordEventState, tApi.groupApi, state, nullptr);
  if (trace_) {
    char line[80];
    std::snprintf(line, sizeof line, "profiler recordEventState %p %d", tApi.groupApi, static_cast<int>(state));
    trace_(line);
  }
}

void ProfilerHost::EnqueueBegin() {
  if (tApi.profilerGroupDepth > 0) tApi.profilerGroupDepth++;
}

void ProfilerHost::StartGroupApi(ProfilerComm* comm, int groupDepth) {
  tApi.mask = __atomic_load_n(&eventMask_, __ATOMIC_RELAXED);
  if (!Loaded() || !(tApi.mask & GroupApiBits(ncclVersion_)) || tApi.profilerGroupDepth != 0) return;
  ncclProfilerEventDescr_v6_t d = Descr(ncclProfileGroupApi);
  d.groupApi.graphCaptured = false;
  d.groupApi.groupDepth = groupDepth;
  Start(comm->ctx, &tApi.groupApi, d);
  tApi.profilerGroupDepth = groupDepth;
  tApi.state = ApiState::kStarted;
}

ProfilerTag ProfilerHost::CollApi(ProfilerComm* comm, int groupDepth, int func, size_t count, ncclDataType_t dtype,
                                  int root, void* stream) {
  StartGroupApi(comm, groupDepth);
  Record(ncclProfilerGroupStartApiStop);
  if (Loaded() && (tApi.mask & CollApiBits(ncclVersion_))) {
    ncclProfilerEventDescr_v6_t d = Descr(ncclProfileCollApi);
    d.parentObj = tApi.groupApi;
    d.collApi.func = NcclFuncString(func);
    d.collApi.count = count;
    d.collApi.datatype = NcclDatatypeString(dtype);
    d.collApi.root = root;
    d.collApi.stream = stream;
    d.collApi.graphCaptured = false;
    Start(comm->ctx, &tApi.collApi, d);
  }
  ProfilerTag tag{tApi.mask, tApi.groupApi, tApi.collApi};
  if (Loaded() && tApi.collApi) Stop(tApi.collApi);  // a stale handle is stopped again, as NCCL does
  return tag;
}

ProfilerTag ProfilerHost::P2pApi(ProfilerComm* comm, int groupDepth, bool send, size_t count, ncclDataType_t dtype,
                                 void* stream) {
  StartGroupApi(comm, groupDepth);
  Record(ncclProfilerGroupStartApiStop);
  if (Loaded() && (tApi.mask & kP2pApiBits)) {
    ncclProfilerEventDescr_v6_t d = Descr(ncclProfileP2pApi);
    d.parentObj = tApi.groupApi;
    d.p2pApi.func = NcclFuncString(send ? 6 : 7);
    d.p2pApi.count = count;
    d.p2pApi.datatype = NcclDatatypeString(dtype);
    d.p2pApi.stream = stream;
    d.p2pApi.graphCaptured = false;
    Start(comm->ctx, &tApi.p2pApi, d);
  }
  ProfilerTag tag{tApi.mask, tApi.groupApi, tApi.p2pApi};
  if (Loaded() && tApi.p2pApi) {
    Stop(tApi.p2pApi);
    tApi.p2pApi = nullptr;
  }
  return tag;
}

void ProfilerHost::GroupEndBegin() {
  if (tApi.profilerGroupDepth > 0) tApi.profilerGroupDepth--;
  if (tApi.profilerGroupDepth == 0) Record(ncclProfilerGroupEndApiStart);
}

void ProfilerHost::GroupEndExit() {
  if (!Loaded() || !tApi.groupApi || tApi.profilerGroupDepth != 0) return;
  Stop(tApi.groupApi);
  tApi.groupApi = nullptr;
}

void ProfilerHost::LaunchPlan(ProfilerComm* comm, void* stream, const std::vector<ProfilerColl>& colls,
                              const std::vector<ProfilerTag>& p2ps) {
  if (!Loaded()) {
    for (const ProfilerColl& c : colls) comm->seqNumber[c.func]++;  // counted for RAS with or without a profiler
    return;
  }
  // The plan's mask and group API handle: those of its first task with a mask, collectives first.
  const ProfilerTag* first = nullptr;
  for (const ProfilerColl& c : colls)
    if (!first && c.tag.mask) first = &c.tag;
  for (const ProfilerTag& p : p2ps)
    if (!first && p.mask) first = &p;
  const int mask = first ? first->mask : 0;
  if (mask & ncclProfileKernelLaunch) {
    ncclProfilerEventDescr_v6_t d = Descr(ncclProfileKernelLaunch);
    d.parentObj = first->groupApi;
    d.kernelLaunch.stream = stream;
    void* launch = nullptr;
    Start(comm->ctx, &launch, d);
    if (launch) Stop(launch);
  }
  void* group = nullptr;
  if (mask & kGroupBits) Start(comm->ctx, &group, Descr(ncclProfileGroup));
  std::vector<void*> events(colls.size(), nullptr);
  for (size_t i = 0; i < colls.size(); i++) {
    const ProfilerColl& c = colls[i];
    if (c.tag.mask & kCollBits) {
      ncclProfilerEventDescr_v6_t d = Descr(ncclProfileColl);
      d.parentObj = c.tag.api;
      d.rank = comm->rank;
      d.coll.parentGroup = group;
      d.coll.seqNumber = comm->seqNumber[c.func];
      d.coll.func = NcclFuncString(c.func);
      d.coll.sendBuff = c.sendBuff;
      d.coll.recvBuff = c.recvBuff;
      d.coll.count = c.count;
      d.coll.root = c.root;
      d.coll.datatype = NcclDatatypeString(c.dtype);
      d.coll.nChannels = static_cast<uint8_t>(c.nChannels);
      d.coll.nWarps = static_cast<uint8_t>(c.nWarps);
      d.coll.algo = NcclAlgoString(c.algo);
      d.coll.proto = NcclProtoString(c.proto);
      Start(comm->ctx, &events[i], d);
    }
    comm->seqNumber[c.func]++;
  }
  for (void* e : events)
    if (e) Stop(e);
  if (group) Stop(group);
}

}  // namespace simnccl
