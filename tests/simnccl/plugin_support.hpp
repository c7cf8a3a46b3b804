// What the simulated NCCL's tuner and profiler loaders share: NCCL 2.28's rule for finding a plugin library
// (src/plugin/plugin_open.cc: one rule for NCCL_TUNER_PLUGIN and NCCL_PROFILER_PLUGIN), the logger handed to a
// plugin's init, and the one way to call into a plugin.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "nccl_log_abi.h"

namespace simnccl {

// The libraries NCCL tries, in order, for the plugin named by `name` (the variable's value, or nullptr when unset)
// and the library prefix ("libnccl-tuner", "libnccl-profiler"):
//  - unset or empty: "<prefix>.so";
//  - otherwise the value itself (nullopt: a case-insensitive prefix of "STATIC_PLUGIN" names the program itself),
//    then, if the value is a bare name (no '/', and not both "lib..." and "....so"), "<prefix>-<value>.so".
// "none" is the caller's to check first. (NCCL then falls back to a loaded network plugin's library, which the
// simulated NCCL has none of.)
std::vector<std::optional<std::string>> PluginLibCandidates(const std::string& prefix, const char* name);

// dlopen (RTLD_NOW | RTLD_LOCAL) of the first candidate that opens, or nullptr; *tried lists the names tried.
void* OpenPluginLib(const std::string& prefix, const char* name, std::string* tried);

// The logger every plugin's init gets: warnings always, the rest with SIMNCCL_DEBUG set.
void PluginLog(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...);

// Every call into a plugin goes through CallPlugin. A plugin declares the ABI from its own copy of the header, as
// real NCCL plugins do (ccltune's src/tuner_abi.h names its types ccltune* and passes the collective as int where
// tuner_abi.h has the ncclFunc_t enum), so the C++ function types differ by name while the C ABI is the same
// (abi_compat_check.cc checks that at compile time). clang's -fsanitize=function compares those names and would
// report every plugin call of the sanitizer builds: it is off here, and only here.
#if defined(__clang__)
#define SIMNCCL_NO_SANITIZE_FUNCTION __attribute__((no_sanitize("function")))
#else
#define SIMNCCL_NO_SANITIZE_FUNCTION
#endif
template <typename Fn, typename... Args>
SIMNCCL_NO_SANITIZE_FUNCTION auto CallPlugin(Fn fn, Args... args) {
  return fn(args...);
}

}  // namespace simnccl
