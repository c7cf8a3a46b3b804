// NCCL's logger callback, handed to every plugin's init (tuner and profiler), declared locally like the plugin
// ABIs that use it (tuner_abi.h, profiler_abi.h).
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

// The same enum as ccltune's src/nccl_log_level.h (a file that includes both gets one of them).
#ifndef CCLTUNE_HAVE_NCCL_DEBUG_LOG_LEVEL
#define CCLTUNE_HAVE_NCCL_DEBUG_LOG_LEVEL 1
typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;
#endif
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                  const char* fmt, ...);

#ifdef __cplusplus
}
#endif
