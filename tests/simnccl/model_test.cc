// Unit tests of the simnccl time model: known optimum, default's headroom at mid sizes, table loading/interpolation,
// the interference knob.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>

#include "model.hpp"

namespace simnccl {
namespace {

class BuiltinHeadroom : public ::testing::TestWithParam<std::tuple<int, size_t>> {};

TEST_P(BuiltinHeadroom, DefaultIs10To60PercentSlowerAtMidSizes) {
  auto [coll, bytes] = GetParam();
  auto m = MakeBuiltinModel();
  auto best = m->Exhaustive(coll, bytes, 4, 24, false);
  double ratio = m->DefaultDuration(coll, bytes, 4, 24) / best.us;
  EXPECT_GE(ratio, 1.05) << CollName(coll) << " " << bytes;
  EXPECT_LE(ratio, 1.65) << CollName(coll) << " " << bytes;
  EXPECT_GE(best.cfg.algo, 0) << "a forced config beats the default at mid sizes";
}
INSTANTIATE_TEST_SUITE_P(MidSizes, BuiltinHeadroom,
                         ::testing::Combine(::testing::Values(kAllReduce, kAllGather, kReduceScatter, kBroadcast),
                                            ::testing::Values(1u << 20, 4u << 20, 16u << 20, 64u << 20)));

TEST(BuiltinModel, DefaultCloseToBestAtExtremes) {
  auto m = MakeBuiltinModel();
  for (int c : {kAllReduce, kAllGather, kReduceScatter}) {
    size_t big = 1ull << 30;
    EXPECT_LE(m->DefaultDuration(c, big, 4, 24) / m->Exhaustive(c, big, 4, 24, false).us, 1.05) << CollName(c);
  }
}

TEST(BuiltinModel, MidSizeChannelOptimumIsNotTheBudget) {
  auto m = MakeBuiltinModel();
  auto best = m->Exhaustive(kAllGather, 1 << 20, 4, 24, false);
  EXPECT_LT(best.cfg.nc, 24);
  EXPECT_GT(best.cfg.nc, 1);
}

TEST(BuiltinModel, WinnerChangesWithSize) {
  auto m = MakeBuiltinModel();
  EXPECT_EQ(m->Exhaustive(kAllGather, 16384, 4, 24, false).cfg.proto, 0);    // LL small
  EXPECT_EQ(m->Exhaustive(kAllGather, 4 << 20, 4, 24, false).cfg.proto, 1);  // LL128 mid
  auto large = m->Exhaustive(kAllGather, 1ull << 30, 4, 24, false);
  EXPECT_TRUE(large.cfg.algo < 0 || large.cfg.proto == 2);                // Simple large
  EXPECT_EQ(m->Exhaustive(kAllReduce, 65536, 4, 24, false).cfg.algo, 0);  // Tree small allreduce
}

TEST(BuiltinModel, ChunkMattersAndInteractsWithChannels) {
  auto m = MakeBuiltinModel();
  auto noChunk = m->Exhaustive(kAllReduce, 64 << 20, 4, 24, false);
  auto withChunk = m->Exhaustive(kAllReduce, 64 << 20, 4, 24, true);
  EXPECT_LT(withChunk.us, noChunk.us * 0.99);
  Config small{1, 2, 4, 65536}, many{1, 2, 24, 65536};
  double gain4 =
      m->Duration(kAllReduce, 64 << 20, 4, Config{1, 2, 4, 0}, 24) - m->Duration(kAllReduce, 64 << 20, 4, small, 24);
  double gain24 =
      m->Duration(kAllReduce, 64 << 20, 4, Config{1, 2, 24, 0}, 24) - m->Duration(kAllReduce, 64 << 20, 4, many, 24);
  EXPECT_NE(std::round(gain4), std::round(gain24));
}

TEST(BuiltinModel, CostTableMarksInvalidAndPicksDefault) {
  auto m = MakeBuiltinModel();
  float t[kNumAlgos][kNumProtos];
  m->CostTable(kAllGather, 1 << 20, 4, 24, t);
  for (int a = 0; a < kNumAlgos; a++)
    for (int p = 0; p < kNumProtos; p++) EXPECT_EQ(t[a][p] >= 0, a == 1) << a << "," << p;
  m->CostTable(kAllReduce, 1 << 20, 4, 24, t);
  EXPECT_GE(t[0][2], 0);
  EXPECT_EQ(t[2][0], -1.0f);
}

// The interference knob moves the optimum to fewer channels, by exactly the documented factor, and leaves what
// NCCL sees (cost table, default pick) as it was.
TEST(Interference, MovesTheBestToFewerChannelsButNotNcclsPick) {
  auto quiet = MakeBuiltinModel();
  auto loaded = WithInterference(MakeBuiltinModel(), 0.5);
  for (int coll : {kAllGather, kReduceScatter, kAllReduce}) {
    for (size_t bytes : {size_t{4} << 20, size_t{16} << 20, size_t{64} << 20}) {
      SCOPED_TRACE(std::string(CollName(coll)) + " " + std::to_string(bytes));
      Model::Best q = quiet->Exhaustive(coll, bytes, 4, 24, false), l = loaded->Exhaustive(coll, bytes, 4, 24, false);
      ASSERT_GE(q.cfg.nc, 1);
      ASSERT_GE(l.cfg.nc, 1);
      EXPECT_LT(l.cfg.nc, q.cfg.nc);
      Config d = quiet->DefaultConfig(coll, bytes, 4, 24), dl = loaded->DefaultConfig(coll, bytes, 4, 24);
      EXPECT_EQ(std::tie(d.algo, d.proto, d.nc), std::tie(dl.algo, dl.proto, dl.nc));
      float tq[kNumAlgos][kNumProtos], tl[kNumAlgos][kNumProtos];
      quiet->CostTable(coll, bytes, 4, 24, tq);
      loaded->CostTable(coll, bytes, 4, 24, tl);
      for (int a = 0; a < kNumAlgos; a++)
        for (int p = 0; p < kNumProtos; p++) EXPECT_EQ(tq[a][p], tl[a][p]);
      EXPECT_DOUBLE_EQ(loaded->DefaultDuration(coll, bytes, 4, 24),
                       quiet->DefaultDuration(coll, bytes, 4, 24) * (1 + 0.5 * d.nc / 32));
      const Config forced{1, 1, 6, 0}, own{1, 1, 0, 0};
      EXPECT_DOUBLE_EQ(loaded->Duration(coll, bytes, 4, forced, 24),
                       quiet->Duration(coll, bytes, 4, forced, 24) * (1 + 0.5 * 6 / 32.0));
      EXPECT_DOUBLE_EQ(loaded->Duration(coll, bytes, 4, own, 24),
                       quiet->Duration(coll, bytes, 4, own, 24) * (1 + 0.5 * d.nc / 32));
    }
  }
  double level = -1;
  EXPECT_TRUE(ParseInterferenceLevel("0.25", &level));
  EXPECT_EQ(level, 0.25);
  for (const char* bad : {"", "1", "-0.1", "0.5x", "nan", "abc"})
    EXPECT_FALSE(ParseInterferenceLevel(bad, &level)) << bad;
  EXPECT_EQ(level, 0.25);
  // Level 0 is the base model itself.
  auto base = MakeBuiltinModel();
  const Model* raw = base.get();
  EXPECT_EQ(WithInterference(std::move(base), 0).get(), raw);
}

TEST(Noise, ReproducibleAndSpread) {
  EXPECT_EQ(NoiseFactor(1, 2, 3, 0.04), NoiseFactor(1, 2, 3, 0.04));
  double s = 0, s2 = 0;
  int n = 20000;
  for (int i = 0; i < n; i++) {
    double f = NoiseFactor(1, 7, i, 0.04);
    s += f, s2 += f * f;
  }
  double mean = s / n, sd = std::sqrt(s2 / n - mean * mean);
  EXPECT_NEAR(mean, 1.0, 0.02);
  EXPECT_GT(sd, 0.03);
}

TEST(TableModel, LoadsAndInterpolatesTheReferenceFile) {
  const char* path = SIMNCCL_DATA_FILE;
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "reference data not found: " << path;
  std::string err;
  auto m = LoadTableModel(path, &err);
  ASSERT_NE(m, nullptr) << err;
  EXPECT_TRUE(m->Valid(kAllReduce, 0, 2));
  EXPECT_FALSE(m->Valid(kAllGather, 0, 2));  // Tree rows exist only for all_reduce
  EXPECT_NEAR(m->DefaultDuration(kAllReduce, 4194304, 4, 24), 42.70, 1e-6);
  EXPECT_NEAR(m->DefaultDuration(kAllReduce, 4194304, 4, 32), 35.83, 1e-6);
  EXPECT_NEAR(m->Duration(kAllGather, 268435456, 4, Config{1, 2, 24, 0}, 32), 658.53, 1e-6);
  // Between sizes: log-log, strictly between the neighbours.
  double mid = m->Duration(kAllGather, 8388608, 4, Config{1, 2, 24, 0}, 32);
  EXPECT_GT(mid, 37.08);
  EXPECT_LT(mid, 66.10);
  // Between channel counts (16 and 24) and beyond the budget (clamped).
  double nc20 = m->Duration(kAllGather, 67108864, 4, Config{1, 2, 20, 0}, 32);
  double nc16 = m->Duration(kAllGather, 67108864, 4, Config{1, 2, 16, 0}, 32);
  double nc24 = m->Duration(kAllGather, 67108864, 4, Config{1, 2, 24, 0}, 32);
  EXPECT_LE(std::min(nc16, nc24), nc20);
  EXPECT_GE(std::max(nc16, nc24), nc20);
  EXPECT_EQ(m->Duration(kAllGather, 67108864, 4, Config{1, 2, 32, 0}, 24), nc24);
  // Below the smallest channel count: slower than nc2.
  EXPECT_GT(m->Duration(kAllGather, 67108864, 4, Config{1, 2, 1, 0}, 24),
            m->Duration(kAllGather, 67108864, 4, Config{1, 2, 2, 0}, 24));
  float t[kNumAlgos][kNumProtos];
  m->CostTable(kAllGather, 1 << 20, 4, 24, t);
  for (int a = 0; a < kNumAlgos; a++)
    for (int p = 0; p < kNumProtos; p++) EXPECT_EQ(t[a][p] >= 0, a == 1) << a << "," << p;
}

TEST(TableModel, RejectsBadFiles) {
  std::string err;
  EXPECT_EQ(LoadTableModel("/nonexistent/file.txt", &err), nullptr);
  EXPECT_FALSE(err.empty());
}

}  // namespace
}  // namespace simnccl
