// Stage 1, the prior: which subspaces to look at first. NCCL's cost table ranks them (its relative
// estimates carry information even where its pick is wrong); hints come before everything.
#include <algorithm>
#include <cstdio>
#include <string>

#include "optimizer/internal/stages.hpp"

namespace ccltune::optimizer::internal {

std::vector<std::pair<int, int>> OrderSubspaces(const SearchSpace& space) {
  struct Item {
    int algo, proto;
    float cost;
    bool nccl;
  };
  std::vector<Item> items;
  for (int a = 0; a < kNumAlgos; ++a)
    for (int p = 0; p < kNumProtos; ++p)
      if (space.subspaces.Valid(a, p))
        items.push_back(
            {a, p, space.cost[a * kNumProtos + p], a == space.subspaces.nccl_algo && p == space.subspaces.nccl_proto});
  // Known estimates ascending; unknown (< 0) after them; NCCL's pick first among equals.
  std::stable_sort(items.begin(), items.end(), [](const Item& x, const Item& y) {
    const bool kx = x.cost >= 0, ky = y.cost >= 0;
    if (kx != ky) return kx;
    if (kx && x.cost != y.cost) return x.cost < y.cost;
    return x.nccl && !y.nccl;
  });
  std::vector<std::pair<int, int>> out;
  for (const Item& i : items) out.emplace_back(i.algo, i.proto);
  return out;
}

float PickCost(const SearchSpace& space) {
  const SubspaceSet& sub = space.subspaces;
  return sub.Valid(sub.nccl_algo, sub.nccl_proto) ? space.cost[sub.nccl_algo * kNumProtos + sub.nccl_proto] : -1.0f;
}

}  // namespace ccltune::optimizer::internal

namespace ccltune::optimizer {

std::string DescribePrior(const SearchSpace& space, const Options& options) {
  const SubspaceSet& sub = space.subspaces;
  const float pick = internal::PickCost(space);
  std::string out;
  for (const auto& [a, p] : internal::OrderSubspaces(space)) {
    const float c = space.cost[a * kNumProtos + p];
    char v[32];
    if (c < 0) {
      std::snprintf(v, sizeof v, "?");
    } else if (pick > 0) {
      std::snprintf(v, sizeof v, "%.2f", static_cast<double>(c / pick));
    } else {
      std::snprintf(v, sizeof v, "%.1fus", static_cast<double>(c));
    }
    if (!out.empty()) out += ' ';
    out += std::string(AlgoName(a)) + "/" + std::string(ProtoName(p)) + " " + v;
    if (a == sub.nccl_algo && p == sub.nccl_proto) out += '*';
    if (internal::CostRuledOut(space, options, a, p)) out += " (not screened)";
  }
  return out.empty() ? std::string("(no valid subspace)") : out;
}

}  // namespace ccltune::optimizer
