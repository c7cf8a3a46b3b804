// optimizer internals: the samples of one search, kept per config as NCCL really runs it (channel
// truth merges configs NCCL runs identically), in arrival order, with the estimates the stages use.
//
// Real timings drift: a slow period (interference, the network, the MPS scheduler) covers many calls
// in a row, and block medians of one config differ by 12-60% on the one-GPU testbed. NCCL's default is
// measured regularly between the other configs, so each sample is also read relative to the default's
// level next to it in time (the median of the nearest default samples): a slow period that slows
// every config cancels out of that ratio.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "vocab/types.hpp"

namespace ccltune::optimizer::internal {

// A config as a map key.
using ConfigKey = std::tuple<int, int, int, int64_t>;
inline ConfigKey KeyOf(const Config& c) { return {c.algo, c.proto, c.channels, c.chunk_bytes}; }
inline Config ConfigOf(const ConfigKey& k) {
  return Config{std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k)};
}

struct Sample {
  double us = 0;
  int64_t index = 0;  // arrival order over the whole search
  int stream = 0;     // which workload of the search's size class ran it
  ConfigKey asked{};  // the config the call asked for (its key may be a guess until NCCL's run is reported)
};

class SampleStore {
 public:
  // Channel truth. The default (no override) is never merged with a forced config, but a forced config
  // that NCCL runs exactly as it runs its default is recorded as the default's twin. Samples stored under a
  // guess for `asked` (Effective) move to what NCCL ran; those of other configs asked stay where they are.
  void NoteRan(const Config& asked, const Config& ran);
  // The largest channel count the search asks for (0: unknown). Only a call that asked for it and ran
  // fewer channels shows the subspace's ceiling: below it, NCCL may run fewer channels than asked for a
  // small message without running every larger request the same way (real NCCL 2.28 on two NVLink GPUs,
  // all-gather 64 KiB ring/LL: 5 ran as 4, 7 as 6, 11 as 8).
  void set_max_channels(int n) { max_channels_ = n; }
  // The config NCCL runs for `asked`, as far as known: what it ran, else `asked` with its channels
  // capped at the subspace's known ceiling (NCCL ran fewer channels than the largest request).
  Config Effective(const Config& asked) const;
  // True when `asked` is known or predicted to run exactly as NCCL's default.
  bool TwinOfDefault(const Config& asked) const;
  // What NCCL runs for its default (no override), once reported.
  const std::optional<Config>& DefaultRan() const { return default_ran_; }
  // Largest channel count NCCL runs for the subspace (0: not known yet).
  int Ceiling(int algo, int proto) const;
  // True once NCCL's run of some config of the subspace was reported (its ceiling question answered
  // for configs up to the channels asked then), and for `channels` up to what NCCL's default runs the
  // subspace on.
  bool ChannelsKnown(int algo, int proto, int channels) const;

  // A sample of a call that asked for `asked`, run by `stream` (stored under Effective(asked); twins
  // under the default).
  void Add(const Config& asked, double us, int stream = 0);
  const std::vector<Sample>& Of(const Config& effective) const;
  // Samples of the config, those that arrived at index `since` or later.
  int Count(const Config& effective, int64_t since = 0) const;
  // Every config with samples (effective keys), NCCL's default included.
  std::vector<Config> Measured() const;
  int64_t total() const { return next_index_; }
  // Changes whenever channel truth changes what a config runs as (a ceiling, a twin, a merge).
  uint64_t truth_version() const { return truth_version_; }

  // Robust estimate of the config's time (µs), +inf without samples.
  double Absolute(const Config& effective) const;
  // The config's time relative to NCCL's default measured next to it: the median over its samples of
  // sample / (median of the kLocal default samples of the same stream nearest in arrival order; samples
  // whose stream has none yet are left out). 1 for the default itself;
  // falls back to Absolute / Absolute(default) while the default has fewer than 2 samples; +inf
  // without samples.
  // `since`: only the config's samples that arrived at that index or later (a decision on fresh samples).
  double Relative(const Config& effective, int64_t since = 0) const;
  // Per-sample relative noise of the normalised samples (robust, pooled over configs); 0 if unknown.
  double Noise() const;
  // Standard error of Relative(effective, since) at the pooled noise (at least `floor`): the config's
  // samples and the default samples their references came from (shared by neighbouring samples, so
  // their error does not average out over the config's samples).
  double RelativeStdErr(const Config& effective, double floor, int64_t since = 0) const;
  // The part of it that is the config's own samples' (without the default's): how far an arm picked as
  // the best of several on these samples may owe its estimate to luck. Both are errors of log(Relative):
  // Noise() is measured on log(time).
  double OwnStdErr(const Config& effective, double floor, int64_t since = 0) const;
  // The config's samples (from index `since` on) each over the default measured next to it, in arrival
  // order; samples whose stream has no default sample yet are left out.
  std::vector<double> Normalised(const Config& effective, int64_t since = 0) const;

  void Clear();
  static constexpr int kLocal = 5;

 private:
  // `used` (optional) collects the arrival indices of the default samples the reference came from.
  double LocalDefault(int64_t index, int stream, std::vector<int64_t>* used = nullptr) const;
  void IndexDefaults();  // rebuilds default_by_stream_ from samples_
  std::map<ConfigKey, std::vector<Sample>> samples_;
  std::map<int, std::vector<Sample>> default_by_stream_;  // the default's samples per stream, in arrival order
  // Relative() and Noise() results until the samples change (the search asks for the same ones many times).
  uint64_t version_ = 0;
  uint64_t truth_version_ = 0;
  mutable std::map<std::pair<ConfigKey, int64_t>, std::pair<uint64_t, double>> relative_cache_;
  mutable std::pair<uint64_t, double> noise_cache_{0, 0};  // Noise() at version_ + 1 (0: none yet)
  std::map<ConfigKey, Config> ran_;                        // asked -> what NCCL ran
  std::map<std::pair<int, int>, int> ceiling_;             // subspace -> channels NCCL runs at most
  std::map<std::pair<int, int>, int> known_up_to_;         // subspace -> largest channel count asked with a known run
  std::optional<Config> default_ran_;
  int64_t next_index_ = 0;
  int max_channels_ = 0;
};

}  // namespace ccltune::optimizer::internal
