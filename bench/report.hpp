// ccltune-bench: results of a run, the nccl-tests-like table on stdout and the JSON report (rank 0).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ccltune/ccltune.h"
#include "nlohmann/json.hpp"
#include "vocab/types.hpp"

namespace ccltune::bench {

struct RowResult {
  Coll coll = Coll::kAllReduce;
  int dtype = 0;
  int op = -1;
  uint64_t bytes = 0;
  size_t count = 0;
  std::optional<double> default_us;
  std::optional<double> tuned_us;
  std::optional<double> oracle_us;
  std::optional<double> default_step_us;         // step interference: median makespan of a step with A's call
  std::optional<double> tuned_step_us;           // ... with B's call
  std::optional<ccltuneConfig_t> config;         // B's incumbent after tuning
  std::optional<ccltuneConfig_t> oracle_config;  // the configuration of oracle_us
  std::optional<int64_t> converge_calls;         // from ccltune's statistics
  int64_t tune_calls = 0;                        // calls the bench made on B before timing
  bool converged = false;                        // B reached Converged / Imported / Forced
  int oracle_configs = 0;                        // configurations measured by the oracle
  int oracle_aliases = 0;                  // configurations not measured: NCCL ran them as one measured (channel truth)
  std::optional<double> oracle_screen_us;  // the screening pass's minimum (biased low; oracle_us re-times)
  std::optional<double> oracle_default_us;  // NCCL's default re-timed in the same rounds as oracle_us
  struct OracleCandidate {
    ccltuneConfig_t config;
    double screen_us = 0;        // its screening median
    std::vector<double> rounds;  // its re-timed medians, one per round
    std::optional<double> us;    // median of the rounds
    // The same rounds' medians of each call's minimum over ranks (the rank that arrived last): set beside
    // the maximum so a search trace's min_us column has a reference.
    std::vector<double> rounds_min;
    // With --oracle-both: the same rounds on B, the tuned communicator, forced to this config (medians of
    // the per-call maximum over ranks).
    std::vector<double> rounds_b;
  };
  std::vector<OracleCandidate> oracle_candidates;  // the confirmation stage, in screening order
  // compare and oracle: ccltune's tuned config forced on the default's communicator and re-timed in the
  // same rounds as the oracle's candidates (median of the rounds): tuned against default and oracle on
  // one communicator, free of any difference between two communicators of the same ranks.
  std::optional<double> tuned_same_comm_us;
  int64_t check_errors = 0;  // mismatched elements, summed over ranks and checks
  // compare with --search-cost 1: host wall time (µs, maximum over ranks) of the tuning loop on B up to the settled
  // check (tune_calls calls in steps of --tune-step, a stream synchronize and a flag exchange after each), and of the
  // same loop on A for as many calls: what the search cost a job running this workload alone, syncs and candidates
  // included. Host time: meaningful on GPUs, not on the simulated cluster (whose clock is virtual).
  std::optional<double> tune_wall_us;
  std::optional<double> default_wall_us;
};

struct Meta {
  std::string command;
  std::string date;  // ISO 8601, UTC
  int nranks = 0;
  std::string nccl_version;
  std::string device;
  std::string backend;  // "cuda" | "simulated"
  int iters = 0;
  int warmup = 0;
  int tune_step = 0;     // compare: calls per host-synchronized step while tuning
  int settle_calls = 0;  // compare: calls of B after it converged, before the timing
  std::vector<std::string> modes;
  std::string ccltune_version;  // empty: ccltune absent
  bool preloaded = false;
  int64_t budget = -1;
  uint64_t seed = 0;
  bool interference = false;                   // the interference load ran while tuning and timing
  nlohmann::json interference_load = nullptr;  // kinds, sizes, the load's own throughput
};

std::string ConfigText(const ccltuneConfig_t& c);  // "ring/simple/nc8[/chunk131072]" or "default"

void PrintTableHeader(Coll coll, bool compare, bool oracle);
void PrintTableRow(const RowResult& r, bool compare, bool oracle);

// Writes the report atomically (a temporary file renamed over `path`).
// `sections`: a mode's own sections of the report, by name ("overhead", "loop"), or null.
absl::Status WriteJsonReport(const std::string& path, const Meta& meta, const std::vector<RowResult>& rows,
                             int64_t mismatches, const nlohmann::json& sections = nullptr);

}  // namespace ccltune::bench
