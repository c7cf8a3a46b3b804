// Logging in NCCL's manner: WARN / INFO / TRACE chosen by CCLTUNE_DEBUG, a fixed "ccltune" prefix
// with host, pid and rank, subsystems maskable by CCLTUNE_DEBUG_SUBSYS. Quiet by default.
#pragma once

#include <string>

#include "absl/strings/str_format.h"
#include "src/settings.hpp"

namespace ccltune {

enum class Subsys : unsigned { kInit = 1, kPlugin = 2, kCoord = 4, kOpt = 8, kExport = 16 };

void ConfigureLog(LogLevel level, const std::string& subsys_spec);
void SetLogRank(int rank);
bool LogEnabled(LogLevel level, Subsys subsys);
void LogLine(LogLevel level, Subsys subsys, const std::string& message);
// Prints regardless of level (the start line and the summary table), unless level is NONE.
void LogAlways(const std::string& message);

template <typename... Args>
void Log(LogLevel level, Subsys subsys, const absl::FormatSpec<Args...>& fmt, const Args&... args) {
  if (LogEnabled(level, subsys)) LogLine(level, subsys, absl::StrFormat(fmt, args...));
}

}  // namespace ccltune

// The arguments are evaluated only when the line is printed: a ToString() in a TRACE on the tuner's per-call
// path costs nothing while tracing is off.
#define CCLTUNE_LOG_AT(level, sub, ...)                           \
  do {                                                            \
    if (::ccltune::LogEnabled(level, ::ccltune::Subsys::sub))     \
      ::ccltune::Log(level, ::ccltune::Subsys::sub, __VA_ARGS__); \
  } while (0)
#define CCLTUNE_WARN(sub, ...) CCLTUNE_LOG_AT(::ccltune::LogLevel::kWarn, sub, __VA_ARGS__)
#define CCLTUNE_INFO(sub, ...) CCLTUNE_LOG_AT(::ccltune::LogLevel::kInfo, sub, __VA_ARGS__)
#define CCLTUNE_TRACE(sub, ...) CCLTUNE_LOG_AT(::ccltune::LogLevel::kTrace, sub, __VA_ARGS__)
