// Stage 5, the decision: the race's winner replaces NCCL's default only when its time relative to the
// default measured next to it is significantly below 1. The test is one-sided at kDecideZ standard
// errors of the relative estimate (both sides' sampling error), and never below options.min_gain. The
// noise is measured on log(time) (SampleStore::Noise), so the standard errors are of log(relative) and
// the bounds are ratios: at 36% noise a config at half the default's time is 0.69 below it in log, not
// 0.5 (a linear bound at 2.4 standard errors kept such configs on the default on fourteen samples).
#include <algorithm>
#include <cmath>

#include "optimizer/internal/stages.hpp"

namespace ccltune::optimizer::internal {

Verdict Decide(const Config& winner, const SampleStore& store, double min_gain, int64_t since, double z, int cap,
               double picked) {
  Verdict v;
  v.relative = winner.IsDefault() ? 1.0 : store.Relative(winner, since);
  // The shift for an arm picked as the best of several is a ratio too, exp(picked standard errors of its own
  // samples). Added to the ratio instead, it weighed the more the further below the default the arm read (at
  // 0.37 under 0.74 noise, 0.25 added is a factor 1.7; exp(0.25) is 1.28): real NCCL on the testbed, the
  // one-call loop, all-reduce 64 KiB kept the default with tree/simple/nc2 at 0.548 of it on 7 samples under
  // 0.27 noise (the other 23 loops took tree configs at 0.48-0.63). Near 1 the two agree.
  if (picked > 0 && !winner.IsDefault() && store.Count(winner, since) > 0) {
    v.relative *= std::exp(picked * store.OwnStdErr(winner, 0.03, since));
  }
  // A floor on the noise: two or three samples can agree by chance.
  const double se = store.RelativeStdErr(winner, 0.03, since);
  auto bound = [&](double sd) { return std::min(1 - min_gain, std::exp(-sd)); };
  v.required = bound(z * se);
  v.switch_to_winner = !winner.IsDefault() && std::isfinite(v.relative) && v.relative < v.required;
  // Undecided while the estimate shows a gain above min_gain / 2, or a gain of kWorthGain is still within
  // kPlausibleZ standard errors of it: two or three samples reading at the default's level do not rule out
  // a 13% gain under 7% noise (simulated testbed noise, all-reduce 1 MiB ring/simple/nc1).
  v.undecided =
      !v.switch_to_winner && !winner.IsDefault() && std::isfinite(v.relative) &&
      (v.relative < 1 - min_gain / 2 || v.relative * std::exp(-kPlausibleZ * se) < 1 - std::max(min_gain, kWorthGain));
  const int n = winner.IsDefault() ? 0 : store.Count(winner, since);
  if (v.undecided && cap > n && n > 0) {
    // The error shrinks as 1/sqrt(samples): what the cap's samples would have to clear.
    const double required_at_cap = bound(z * se * std::sqrt(static_cast<double>(n) / cap));
    if (v.relative * std::exp(-kFutileSlack * se) > required_at_cap) v.undecided = false;
  }
  return v;
}

}  // namespace ccltune::optimizer::internal
