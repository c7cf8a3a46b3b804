// Stage 3, racing: the rules of the asynchronous race (search.cc runs it). The leader is the best measured
// arm on samples relative to the default measured next to them (internal/samples.hpp); its challenger is
// the arm that may still be better than it: the lowest lower confidence bound among the others, counting
// the samples still on their way as come (so a schedule kept ahead of the calls spreads over the arms).
// An arm far slower than the leader is out of the race. A single sample's error is the pooled one: doubling it (a
// second look before an arm is dropped) kept all-reduce 64 KiB on the slower config more often on the one-GPU
// testbed (docs/results/search-testbed.md, fortieth session).
#include <algorithm>
#include <cmath>
#include <limits>

#include "optimizer/internal/stages.hpp"

namespace ccltune::optimizer::internal {

double RaceStdErr(const Config& c, const SampleStore& store, int pending) {
  const int n = store.Count(c);
  const double se = store.RelativeStdErr(c, 0.03);
  if (pending <= 0 || n == 0 || !std::isfinite(se)) return se;
  return se * std::sqrt(static_cast<double>(n) / (n + pending));
}

double LowerBound(const Config& c, const SampleStore& store, int pending) {
  return store.Relative(c) - kBoundZ * RaceStdErr(c, store, pending);
}

Config RaceLeader(const std::vector<Config>& arms, const SampleStore& store) {
  Config best;
  double best_v = std::numeric_limits<double>::infinity();
  for (const Config& a : arms) {
    const double v = store.Count(a) > 0 ? store.Relative(a) : std::numeric_limits<double>::infinity();
    if (v < best_v) best_v = v, best = a;
  }
  return best;
}

bool OutOfRace(const Config& arm, double leader_relative, const SampleStore& store) {
  return store.Count(arm) > 0 && store.Relative(arm) > kOutRatio * std::min(1.0, leader_relative);
}

std::optional<Config> Challenger(const std::vector<Config>& arms, const Config& leader, const SampleStore& store,
                                 const std::function<int(const Config&)>& pending) {
  const double lv = store.Relative(leader);
  std::optional<Config> best;
  double best_v = std::numeric_limits<double>::infinity();
  for (const Config& a : arms) {
    if (a == leader || store.Count(a) == 0 || OutOfRace(a, lv, store)) continue;
    const double v = LowerBound(a, store, pending ? pending(a) : 0);
    if (v < best_v) best_v = v, best = a;
  }
  if (best && best_v < lv) return best;
  return std::nullopt;
}

}  // namespace ccltune::optimizer::internal
