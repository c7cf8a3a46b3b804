// ccltune-bench: the optional run-time interfaces the bench uses when they are in the process,
// resolved with dlsym(RTLD_DEFAULT): ccltune's public C API (LD_PRELOADed libccltune.so) and the
// simulated NCCL's hooks. The bench runs unchanged without either.
#pragma once

#include <string>

#include "ccltune/ccltune.h"

namespace ccltune::bench {

struct CcltuneApi {
  decltype(&::ccltuneGetVersion) GetVersion = nullptr;
  decltype(&::ccltuneIsActive) IsActive = nullptr;
  decltype(&::ccltuneSetMode) SetMode = nullptr;
  decltype(&::ccltuneGetMode) GetMode = nullptr;
  decltype(&::ccltuneGetWorkloadStats) GetWorkloadStats = nullptr;

  // True when every entry point the bench needs was found.
  bool present() const { return GetVersion && IsActive && SetMode && GetWorkloadStats; }
  // "0.1.0", or "" when absent.
  std::string Version() const;
};

struct SimHooks {
  void (*SetMoveData)(int) = nullptr;          // simncclSetMoveData: move data on the next calls
  long long (*MismatchCount)(void) = nullptr;  // simncclMismatchCount: cross-rank config mismatches seen
  void (*HostSync)(void) = nullptr;            // simncclHostSync: the streams are idle until the next launch
};

CcltuneApi ResolveCcltune();
SimHooks ResolveSimHooks();

// ccltuneResult_t as text, for messages.
const char* CcltuneResultName(int rc);

}  // namespace ccltune::bench
