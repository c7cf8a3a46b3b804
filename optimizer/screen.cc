// Stage 2, screening: a few log-spaced channel counts per subspace, one sample each, over the channels
// NCCL really runs. Measured channel curves are rugged (the best count can be 1 or the maximum), so
// the points span the whole range; refine.cc fills the gaps next to the winner later.
#include <algorithm>
#include <cmath>
#include <set>

#include "optimizer/internal/stages.hpp"

namespace ccltune::optimizer::internal {

std::vector<int> ScreenChannels(int max) {
  max = std::max(1, max);
  const int points = max <= 2 ? max : max <= 8 ? 3 : 4;
  std::vector<int> out;
  for (int i = 0; i < points; ++i) {
    const double x = points == 1 ? max : std::pow(static_cast<double>(max), static_cast<double>(i) / (points - 1));
    const int c = std::clamp(static_cast<int>(std::lround(x)), 1, max);
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

bool CostRuledOut(const SearchSpace& space, const Options& options, int algo, int proto) {
  if (options.screen_cost_ratio <= 0) return false;
  const SubspaceSet& sub = space.subspaces;
  if (algo == sub.nccl_algo && proto == sub.nccl_proto) return false;
  const float pick = PickCost(space);
  const float mine = space.cost[algo * kNumProtos + proto];
  if (pick <= 0 || mine < 0) return false;
  return mine > options.screen_cost_ratio * pick;
}

std::vector<Config> ScreenSet(const SearchSpace& space, const Options& options, const Prior& prior,
                              const SampleStore& store) {
  std::vector<Config> out;
  std::set<ConfigKey> seen;
  auto add = [&](const Config& asked) {
    if (static_cast<int>(out.size()) >= options.max_screen) return;
    if (!asked.HasSubspace() || !space.subspaces.Valid(asked.algo, asked.proto)) return;
    if (store.TwinOfDefault(asked)) return;
    const Config eff = store.Effective(asked);
    if (!seen.insert(KeyOf(eff)).second) return;
    out.push_back(eff);
  };
  for (const Config& h : prior.hints) {
    Config c = h;
    c.channels = std::clamp(c.channels, 1, std::max(1, space.max_channels));
    if (!space.chunk_dim) c.chunk_bytes = 0;
    add(c);
  }
  std::vector<std::pair<int, int>> subs = OrderSubspaces(space);
  std::erase_if(subs, [&](const std::pair<int, int>& s) { return CostRuledOut(space, options, s.first, s.second); });
  // Per subspace, its points from the largest down: the largest answers the ceiling question first. The
  // prior's first kFullScreen subspaces get every point, the next kHalfScreen the largest and the middle
  // one, the rest the largest only: a wide space is screened where NCCL's own estimates point, and no
  // subspace goes untried, except one NCCL's table rates more than options.screen_cost_ratio times its pick
  // (CostRuledOut, removed above).
  std::vector<std::vector<int>> points;
  for (size_t rank = 0; rank < subs.size(); ++rank) {
    const auto& [a, p] = subs[rank];
    const int ceiling = store.Ceiling(a, p);
    std::vector<int> pts = ScreenChannels(ceiling > 0 ? std::min(ceiling, space.max_channels) : space.max_channels);
    std::reverse(pts.begin(), pts.end());
    if (rank >= kFullScreen + kHalfScreen) {
      pts.resize(1);
    } else if (rank >= kFullScreen && pts.size() > 2) {
      pts = {pts.front(), pts[pts.size() / 2]};
    }
    if (space.channel_truth && ceiling == 0 && !store.ChannelsKnown(a, p, pts.front())) {
      // The points below the largest wait for NCCL's run of it (they may alias), except one channel: NCCL's
      // default ran on two or more, so the communicator has them and one channel is not what the largest
      // runs as (no recorded landscape has a subspace that ran a larger count on one channel). On the
      // testbed's two channels this screens every point in the first schedule instead of a round trip later.
      const std::optional<Config>& d = store.DefaultRan();
      const bool one = pts.size() > 1 && pts.back() == 1 && d && d->channels >= 2;
      pts.resize(1);
      if (one) pts.push_back(1);
    }
    points.push_back(std::move(pts));
  }
  for (size_t rank = 0;; ++rank) {
    bool any = false;
    for (size_t s = 0; s < subs.size(); ++s) {
      if (rank >= points[s].size()) continue;
      any = true;
      add(Config{subs[s].first, subs[s].second, points[s][rank], 0});
    }
    if (!any) break;
  }
  return out;
}

}  // namespace ccltune::optimizer::internal
