// optimizer internals: the stages of the search (optimizer.hpp's list), as functions of the samples
// measured so far. search.cc runs them in order; each file holds one stage.
#pragma once

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "optimizer/internal/samples.hpp"
#include "optimizer/optimizer.hpp"

namespace ccltune::optimizer::internal {

// prior.cc: the valid subspaces, most promising first: by NCCL's cost-table estimate where known
// (NCCL's own pick first on a tie or without estimates); then the hints as configs to screen first.
std::vector<std::pair<int, int>> OrderSubspaces(const SearchSpace& space);
// NCCL's cost-table estimate for its own pick (µs); < 0 where the pick is not a valid subspace or has none.
float PickCost(const SearchSpace& space);

// screen.cc: the channel counts screened per subspace, log-spaced over [1, max]: {1, 2} for 2,
// {1, ~3, 8} up to 8, {1, ~3, ~9, max} above (fewer when max is small).
std::vector<int> ScreenChannels(int max);
// How many subspaces, in the prior's order, get every screening point, and how many after them the
// largest and the middle one (the rest: the largest only).
inline constexpr size_t kFullScreen = 2;
inline constexpr size_t kHalfScreen = 2;
// Whether options.screen_cost_ratio rules subspace (algo, proto) out of screening: NCCL's cost-table
// estimate for it is more than that many times the estimate for NCCL's pick (never the pick itself,
// never where either estimate is unknown).
bool CostRuledOut(const SearchSpace& space, const Options& options, int algo, int proto);
// The screened configs in order: the hints, then the subspaces' points interleaved (every subspace's
// largest point first, so channel truth learns each subspace's ceiling early; fewer points for the
// subspaces the prior ranks low: kFullScreen, kHalfScreen; none for a subspace CostRuledOut), at most
// options.max_screen, as NCCL would run them (store.Effective), never twice, never a twin of NCCL's
// default. With channel truth (space.channel_truth), the points below a subspace's largest are listed
// only once NCCL's run of that largest point is known (or NCCL's default runs the subspace on that many),
// so no two screened configs alias; one channel is listed at once when NCCL's default ran on two or more.
std::vector<Config> ScreenSet(const SearchSpace& space, const Options& options, const Prior& prior,
                              const SampleStore& store);

// race.cc: the asynchronous race's rules. An arm's standard error and lower confidence bound
// (Relative - kBoundZ standard errors), with `pending` samples on their way counted as come at its estimate;
// the leader (the best measured arm by Relative; the default Config when none is measured); an arm more
// than kOutRatio times slower than the leader (or than the default, when the leader is slower) is out; the
// challenger is the arm other than the leader, not out, with the lowest lower bound, if that bound is below
// the leader's estimate (it may still be the better one), else none.
inline constexpr double kBoundZ = 1.5;
inline constexpr double kOutRatio = 1.5;
double RaceStdErr(const Config& c, const SampleStore& store, int pending = 0);
double LowerBound(const Config& c, const SampleStore& store, int pending = 0);
Config RaceLeader(const std::vector<Config>& arms, const SampleStore& store);
bool OutOfRace(const Config& arm, double leader_relative, const SampleStore& store);
std::optional<Config> Challenger(const std::vector<Config>& arms, const Config& leader, const SampleStore& store,
                                 const std::function<int(const Config&)>& pending = {});

// refine.cc: configs next to `winner` that no sample covers yet: channel counts halfway between the
// winner's and the nearest measured ones of its subspace (and below/above them up to the subspace's
// ceiling), then, where the space has a chunk axis, a spread of chunk sizes at the winner's channels.
std::vector<Config> Neighbours(const Config& winner, const SearchSpace& space, const SampleStore& store);

// decide.cc: whether `winner` replaces NCCL's default: its time relative to the default measured next
// to it must be below min(1 - min_gain, exp(-kDecideZ * standard error)), the error being that of
// log(relative) (the noise is measured on log(time)). Undecided while the estimate shows a gain above
// min_gain / 2 that is not yet significant (the caller may sample both sides more).
inline constexpr double kDecideZ = 2.4;
inline constexpr double kFutileSlack = 1.5;
inline constexpr double kPlausibleZ = 1.0;
inline constexpr double kWorthGain = 0.05;
struct Verdict {
  bool switch_to_winner = false;
  // Neither a significant gain nor evidence against one: more samples of both sides could decide. False
  // once the samples allowed (`cap`) could not: even kFutileSlack standard errors in the winner's favour
  // would leave it short of what `cap` fresh samples of it could confirm (a small gain inside heavy noise,
  // which kept searches sampling to the cap and then on NCCL's default all the same).
  bool undecided = false;
  double relative = 0;  // winner / default
  double required = 0;  // the relative time it had to beat
};
// Only samples that arrived at index `since` or later count: the winner was chosen on the earlier ones,
// which flatter it (of many noisy configs, the luckiest wins), so the decision is taken on fresh ones.
// `z`: the standard errors the gain must clear (kDecideZ, or more for an arm picked as the best of several).
// `cap`: fresh samples of the winner the caller would take at most (0: no limit, never futile).
// `picked`: for a winner picked as the best of several on these very samples, its estimate is moved up by
// this many standard errors of its own samples first (the winner's curse; the default's error is common
// to every arm and not part of it), as a factor exp(picked * error), on the log scale the noise is measured on.
Verdict Decide(const Config& winner, const SampleStore& store, double min_gain, int64_t since = 0, double z = kDecideZ,
               int cap = 0, double picked = 0);

// The chunk sizes of a protocol's axis (grain * 2^k within [min, max]); empty without one.
std::vector<int64_t> ChunkValues(const SearchSpace& space, int proto);

}  // namespace ccltune::optimizer::internal
