// optimizer-replay: runs the search on every row of recorded landscapes (tests/data/landscapes) with
// their noise, many seeds, and prints per row and per collective what it found against the recorded
// oracle. For looking at the search's behaviour; tests/optimizer/replay_test.cc checks the targets.
// usage: optimizer-replay PREFIX [recorded|drift|sequential] [seeds] [latency] [lookahead]
// Env: REPLAY_TIMING_MIN, REPLAY_MIN_GAIN_PCT, REPLAY_RACE_BUDGET, REPLAY_DESCRIBE=coll/bytes, REPLAY_TAIL=calls
// (see below).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tests/optimizer/replay.hpp"

using namespace ccltune;
using namespace ccltune::optimizer;
using namespace ccltune::optimizer::testing;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PREFIX [recorded|drift|sequential] [seeds] [latency] [lookahead]\n", argv[0]);
    return 2;
  }
  const std::string prefix = argv[1];
  const NoiseMode mode = argc > 2 ? ParseNoiseMode(argv[2]) : NoiseMode::kRecorded;
  const int seeds = argc > 3 ? std::atoi(argv[3]) : 20;
  DriveOptions d;
  if (argc > 4) d.latency = std::atoi(argv[4]);
  if (argc > 5) d.lookahead = std::atoi(argv[5]);
  const std::vector<RecordedRow> rows = LoadRecorded(prefix);
  const std::vector<double> drift = DriftFactors(rows);
  struct Acc {
    double log_default = 0, log_tuned = 0, log_oracle = 0;
    int n = 0;
  };
  std::map<std::string, Acc> per_coll;
  double worst_default = 0, worst_oracle = 0, calls = 0, idle = 0, samples = 0;
  int runs = 0, unconverged = 0, slower = 0;
  std::vector<double> all_calls;  // every run's calls: the tail is what a training loop waits for
  for (const RecordedRow& row : rows) {
    double sum_tuned = 0, worst_row = 0, sum_calls = 0;
    std::map<std::string, int> picks;
    for (int seed = 1; seed <= seeds; ++seed) {
      Options options;
      // REPLAY_MIN_GAIN_PCT=N: the search's min_gain (CCLTUNE_MIN_GAIN_PCT in a job), default 2.
      if (const char* gain = std::getenv("REPLAY_MIN_GAIN_PCT"); gain != nullptr)
        options.min_gain = std::atof(gain) / 100;
      // REPLAY_RACE_BUDGET=N: the search's race budget (CCLTUNE_RACE_BUDGET in a job), default 18.
      if (const char* budget = std::getenv("REPLAY_RACE_BUDGET"); budget != nullptr)
        options.race_budget = std::atoi(budget);
      Search s(SpaceOf(row, d.channel_truth), options);
      Replay r(row, mode, static_cast<uint64_t>(seed) * 7919 + row.bytes, drift,
               std::getenv("REPLAY_TIMING_MIN") != nullptr ? OverRanks::kMin : OverRanks::kMax);
      DriveResult res = Drive(s, r, d);
      if (std::getenv("REPLAY_DESCRIBE") != nullptr &&
          (std::string(std::getenv("REPLAY_DESCRIBE")) == row.coll + "/" + std::to_string(row.bytes)))
        std::printf("  seed %d: %s\n", seed, s.Describe(20).c_str());
      // REPLAY_TAIL=N: what the runs that took N calls or more measured.
      if (const char* tail = std::getenv("REPLAY_TAIL"); tail != nullptr && res.calls >= std::atoi(tail))
        std::printf("  %s/%llu seed %d, %lld calls: %s\n", row.coll.c_str(), static_cast<unsigned long long>(row.bytes),
                    seed, static_cast<long long>(res.calls), s.Describe(20).c_str());
      if (!res.converged) ++unconverged;
      const double tuned = row.Truth(res.incumbent);
      sum_tuned += std::log(tuned);
      worst_row = std::max(worst_row, tuned / row.Truth(Config{}));
      slower += tuned > 1.02 * row.Truth(Config{}) ? 1 : 0;
      worst_oracle = std::max(worst_oracle, tuned / row.OracleTruth());
      sum_calls += static_cast<double>(res.calls);
      calls += static_cast<double>(res.calls);
      all_calls.push_back(static_cast<double>(res.calls));
      idle += static_cast<double>(res.idle);
      samples += static_cast<double>(res.samples);
      ++runs;
      ++picks[res.incumbent.ToString()];
    }
    const double tuned = std::exp(sum_tuned / seeds);
    Acc& a = per_coll[row.coll];
    a.log_default += std::log(row.Truth(Config{}));
    a.log_tuned += std::log(tuned);
    a.log_oracle += std::log(row.OracleTruth());
    ++a.n;
    worst_default = std::max(worst_default, worst_row);
    std::string top;
    for (const auto& [k, v] : picks) top += " " + k + "x" + std::to_string(v);
    std::printf("%-14s %9llu default %8.1f oracle %8.1f tuned %8.1f  d/t %.3f t/o %.3f worst t/d %.3f calls %.1f |%s\n",
                row.coll.c_str(), static_cast<unsigned long long>(row.bytes), row.Truth(Config{}), row.OracleTruth(),
                tuned, row.Truth(Config{}) / tuned, tuned / row.OracleTruth(), worst_row, sum_calls / seeds,
                top.c_str());
  }
  for (const auto& [coll, a] : per_coll) {
    const double dt = std::exp((a.log_default - a.log_tuned) / a.n),
                 dor = std::exp((a.log_default - a.log_oracle) / a.n);
    std::printf("%-14s geomean default/tuned %.3f default/oracle %.3f share %.2f\n", coll.c_str(), dt, dor,
                std::log(dt) / std::log(dor));
  }
  std::printf(
      "runs %d, unconverged %d, mean calls %.1f (idle %.1f, samples %.1f), worst tuned/default %.3f, worst "
      "tuned/oracle %.3f\n",
      runs, unconverged, calls / runs, idle / runs, samples / runs, worst_default, worst_oracle);
  std::sort(all_calls.begin(), all_calls.end());
  if (!all_calls.empty()) {
    auto q = [&](double f) {
      return all_calls[std::min(all_calls.size() - 1, static_cast<size_t>(f * all_calls.size()))];
    };
    std::printf("calls per run: median %.0f, p90 %.0f, p99 %.0f, max %.0f; slower than the default by >2%%: %d\n",
                q(0.5), q(0.9), q(0.99), all_calls.back(), slower);
  }
  return 0;
}
