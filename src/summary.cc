// The exit summary and the import line (summary.hpp).
#include "src/summary.hpp"

#include "absl/strings/str_format.h"
#include "src/log.hpp"

namespace ccltune {

std::vector<config_table::Entry> SummaryRows(const std::vector<config_table::Entry>& all) {
  std::vector<config_table::Entry> out;
  for (const auto& e : all)
    if (e.state != config_table::WorkloadState::kDefault || e.samples > 0 || e.default_us > 0) out.push_back(e);
  return out;
}

std::string SummaryText(const std::string& title, const std::vector<config_table::Entry>& entries, int nranks) {
  const std::vector<config_table::Entry> rows = SummaryRows(entries);
  if (rows.empty()) return std::string();
  config_table::TableOptions o;
  o.nranks = nranks;
  return absl::StrFormat("summary: %s\n%s", title, config_table::FormatTable(rows, o));
}

void LogImportLoaded(const std::string& path, int count, const char* what, int nranks) {
  LogAlways(absl::StrFormat("import loaded: %d %s from %s for this communicator of %d ranks; they apply without tuning",
                            count, what, path, nranks));
}

}  // namespace ccltune
