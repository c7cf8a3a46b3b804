// What ccltune prints whatever CCLTUNE_DEBUG says (except NONE), besides the start line: the exit summary
// per tuned communicator on its leader, and the line that says an import was loaded. The table itself
// is config_table::FormatTable, which `ccltune show` prints too; docs/running.md explains each column.
#pragma once

#include <string>
#include <vector>

#include "config_table/config_table.hpp"

namespace ccltune {

// "summary: <title>" and the tuned table of `entries` (bytes as nccl-tests counts them on `nranks`).
std::string SummaryText(const std::string& title, const std::vector<config_table::Entry>& entries, int nranks,
                        bool nccl_env_forces_algo);

// Logs (always) that the leader of a communicator of `nranks` ranks loaded `count` entries (`what`: "configs"
// or "CSV lines") from the import file `path`; they apply without tuning.
void LogImportLoaded(const std::string& path, int count, const char* what, int nranks);

}  // namespace ccltune
