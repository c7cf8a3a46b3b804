// Unit tests of the simulated NCCL's noise models: the default lognormal noise is unchanged; the fitted model's
// file, draws and clock logic (noise_model.hpp); its fitter recovers parameters it generated; and the committed fits
// of the one-GPU testbed reproduce the recorded statistics (noise_fit.hpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model.hpp"
#include "noise_fit.hpp"
#include "noise_model.hpp"
#include "rng.hpp"

namespace simnccl {
namespace {

const std::string kLandscapes = SIMNCCL_LANDSCAPES_DIR;

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()))).string();
}

// Quantiles of an asymmetric Laplace distribution (scale left, scale right) at p = i / (n - 1), the extremes at
// p = 0.0005 and 0.9995: a heavy-tailed, skewed log factor whose quantiles are known exactly.
std::vector<double> LaplaceQuantiles(int n, double left, double right) {
  std::vector<double> q(n);
  for (int i = 0; i < n; i++) {
    const double p = std::clamp(static_cast<double>(i) / (n - 1), 0.0005, 0.9995);
    q[i] = p < 0.5 ? left * std::log(2 * p) : -right * std::log(2 - 2 * p);
  }
  return q;
}

NoiseParams KnownParams(int ranks) {
  NoiseParams p;
  p.ranks = ranks;
  p.blockCalls = 14;
  p.callQ = LaplaceQuantiles(201, 0.03, 0.045);
  p.slowQ = LaplaceQuantiles(101, 0.04, 0.09);
  p.slowRho = 0.6;
  p.volatility = 0.5, p.volatilitySlow = 0.4;
  p.overlap = 0.35;
  p.lag[{1, 2}] = LagScale{25, 0.08, 8};    // ring simple
  p.lag[{1, 0}] = LagScale{50, 0, 12};      // ring ll
  p.lag[{0, 2}] = LagScale{4, 0.04, 0};     // tree simple
  p.lag[{0, 0}] = LagScale{40, 0.002, 20};  // tree ll
  p.lagOther = LagScale{30, 0.01, 5};
  p.lagSigma = 0.35;
  p.lagBlock = 0.2;
  return p;
}

// A schedule like the testbed's (bench/landscape.hpp): 3 collectives x 5 sizes, NCCL's default and 8 configs
// (Tree and Ring x LL and Simple x 1 and 2 channels), 3 rounds in a new order each, blocks of 12 timed calls after
// 2 warm-ups, the default again after every 6 configs and at the end. Each config's time: max_us (the table).
RecordedSet SyntheticSchedule(int ranks) {
  RecordedSet set;
  set.name = "synthetic";
  set.ranks = ranks;
  set.warmupCalls = 2;
  const char* colls[] = {"all_reduce", "all_gather", "reduce_scatter"};
  const uint64_t sizes[] = {65536, 262144, 1048576, 4194304, 16777216};
  struct Cfg {
    const char* name;
    const char* ran;
    double factor;
  };
  const Cfg cfgs[] = {{"a1.p0.nc1", "ring/ll/nc1", 1.3},     {"a1.p0.nc2", "ring/ll/nc2", 1.1},
                      {"a1.p2.nc1", "ring/simple/nc1", 1.0}, {"a1.p2.nc2", "ring/simple/nc2", 0.9},
                      {"a0.p0.nc1", "tree/ll/nc1", 1.6},     {"a0.p0.nc2", "tree/ll/nc2", 1.4},
                      {"a0.p2.nc1", "tree/simple/nc1", 1.2}, {"a0.p2.nc2", "tree/simple/nc2", 1.05}};
  for (const char* coll : colls)
    for (uint64_t bytes : sizes) {
      const double base = 80 + static_cast<double>(bytes) / 2000;
      for (int round = 0; round < 3; round++) {
        std::vector<Cfg> order;
        order.push_back({"default", "ring/simple/nc2", 0.95});
        for (int i = 0; i < 8; i++) {
          if (i == 6) order.push_back({"default", "ring/simple/nc2", 0.95});
          order.push_back(cfgs[(i + 3 * round + bytes % 5) % 8]);
        }
        order.push_back({"default", "ring/simple/nc2", 0.95});
        for (int pos = 0; pos < static_cast<int>(order.size()); pos++)
          for (int seq = 0; seq < 12; seq++) {
            RecordedCall c;
            c.coll = coll, c.bytes = bytes, c.config = order[pos].name, c.round = round, c.pos = pos, c.seq = seq;
            c.minUs = c.maxUs = base * order[pos].factor;
            c.ran = order[pos].ran;
            set.calls.push_back(c);
          }
      }
    }
  return set;
}

// ---------------------------------------------------------------------------------------------------------------
// The default lognormal noise (SIMNCCL_NOISE): these values were computed before the fitted model was added.
TEST(NoiseModelTest, GaussianNoiseIsUnchanged) {
  struct Golden {
    unsigned long long seed, key, seq;
    double factor;
  };
  const Golden golden[] = {
      {1ULL, 0x0ULL, 1ULL, 0.95285743903445985},
      {1ULL, 0x0ULL, 2ULL, 1.0985272598664793},
      {1ULL, 0x0ULL, 1000ULL, 0.9816260561561444},
      {1ULL, 0xdeadbeefULL, 1ULL, 0.99856917719864291},
      {1ULL, 0xdeadbeefULL, 1000ULL, 1.0974866319840595},
      {7ULL, 0x0ULL, 2ULL, 1.0524949884422428},
      {7ULL, 0xdeadbeefULL, 1ULL, 0.9314808841914447},
      {123456789ULL, 0x0ULL, 1ULL, 1.0595297416835165},
      {123456789ULL, 0xdeadbeefULL, 1000ULL, 0.97145062255696135},
      {1ULL, 0x5ULL, 247ULL, 2.4463781406527851},  // rare outliers: 1.5-2.5x
      {1ULL, 0x5ULL, 451ULL, 2.2932346328147939},
  };
  for (const Golden& g : golden)
    EXPECT_DOUBLE_EQ(NoiseFactor(g.seed, g.key, g.seq, 0.04), g.factor) << g.seed << " " << g.key << " " << g.seq;
}

TEST(NoiseModelTest, ParameterFileRoundTrips) {
  NoiseParams p = KnownParams(4);
  p.notes = {"a note"};
  const std::string path = TempPath("noise-roundtrip.txt");
  {
    std::ofstream out(path);
    out << FormatNoiseParams(p);
  }
  NoiseParams q;
  std::string err;
  ASSERT_TRUE(LoadNoiseParams(path, &q, &err)) << err;
  std::filesystem::remove(path);
  EXPECT_EQ(q.ranks, 4);
  EXPECT_EQ(q.blockCalls, 14);
  EXPECT_NEAR(q.slowRho, 0.6, 1e-4);
  EXPECT_NEAR(q.volatility, 0.5, 1e-4);
  EXPECT_NEAR(q.volatilitySlow, 0.4, 1e-4);
  EXPECT_NEAR(q.overlap, 0.35, 1e-4);
  EXPECT_NEAR(q.lagSigma, 0.35, 1e-4);
  EXPECT_NEAR(q.lagBlock, 0.2, 1e-4);
  ASSERT_EQ(q.lag.size(), 4u);
  const LagScale ringSimple = q.lag[std::make_pair(1, 2)], treeLl = q.lag[std::make_pair(0, 0)];
  EXPECT_NEAR(ringSimple.b, 0.08, 1e-6);
  EXPECT_NEAR(treeLl.c, 20, 1e-6);
  EXPECT_NEAR(q.lagOther.a, 30, 1e-6);
  ASSERT_EQ(q.callQ.size(), p.callQ.size());
  ASSERT_EQ(q.slowQ.size(), p.slowQ.size());
  for (size_t i = 0; i < p.callQ.size(); i++) EXPECT_NEAR(q.callQ[i], p.callQ[i], 1e-5 * (1 + std::fabs(p.callQ[i])));
}

TEST(NoiseModelTest, RejectsMalformedFiles) {
  const std::string good = FormatNoiseParams(KnownParams(4));
  auto load = [](const std::string& text, std::string* err) {
    const std::string path = TempPath("noise-bad.txt");
    {
      std::ofstream out(path);
      out << text;
    }
    NoiseParams p;
    const bool ok = LoadNoiseParams(path, &p, err);
    std::filesystem::remove(path);
    return ok;
  };
  std::string err;
  EXPECT_TRUE(load(good, &err)) << err;
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return at == std::string::npos ? t : t.replace(at, from.size(), to);
  };
  EXPECT_FALSE(load(replaced("simnccl-noise 1", "simnccl-noise 2"), &err));
  EXPECT_FALSE(load(replaced("slow_rho 0.6000", "slow_rho 1.0"), &err));
  EXPECT_NE(err.find("slow_rho"), std::string::npos) << err;
  EXPECT_FALSE(load(replaced("ranks 4", "ranks 1"), &err));
  EXPECT_FALSE(load(replaced("lag_scale ring simple", "lag_scale ring nosuchproto"), &err));
  EXPECT_FALSE(load(replaced("\noverlap ", "\noverlapping "), &err));
  EXPECT_NE(err.find("unknown key"), std::string::npos) << err;
  // Quantiles must not decrease.
  EXPECT_FALSE(load(replaced("call_quantiles 201\n", "call_quantiles 201\n1 "), &err));
  NoiseParams none;
  EXPECT_FALSE(LoadNoiseParams("/nonexistent/noise.txt", &none, &err));
}

TEST(NoiseModelTest, SharedDrawsDependOnSeedCommunicatorAndCallOnly) {
  const FittedNoise n(KnownParams(4));
  // What every rank computes alike: the same inputs give the same values, in any order.
  EXPECT_EQ(n.CallFactor(3, 9, 100, 1.0), n.CallFactor(3, 9, 100, 1.0));
  EXPECT_EQ(n.ForBlock(3, 9, 7).slow, n.ForBlock(3, 9, 7).slow);
  EXPECT_EQ(n.ForBlock(3, 9, 7).volatility, n.ForBlock(3, 9, 7).volatility);
  EXPECT_NE(n.CallFactor(3, 9, 100, 1.0), n.CallFactor(4, 9, 100, 1.0));
  EXPECT_NE(n.CallFactor(3, 9, 100, 1.0), n.CallFactor(3, 10, 100, 1.0));
  EXPECT_NE(n.ForBlock(3, 9, 7).slow, n.ForBlock(4, 9, 7).slow);
  // A block is blockCalls calls: calls 1-14 are block 0, 15 is block 1.
  EXPECT_EQ(n.Block(1), 0u);
  EXPECT_EQ(n.Block(14), 0u);
  EXPECT_EQ(n.Block(15), 1u);
  // Lags are each rank's own.
  EXPECT_NE(n.RankLagUs(3, 9, 100, 0, 500, 1, 2, 2, 1), n.RankLagUs(3, 9, 100, 1, 500, 1, 2, 2, 1));
  // Lag scale: a + b T + c (nc - 1) of the (algo, proto) run, the pooled one for any other.
  EXPECT_DOUBLE_EQ(n.Scale(1, 2).At(1000, 3), 25 + 80 + 16);
  EXPECT_DOUBLE_EQ(n.Scale(1, 1).At(1000, 1), 30 + 10);
}

TEST(NoiseModelTest, CallFactorsFollowTheQuantiles) {
  const NoiseParams p = KnownParams(4);
  const FittedNoise n(p);
  std::vector<double> logs;
  for (uint64_t seq = 1; seq <= 200000; seq++) logs.push_back(std::log(n.CallFactor(5, 1, seq, 1.0)));
  for (double q : {0.01, 0.1, 0.5, 0.9, 0.99})
    EXPECT_NEAR(Quantile(logs, q), QuantileAt(p.callQ, q), 0.004) << "p" << q;
  // A volatility of 2 doubles every log factor.
  EXPECT_NEAR(std::log(n.CallFactor(5, 1, 17, 2.0)), 2 * std::log(n.CallFactor(5, 1, 17, 1.0)), 1e-12);
}

TEST(NoiseModelTest, SlowFactorsFollowTheMarginalAndTheCorrelation) {
  const NoiseParams p = KnownParams(4);
  const FittedNoise n(p);
  std::vector<double> logs, scores;
  for (uint64_t b = 0; b < 20000; b++) {
    logs.push_back(std::log(n.ForBlock(11, 2, b).slow));
    // Back to the Gaussian score: the quantile table is increasing, so the rank order is Z's.
    scores.push_back(logs.back());
  }
  for (double q : {0.05, 0.25, 0.5, 0.75, 0.95})
    EXPECT_NEAR(Quantile(logs, q), QuantileAt(p.slowQ, q), 0.01) << "p" << q;
  // Spearman correlation of consecutive and every other block: the Gaussian copula's rho and rho^2 (Spearman of a
  // Gaussian pair with correlation r is 6/pi asin(r/2)).
  auto spearman = [&](size_t lag) {
    std::vector<double> x(scores.begin(), scores.end() - lag), y(scores.begin() + lag, scores.end());
    auto ranks = [](std::vector<double> v) {
      std::vector<size_t> idx(v.size());
      for (size_t i = 0; i < idx.size(); i++) idx[i] = i;
      std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
      std::vector<double> r(v.size());
      for (size_t i = 0; i < idx.size(); i++) r[idx[i]] = static_cast<double>(i);
      return r;
    };
    const std::vector<double> rx = ranks(x), ry = ranks(y);
    const double m = (rx.size() - 1) / 2.0;
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < rx.size(); i++) sxy += (rx[i] - m) * (ry[i] - m), sxx += (rx[i] - m) * (rx[i] - m);
    return sxy / sxx;
  };
  EXPECT_NEAR(spearman(1), 6 / M_PI * std::asin(0.6 / 2), 0.03);
  EXPECT_NEAR(spearman(2), 6 / M_PI * std::asin(0.36 / 2), 0.03);
  EXPECT_NEAR(spearman(10), 0, 0.03);
}

TEST(NoiseModelTest, BaseKeepsTheMedianOfTheMaximumOverRanks) {
  // Without slow periods or call noise, the per-call maximum over ranks is Base(M) + (1 - overlap) x the lag range;
  // Base makes its median M.
  NoiseParams p = KnownParams(4);
  p.callQ = {0, 0};
  p.slowQ = {0, 0};
  p.lagBlock = 0;
  const FittedNoise n(p);
  RecordedSet schedule;
  schedule.ranks = 4;
  schedule.warmupCalls = 2;
  for (int i = 0; i < 2000; i++) {
    RecordedCall c;
    c.coll = "all_reduce", c.bytes = 1 << 20, c.config = "a1.p2.nc2", c.seq = i;
    c.minUs = c.maxUs = 1000;
    c.ran = "ring/simple/nc2";
    schedule.calls.push_back(c);
  }
  const RecordedSet sim = SimulateSet(n, schedule, 1, 1);
  std::vector<double> mx, mn;
  for (const RecordedCall& c : sim.calls) mx.push_back(c.maxUs), mn.push_back(c.minUs);
  EXPECT_NEAR(Median(mx), 1000, 15);
  // The last rank to arrive measures the call less the early ranks' head start: below the maximum.
  EXPECT_LT(Median(mn), Median(mx) - 50);
}

// ---------------------------------------------------------------------------------------------------------------
TEST(NoiseFitTest, RecoversKnownParametersFromItsOwnSamples) {
  const NoiseParams truth = KnownParams(4);
  const FittedNoise noise(truth);
  // Two runs of the schedule (two communicators), through the .samples format.
  std::vector<RecordedSet> sets;
  for (uint64_t run = 1; run <= 2; run++) {
    const std::string path = TempPath("synthetic-" + std::to_string(run) + ".samples");
    {
      std::ofstream out(path);
      out << FormatRecordedSet(SimulateSet(noise, SyntheticSchedule(4), 40 + run, run));
    }
    RecordedSet set;
    std::string err;
    ASSERT_TRUE(ReadRecordedSet(path, &set, &err)) << err;
    std::filesystem::remove(path);
    EXPECT_EQ(set.ranks, 4);
    EXPECT_EQ(set.warmupCalls, 2);
    sets.push_back(set);
  }
  FitOptions options;
  options.rhoSeeds = 4;
  NoiseParams fit;
  FitReport rep;
  std::string err;
  ASSERT_TRUE(FitNoise(sets, options, &fit, &rep, &err)) << err;
  EXPECT_EQ(fit.ranks, 4);
  std::printf(
      "fitted (truth): rho %.3f (%.3f), volatility %.3f (%.3f), overlap %.3f (%.3f), lag sigma %.3f (%.3f), "
      "lag block %.3f (%.3f), call q10/q90 %.4f/%.4f (%.4f/%.4f), slow q10/q90 %.4f/%.4f (%.4f/%.4f)\n",
      fit.slowRho, truth.slowRho, fit.volatility, truth.volatility, fit.overlap, truth.overlap, fit.lagSigma,
      truth.lagSigma, fit.lagBlock, truth.lagBlock, QuantileAt(fit.callQ, 0.1), QuantileAt(fit.callQ, 0.9),
      QuantileAt(truth.callQ, 0.1), QuantileAt(truth.callQ, 0.9), QuantileAt(fit.slowQ, 0.1),
      QuantileAt(fit.slowQ, 0.9), QuantileAt(truth.slowQ, 0.1), QuantileAt(truth.slowQ, 0.9));
  // Within-stretch spread: its quartiles and tails (the fit's table has each block scaled to the median block).
  for (double q : {0.1, 0.25, 0.75, 0.9})
    EXPECT_NEAR(QuantileAt(fit.callQ, q), QuantileAt(truth.callQ, q), 0.2 * std::fabs(QuantileAt(truth.callQ, q)))
        << "call quantile " << q;
  // Slow periods: the spread of the factor and its persistence.
  EXPECT_NEAR(QuantileAt(fit.slowQ, 0.9) - QuantileAt(fit.slowQ, 0.1),
              QuantileAt(truth.slowQ, 0.9) - QuantileAt(truth.slowQ, 0.1),
              0.3 * (QuantileAt(truth.slowQ, 0.9) - QuantileAt(truth.slowQ, 0.1)));
  EXPECT_NEAR(fit.slowRho, truth.slowRho, 0.15);
  EXPECT_NEAR(fit.volatility, truth.volatility, 0.2);
  EXPECT_NEAR(fit.overlap, truth.overlap, 0.1);
  // Lags: the shape, and the scale where each (algorithm, protocol) ran.
  EXPECT_NEAR(fit.lagSigma, truth.lagSigma, 0.25 * truth.lagSigma);
  EXPECT_NEAR(fit.lagBlock, truth.lagBlock, 0.1);
  const FittedNoise fitted(fit);
  for (auto [algo, proto, us, nc] : {std::tuple{1, 2, 2000.0, 2}, std::tuple{1, 0, 300.0, 1},
                                     std::tuple{0, 2, 1500.0, 2}, std::tuple{0, 0, 500.0, 2}}) {
    std::printf("lag scale %s/%s at %.0f us, %d channels: fitted %.2f, truth %.2f\n", AlgoName(algo), ProtoName(proto),
                us, nc, fitted.Scale(algo, proto).At(us, nc), noise.Scale(algo, proto).At(us, nc));
    EXPECT_NEAR(fitted.Scale(algo, proto).At(us, nc), noise.Scale(algo, proto).At(us, nc),
                0.25 * noise.Scale(algo, proto).At(us, nc))
        << AlgoName(algo) << "/" << ProtoName(proto);
  }
}

// The committed fits of the one-GPU testbed (tests/data/landscapes/noise-testbed-*.txt) against the recorded
// samples: each recorded statistic within its tolerance of the median of 9 simulated runs of the same schedule.
class TestbedNoiseTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TestbedNoiseTest, SimulatedStatisticsMatchTheRecorded) {
  NoiseParams p;
  RecordedSet set;
  std::string err;
  ASSERT_TRUE(LoadNoiseParams(kLandscapes + "/noise-" + GetParam() + ".txt", &p, &err)) << err;
  ASSERT_TRUE(ReadRecordedSet(kLandscapes + "/" + GetParam() + ".samples", &set, &err)) << err;
  const std::vector<StatCheck> checks = CheckAgainstRecorded(FittedNoise(p), {set}, 9);
  std::printf("%s", FormatChecks(checks, "the median over seeds 1-9").c_str());
  ASSERT_EQ(checks.size(), 9u);
  for (const StatCheck& c : checks)
    EXPECT_TRUE(c.pass) << c.name << ": recorded " << c.recorded << ", simulated " << c.simulated;
}

TEST_P(TestbedNoiseTest, CommittedFitIsWhatTheFitterWrites) {
  // The command in tests/data/landscapes/README.md, in process: the same parameters (to the file's precision).
  NoiseParams committed, fit;
  RecordedSet set;
  std::string err;
  ASSERT_TRUE(LoadNoiseParams(kLandscapes + "/noise-" + GetParam() + ".txt", &committed, &err)) << err;
  ASSERT_TRUE(ReadRecordedSet(kLandscapes + "/" + GetParam() + ".samples", &set, &err)) << err;
  FitReport rep;
  ASSERT_TRUE(FitNoise({set}, FitOptions{}, &fit, &rep, &err)) << err;
  EXPECT_EQ(fit.ranks, committed.ranks);
  EXPECT_NEAR(fit.slowRho, committed.slowRho, 1e-3);
  EXPECT_NEAR(fit.overlap, committed.overlap, 1e-3);
  EXPECT_NEAR(fit.volatility, committed.volatility, 1e-3);
  EXPECT_NEAR(fit.volatilitySlow, committed.volatilitySlow, 1e-3);
  EXPECT_NEAR(fit.lagSigma, committed.lagSigma, 1e-3);
  EXPECT_NEAR(fit.lagBlock, committed.lagBlock, 1e-3);
  ASSERT_EQ(fit.lag.size(), committed.lag.size());
  for (const auto& [k, l] : fit.lag) {
    EXPECT_NEAR(l.a, committed.lag[k].a, 1e-3 * (1 + l.a));
    EXPECT_NEAR(l.b, committed.lag[k].b, 1e-3 * (1e-3 + l.b));
    EXPECT_NEAR(l.c, committed.lag[k].c, 1e-3 * (1 + l.c));
  }
  ASSERT_EQ(fit.callQ.size(), committed.callQ.size());
  for (size_t i = 0; i < fit.callQ.size(); i++) EXPECT_NEAR(fit.callQ[i], committed.callQ[i], 1e-5);
  ASSERT_EQ(fit.slowQ.size(), committed.slowQ.size());
  for (size_t i = 0; i < fit.slowQ.size(); i++) EXPECT_NEAR(fit.slowQ[i], committed.slowQ[i], 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Testbed, TestbedNoiseTest, ::testing::Values("testbed-4r", "testbed-8r"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string n = info.param;
                           return n.substr(n.find('-') + 1);
                         });

TEST(NoiseFitTest, GaussianNoiseDoesNotMatchTheTestbed) {
  // The control: the default noise (lognormal sigma 0.04, ranks in step, no slow periods) as a fitted model. The same
  // comparison must fail, or it could not tell the fitted model from the default.
  NoiseParams gauss;
  gauss.ranks = 4;
  for (int i = 0; i < 201; i++) {
    const double p = std::clamp(i / 200.0, 0.0005, 0.9995);
    // Inverse of the normal CDF by bisection: log factors of sigma 0.04.
    double lo = -6, hi = 6;
    for (int it = 0; it < 60; it++) (NormalCdf(0.5 * (lo + hi)) < p ? lo : hi) = 0.5 * (lo + hi);
    gauss.callQ.push_back(0.04 * 0.5 * (lo + hi));
  }
  gauss.slowQ = {0, 0};
  gauss.lagOther = LagScale{0, 0, 0};
  RecordedSet set;
  std::string err;
  ASSERT_TRUE(ReadRecordedSet(kLandscapes + "/testbed-4r.samples", &set, &err)) << err;
  int failed = 0;
  const std::vector<StatCheck> checks = CheckAgainstRecorded(FittedNoise(gauss), {set}, 3);
  std::printf("%s", FormatChecks(checks, "the default lognormal noise as a model, the median over seeds 1-3").c_str());
  for (const StatCheck& c : checks) {
    if (c.name.rfind("max_min_ratio", 0) == 0 || c.name.rfind("block_spread", 0) == 0) EXPECT_FALSE(c.pass) << c.name;
    failed += c.pass ? 0 : 1;
  }
  EXPECT_GE(failed, 4);
}

TEST(AfterOtherTest, ParsesPairsAlgorithmsAndTheRest) {
  AfterOther a;
  std::string err;
  ASSERT_TRUE(ParseAfterOther("tree/simple=1.15,ring/*=1.06,ring/ll=1.04,*=1.02", &a, &err)) << err;
  EXPECT_DOUBLE_EQ(a.Factor(AlgoIndex("tree"), ProtoIndex("simple")), 1.15);
  EXPECT_DOUBLE_EQ(a.Factor(AlgoIndex("tree"), ProtoIndex("ll")), 1.02);  // no tree/ll entry: the rest
  EXPECT_DOUBLE_EQ(a.Factor(AlgoIndex("ring"), ProtoIndex("ll")), 1.04);  // the pair before its algorithm
  EXPECT_DOUBLE_EQ(a.Factor(AlgoIndex("ring"), ProtoIndex("simple")), 1.06);
  EXPECT_DOUBLE_EQ(a.Factor(AlgoIndex("pat"), ProtoIndex("simple")), 1.02);
  AfterOther none;
  EXPECT_DOUBLE_EQ(none.Factor(0, 2), 1);
}

TEST(AfterOtherTest, RejectsMalformedEntriesAndKeepsTheOutput) {
  for (const char* bad : {"", "tree/simple", "tree/simple=", "tree/simple=0.9", "tree/simple=11", "tree/simple=1.1x",
                          "bogus/simple=1.1", "tree/bogus=1.1", "*/simple=1.1", "tree/simple=1.1,,ring/ll=1.2"}) {
    AfterOther a;
    a.rest = 3;
    std::string err;
    EXPECT_FALSE(ParseAfterOther(bad, &a, &err)) << bad;
    EXPECT_FALSE(err.empty()) << bad;
    EXPECT_DOUBLE_EQ(a.rest, 3) << bad;
  }
}

}  // namespace
}  // namespace simnccl
