// Stage 5, the decision: the race's winner replaces NCCL's default only when its time relative to the
// default measured next to it is significantly below 1. The test is one-sided at kDecideZ standard
// errors of the relative estimate (both sides' sampling error), and never below options.min_gain.
#include <algorithm>
#include <cmath>

#include "optimizer/internal/stages.hpp"

namespace ccltune::optimizer::internal {

Verdict Decide(const Config& winner, const SampleStore& store, double min_gain, int64_t since, double z) {
  Verdict v;
  v.relative = winner.IsDefault() ? 1.0 : store.Relative(winner, since);
  // A floor on the noise: two or three samples can agree by chance.
  const double se = store.RelativeStdErr(winner, 0.03, since);
  v.required = 1 - std::max(min_gain, z * se);
  v.switch_to_winner = !winner.IsDefault() && std::isfinite(v.relative) && v.relative < v.required;
  v.undecided =
      !v.switch_to_winner && !winner.IsDefault() && std::isfinite(v.relative) && v.relative < 1 - min_gain / 2;
  return v;
}

}  // namespace ccltune::optimizer::internal
