// ccltune's log lines through NCCL's own logger: NCCL hands every tuner plugin its logger at init, and
// a line given to it lands where NCCL's own lines land (stdout, or NCCL_DEBUG_FILE with its %h/%p), with
// NCCL's prefix. A line NCCL would not print (its NCCL_DEBUG level or NCCL_DEBUG_SUBSYS filter drops
// it), or any line before NCCL handed a logger over, is printed by ccltune itself on stderr instead, so
// CCLTUNE_DEBUG alone decides whether a line appears, and NCCL's settings only where it goes.
#pragma once

#include <string>
#include <string_view>

#include "src/nccl_log_level.h"

namespace ccltune {

// NCCL's ncclDebugLogger_t (its plugin headers), declared here so that logging needs no nccl.h.
using NcclLoggerFn = void (*)(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt,
                              ...);

// NCCL's ncclDebugLogLevel values (src/nccl_log_level.h) as ints, and the subsystem flags ccltune's lines carry.
inline constexpr int kNcclLogNone = NCCL_LOG_NONE;
inline constexpr int kNcclLogVersion = NCCL_LOG_VERSION;
inline constexpr int kNcclLogWarn = NCCL_LOG_WARN;
inline constexpr int kNcclLogInfo = NCCL_LOG_INFO;
inline constexpr int kNcclLogAbort = NCCL_LOG_ABORT;
inline constexpr int kNcclLogTrace = NCCL_LOG_TRACE;
inline constexpr unsigned long kNcclSubsysInit = 1;
inline constexpr unsigned long kNcclSubsysTuning = 64;

// What NCCL prints, read from the variables NCCL reads: NCCL_DEBUG (VERSION, WARN, INFO, ABORT, TRACE;
// unset or unknown: nothing) and NCCL_DEBUG_SUBSYS (names, a leading ^ inverts; default INIT,BOOTSTRAP,ENV).
struct NcclDebugFilter {
  int level = kNcclLogNone;
  unsigned long mask = 0;
  bool Prints(int line_level, unsigned long flags) const { return line_level <= level && (flags & mask) != 0; }
  static NcclDebugFilter FromEnv(const char* (*getenv_fn)(const char*));
};

// The logger NCCL passed to the plugin's init (the first non-null one is kept: NCCL passes the same
// function to every context). Null: no routing.
void SetNcclLogger(NcclLoggerFn fn);

// Hands `message` (one line) to NCCL's logger when there is one and `filter` (the process's environment
// when null) says NCCL prints it; returns false when it did not, so the caller prints the line itself.
bool RouteToNccl(int nccl_level, unsigned long flags, std::string_view message,
                 const NcclDebugFilter* filter = nullptr);

}  // namespace ccltune
