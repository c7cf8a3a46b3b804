// Run-time resolution of the real NCCL entry points.
#include "src/nccl_api.hpp"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <mutex>
#include <string>

namespace ccltune {
namespace {

// A libnccl loaded RTLD_LOCAL (PyTorch's extension modules are) is invisible to RTLD_DEFAULT: find
// it among the loaded objects by name and open it again without loading anything.
void* FindLoadedNccl() {
  std::string path;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        const char* name = info->dlpi_name;
        if (name != nullptr && std::strstr(name, "libnccl.so") != nullptr) {
          *static_cast<std::string*>(data) = name;
          return 1;
        }
        return 0;
      },
      &path);
  return path.empty() ? nullptr : dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
}

void* Lookup(void* local_nccl, const char* bare) {
  std::string p = std::string("pnccl") + bare;
  std::string n = std::string("nccl") + bare;
  // pncclX is never defined by ccltune, so the default search finds NCCL's own.
  if (void* f = dlsym(RTLD_DEFAULT, p.c_str())) return f;
  if (local_nccl != nullptr) {
    if (void* f = dlsym(local_nccl, p.c_str())) return f;
    if (void* f = dlsym(local_nccl, n.c_str())) return f;
  }
  // Builds of NCCL without the profiling API: the next definition of ncclX after ours.
  return dlsym(RTLD_NEXT, n.c_str());
}

struct Holder {
  RealNccl table;
  bool found = false;
  int version = 0;
};

Holder& Resolve() {
  static Holder h;
  static std::once_flag once;
  std::call_once(once, [] {
    void* local_nccl = FindLoadedNccl();
#define CCLTUNE_NCCL_FN(name, ret, params) h.table.name = reinterpret_cast<ret(*) params>(Lookup(local_nccl, #name));
#include "src/nccl_functions.inc"
#undef CCLTUNE_NCCL_FN
    h.found = h.table.AllReduce != nullptr && h.table.CommInitRank != nullptr;
    if (h.table.GetVersion != nullptr) h.table.GetVersion(&h.version);
  });
  return h;
}

}  // namespace

const RealNccl& Real() { return Resolve().table; }
bool RealNcclFound() { return Resolve().found; }
int RealNcclVersion() { return Resolve().version; }

}  // namespace ccltune
