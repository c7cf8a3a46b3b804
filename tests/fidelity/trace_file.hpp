// Fidelity traces: where a rank's trace file is and how a line is appended to it. Shared by the recording
// tuner plugin (NCCL's calls) and the scripted programs (markers), which write the same file through separate
// descriptors: every line is one O_APPEND write, so the lines of both stay in call order.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace ccltune::fidelity {

// The process's rank as the launcher gives it (Open MPI, then PMI), or -1 when launched without one.
inline int LauncherRank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return -1;
}

// "$FIDELITY_TRACE.<rank>", or "" when FIDELITY_TRACE is unset or empty.
inline std::string TracePath() {
  const char* base = std::getenv("FIDELITY_TRACE");
  if (base == nullptr || *base == '\0') return "";
  return std::string(base) + "." + std::to_string(LauncherRank() < 0 ? 0 : LauncherRank());
}

// Opens the trace for appending (truncating it first when `truncate`); -1 on failure.
inline int OpenTrace(const std::string& path, bool truncate) {
  return open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0644);
}

// Appends `line` and a newline in one write.
inline bool AppendLine(int fd, std::string line) {
  line.push_back('\n');
  return fd >= 0 && write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
}

}  // namespace ccltune::fidelity
