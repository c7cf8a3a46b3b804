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

#define CCLTUNE_WARN(sub, ...) ::ccltune::Log(::ccltune::LogLevel::kWarn, ::ccltune::Subsys::sub, __VA_ARGS__)
#define CCLTUNE_INFO(sub, ...) ::ccltune::Log(::ccltune::LogLevel::kInfo, ::ccltune::Subsys::sub, __VA_ARGS__)
#define CCLTUNE_TRACE(sub, ...) ::ccltune::Log(::ccltune::LogLevel::kTrace, ::ccltune::Subsys::sub, __VA_ARGS__)
