// Recorded real landscapes (tests/data/landscapes, bench/landscape.hpp's files) replayed to the search
// with their measured noise, and a driver that runs a search the way the leader does: a schedule kept
// ahead of the calls, samples that arrive some calls after their call, channel truth at launch.
//
// Noise modes:
//  - kRecorded: each sample is drawn from the config's own recorded samples (max or min over ranks, what
//    ccltune's timing delivers), all rounds and positions pooled: heavy tails and slow blocks as measured,
//    but no common slow periods across configs;
//  - kDrift: the config's recorded within-block spread, times a slow-period factor shared by every config
//    and changing every kDriftBlock calls, drawn from the recorded default's block medians (all rows of
//    the file): slow periods that cover stretches of calls, as seen on the testbed;
//  - kSequential: as kDrift, but consecutive calls of one config read consecutive recorded calls of one of
//    its blocks (a random block and start at every switch of config, the next block when one runs out),
//    so a stretch of calls keeps the serial correlation measured inside the recorded blocks (testbed: the
//    difference of two adjacent 6-call means varies 5.6x what independent calls give); kRecorded and
//    kDrift draw every call independently.
// Truth (what the tuned result is judged by): the median of the config's recorded per-call maximum over
// ranks (the file's table); a config NCCL runs exactly as its default counts as the default.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "optimizer/optimizer.hpp"

namespace ccltune::optimizer::testing {

struct RecordedConfig {
  Config config;               // as asked when recorded
  Config ran;                  // what NCCL ran (Config{} if unknown)
  std::vector<double> min_us;  // per call, min over ranks
  std::vector<double> max_us;
  std::vector<int> block;  // per call: round * 1000 + pos
  double truth = 0;        // median of max_us
};

struct RecordedRow {
  std::string coll;  // nccl-tests name
  uint64_t bytes = 0;
  std::vector<RecordedConfig> configs;       // [0] is NCCL's default
  std::map<std::string, std::string> alias;  // asked name -> name of the recorded config it runs as
  SearchSpace space;  // valid subspaces and channels [1, max asked]; NCCL's pick from the default's run
  const RecordedConfig* Find(const Config& asked) const;  // the recorded config that runs as `asked`
  double Truth(const Config& asked) const;                // +inf if unknown
  double OracleTruth() const;                             // min over recorded configs
};

// Loads PREFIX.samples and PREFIX.txt's alias lines. Aborts the test (ADD_FAILURE + empty) on errors.
std::vector<RecordedRow> LoadRecorded(const std::string& prefix);

enum class NoiseMode { kRecorded, kDrift, kSequential };
inline constexpr int kDriftBlock = 12;
// "recorded", "drift", "sequential": the names optimizer-replay takes and the tests print.
const char* NoiseModeName(NoiseMode mode);
// The mode of that name; kRecorded for any other.
NoiseMode ParseNoiseMode(const std::string& name);

// Which per-call statistic over ranks the search is fed (ccltune's sync payload carries both).
enum class OverRanks { kMin, kMax };

class Replay {
 public:
  Replay(const RecordedRow& row, NoiseMode mode, uint64_t seed, std::vector<double> drift_factors,
         OverRanks over = OverRanks::kMax);
  // One call of `asked` at call index `t`: its sample (µs, over ranks as `over` says) and what NCCL ran.
  double Sample(const Config& asked, int64_t t);
  Config Ran(const Config& asked) const;

 private:
  const RecordedRow& row_;
  NoiseMode mode_;
  std::mt19937_64 rng_;
  std::vector<double> drift_;
  int64_t drift_block_ = -1;
  double drift_now_ = 1;
  OverRanks over_;
  // kSequential: the config of the last call and where its stretch stands in the recorded calls.
  const RecordedConfig* run_config_ = nullptr;
  size_t run_next_ = 0;  // index into the config's calls of the next one to read
};

// The default's block medians over the row's median, every row of the file: the slow-period factors.
std::vector<double> DriftFactors(const std::vector<RecordedRow>& rows);

struct DriveOptions {
  int lookahead = 6;  // keep this many entries scheduled ahead of the calls
  // A call's sample arrives this many calls later: on the simulated cluster's bench loop (a sync every 2
  // calls) about 6 calls to come back through the syncs and 4 more before an answer's schedule applies.
  int latency = 10;
  int max_calls = 2000;
  bool channel_truth = true;
  bool time_waiting = true;  // the incumbent's calls while the schedule is empty are timed too
};
struct DriveResult {
  Config incumbent;
  bool converged = false;
  int64_t calls = 0;    // calls of the workload until converged (incumbent calls while waiting included)
  int64_t samples = 0;  // samples the search received
  int64_t idle = 0;     // calls with nothing scheduled (the incumbent ran, a sample not asked for)
};
// Runs `s` like the leader: a schedule kept `lookahead` entries ahead of the calls, each call of a
// scheduled entry a sample `sample(config, call index)` that arrives `latency` calls later, NCCL's run
// `ran(config)` reported at the call (channel truth), the incumbent between schedules.
using SampleFn = std::function<double(const Config&, int64_t)>;
using RanFn = std::function<Config(const Config&)>;
DriveResult DriveWith(Search& s, const SampleFn& sample, const RanFn& ran, const DriveOptions& o);
DriveResult Drive(Search& s, Replay& r, const DriveOptions& o);

// After convergence, as the leader runs a converged workload: the incumbent on every call, every
// `monitor_every`-th of its calls timed (coordinator::kMonitorEvery), and at a sync the search asked for
// entries (its guard's probes of NCCL's default; not at the sync after one that shipped some: an update is
// in flight for kLag intervals), each run after one untimed call of the default (the leader's warm-up after
// a switch back to it); samples arrive `latency` calls later. Syncs come at intervals doubling from
// `first_interval` up to `max_interval` (the cadence while all is converged), or up to `checking_cap` while the
// guard checks (the leader's kGuardIntervalCap). Stops when the search is no longer converged (drift or the
// guard re-opened it) or after `calls` calls.
struct SteadyOptions {
  int64_t calls = 8192;
  int monitor_every = 16;
  int64_t first_interval = 8;
  int64_t checking_cap = 64;
  int64_t max_interval = 1 << 16;
  int latency = 10;
};
struct SteadyResult {
  bool reopened = false;
  int64_t calls = 0;          // calls run (until the search re-opened)
  int64_t default_calls = 0;  // of those, calls of NCCL's default (the probes and their warm-ups)
  int64_t probe_calls = 0;    // of those, calls of the entries the search asked for (probes and warm-ups)
};
// `t0`: the call index the workload is at (samples are drawn as `sample(config, t0 + i)`).
SteadyResult RunConverged(Search& s, const SampleFn& sample, const SteadyOptions& o, int64_t t0);

// The search space a leader would hand the search for this row.
SearchSpace SpaceOf(const RecordedRow& row, bool channel_truth);

}  // namespace ccltune::optimizer::testing
