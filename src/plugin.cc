// NCCL tuner-plugin adapters: the exported ncclTunerPlugin_v6 / _v5 / _v4 structs. NCCL takes the
// newest it knows. Every entry point returns ncclSuccess after init: an error from getCollInfo or
// getChunkSize would fail the user's collective, so a ccltune problem only ever means "no opinion".
#include "src/nccl_log.hpp"
#include "src/runtime.hpp"
#include "src/tuner_abi.h"

namespace {

using ccltune::Runtime;

ncclResult_t InitV5(void** ctx, uint64_t comm_id, size_t nranks, size_t nnodes, ccltuneNcclLogger_t log,
                    ccltuneNvlDomainInfo_v5_t*, ccltuneTunerConstants_v5_t*) {
  ccltune::SetNcclLogger(log);
  *ctx = Runtime::Get().active() ? Runtime::Get().plugin().TunerInit(5, comm_id, nranks, nnodes) : nullptr;
  return ncclSuccess;
}

ncclResult_t InitV6(void** ctx, uint64_t comm_id, size_t nranks, size_t nnodes, ccltuneNcclLogger_t log,
                    ccltuneNvlDomainInfo_v5_t*, ccltuneTunerConstants_v5_t*) {
  ccltune::SetNcclLogger(log);
  *ctx = Runtime::Get().active() ? Runtime::Get().plugin().TunerInit(6, comm_id, nranks, nnodes) : nullptr;
  return ncclSuccess;
}

ncclResult_t InitV4(size_t nranks, size_t nnodes, ccltuneNcclLogger_t log, void** ctx) {
  ccltune::SetNcclLogger(log);
  // v4 has no communicator hash; contexts are bound by the calls in flight all the same.
  *ctx = Runtime::Get().active() ? Runtime::Get().plugin().TunerInit(4, 0, nranks, nnodes) : nullptr;
  return ncclSuccess;
}

ncclResult_t GetCollInfo(void* ctx, int coll, size_t nbytes, int num_pipe_ops, float** table, int num_algo,
                         int num_proto, int /*reg_buff*/, int* nchannels) {
  if (ctx != nullptr) {
    Runtime::Get().plugin().GetCollInfo(ctx, coll, nbytes, num_pipe_ops, table, num_algo, num_proto, nchannels);
  }
  return ncclSuccess;
}

ncclResult_t GetChunkSize(void* ctx, int coll, size_t nbytes, int algo, int proto, int nchannels, size_t* chunk) {
  if (ctx != nullptr) Runtime::Get().plugin().GetChunkSize(ctx, coll, nbytes, algo, proto, nchannels, chunk);
  return ncclSuccess;
}

ncclResult_t Finalize(void* ctx) {
  if (ctx != nullptr) Runtime::Get().plugin().TunerFinalize(ctx);
  return ncclSuccess;
}

}  // namespace

extern "C" {
__attribute__((visibility("default")))
ccltuneTuner_v6_t ncclTunerPlugin_v6 = {"ccltune", InitV6, GetCollInfo, Finalize, GetChunkSize};
__attribute__((visibility("default")))
ccltuneTuner_v5_t ncclTunerPlugin_v5 = {"ccltune", InitV5, GetCollInfo, Finalize};
__attribute__((visibility("default")))
ccltuneTuner_v4_t ncclTunerPlugin_v4 = {"ccltune", InitV4, GetCollInfo, Finalize};
}
