// The interposition layer: ccltune's definitions of NCCL's public entry points. Each forwards to
// the real NCCL (resolved at run time) through the runtime; calls NCCL makes to its own public
// functions (ncclBcast -> ncclBroadcast, ...) re-enter here and pass straight through.
#include <cstddef>
#include <memory>

#include "nccl.h"
#include "src/comm_state.hpp"
#include "src/nccl_api.hpp"
#include "src/runtime.hpp"
#include "vocab/types.hpp"

namespace ccltune {
namespace {

thread_local int t_depth = 0;

// Re-entry guard: true for the outermost interposed call on this thread.
class Scope {
 public:
  Scope() : outer_(t_depth++ == 0) {}
  ~Scope() { --t_depth; }
  bool outer() const { return outer_; }

 private:
  bool outer_;
};

bool Tuning(const Scope& s) { return s.outer() && Runtime::Get().active(); }

ncclResult_t Missing() { return ncclSystemError; }  // only when no NCCL is in the process at all

CallDesc Desc(Coll c, ncclDataType_t dt, int op, size_t count) {
  return CallDesc{c, static_cast<int>(dt), op, static_cast<uint64_t>(count) * DtypeSize(static_cast<int>(dt))};
}

// A communicator just created from `config` (nullptr: none), NCCL's result `r`: when created inside a user
// group (NCCL initializes it at the group's end), to the lifecycle at the outermost ncclGroupEnd of this
// thread; a non-blocking one still in progress, to the lifecycle as it is (it passes through); otherwise
// raised to CCLTUNE_CHANNEL_BUDGET's channels where that applies (*comm is then the raised one) and taken on.
void TakeOn(ncclComm_t* comm, const ncclConfig_t* config, bool in_group, ncclResult_t r) {
  if (in_group) {
    Runtime::Get().calls().CreatedInUserGroup(*comm, config);
    return;
  }
  int baseline = 0;
  if (r == ncclSuccess) *comm = Runtime::Get().lifecycle().RaiseBudget(*comm, config, &baseline);
  Runtime::Get().lifecycle().OnCommCreated(*comm, config, /*multi_gpu_thread=*/false, baseline);
}

// The config a child of `parent` is created with: where ccltune raised the parent and the user gives the
// child no config of its own (NCCL would copy the parent's), the one the user created the parent with.
ncclConfig_t* ChildConfig(ncclComm_t parent, ncclConfig_t* user, ncclConfig_t* scratch) {
  if (user != nullptr) return user;
  std::shared_ptr<CommState> cs = Runtime::Get().comms().FindShared(parent);
  if (cs == nullptr || cs->baseline_channels() == 0) return nullptr;
  *scratch = cs->creation_config();
  return scratch;
}

}  // namespace
}  // namespace ccltune

using namespace ccltune;

#define FORWARD(name, ...) (Real().name != nullptr ? Real().name(__VA_ARGS__) : Missing())

extern "C" {

__attribute__((visibility("default"))) ncclResult_t ncclAllReduce(const void* s, void* r, size_t count,
                                                                  ncclDataType_t dt, ncclRedOp_t op, ncclComm_t comm,
                                                                  cudaStream_t stream) {
  Scope scope;
  auto fn = [&] { return FORWARD(AllReduce, s, r, count, dt, op, comm, stream); };
  if (!Tuning(scope)) return fn();
  return Runtime::Get().calls().Collective(comm, stream, Desc(Coll::kAllReduce, dt, op, count), fn);
}

__attribute__((visibility("default"))) ncclResult_t ncclAllGather(const void* s, void* r, size_t count,
                                                                  ncclDataType_t dt, ncclComm_t comm,
                                                                  cudaStream_t stream) {
  Scope scope;
  auto fn = [&] { return FORWARD(AllGather, s, r, count, dt, comm, stream); };
  if (!Tuning(scope)) return fn();
  return Runtime::Get().calls().Collective(comm, stream, Desc(Coll::kAllGather, dt, -1, count), fn);
}

__attribute__((visibility("default"))) ncclResult_t ncclReduceScatter(const void* s, void* r, size_t count,
                                                                      ncclDataType_t dt, ncclRedOp_t op,
                                                                      ncclComm_t comm, cudaStream_t stream) {
  Scope scope;
  auto fn = [&] { return FORWARD(ReduceScatter, s, r, count, dt, op, comm, stream); };
  if (!Tuning(scope)) return fn();
  return Runtime::Get().calls().Collective(comm, stream, Desc(Coll::kReduceScatter, dt, op, count), fn);
}

__attribute__((visibility("default"))) ncclResult_t ncclBroadcast(const void* s, void* r, size_t count,
                                                                  ncclDataType_t dt, int root, ncclComm_t comm,
                                                                  cudaStream_t stream) {
  Scope scope;
  auto fn = [&] { return FORWARD(Broadcast, s, r, count, dt, root, comm, stream); };
  if (!Tuning(scope)) return fn();
  return Runtime::Get().calls().Collective(comm, stream, Desc(Coll::kBroadcast, dt, -1, count), fn);
}

__attribute__((visibility("default"))) ncclResult_t ncclBcast(void* buf, size_t count, ncclDataType_t dt, int root,
                                                              ncclComm_t comm, cudaStream_t stream) {
  Scope scope;
  // NCCL implements ncclBcast by calling ncclBroadcast: that inner call passes straight through.
  auto fn = [&] { return FORWARD(Bcast, buf, count, dt, root, comm, stream); };
  if (!Tuning(scope)) return fn();
  return Runtime::Get().calls().Collective(comm, stream, Desc(Coll::kBroadcast, dt, -1, count), fn);
}

__attribute__((visibility("default"))) ncclResult_t ncclReduce(const void* s, void* r, size_t count, ncclDataType_t dt,
                                                               ncclRedOp_t op, int root, ncclComm_t comm,
                                                               cudaStream_t stream) {
  Scope scope;
  auto fn = [&] { return FORWARD(Reduce, s, r, count, dt, op, root, comm, stream); };
  if (!Tuning(scope)) return fn();
  return Runtime::Get().calls().Collective(comm, stream, Desc(Coll::kReduce, dt, op, count), fn);
}

__attribute__((visibility("default"))) ncclResult_t ncclGroupStart() {
  Scope scope;
  auto fn = [&] { return FORWARD(GroupStart); };
  if (!Tuning(scope)) return fn();
  return Runtime::Get().calls().GroupStart(fn);
}

__attribute__((visibility("default"))) ncclResult_t ncclGroupEnd() {
  Scope scope;
  auto fn = [&] { return FORWARD(GroupEnd); };
  if (!Tuning(scope)) return fn();
  return Runtime::Get().calls().GroupEnd(fn, /*simulate=*/false);
}

__attribute__((visibility("default"))) ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* info) {
  Scope scope;
  auto fn = [&] { return FORWARD(GroupSimulateEnd, info); };
  if (!Tuning(scope)) return fn();
  return Runtime::Get().calls().GroupEnd(fn, /*simulate=*/true);
}

__attribute__((visibility("default"))) ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                                                     int rank) {
  Scope scope;
  const bool tuning = Tuning(scope);
  const bool in_group = tuning && Runtime::Get().calls().InUserGroup();
  ncclResult_t r = FORWARD(CommInitRank, comm, nranks, id, rank);
  if (tuning && r == ncclSuccess && comm != nullptr) TakeOn(comm, nullptr, in_group, r);
  return r;
}

__attribute__((visibility("default"))) ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                                                           ncclUniqueId id, int rank,
                                                                           ncclConfig_t* config) {
  Scope scope;
  const bool tuning = Tuning(scope);
  const bool in_group = tuning && Runtime::Get().calls().InUserGroup();
  ncclResult_t r = FORWARD(CommInitRankConfig, comm, nranks, id, rank, config);
  // A non-blocking init returns ncclInProgress: the communicator is passed through (see OnCommCreated).
  if (tuning && (r == ncclSuccess || r == ncclInProgress) && comm != nullptr) {
    TakeOn(comm, config, in_group, r);
  }
  return r;
}

__attribute__((visibility("default"))) ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank,
                                                                             int nId, ncclUniqueId* ids,
                                                                             ncclConfig_t* config) {
  Scope scope;
  const bool tuning = Tuning(scope);
  const bool in_group = tuning && Runtime::Get().calls().InUserGroup();
  ncclResult_t r = FORWARD(CommInitRankScalable, comm, nranks, rank, nId, ids, config);
  if (tuning && (r == ncclSuccess || r == ncclInProgress) && comm != nullptr) {
    TakeOn(comm, config, in_group, r);
  }
  return r;
}

__attribute__((visibility("default"))) ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  Scope scope;
  const bool tuning = Tuning(scope);
  ncclResult_t r = FORWARD(CommInitAll, comms, ndev, devlist);
  if (tuning && r == ncclSuccess && comms != nullptr) {
    for (int i = 0; i < ndev; ++i)
      Runtime::Get().lifecycle().OnCommCreated(comms[i], nullptr, /*multi_gpu_thread=*/true);
  }
  return r;
}

__attribute__((visibility("default"))) ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                                                                  ncclComm_t* newcomm, ncclConfig_t* config) {
  Scope scope;
  const bool tuning = Tuning(scope);
  const bool in_group = tuning && Runtime::Get().calls().InUserGroup();
  ncclConfig_t scratch;
  ncclConfig_t* child = tuning ? ChildConfig(comm, config, &scratch) : config;
  ncclResult_t r = FORWARD(CommSplit, comm, color, key, newcomm, child);
  if (tuning && (r == ncclSuccess || r == ncclInProgress) && newcomm != nullptr && *newcomm != nullptr) {
    TakeOn(newcomm, child, in_group, r);
  }
  return r;
}

__attribute__((visibility("default"))) ncclResult_t ncclCommShrink(ncclComm_t comm, int* exclude, int nexclude,
                                                                   ncclComm_t* newcomm, ncclConfig_t* config,
                                                                   int flags) {
  Scope scope;
  const bool tuning = Tuning(scope);
  const bool in_group = tuning && Runtime::Get().calls().InUserGroup();
  ncclConfig_t scratch;
  ncclConfig_t* child = tuning ? ChildConfig(comm, config, &scratch) : config;
  ncclResult_t r = FORWARD(CommShrink, comm, exclude, nexclude, newcomm, child, flags);
  if (tuning && (r == ncclSuccess || r == ncclInProgress) && newcomm != nullptr && *newcomm != nullptr) {
    TakeOn(newcomm, child, in_group, r);
  }
  return r;
}

__attribute__((visibility("default"))) ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  Scope scope;
  // No collective may follow a finalize; the state stays for statistics until destroy.
  return FORWARD(CommFinalize, comm);
}

__attribute__((visibility("default"))) ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  Scope scope;
  if (Tuning(scope)) Runtime::Get().lifecycle().OnCommGone(comm, /*abort=*/false);
  return FORWARD(CommDestroy, comm);
}

__attribute__((visibility("default"))) ncclResult_t ncclCommAbort(ncclComm_t comm) {
  Scope scope;
  if (Tuning(scope)) Runtime::Get().lifecycle().OnCommGone(comm, /*abort=*/true);
  return FORWARD(CommAbort, comm);
}

}  // extern "C"
