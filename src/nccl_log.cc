// Routing of ccltune's log lines through NCCL's logger (nccl_log.hpp).
#include "src/nccl_log.hpp"

#include <atomic>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace ccltune {
namespace {

std::atomic<NcclLoggerFn> g_logger{nullptr};

// NCCL's subsystem names and bits (ncclDebugLogSubSys, NCCL 2.28-2.30).
unsigned long SubsysBit(const std::string& name) {
  static const std::pair<const char*, unsigned long> kNames[] = {
      {"INIT", 1},         {"COLL", 2},        {"P2P", 4},
      {"SHM", 8},          {"NET", 16},        {"GRAPH", 32},
      {"TUNING", 64},      {"ENV", 128},       {"ALLOC", 256},
      {"CALL", 512},       {"PROXY", 1024},    {"NVLS", 2048},
      {"BOOTSTRAP", 4096}, {"REG", 8192},      {"PROFILE", 16384},
      {"RAS", 32768},      {"DESTROY", 65536}, {"ALLOC_HOST", 131072},
      {"ALL", ~0ul}};
  for (const auto& [n, bit] : kNames)
    if (name == n) return bit;
  return 0;
}

}  // namespace

NcclDebugFilter NcclDebugFilter::FromEnv(const char* (*getenv_fn)(const char*)) {
  NcclDebugFilter f;
  if (const char* v = getenv_fn("NCCL_DEBUG"); v != nullptr) {
    const std::string u = absl::AsciiStrToUpper(v);
    if (u == "VERSION") f.level = kNcclLogVersion;
    if (u == "WARN") f.level = kNcclLogWarn;
    if (u == "INFO") f.level = kNcclLogInfo;
    if (u == "ABORT") f.level = kNcclLogAbort;
    if (u == "TRACE") f.level = kNcclLogTrace;
  }
  f.mask = SubsysBit("INIT") | SubsysBit("BOOTSTRAP") | SubsysBit("ENV");
  if (const char* v = getenv_fn("NCCL_DEBUG_SUBSYS"); v != nullptr && *v != '\0') {
    std::string spec = absl::AsciiStrToUpper(v);
    const bool invert = spec[0] == '^';
    if (invert) spec.erase(0, 1);
    unsigned long mask = 0;
    for (absl::string_view part : absl::StrSplit(spec, ',')) mask |= SubsysBit(std::string(part));
    f.mask = invert ? ~mask : mask;
  }
  return f;
}

void SetNcclLogger(NcclLoggerFn fn) {
  NcclLoggerFn expected = nullptr;
  if (fn != nullptr) g_logger.compare_exchange_strong(expected, fn);
}

bool RouteToNccl(int nccl_level, unsigned long flags, std::string_view message, const NcclDebugFilter* filter) {
  NcclLoggerFn fn = g_logger.load(std::memory_order_acquire);
  if (fn == nullptr) return false;
  // NCCL reads its variables once; so does this (they are the same process's environment).
  static const NcclDebugFilter env = NcclDebugFilter::FromEnv(+[](const char* n) -> const char* { return getenv(n); });
  if (!(filter != nullptr ? *filter : env).Prints(nccl_level, flags)) return false;
  const std::string line(message);  // NCCL's format string gets "%s", never our text
  fn(static_cast<ncclDebugLogLevel>(nccl_level), flags, "ccltune", 0, "%s", line.c_str());
  return true;
}

}  // namespace ccltune
