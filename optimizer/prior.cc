// Stage 1, the prior: which subspaces to look at first. NCCL's cost table ranks them (its relative
// estimates carry information even where its pick is wrong); hints come before everything.
#include <algorithm>

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

}  // namespace ccltune::optimizer::internal
