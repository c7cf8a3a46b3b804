// optimizer: the search for one workload's best configuration, driven by measured samples.
// Per subspace (algorithm x protocol) a coordinate descent over channels (and chunk size where the
// plugin ABI offers it), starting from NCCL's own choice, with an adaptive step, early pruning of
// subspaces far behind the best, NCCL's default always measured, and a switch away from the
// default only on a gain larger than the measured noise. Pure C++: no CUDA, NCCL or MPI; tests
// drive it with synthetic cost functions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "vocab/types.hpp"

namespace ccltune::optimizer {

struct SearchSpace {
  SubspaceSet subspaces;   // valid algorithm x protocol entries and NCCL's pick
  int max_channels = 0;    // channel budget (>= 1): NC is searched in [1, max_channels]
  bool chunk_dim = false;  // search chunk size too (tuner v6, NCCL >= 2.30)
  // Per protocol grain (bytes); chunk sizes are searched as grain * 2^k within [min, max].
  int64_t chunk_grain[kNumProtos] = {0, 0, 0};
  int64_t chunk_min[kNumProtos] = {0, 0, 0};
  int64_t chunk_max[kNumProtos] = {0, 0, 0};
};

struct Options {
  int warmup_calls = 1;           // first calls of a candidate, discarded
  int samples_per_candidate = 3;  // measured calls per candidate while exploring
  int confirm_samples = 10;       // per side in the final default-vs-best comparison
  double min_gain = 0.02;         // switch away from the default only if best < default * (1 - gain),
                                  // where gain = max(min_gain, 2.5 * measured relative noise of the
                                  // compared estimates: per-sample noise * ~1.1 * sqrt(1/nd + 1/nb))
  double prune_ratio = 1.30;      // drop a subspace whose best is this far behind the global best
  int max_batch = 24;             // most candidates in one batch
  // After convergence: keep one sample every `monitor_every` calls of the incumbent; a median of
  // `monitor_window` samples that is `drift_ratio` away from the converged time re-opens the search.
  int monitor_every = 16;
  int monitor_window = 8;
  double drift_ratio = 0.15;
};

// A batch entry: run `config` for `calls` consecutive calls of the workload (the first
// Options::warmup_calls of them are warm-up and discarded by the search).
struct Candidate {
  Config config;
  int calls = 0;
  friend bool operator==(const Candidate&, const Candidate&) = default;
};

enum class State {
  kNeedBatch,  // call NextBatch()
  kWaiting,    // samples of the last batch are still missing
  kConverged,  // incumbent() is final until drift re-opens the search
};

struct Stats {
  double default_us = 0;    // median of NCCL's default (0 until measured)
  double incumbent_us = 0;  // median of the incumbent
  double noise = 0;         // measured relative noise (robust spread of repeated samples)
  int candidates_measured = 0;
  int batches = 0;
  int reopened = 0;
};

class Search {
 public:
  Search(const SearchSpace& space, const Options& options);
  ~Search();
  Search(Search&&) noexcept;
  Search& operator=(Search&&) noexcept;

  State state() const;
  // The next candidates to run, in order; at most `max_candidates` (<= Options::max_batch). Only in
  // kNeedBatch; moves to kWaiting (or kConverged when nothing is left to try: then empty).
  std::vector<Candidate> NextBatch(int max_candidates);
  // A measured call that ran `config` (warm-up included: the search drops them itself). Samples of
  // configs outside the current batch count as monitoring of the incumbent when they match it, and
  // are ignored otherwise.
  void AddSample(const Config& config, double us);
  // Best configuration so far (the default Config until something beats it significantly).
  Config incumbent() const;
  // Warm start: take `config` as incumbent and converge at once (import); `us` its known time or 0.
  // Monitoring still runs and may re-open the search.
  void Adopt(const Config& config, double us);
  // Forget the converged state and search again (drift, or on request).
  void Reopen();
  Stats stats() const;
  // What the search measured, for a trace log: every measured config with its estimate (µs) and
  // sample count, best first, the default marked; then the confirmation samples' medians, the
  // noise and the incumbent. One line, at most `max_configs` configs (the rest counted).
  std::string Describe(int max_configs = 16) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Every configuration of the space (the oracle's list): "no override" first, then every valid
// subspace x channels 1..max_channels (x chunk steps when chunk_dim).
std::vector<Config> EnumerateSpace(const SearchSpace& space);

}  // namespace ccltune::optimizer
