// ccltune-bench, overhead mode: statistics of host times per call and device-memory snapshots,
// gathered over ranks for the report. The flow itself is in main.cc (Bench::Overhead).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "executor/executor.hpp"
#include "nlohmann/json.hpp"

namespace ccltune::bench {

// Per-call host times (µs) of one communicator on this rank, summarized; `rank_medians` holds
// every rank's median (filled on rank 0 by GatherHostTimes).
struct HostTimes {
  int64_t calls = 0;
  double median = 0, p10 = 0, p90 = 0, mean = 0, max = 0;
  std::vector<double> rank_medians;
};
HostTimes SummarizeHostTimes(std::vector<double> us);
// Collective over MPI_COMM_WORLD: rank 0 receives every rank's median in rank_medians.
void GatherHostTimes(HostTimes* t);
nlohmann::json HostTimesJson(const HostTimes& t);

// Device memory used (total - free) on this rank in MiB, gathered on rank 0 (collective). An empty
// vector when the backend has no memory information (simulated).
std::vector<double> GatherUsedMiB(executor::Device* device);

}  // namespace ccltune::bench
