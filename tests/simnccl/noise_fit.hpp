// Fitting the simulated NCCL's noise model (noise_model.hpp) to calls recorded on real NCCL, and the statistics
// that compare recorded and simulated calls. Reads the `.samples` files of ccltune-bench's landscape mode
// (tests/data/landscapes/README.md): `collective bytes config round pos seq min_us max_us ran`, one line per timed
// call, in the order they ran (blocks of one config's calls after warm-up calls, rows one after the other).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "noise_model.hpp"

namespace simnccl {

struct RecordedCall {
  std::string coll;  // nccl-tests name
  uint64_t bytes = 0;
  std::string config;  // "default" or "aA.pP.ncN"
  int round = 0, pos = 0, seq = 0;
  double minUs = 0, maxUs = 0;  // min and max over ranks of the call's time
  std::string ran;              // what NCCL ran ("ring/simple/nc2")
};

// One `.samples` file: one run of one communicator.
struct RecordedSet {
  std::string name;
  int ranks = 0;        // from the `# ranks N, ...` header line
  int warmupCalls = 2;  // from `warm-up calls per block N` in the header
  std::vector<RecordedCall> calls;
};

bool ReadRecordedSet(const std::string& path, RecordedSet* out, std::string* err);
// The `.samples` format, with the header lines ReadRecordedSet needs.
std::string FormatRecordedSet(const RecordedSet& set);

// The statistics the fitted model must reproduce, computed the same way on recorded and simulated calls. A block
// is one config's consecutive timed calls of a round; a config is (collective, bytes, config) of a set.
struct NoiseStats {
  double cvMedian = 0, cvP90 = 0;          // robust CV of max_us in each block: 1.4826 MAD / median
  double spreadMedian = 0, spreadP90 = 0;  // per config with 2+ blocks: max / min of its block medians of max_us, - 1
  double ratioMedian = 0, ratioP90 = 0;    // per call: max_us / min_us
  double blockLag1 = 0;       // Spearman correlation of consecutive blocks of a row: their log median of min_us minus
                              // the median of their config's (persistence of slow periods)
  double minSpreadSlope = 0;  // median over blocks of the least-squares slope of min_us on max_us - min_us: the
                              // last rank's time falls as the others come earlier (overlap)
  double slowCvCorr = 0;      // Spearman correlation of a block's log median of min_us minus its config's, and its
                              // robust CV (noisier stretches in slow periods)
  double lagBlockSpread = 0;  // p90 - p10 of a block's log median (max_us - min_us) minus its config's
  int calls = 0, blocks = 0, configs = 0;
};
NoiseStats ComputeNoiseStats(const std::vector<RecordedSet>& sets);

// One statistic compared: the recorded value, the median of the simulated runs' (and their range), and whether
// |simulated - recorded| <= tolerance * scale, scale = recorded for CV and block spreads, recorded - 1 for the
// max/min ratios, 1 (absolute) for the correlations.
struct StatCheck {
  std::string name;
  double recorded = 0, simulated = 0, simulatedMin = 0, simulatedMax = 0, tolerance = 0;
  bool relative = true;  // tolerance relative to the scale above (false: absolute)
  bool pass = false;
};
std::vector<StatCheck> CompareNoiseStats(const NoiseStats& recorded, const std::vector<NoiseStats>& simulatedRuns);
// The sets' statistics against those of their schedules simulated with `noise`, seeds 1..seeds (set i as the
// communicator with key i + 1).
std::vector<StatCheck> CheckAgainstRecorded(const FittedNoise& noise, const std::vector<RecordedSet>& sets, int seeds);
// A table of the checks, one line each; `simulated` says what the simulated column is.
std::string FormatChecks(const std::vector<StatCheck>& checks, const std::string& simulated);

// The calls of `schedule` (same rows, configs, rounds, blocks and warm-up calls, in the same order) run on the
// simulated NCCL's clock logic with `noise`: each config's modelled time is its recorded median of max_us (the
// table's value), ranks start a call at the latest arrival, a timer around each call reads each rank's clock, and
// the lag follows the read. Call k of the run is sequence number k + 1 of a communicator with noise key `key`.
// `block_key`: the key of the slow-period blocks (the simulated NCCL draws them per process with
// kProcessNoiseKey; UINT64_MAX: `key`), `block_seq0`: the process's collectives before call 0 (their blocks count
// the process's collectives).
RecordedSet SimulateSet(const FittedNoise& noise, const RecordedSet& schedule, uint64_t seed, uint64_t key,
                        uint64_t block_key = UINT64_MAX, uint64_t block_seq0 = 0);

struct FitOptions {
  int blockCalls = 14;
  int callQuantiles = 201;
  int slowQuantiles = 101;
  int rhoSeeds = 8;  // simulated runs per candidate value of a calibrated parameter
};
struct FitReport {
  int callValues = 0, slowValues = 0;  // within-block values and default blocks the quantiles were taken from
  double lagRatio90 = 0;               // q90 / q50 of (max - min) over its block's median, pooled
  struct Calibration {
    std::string parameter, statistic;
    double value = 0, recorded = 0, simulated = 0;  // the value chosen; the statistic recorded and simulated there
  };
  std::vector<Calibration> calibrations;  // in the order they were made
};
// Fits the parameters to the pooled sets (their ranks must agree). False with *err when the data cannot be fitted.
bool FitNoise(const std::vector<RecordedSet>& sets, const FitOptions& options, NoiseParams* out, FitReport* report,
              std::string* err);

// Quantile (linear interpolation between order statistics) and median of unsorted values.
double Quantile(std::vector<double> v, double p);
inline double Median(std::vector<double> v) { return Quantile(std::move(v), 0.5); }

}  // namespace simnccl
