// End-to-end quality of the search on the simulated NCCL's smooth time models (tests/simnccl/model.hpp):
// every acceptance row (allreduce / allgather / reducescatter x nccl-tests sizes 256K..256M, 4 ranks)
// driven like the leader drives it (schedule kept ahead, samples 4 calls late, channel truth: the
// simulated NCCL runs at most 24 channels), with the simulated NCCL's own noise (lognormal sigma 4%,
// 0.5% outliers x1.5-2.5). Built-in model: budget 32 clamped at 24. Table model (h200x4 measurements):
// budget 24, and 32 clamped at 24. The recorded real landscapes, far noisier, are replay_test.cc's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "model.hpp"
#include "optimizer/optimizer.hpp"
#include "tests/optimizer/replay.hpp"

namespace ccltune::optimizer {
namespace {

constexpr int kSeeds = 100;
constexpr int kRanks = 4;
constexpr int kSimBudget = 24;  // what the simulated NCCL runs at most
constexpr double kSigma = 0.04;
constexpr double kMaxRatio = 1.03;
constexpr double kAcceptRatio = 1.05;  // the per-row acceptance bound of the simulated sweep (bench/sim.sh)
constexpr double kMaxVsDefault = 1.01;
constexpr int kMaxCalls = 200;  // 24 channels, 6 subspaces: a screen of 24, up to three refinement rounds

const int kColls[] = {simnccl::kAllReduce, simnccl::kAllGather, simnccl::kReduceScatter};
const size_t kSizes[] = {256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20, 256u << 20};

// True times of one row, cached per config.
class Row {
 public:
  Row(const simnccl::Model& m, int coll, size_t bytes, int search_budget) : m_(m), coll_(coll), bytes_(bytes) {
    space.max_channels = search_budget;
    float table[simnccl::kNumAlgos][simnccl::kNumProtos];
    m.CostTable(coll, bytes, kRanks, kSimBudget, table);
    float best = 0;
    for (int a = 0; a < kNumAlgos; ++a)
      for (int p = 0; p < kNumProtos; ++p) {
        if (table[a][p] < 0) continue;
        space.subspaces.valid_mask |= 1u << (a * kNumProtos + p);
        if (space.subspaces.nccl_algo < 0 || table[a][p] < best) {
          best = table[a][p];
          space.subspaces.nccl_algo = a;
          space.subspaces.nccl_proto = p;
        }
      }
    default_us = m.DefaultDuration(coll, bytes, kRanks, kSimBudget);
    optimum_us = m.Exhaustive(coll, bytes, kRanks, kSimBudget, false).us;
    space.channel_truth = true;
  }
  // What the simulated NCCL runs: at most its channel budget. The default's run is not reported: the
  // reference table's "default" rows were measured on another communicator (24 channels) than its forced
  // rows (32), so the default and the forced config it runs as do not cost the same in this model.
  Config Ran(const Config& c) const {
    if (c.IsDefault()) return Config{};
    return Config{c.algo, c.proto, std::min(c.channels, kSimBudget), 0};
  }
  double True(const Config& c) {
    if (c.IsDefault()) return default_us;
    const auto key = std::make_tuple(c.algo, c.proto, std::min(c.channels, kSimBudget));
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    simnccl::Config sc;
    sc.algo = c.algo;
    sc.proto = c.proto;
    sc.nc = std::min(c.channels, kSimBudget);
    const double t = m_.Duration(coll_, bytes_, kRanks, sc, kSimBudget);
    cache_[key] = t;
    return t;
  }
  std::string Name() const { return std::string(simnccl::CollName(coll_)) + " " + std::to_string(bytes_ >> 10) + "K"; }

  SearchSpace space;
  double default_us = 0, optimum_us = 0;

 private:
  const simnccl::Model& m_;
  int coll_;
  size_t bytes_;
  std::map<std::tuple<int, int, int>, double> cache_;
};

struct RunResult {
  bool converged = false;
  int calls = 0;
  double ratio = 0, vs_default = 0;
  Config final_config;
};

RunResult Run(Row& row, uint64_t seed, uint64_t comm_hash) {
  Search s(row.space, Options{});
  uint64_t seq = 0;
  testing::DriveOptions o;
  const testing::DriveResult d = testing::DriveWith(
      s, [&](const Config& c, int64_t) { return row.True(c) * simnccl::NoiseFactor(seed, comm_hash, seq++, kSigma); },
      [&](const Config& c) { return row.Ran(c); }, o);
  RunResult r;
  r.converged = d.converged;
  r.calls = static_cast<int>(d.calls);
  r.final_config = d.incumbent;
  const double t = row.True(r.final_config);
  r.ratio = t / row.optimum_us;
  r.vs_default = t / row.default_us;
  return r;
}

struct RowSummary {
  std::string name;
  int n = 0, ok_ratio = 0, ok_accept = 0, ok_default = 0, ok_all = 0, converged = 0;
  int calls_med = 0, calls_p95 = 0, calls_max = 0;
  double worst_ratio = 0, worst_vs_default = 0, default_ratio = 0;
  std::string worst_config;
};

RowSummary RunRow(Row& row, uint64_t row_index) {
  RowSummary s;
  s.name = row.Name();
  s.default_ratio = row.default_us / row.optimum_us;
  std::vector<int> calls;
  for (int seed = 0; seed < kSeeds; ++seed) {
    const RunResult r = Run(row, 1000 + seed, 0x5EED0000ull + row_index * 7919);
    ++s.n;
    s.converged += r.converged;
    s.ok_ratio += r.ratio <= kMaxRatio;
    s.ok_accept += r.ratio <= kAcceptRatio;
    s.ok_default += r.vs_default <= kMaxVsDefault;
    s.ok_all += r.converged && r.ratio <= kMaxRatio && r.vs_default <= kMaxVsDefault && r.calls <= kMaxCalls;
    if (r.ratio > s.worst_ratio) s.worst_ratio = r.ratio, s.worst_config = r.final_config.ToString();
    s.worst_vs_default = std::max(s.worst_vs_default, r.vs_default);
    calls.push_back(r.calls);
  }
  std::sort(calls.begin(), calls.end());
  s.calls_med = calls[calls.size() / 2];
  s.calls_p95 = calls[calls.size() * 95 / 100];
  s.calls_max = calls.back();
  std::printf(
      "[ sim-model ] %-22s def/opt %.3f | calls med %3d p95 %3d max %3d | worst %.3f (%s) | <=1.03 %3d%% | <=1.05 "
      "%3d%% | <=1.01*def %3d%% | all targets %3d%%\n",
      s.name.c_str(), s.default_ratio, s.calls_med, s.calls_p95, s.calls_max, s.worst_ratio, s.worst_config.c_str(),
      100 * s.ok_ratio / s.n, 100 * s.ok_accept / s.n, 100 * s.ok_default / s.n, 100 * s.ok_all / s.n);
  return s;
}

void CheckRows(const simnccl::Model& m, int search_budget, const char* label) {
  int row_index = 0, rows_ok = 0, rows = 0, all_ok = 0, all_n = 0;
  for (int coll : kColls)
    for (size_t bytes : kSizes) {
      Row row(m, coll, bytes, search_budget);
      if (row.space.subspaces.valid_mask == 0 || !std::isfinite(row.optimum_us)) continue;
      const RowSummary s = RunRow(row, row_index++);
      ++rows;
      EXPECT_EQ(s.converged, s.n) << label << " " << s.name;
      // Met in every seed: the call budget, never slower than the default.
      EXPECT_LE(s.calls_max, kMaxCalls) << label << " " << s.name;
      EXPECT_EQ(s.ok_default, s.n) << label << " " << s.name;
      // Smooth 24-32 channel spaces with 6 subspaces cost this search 40-160 calls, and a table's isolated
      // dips between its screened points (ring/LL128 at 12 of 8, 12, 24 for 1 MiB all-gather) are missed:
      // the per-row quality is printed; what is checked is never losing to the default, the call budget,
      // and the share of all runs within 1.03 of the optimum (a regression guard under the level reached,
      // 2026-11-24: builtin 88.7%, table 86.1%).
      rows_ok += s.ok_all >= 0.99 * s.n;
      all_ok += s.ok_all;
      all_n += s.n;
    }
  std::printf(
      "[ sim-model ] %s: %d/%d rows meet every target in >= 99%% of seeds; %.1f%% of all runs meet every target\n",
      label, rows_ok, rows, 100.0 * all_ok / all_n);
  EXPECT_GE(all_ok, 0.84 * all_n) << label;
}

TEST(SimModel, BuiltinModelBudget32ClampedAt24) {
  const auto m = simnccl::MakeBuiltinModel();
  CheckRows(*m, 32, "builtin");
}

TEST(SimModel, TableModelH200x4) {
  const std::string path = SIMNCCL_DATA_FILE;
  if (!std::ifstream(path)) GTEST_SKIP() << "no table " << path;
  std::string err;
  const auto m = simnccl::LoadTableModel(path, &err);
  ASSERT_NE(m, nullptr) << err;
  CheckRows(*m, 24, "table");
}

TEST(SimModel, TableModelH200x4Budget32) {
  const std::string path = SIMNCCL_DATA_FILE;
  if (!std::ifstream(path)) GTEST_SKIP() << "no table " << path;
  std::string err;
  const auto m = simnccl::LoadTableModel(path, &err);
  ASSERT_NE(m, nullptr) << err;
  CheckRows(*m, 32, "table-b32");
}

}  // namespace
}  // namespace ccltune::optimizer
