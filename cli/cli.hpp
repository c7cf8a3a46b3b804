// The `ccltune` command-line tool: read, check, compare, merge, convert and plot what ccltune writes.
// A thin layer over config_table (exports, NCCL example-tuner CSV, traces) and cli/plot; the tests call
// Run() directly with string streams.
#pragma once

#include <ostream>

namespace ccltune::cli {

// Exit statuses: 0 done; 1 the answer is "no" (validate found problems, diff found differences);
// 2 the command could not run (bad usage, a file that cannot be read or does not parse).
inline constexpr int kOk = 0;
inline constexpr int kNo = 1;
inline constexpr int kError = 2;

int Run(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace ccltune::cli
