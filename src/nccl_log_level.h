/* NCCL's ncclDebugLogLevel (its plugin headers' nccl_common.h, not in nccl.h), with the same name and
 * values, so that ccltune calls NCCL's logger through a pointer of exactly NCCL's function type: the
 * level is an enum there, and a call through a pointer whose first parameter is an int is undefined
 * behaviour (UBSan's -fsanitize=function reports it). */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif
