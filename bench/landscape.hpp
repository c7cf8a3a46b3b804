// ccltune-bench --mode landscape: records a forced-config landscape on real (or simulated) NCCL with
// repeated samples per config, as test data for the optimizer and for the simulated NCCL's noise model.
// This file holds the pure part (names, files, statistics); bench/main.cc drives the calls.
//
// Files (rank 0), for PREFIX given by --landscape-out:
//  PREFIX.txt      the table, in the format of the reference measurements (../shared/data): one line
//                  per (collective, config, bytes): `collective config bytes us busbw`, us = median over
//                  every sample of the per-call maximum over ranks (what a job waits for);
//  PREFIX.samples  every timed call: `collective bytes config round pos seq min_us max_us ran`, min/max
//                  over ranks of the call's time, `pos` the config's position in its round (drift shows
//                  against it), `ran` what NCCL really ran for the config (channel truth) or `?`.
// Configs are named `default` or `aA.pP.ncN` (A: NCCL_ALGO_* index, P: NCCL_PROTO_* index, N channels
// asked), as in the reference file; configs that NCCL runs identically to an earlier one of the list
// (same algorithm, protocol and channels really used) are recorded once, as `# alias` lines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "vocab/types.hpp"

namespace ccltune::bench {

// "default" or "a1.p2.nc8" (".ck131072" appended when a chunk size is set).
std::string LandscapeConfigName(const Config& c);
// nccl-tests' collective names ("all_reduce", ...).
std::string NcclTestsCollName(Coll c);
// nccl-tests' bus bandwidth factor: algbw * factor = busbw.
double BusBwFactor(Coll c, int nranks);

struct LandscapeSample {
  Coll coll = Coll::kAllReduce;
  uint64_t bytes = 0;
  Config config;
  int round = 0;
  int pos = 0;  // position of the config's block in its round
  int seq = 0;  // sample index within the block
  double min_us = 0;
  double max_us = 0;
  std::string ran;  // "ring/ll/nc2" or "?"
};

struct LandscapeAlias {
  Coll coll = Coll::kAllReduce;
  uint64_t bytes = 0;
  Config config;   // the config asked for
  Config same_as;  // the earlier config NCCL runs identically
  std::string ran;
};

// One `collective config bytes us busbw` line per (collective, bytes, config) of `samples`, in first-seen
// order: us = median of max_us, busbw in GB/s.
std::vector<std::string> LandscapeTableLines(const std::vector<LandscapeSample>& samples, int nranks);

// Writes PREFIX.txt and PREFIX.samples (atomically, whole files). `header` lines go first, as comments.
absl::Status WriteLandscape(const std::string& prefix, const std::vector<std::string>& header,
                            const std::vector<LandscapeSample>& samples, const std::vector<LandscapeAlias>& aliases,
                            int nranks);

}  // namespace ccltune::bench
