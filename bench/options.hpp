// ccltune-bench: command-line options (nccl-tests-like) and their parsing. Pure C++, no MPI.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/load.hpp"
#include "vocab/types.hpp"

namespace ccltune::bench {

struct Options {
  std::vector<Coll> colls = {Coll::kAllReduce};
  uint64_t min_bytes = 256 << 10;
  uint64_t max_bytes = 256 << 20;
  uint64_t step_factor = 4;
  std::vector<int> dtypes = {7};  // ncclFloat32
  int op = 0;                     // ncclSum
  int root = 0;
  int iters = 100;  // medians stable to about 1% at the simulated 4% noise
  int warmup = 5;
  bool check = true;
  bool compare = true;
  bool oracle = false;
  bool overhead = false;       // --mode overhead: host and GPU time per call, device memory of exploration
  bool landscape = false;      // --mode landscape: every config forced, repeated samples (bench/landscape.hpp)
  std::string landscape_out;   // landscape: output prefix (PREFIX.txt, PREFIX.samples)
  int landscape_rounds = 3;    // landscape: passes over every config, each in a new order
  int landscape_samples = 16;  // landscape: timed calls per config and round
  int landscape_channels = 0;  // landscape: channels asked, 1..N (0: ccltune's channel budget)
  // landscape: instead of blocks, each config's switch costs against NCCL's default (Bench::SwitchCosts).
  bool landscape_switch = false;
  // --mode loop: the sweep's rows as the workloads of one training loop on B until all converged, then the
  // converged loop's iterations against NCCL's default's (main.cc, RunLoop)
  bool loop = false;
  int loop_repeat = 1;        // loop: calls of each workload per iteration
  int loop_iters = 300;       // loop: iterations at most while tuning
  int overhead_calls = 2000;  // host-timed calls per communicator (overhead mode)
  LoadOptions load;           // --interference
  int max_tune_calls = 2000;
  // compare: calls between two host synchronizations while tuning (the "training step" of the tuning loop)
  int tune_step = 8;
  // compare: calls of B after it converged and before the timing, in --tune-step steps under the tuning's load
  // (what ccltune's monitoring and guard make of a converged workload shows in the timing; 0: none)
  int settle_calls = 0;
  // compare: time the tuning loop on the host, and the same loop on A (NCCL's default) for as many calls
  // (RowResult::tune_wall_us, default_wall_us): what searching cost a job running the workload alone
  bool search_cost = false;
  // oracle: the best this many configs of the screening pass, and NCCL's default, are timed again in
  // kOracleRounds alternating rounds; the oracle is the best re-timed median (0: screening pass only).
  int oracle_confirm = 4;
  // oracle with compare: each confirmation round also times every candidate forced on B, the tuned
  // communicator, right after A (RowResult::OracleCandidate::rounds_b): a config's time on the two
  // communicators side by side, B in forced mode (no search, no sync ops), then back to tuning.
  bool oracle_both = false;
  std::string json_path;
  int64_t budget = -1;  // recorded in the report only
  uint64_t seed = 0;    // offsets the data pattern; recorded in the report
  bool help = false;
};

// The sizes of the sweep: min, min*f, ... up to max (nccl-tests' -b/-e/-f).
std::vector<uint64_t> SweepSizes(const Options& o);

// "256K" -> 262144 (K/M/G are powers of 1024; a plain number is bytes).
absl::StatusOr<uint64_t> ParseBytes(const std::string& text);

// Parses argv (without argv[0]). Unknown options, names or values are errors, never defaults.
absl::StatusOr<Options> ParseOptions(const std::vector<std::string>& args);

std::string Usage();

}  // namespace ccltune::bench
