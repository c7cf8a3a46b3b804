// The public C API (include/ccltune/ccltune.h) and the load-time set-up of a preloaded library.
#include <dlfcn.h>

#include <cstdlib>

#include "ccltune/ccltune.h"
#include "src/runtime.hpp"
#include "vocab/types.hpp"

using ccltune::Runtime;

namespace {

// One LD_PRELOAD is all a user sets: point NCCL at this file as its tuner and profiler plugin, unless
// the user chose a plugin (or none) or disabled ccltune. NCCL reads the variables at its first init.
__attribute__((constructor)) void PointNcclAtUs() {
  const char* disable = getenv("CCLTUNE_DISABLE");
  if (disable != nullptr && (disable[0] == '1' || disable[0] == 't' || disable[0] == 'T' || disable[0] == 'y')) return;
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&PointNcclAtUs), &info) == 0 || info.dli_fname == nullptr) return;
  // The tuner plugin, and the profiler plugin for channel truth (what NCCL really ran). A user's own
  // profiler plugin keeps its place: ccltune then does without channel truth and says so at start.
  if (getenv("NCCL_TUNER_PLUGIN") == nullptr) setenv("NCCL_TUNER_PLUGIN", info.dli_fname, 0);
  if (getenv("NCCL_PROFILER_PLUGIN") == nullptr) setenv("NCCL_PROFILER_PLUGIN", info.dli_fname, 0);
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int ccltuneGetVersion(int* major, int* minor, int* patch) {
  if (major == nullptr || minor == nullptr || patch == nullptr) return ccltuneInvalidArgument;
  *major = CCLTUNE_VERSION_MAJOR;
  *minor = CCLTUNE_VERSION_MINOR;
  *patch = CCLTUNE_VERSION_PATCH;
  return ccltuneSuccess;
}

__attribute__((visibility("default"))) int ccltuneIsActive(void) { return Runtime::Get().active() ? 1 : 0; }

__attribute__((visibility("default"))) int ccltuneSetMode(struct ncclComm* comm, ccltuneMode_t mode,
                                                          const ccltuneConfig_t* forced) {
  if (!Runtime::Get().active()) return ccltuneUnavailable;
  return Runtime::Get().SetMode(comm, mode, forced);
}

__attribute__((visibility("default"))) int ccltuneGetMode(struct ncclComm* comm, ccltuneMode_t* mode) {
  if (!Runtime::Get().active()) return ccltuneUnavailable;
  return Runtime::Get().GetMode(comm, mode);
}

__attribute__((visibility("default"))) int ccltuneExport(const char* path) {
  if (!Runtime::Get().active()) return ccltuneUnavailable;
  return Runtime::Get().exporter().Export(path);
}

__attribute__((visibility("default"))) int ccltuneGetWorkloadStats(struct ncclComm* comm, int collective, int datatype,
                                                                   int op, size_t bytes, ccltuneWorkloadStats_t* out) {
  if (!Runtime::Get().active()) return ccltuneUnavailable;
  if (collective < 0 || collective >= ccltune::kNumColls) return ccltuneInvalidArgument;
  ccltune::CallDesc call{static_cast<ccltune::Coll>(collective), datatype, op, bytes};
  return Runtime::Get().GetStats(comm, call, out);
}

__attribute__((visibility("default"))) int ccltuneListWorkloads(struct ncclComm* comm, ccltuneWorkloadStats_t* out,
                                                                int max, int* count) {
  if (!Runtime::Get().active()) return ccltuneUnavailable;
  return Runtime::Get().ListStats(comm, out, max, count);
}

__attribute__((visibility("default"))) int ccltuneGetSummary(ccltuneSummary_t* out) {
  if (out == nullptr) return ccltuneInvalidArgument;
  if (!Runtime::Get().active()) return ccltuneUnavailable;
  return Runtime::Get().Summary(out);
}

}  // extern "C"
