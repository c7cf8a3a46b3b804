// Unit tests of the optimizer: the search driven exactly like the leader drives it (NextBatch, every
// call of every candidate in order, then the incumbent) against synthetic noisy landscapes.
#include "optimizer/optimizer.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/optimizer/landscape.hpp"

namespace ccltune::optimizer {
namespace {

using testing::Drive;
using testing::DriveResult;
using testing::DriveWith;
using testing::Landscape;
using testing::MakeLandscape;
using testing::Noise;
using testing::SizeClass;
using testing::SizeClassName;

constexpr int kSeeds = 200;

struct Summary {
  int n = 0, converged = 0, within5 = 0, worse_than_default = 0, switched = 0, max_calls = 0;
  int calls_median = 0, calls_p95 = 0, batches_median = 0, batches_p95 = 0;
};

Summary RunSeeds(SizeClass cls, double sigma, bool chunk = false, Options opt = Options{}) {
  Summary s;
  std::vector<int> calls, batches;
  for (int seed = 0; seed < kSeeds; ++seed) {
    const Landscape L = MakeLandscape(cls, seed, chunk);
    Noise noise(seed * 31 + 7, sigma);
    Search search(L.space, opt);
    const DriveResult r = Drive(search, L, noise);
    ++s.n;
    s.converged += r.converged;
    s.within5 += r.final_true <= 1.05 * r.optimum;
    s.worse_than_default += r.final_true > 1.02 * r.default_true;
    s.switched += !r.final_config.IsDefault();
    calls.push_back(r.calls);
    batches.push_back(r.batches);
  }
  std::sort(calls.begin(), calls.end());
  std::sort(batches.begin(), batches.end());
  s.max_calls = calls.back();
  s.calls_median = calls[calls.size() / 2];
  s.calls_p95 = calls[calls.size() * 95 / 100];
  s.batches_median = batches[batches.size() / 2];
  s.batches_p95 = batches[batches.size() * 95 / 100];
  return s;
}

void Report(const std::string& name, const Summary& s) {
  std::printf(
      "[ optimizer ] %-28s calls median %3d p95 %3d max %3d | batches median %2d p95 %2d | "
      "within 5%% of optimum %5.1f%% | switched %3d/%d | >2%% worse than default %d\n",
      name.c_str(), s.calls_median, s.calls_p95, s.max_calls, s.batches_median, s.batches_p95, 100.0 * s.within5 / s.n,
      s.switched, s.n, s.worse_than_default);
  ::testing::Test::RecordProperty("calls_median", s.calls_median);
  ::testing::Test::RecordProperty("calls_p95", s.calls_p95);
  ::testing::Test::RecordProperty("within5_permille", 1000 * s.within5 / s.n);
}

// ---- Quality and budget over seeded landscapes --------------------------------------------------

class QualitySweep : public ::testing::TestWithParam<std::tuple<SizeClass, double>> {};

TEST_P(QualitySweep, ConvergesNearOptimumWithinBudgetAndNeverLosesToDefault) {
  const auto [cls, sigma] = GetParam();
  const Summary s = RunSeeds(cls, sigma);
  Report(std::string(SizeClassName(cls)) + " noise " + std::to_string(static_cast<int>(sigma * 100 + 0.5)) + "%", s);
  EXPECT_EQ(s.converged, s.n);
  EXPECT_LE(s.max_calls, 300);
  EXPECT_EQ(s.worse_than_default, 0);
  // The brief's budget point: 6 subspaces x 24 channels at 4% noise, about 200 calls.
  if (sigma <= 0.04) EXPECT_LE(s.calls_p95, 210);
  // >= 95% within 5% of the oracle at 3-4% noise; at 5% noise the switch threshold (2.5 standard
  // errors of 10 vs 10 samples, ~6%) loses a few 10%-gap cases: measured ~92-96%.
  EXPECT_GE(s.within5, (sigma <= 0.04 ? 0.95 : 0.90) * s.n);
}

INSTANTIATE_TEST_SUITE_P(Landscapes, QualitySweep,
                         ::testing::Combine(::testing::Values(SizeClass::kSmall, SizeClass::kMid, SizeClass::kLarge,
                                                              SizeClass::kDefaultBest),
                                            ::testing::Values(0.03, 0.04, 0.05)),
                         [](const auto& info) {
                           return std::string(SizeClassName(std::get<0>(info.param))) + "_noise" +
                                  std::to_string(static_cast<int>(std::get<1>(info.param) * 100 + 0.5));
                         });

class NoFalseSwitch : public ::testing::TestWithParam<std::tuple<SizeClass, double>> {};

TEST_P(NoFalseSwitch, DefaultStaysIncumbent) {
  const auto [cls, sigma] = GetParam();
  const Summary s = RunSeeds(cls, sigma);
  Report(std::string("no-switch ") + SizeClassName(cls) + " noise " +
             std::to_string(static_cast<int>(sigma * 100 + 0.5)) + "%",
         s);
  EXPECT_EQ(s.converged, s.n);
  EXPECT_EQ(s.worse_than_default, 0);
  // A 2.5-sigma test: about 1 seed in 160 may still switch to an equally fast config (harmless).
  EXPECT_LE(s.switched, s.n / 50);
}

INSTANTIATE_TEST_SUITE_P(FlatAndDefaultBest, NoFalseSwitch,
                         ::testing::Combine(::testing::Values(SizeClass::kFlat, SizeClass::kDefaultBest),
                                            ::testing::Values(0.03, 0.05)),
                         [](const auto& info) {
                           return std::string(SizeClassName(std::get<0>(info.param))) + "_noise" +
                                  std::to_string(static_cast<int>(std::get<1>(info.param) * 100 + 0.5));
                         });

// ---- Protocol with the leader ----------------------------------------------------------------------

TEST(Search, FirstBatchMeasuresDefaultAndStartsEverySubspace) {
  const Landscape L = MakeLandscape(SizeClass::kMid, 1);
  Search s(L.space, Options{});
  EXPECT_EQ(s.state(), State::kNeedBatch);
  EXPECT_TRUE(s.incumbent().IsDefault());
  const auto b = s.NextBatch(24);
  ASSERT_FALSE(b.empty());
  EXPECT_TRUE(b[0].config.IsDefault());
  std::set<int> subs;
  for (const Candidate& c : b) {
    EXPECT_EQ(c.calls, Options{}.warmup_calls + Options{}.samples_per_candidate);
    if (c.config.HasSubspace()) subs.insert(c.config.Subspace());
  }
  EXPECT_EQ(subs.size(), 6u);
  // NCCL's pick starts right after the default, at all channels.
  EXPECT_EQ(b[1].config.algo, L.space.subspaces.nccl_algo);
  EXPECT_EQ(b[1].config.proto, L.space.subspaces.nccl_proto);
  EXPECT_EQ(b[1].config.channels, 24);
  EXPECT_EQ(s.state(), State::kWaiting);
  EXPECT_TRUE(s.NextBatch(24).empty());  // only in kNeedBatch
  EXPECT_EQ(s.stats().batches, 1);
}

TEST(Search, SmallBatchesStillConvergeToTheSameAnswer) {
  for (int seed = 0; seed < 20; ++seed) {
    const Landscape L = MakeLandscape(SizeClass::kMid, seed);
    // Noise drawn per (config, occurrence) so both runs see the same samples whatever the batching.
    auto make_cost = [&L, seed]() {
      return [&L, seed, count = std::map<std::string, int>()](const Config& c) mutable {
        const int k = count[c.ToString()]++;
        Noise n(seed * 1000003 + std::hash<std::string>()(c.ToString()) * 31 + k, 0.04);
        return n(L.True(c));
      };
    };
    Search a(L.space, Options{}), b(L.space, Options{});
    const auto ra = DriveWith(a, make_cost(), 5000, 24);
    const auto rb = DriveWith(b, make_cost(), 5000, 3);
    ASSERT_TRUE(ra.converged && rb.converged);
    for (const auto& batch : rb.history) EXPECT_LE(batch.size(), 3u);
    // Same candidates in the same order, only split differently: same samples, same answer.
    EXPECT_EQ(ra.final_config, rb.final_config) << seed;
    EXPECT_EQ(ra.calls, rb.calls);
  }
}

TEST(Search, DeterministicForTheSameSamples) {
  const Landscape L = MakeLandscape(SizeClass::kSmall, 9);
  Noise n1(3, 0.04), n2(3, 0.04);
  Search a(L.space, Options{}), b(L.space, Options{});
  const auto ra = Drive(a, L, n1), rb = Drive(b, L, n2);
  EXPECT_EQ(ra.history, rb.history);
  EXPECT_EQ(ra.final_config, rb.final_config);
}

TEST(Search, WarmupSamplesAreDiscarded) {
  // The first call of every candidate is 50x slow (connection setup): the answer must not change.
  int warm_ok = 0;
  for (int seed = 0; seed < 50; ++seed) {
    const Landscape L = MakeLandscape(SizeClass::kMid, seed);
    Noise noise(seed, 0.03, 0);
    Search s(L.space, Options{});
    DriveResult r;
    while (s.state() == State::kNeedBatch) {
      for (const Candidate& c : s.NextBatch(24))
        for (int i = 0; i < c.calls; ++i) s.AddSample(c.config, noise(L.True(c.config)) * (i == 0 ? 50 : 1));
    }
    ASSERT_EQ(s.state(), State::kConverged);
    warm_ok += L.True(s.incumbent()) <= 1.05 * L.Optimum();
    EXPECT_LT(s.stats().default_us, 2 * L.True(Config{}));
  }
  EXPECT_GE(warm_ok, 47);
}

TEST(Search, IgnoresStrayAndPreScheduleSamples) {
  const Landscape L = MakeLandscape(SizeClass::kMid, 4);
  Noise noise(4, 0.03);
  Search s(L.space, Options{});
  const auto b = s.NextBatch(24);
  // Calls of a config outside the batch, and a burst of incumbent calls before the schedule applies
  // (the incumbent is the default, which is also the first entry: those are valid default samples).
  s.AddSample(Config{1, 2, 5, 0}, 1.0);
  for (const Candidate& c : b)
    for (int i = 0; i < c.calls; ++i) s.AddSample(c.config, noise(L.True(c.config)));
  EXPECT_EQ(s.state(), State::kNeedBatch);
  s.AddSample(Config{1, 2, 5, 0}, 1.0);
  s.AddSample(Config{}, -3);  // nonsense time
  EXPECT_EQ(s.state(), State::kNeedBatch);
}

TEST(Search, LostSamplesDoNotWedgeTheSearch) {
  // The last candidate's calls never arrive; the incumbent's calls after the batch end it.
  const Landscape L = MakeLandscape(SizeClass::kMid, 2);
  Noise noise(2, 0.03);
  Search s(L.space, Options{});
  const auto b = s.NextBatch(24);
  for (size_t k = 0; k + 1 < b.size(); ++k)
    for (int i = 0; i < b[k].calls; ++i) s.AddSample(b[k].config, noise(L.True(b[k].config)));
  EXPECT_EQ(s.state(), State::kWaiting);
  s.AddSample(s.incumbent(), noise(L.True(Config{})));
  EXPECT_EQ(s.state(), State::kNeedBatch);
}

TEST(Search, NoValidSubspaceConvergesOnDefault) {
  SearchSpace sp;
  sp.max_channels = 8;
  Search s(sp, Options{});
  Noise noise(1, 0.03);
  const auto r = DriveWith(s, [&](const Config&) { return noise(50.0); });
  EXPECT_TRUE(r.converged);
  EXPECT_TRUE(r.final_config.IsDefault());
  EXPECT_EQ(r.batches, 1);
  EXPECT_NEAR(s.stats().default_us, 50, 5);
}

TEST(Search, StatsReportDefaultIncumbentAndNoise) {
  const Landscape L = MakeLandscape(SizeClass::kMid, 12);
  Noise noise(12, 0.04, 0);
  Search s(L.space, Options{});
  const auto r = Drive(s, L, noise);
  ASSERT_TRUE(r.converged);
  const Stats st = s.stats();
  EXPECT_NEAR(st.default_us / L.True(Config{}), 1, 0.05);
  EXPECT_NEAR(st.incumbent_us / L.True(s.incumbent()), 1, 0.05);
  EXPECT_NEAR(st.noise, 0.04, 0.015);
  EXPECT_GE(st.candidates_measured, 19);
  EXPECT_EQ(st.batches, r.batches);
  EXPECT_EQ(st.reopened, 0);
}

TEST(Search, DescribeListsMeasuredConfigsBestFirstAndTheDecision) {
  const Landscape L = MakeLandscape(SizeClass::kMid, 12);
  Noise noise(12, 0.01, 0);
  Search s(L.space, Options{});
  EXPECT_EQ(s.Describe().find("(converged)"), std::string::npos);
  const auto r = Drive(s, L, noise);
  ASSERT_TRUE(r.converged);
  const std::string d = s.Describe(4);
  EXPECT_EQ(d.rfind("measured ", 0), 0u) << d;
  EXPECT_NE(d.find(" *default="), std::string::npos) << d;  // the default is always listed
  EXPECT_NE(d.find("; incumbent " + s.incumbent().ToString() + " "), std::string::npos) << d;
  EXPECT_NE(d.find("(converged)"), std::string::npos) << d;
  EXPECT_NE(d.find(" more;"), std::string::npos) << d;  // more than 4 configs were measured
  // Best first: the estimates of the listed configs ascend.
  std::vector<double> v;
  for (size_t at = d.find('='); at != std::string::npos && at < d.find(';'); at = d.find('=', at + 1))
    v.push_back(std::stod(d.substr(at + 1)));
  ASSERT_GE(v.size(), 4u) << d;
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end())) << d;
}

// ---- Pruning ---------------------------------------------------------------------------------------

TEST(Search, PrunesSubspacesFarBehind) {
  int pruned_runs = 0;
  for (int seed = 0; seed < 50; ++seed) {
    Landscape L = MakeLandscape(SizeClass::kMid, seed);
    // Two subspaces far behind (3x) everywhere.
    L.subs[(L.nccl_sub + 2) % 6].tstar = 3;
    L.subs[(L.nccl_sub + 3) % 6].tstar = 3;
    const int slow_a = L.subs[(L.nccl_sub + 2) % 6].algo * kNumProtos + L.subs[(L.nccl_sub + 2) % 6].proto;
    const int slow_b = L.subs[(L.nccl_sub + 3) % 6].algo * kNumProtos + L.subs[(L.nccl_sub + 3) % 6].proto;
    Noise n1(seed, 0.04), n2(seed, 0.04);
    Search s(L.space, Options{});
    const auto r = Drive(s, L, n1);
    ASSERT_TRUE(r.converged);
    auto slow = [&](const Candidate& c) { return c.config.Subspace() == slow_a || c.config.Subspace() == slow_b; };
    bool late = false;
    for (size_t k = 1; k < r.history.size(); ++k)
      for (const Candidate& c : r.history[k]) late |= slow(c);
    pruned_runs += !late;
    // Without pruning the same search spends more of its calls on the subspaces far behind (the
    // call budget is spent either way: with pruning it goes to the close competitors).
    Options no_prune;
    no_prune.prune_ratio = 1e9;
    Search u(L.space, no_prune);
    const auto ru = Drive(u, L, n2);
    auto slow_calls = [&](const auto& run) {
      int n = 0;
      for (const auto& batch : run.history)
        for (const Candidate& c : batch) n += slow(c) ? c.calls : 0;
      return n;
    };
    EXPECT_LT(slow_calls(r), slow_calls(ru)) << seed;
    EXPECT_LE(r.calls, ru.calls + 24) << seed;
  }
  EXPECT_EQ(pruned_runs, 50);
}

// ---- Chunk dimension -------------------------------------------------------------------------------

TEST(Search, ChunkDimensionFindsBetterChunks) {
  int within5 = 0, explicit_chunk = 0, worse = 0;
  std::vector<int> calls;
  for (int seed = 0; seed < kSeeds; ++seed) {
    const Landscape L = MakeLandscape(SizeClass::kMid, seed, /*chunk=*/true);
    Noise noise(seed, 0.04);
    Search s(L.space, Options{});
    const auto r = Drive(s, L, noise);
    ASSERT_TRUE(r.converged);
    const Config c = r.final_config;
    if (c.chunk_bytes > 0) {
      ++explicit_chunk;
      const int64_t g = L.space.chunk_grain[c.proto];
      EXPECT_EQ(c.chunk_bytes % g, 0);
      const int64_t q = c.chunk_bytes / g;
      EXPECT_EQ(q & (q - 1), 0) << "chunk is not grain * 2^k: " << c.ToString();
      EXPECT_GE(c.chunk_bytes, L.space.chunk_min[c.proto]);
      EXPECT_LE(c.chunk_bytes, L.space.chunk_max[c.proto]);
    }
    within5 += r.final_true <= 1.05 * r.optimum;
    worse += r.final_true > 1.02 * r.default_true;
    calls.push_back(r.calls);
  }
  std::sort(calls.begin(), calls.end());
  std::printf(
      "[ optimizer ] chunk Mid noise 4%%: calls median %d p95 %d max %d | within 5%% %.1f%% | explicit chunk %d/%d\n",
      calls[kSeeds / 2], calls[kSeeds * 95 / 100], calls.back(), 100.0 * within5 / kSeeds, explicit_chunk, kSeeds);
  EXPECT_GE(explicit_chunk, kSeeds / 4);
  // Known weakness (see report): chunk is searched only after channels settle at chunk 0, so a lane
  // pruned on a bad NCCL chunk is lost. Measured ~77% within 5%; never worse than the default.
  EXPECT_GE(within5, 0.70 * kSeeds);
  EXPECT_EQ(worse, 0);
  EXPECT_LE(calls.back(), 500);
}

// ---- Monitoring, drift, adopt, reopen ---------------------------------------------------------------

TEST(Search, StableMonitoringNeverReopens) {
  const Landscape L = MakeLandscape(SizeClass::kMid, 3);
  Noise noise(3, 0.05, 0.05);
  Search s(L.space, Options{});
  ASSERT_TRUE(Drive(s, L, noise).converged);
  const Config inc = s.incumbent();
  for (int i = 0; i < 5000; ++i) s.AddSample(inc, noise(L.True(inc)));
  EXPECT_EQ(s.state(), State::kConverged);
  EXPECT_EQ(s.stats().reopened, 0);
}

class DriftTest : public ::testing::TestWithParam<double> {};

TEST_P(DriftTest, SustainedChangeReopensAndSearchesAgain) {
  const double factor = GetParam();
  const Landscape L = MakeLandscape(SizeClass::kMid, 6);
  Noise noise(6, 0.04);
  Search s(L.space, Options{});
  ASSERT_TRUE(Drive(s, L, noise).converged);
  const Config inc = s.incumbent();
  const Options o;
  int fed = 0;
  while (s.state() == State::kConverged && fed < 10 * o.monitor_every * o.monitor_window) {
    s.AddSample(inc, noise(L.True(inc) * factor));
    ++fed;
  }
  EXPECT_EQ(s.state(), State::kNeedBatch);
  EXPECT_EQ(s.stats().reopened, 1);
  EXPECT_LE(fed, 3 * o.monitor_every * o.monitor_window);  // two disjoint windows
  EXPECT_EQ(s.incumbent(), inc);                           // kept until the new search decides
  // The re-opened search runs to convergence again.
  EXPECT_TRUE(Drive(s, L, noise).converged);
}

INSTANTIATE_TEST_SUITE_P(SlowerAndFaster, DriftTest, ::testing::Values(1.5, 0.7));

TEST(Search, AdoptConvergesAtOnceAndMonitors) {
  const Landscape L = MakeLandscape(SizeClass::kMid, 8);
  Search s(L.space, Options{});
  const Config imported{1, 2, 12, 0};
  s.Adopt(imported, 42.0);
  EXPECT_EQ(s.state(), State::kConverged);
  EXPECT_EQ(s.incumbent(), imported);
  EXPECT_EQ(s.stats().incumbent_us, 42.0);
  EXPECT_TRUE(s.NextBatch(24).empty());
  // Measured at 42us: no drift.
  Noise noise(8, 0.03);
  for (int i = 0; i < 1000; ++i) s.AddSample(imported, noise(42.0));
  EXPECT_EQ(s.state(), State::kConverged);
  // The imported time turns out wrong by 2x: re-open.
  for (int i = 0; i < 1000 && s.state() == State::kConverged; ++i) s.AddSample(imported, noise(84.0));
  EXPECT_EQ(s.state(), State::kNeedBatch);
  EXPECT_EQ(s.stats().reopened, 1);
}

TEST(Search, AdoptWithoutTimeTakesFirstWindowAsBaseline) {
  const Landscape L = MakeLandscape(SizeClass::kMid, 8);
  Search s(L.space, Options{});
  const Config imported{0, 1, 6, 0};
  s.Adopt(imported, 0);
  EXPECT_EQ(s.state(), State::kConverged);
  Noise noise(8, 0.03);
  for (int i = 0; i < 1000; ++i) s.AddSample(imported, noise(30.0));
  EXPECT_EQ(s.state(), State::kConverged);
  EXPECT_NEAR(s.stats().incumbent_us, 30.0, 2.0);
}

TEST(Search, AdoptDuringSearchAbandonsTheBatch) {
  const Landscape L = MakeLandscape(SizeClass::kMid, 8);
  Search s(L.space, Options{});
  (void)s.NextBatch(24);
  s.Adopt(Config{}, 10);
  EXPECT_EQ(s.state(), State::kConverged);
  EXPECT_TRUE(s.incumbent().IsDefault());
  EXPECT_EQ(s.stats().default_us, 10);
}

TEST(Search, ManualReopenSearchesAgain) {
  const Landscape L = MakeLandscape(SizeClass::kSmall, 2);
  Noise noise(2, 0.04);
  Search s(L.space, Options{});
  ASSERT_TRUE(Drive(s, L, noise).converged);
  s.Reopen();
  EXPECT_EQ(s.state(), State::kNeedBatch);
  EXPECT_EQ(s.stats().reopened, 1);
  const auto b = s.NextBatch(24);
  ASSERT_FALSE(b.empty());
  EXPECT_TRUE(b[0].config.IsDefault());  // the default is measured again
}

TEST(Search, MoveKeepsState) {
  const Landscape L = MakeLandscape(SizeClass::kMid, 5);
  Search a(L.space, Options{});
  (void)a.NextBatch(24);
  Search b(std::move(a));
  EXPECT_EQ(b.state(), State::kWaiting);
  Search c(L.space, Options{});
  c = std::move(b);
  EXPECT_EQ(c.state(), State::kWaiting);
}

// ---- EnumerateSpace -------------------------------------------------------------------------------

TEST(EnumerateSpace, DefaultFirstThenEverySubspaceAndChannel) {
  const Landscape L = MakeLandscape(SizeClass::kMid, 0);
  const auto all = EnumerateSpace(L.space);
  ASSERT_EQ(all.size(), 1u + 6 * 24);
  EXPECT_TRUE(all[0].IsDefault());
  std::set<std::tuple<int, int, int, int64_t>> uniq;
  for (const Config& c : all) uniq.insert({c.algo, c.proto, c.channels, c.chunk_bytes});
  EXPECT_EQ(uniq.size(), all.size());
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_TRUE(L.space.subspaces.Valid(all[i].algo, all[i].proto));
    EXPECT_GE(all[i].channels, 1);
    EXPECT_LE(all[i].channels, 24);
    EXPECT_EQ(all[i].chunk_bytes, 0);
  }
}

TEST(EnumerateSpace, OnlyValidSubspacesAndChunkSteps) {
  SearchSpace sp;
  sp.max_channels = 4;
  sp.subspaces.valid_mask =
      (1u << (kAlgoRing * kNumProtos + kProtoSimple)) | (1u << (kAlgoTree * kNumProtos + kProtoLL));
  EXPECT_EQ(EnumerateSpace(sp).size(), 1u + 2 * 4);
  sp.chunk_dim = true;
  sp.chunk_grain[kProtoSimple] = 1024;
  sp.chunk_min[kProtoSimple] = 4096;
  sp.chunk_max[kProtoSimple] = 65536;  // 4K, 8K, 16K, 32K, 64K
  sp.chunk_grain[kProtoLL] = 512;
  sp.chunk_min[kProtoLL] = 512;
  sp.chunk_max[kProtoLL] = 1000;  // 512 only
  const auto all = EnumerateSpace(sp);
  EXPECT_EQ(all.size(), 1u + 4 * (1 + 5) + 4 * (1 + 1));
  for (const Config& c : all)
    if (c.chunk_bytes > 0) {
      EXPECT_EQ(c.chunk_bytes % sp.chunk_grain[c.proto], 0);
      EXPECT_GE(c.chunk_bytes, sp.chunk_min[c.proto]);
      EXPECT_LE(c.chunk_bytes, sp.chunk_max[c.proto]);
    }
}

}  // namespace
}  // namespace ccltune::optimizer
