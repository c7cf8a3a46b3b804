// Log sink: one line per message to stderr, "host:pid:tid [rank] ccltune LEVEL message".
#include "src/log.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace ccltune {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};
std::atomic<unsigned> g_mask{~0u};
std::atomic<int> g_rank{-1};

unsigned MaskOf(std::string_view name) {
  if (name == "INIT") return static_cast<unsigned>(Subsys::kInit);
  if (name == "PLUGIN") return static_cast<unsigned>(Subsys::kPlugin);
  if (name == "COORD") return static_cast<unsigned>(Subsys::kCoord);
  if (name == "OPT") return static_cast<unsigned>(Subsys::kOpt);
  if (name == "EXPORT") return static_cast<unsigned>(Subsys::kExport);
  if (name == "ALL") return ~0u;
  return 0;
}

const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kTrace:
      return "TRACE";
    default:
      return "";
  }
}

void Emit(const char* level, const std::string& message) {
  char host[64] = "?";
  gethostname(host, sizeof(host) - 1);
  const int rank = g_rank.load(std::memory_order_relaxed);
  std::string line = absl::StrFormat("%s:%d:%d [%d] ccltune %s%s%s\n", host, static_cast<int>(getpid()),
                                     static_cast<int>(syscall(SYS_gettid)), rank, level, *level ? " " : "", message);
  // One write per line so lines of several ranks do not interleave.
  fwrite(line.data(), 1, line.size(), stderr);
  fflush(stderr);
}

}  // namespace

void ConfigureLog(LogLevel level, const std::string& subsys_spec) {
  g_level.store(static_cast<int>(level));
  absl::string_view spec = subsys_spec;
  bool exclude = false;
  if (!spec.empty() && spec[0] == '^') {
    exclude = true;
    spec.remove_prefix(1);
  }
  unsigned mask = 0;
  for (absl::string_view part : absl::StrSplit(spec, ',')) mask |= MaskOf(absl::AsciiStrToUpper(part));
  g_mask.store(exclude ? ~mask : mask);
}

void SetLogRank(int rank) { g_rank.store(rank); }

bool LogEnabled(LogLevel level, Subsys subsys) {
  return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed) &&
         (g_mask.load(std::memory_order_relaxed) & static_cast<unsigned>(subsys)) != 0;
}

void LogLine(LogLevel level, Subsys, const std::string& message) { Emit(LevelName(level), message); }

void LogAlways(const std::string& message) {
  if (g_level.load() == static_cast<int>(LogLevel::kNone)) return;
  Emit("", message);
}

}  // namespace ccltune
