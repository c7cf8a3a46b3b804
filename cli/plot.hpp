// Pictures for `ccltune plot`: what to draw (pure, tested) and drawing it with gnuplot (a child process).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config_table/trace_format.hpp"

namespace ccltune::cli {

struct Series {
  std::string label;
  std::string style;  // gnuplot's "with ..." clause
  std::vector<std::pair<double, double>> points;
};

struct Panel {
  std::string title;
  std::vector<Series> series;
};

struct PlotSpec {
  std::string title;
  std::string xlabel;
  std::string ylabel;
  bool x_bytes = false;  // log2 axis labelled in binary units (256 KiB, 1 MiB, ...)
  std::vector<Panel> panels;
};

// nccl-tests' bus-bandwidth factor: all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n, 1 otherwise.
double BusBandwidthFactor(std::string_view collective, int nranks);

// ccltune-bench's JSON report: per collective and dtype, bus bandwidth (GB/s) against nccl-tests' size of
// NCCL's default, the tuned config and the oracle (the rows that have each).
absl::StatusOr<PlotSpec> BenchPlot(const std::string& json_text, const std::string& source_name);

// A tuning trace: time per call against the call index for one workload of one communicator, one
// series per role. Empty `comm` / `workload`: the communicator, then the workload, with the most rows.
absl::StatusOr<PlotSpec> TracePlot(const std::vector<config_table::TraceRow>& rows, const std::string& comm,
                                   const std::string& workload);

// The gnuplot script that draws `spec` into `png` (data inline, nothing else read).
std::string GnuplotScript(const PlotSpec& spec, const std::string& png);

// Runs `gnuplot` (a program name looked up in PATH, or a path) on the script; checks the PNG exists.
absl::Status RunGnuplot(const std::string& gnuplot, const std::string& script, const std::string& png);

}  // namespace ccltune::cli
