// Log sink: NCCL's logger where NCCL prints the line, else stderr, "host:pid:tid [rank] ccltune LEVEL message".
#include "src/log.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "src/nccl_log.hpp"

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

int NcclLevel(LogLevel l) {
  switch (l) {
    case LogLevel::kWarn:
      return kNcclLogWarn;
    case LogLevel::kTrace:
      return kNcclLogTrace;
    default:
      return kNcclLogInfo;  // INFO, and the lines printed whatever the level (start line, summary)
  }
}

// Each line of `message` goes to NCCL's logger where NCCL prints it (nccl_log.hpp), else to stderr as
// "host:pid:tid [rank] ccltune LEVEL line", all of a message's lines in one write so that lines of
// several ranks do not interleave.
void Emit(LogLevel level, unsigned long nccl_flags, const std::string& message) {
  const char* name = LevelName(level);
  const int rank = g_rank.load(std::memory_order_relaxed);
  std::string own;
  char host[64] = "?";
  for (absl::string_view line : absl::StrSplit(message, '\n')) {
    const std::string routed =
        rank >= 0 ? absl::StrFormat("ccltune rank %d: %s", rank, line) : absl::StrFormat("ccltune: %s", line);
    if (RouteToNccl(NcclLevel(level), nccl_flags, routed)) continue;
    if (own.empty()) gethostname(host, sizeof(host) - 1);
    own += absl::StrFormat("%s:%d:%d [%d] ccltune %s%s%s\n", host, static_cast<int>(getpid()),
                           static_cast<int>(syscall(SYS_gettid)), rank, name, *name ? " " : "", line);
  }
  if (own.empty()) return;
  fwrite(own.data(), 1, own.size(), stderr);
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

// Every ccltune line carries NCCL's INIT and TUNING flags: it reaches NCCL's output under NCCL's default
// NCCL_DEBUG_SUBSYS (INIT,BOOTSTRAP,ENV) and under TUNING alone.
constexpr unsigned long kNcclFlags = kNcclSubsysInit | kNcclSubsysTuning;

void LogLine(LogLevel level, Subsys, const std::string& message) { Emit(level, kNcclFlags, message); }

void LogAlways(const std::string& message) {
  if (g_level.load() == static_cast<int>(LogLevel::kNone)) return;
  Emit(LogLevel::kNone, kNcclFlags, message);
}

}  // namespace ccltune
