// The real NCCL, resolved at run time: libccltune.so never lists libnccl as a needed library, so
// a preloaded ccltune always forwards to the NCCL the job itself loaded. Each entry is looked up
// on first use (pnccl<X>, which NCCL exports beside nccl<X>, else nccl<X> with RTLD_NEXT) and cached.
#pragma once

#include <atomic>

#include "nccl.h"

namespace ccltune {

struct RealNccl {
#define CCLTUNE_NCCL_FN(name, ret, params) ret(*name) params = nullptr;
#include "src/nccl_functions.inc"
#undef CCLTUNE_NCCL_FN
};

// The process's table; every pointer is resolved (or nullptr when NCCL lacks the function).
// Thread-safe; cheap after the first call.
const RealNccl& Real();
// True when some NCCL was found in the process.
bool RealNcclFound();
// NCCL's version code (ncclGetVersion), 0 if unknown.
int RealNcclVersion();

}  // namespace ccltune
