// What ccltune prints whatever CCLTUNE_DEBUG says (except NONE), besides the start line: the exit summary
// per tuned communicator on its leader, and the line that says an import was loaded. The table itself
// is config_table::FormatTable, which `ccltune show` prints too; docs/running.md explains each column.
#pragma once

#include <string>
#include <vector>

#include "config_table/config_table.hpp"

namespace ccltune {

// The rows worth a line in the summary: workloads ccltune tuned, forced, imported or measured. A
// communicator kept on NCCL's default (a benchmark's reference, say) has none, and is left out.
std::vector<config_table::Entry> SummaryRows(const std::vector<config_table::Entry>& all);

// "summary: <title>" and the tuned table of SummaryRows(`entries`) (bytes as nccl-tests counts them on
// `nranks`); empty when there is no such row.
std::string SummaryText(const std::string& title, const std::vector<config_table::Entry>& entries, int nranks);

// Logs (always) that the leader of a communicator of `nranks` ranks loaded `count` entries (`what`: "configs"
// or "CSV lines") from the import file `path`; they apply without tuning.
void LogImportLoaded(const std::string& path, int count, const char* what, int nranks);

}  // namespace ccltune
