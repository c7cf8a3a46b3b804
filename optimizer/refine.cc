// Stage 4, refinement: configs next to the race's winner join the race. Channels: halfway into the
// gaps between the winner's channel count and the nearest measured ones of its subspace (a bracket that
// halves each time); chunk sizes, where tuner v6 offers them: a spread at the winner's channels.
#include <algorithm>
#include <limits>
#include <set>

#include "optimizer/internal/stages.hpp"

namespace ccltune::optimizer::internal {

std::vector<int64_t> ChunkValues(const SearchSpace& space, int proto) {
  std::vector<int64_t> v;
  if (!space.chunk_dim || proto < 0 || proto >= kNumProtos) return v;
  const int64_t g = space.chunk_grain[proto];
  if (g <= 0) return v;
  for (int64_t c = g; c <= space.chunk_max[proto] && c > 0; c *= 2) {
    if (c >= space.chunk_min[proto]) v.push_back(c);
    if (c > std::numeric_limits<int64_t>::max() / 2) break;
  }
  return v;
}

std::vector<Config> Neighbours(const Config& winner, const SearchSpace& space, const SampleStore& store) {
  std::vector<Config> out;
  if (!winner.HasSubspace()) return out;
  std::set<ConfigKey> taken;
  for (const Config& c : store.Measured()) taken.insert(KeyOf(c));
  auto add = [&](const Config& asked) {
    if (store.TwinOfDefault(asked)) return;
    const Config eff = store.Effective(asked);
    if (taken.insert(KeyOf(eff)).second) out.push_back(eff);
  };
  // Channel counts of the winner's subspace (and chunk) that were measured.
  std::vector<int> have;
  for (const Config& c : store.Measured())
    if (c.algo == winner.algo && c.proto == winner.proto && c.chunk_bytes == winner.chunk_bytes)
      have.push_back(c.channels);
  std::sort(have.begin(), have.end());
  const int ceiling = store.Ceiling(winner.algo, winner.proto);
  const int top = ceiling > 0 ? std::min(ceiling, space.max_channels) : space.max_channels;
  const int c = winner.channels;
  int lo = 0, hi = top + 1;
  for (int h : have) {
    if (h < c) lo = std::max(lo, h);
    if (h > c) hi = std::min(hi, h);
  }
  if (c - lo >= 2) add(Config{winner.algo, winner.proto, (lo + c) / 2, winner.chunk_bytes});
  if (hi - c >= 2) add(Config{winner.algo, winner.proto, (c + hi) / 2, winner.chunk_bytes});
  // Chunk sizes once the channels have settled (the bracket is closed on both sides).
  if (out.empty() && winner.chunk_bytes == 0) {
    const std::vector<int64_t> chunks = ChunkValues(space, winner.proto);
    if (!chunks.empty()) {
      std::vector<size_t> idx = {0, chunks.size() / 2, chunks.size() - 1};
      idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
      for (size_t i : idx) add(Config{winner.algo, winner.proto, winner.channels, chunks[i]});
    }
  }
  return out;
}

}  // namespace ccltune::optimizer::internal
