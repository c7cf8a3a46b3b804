// ccltune-bench: dlsym resolution of ccltune's C API and the simulated NCCL's hooks.
#include "bench/api.hpp"

#include <dlfcn.h>

namespace ccltune::bench {
namespace {

template <typename Fn>
void Find(const char* name, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

}  // namespace

CcltuneApi ResolveCcltune() {
  CcltuneApi api;
  Find("ccltuneGetVersion", &api.GetVersion);
  Find("ccltuneIsActive", &api.IsActive);
  Find("ccltuneSetMode", &api.SetMode);
  Find("ccltuneGetMode", &api.GetMode);
  Find("ccltuneGetWorkloadStats", &api.GetWorkloadStats);
  return api;
}

std::string CcltuneApi::Version() const {
  int major = 0, minor = 0, patch = 0;
  if (GetVersion == nullptr || GetVersion(&major, &minor, &patch) != ccltuneSuccess) return "";
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

SimHooks ResolveSimHooks() {
  SimHooks hooks;
  Find("simncclSetMoveData", &hooks.SetMoveData);
  Find("simncclMismatchCount", &hooks.MismatchCount);
  Find("simncclHostSync", &hooks.HostSync);
  return hooks;
}

const char* CcltuneResultName(int rc) {
  switch (rc) {
    case ccltuneSuccess:
      return "success";
    case ccltuneInvalidArgument:
      return "invalid argument";
    case ccltuneNotFound:
      return "not found";
    case ccltuneUnavailable:
      return "unavailable";
    case ccltuneIoError:
      return "I/O error";
    default:
      return "unknown error";
  }
}

}  // namespace ccltune::bench
