// Stage 3, racing: successive halving over the screened configs. Each round every survivor (and NCCL's
// default, always in the race) gets more samples, interleaved, and the worse half drops out; the
// comparison is on samples relative to the default measured next to them (internal/samples.hpp).
#include <algorithm>
#include <cmath>

#include "optimizer/internal/stages.hpp"

namespace ccltune::optimizer::internal {

std::vector<Config> Survivors(const std::vector<Config>& contenders, const SampleStore& store, int keep) {
  std::vector<std::pair<double, size_t>> ranked;
  for (size_t i = 0; i < contenders.size(); ++i) ranked.emplace_back(store.Relative(contenders[i]), i);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  std::vector<Config> out;
  const double best = ranked.empty() ? 0 : ranked.front().first;
  for (const auto& [v, i] : ranked) {
    if (static_cast<int>(out.size()) >= std::max(1, keep)) break;
    if (!std::isfinite(v) || (!out.empty() && v > kRaceMargin * best)) break;
    out.push_back(contenders[i]);
  }
  return out;
}

Config Leader(const std::vector<Config>& contenders, const SampleStore& store) {
  const std::vector<Config> top = Survivors(contenders, store, 1);
  return top.empty() ? Config{} : top.front();
}

}  // namespace ccltune::optimizer::internal
