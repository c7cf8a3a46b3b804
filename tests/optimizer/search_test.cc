// The search as a whole, on synthetic landscapes (landscape.hpp) driven like the leader drives it:
// pipelined (Next answers while samples are in flight), channel truth (configs NCCL runs identically
// are not asked twice), NCCL's default interleaved and kept when nothing is significantly better,
// monitoring after convergence, warm start.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>

#include "tests/optimizer/landscape.hpp"

namespace ccltune::optimizer {
namespace {

using testing::DriveLandscape;
using testing::Landscape;
using testing::MakeLandscape;
using testing::Noise;
using testing::SizeClass;

TEST(Search, NextIsPipelinedAndStartsWithTheDefault) {
  Landscape L = MakeLandscape(SizeClass::kMid, 1);
  Search s(L.space, Options{});
  EXPECT_EQ(s.state(), State::kSearching);
  const std::vector<Candidate> a = s.Next(6);
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a.front().config.IsDefault());  // each stream starts with a default sample
  // No sample arrived yet, and more candidates are still available (the screening round is larger).
  const std::vector<Candidate> b = s.Next(6);
  EXPECT_FALSE(b.empty());
  int asked = 0;
  for (const auto& c : a) asked += c.calls;
  for (const auto& c : b) asked += c.calls;
  EXPECT_EQ(s.pending(), asked);
  // A default sample at least every kDefaultEvery (4) entries.
  int since = 0;
  for (const auto& v : {a, b})
    for (const Candidate& c : v) {
      since = c.config.IsDefault() ? 0 : since + c.calls;
      EXPECT_LE(since, 4);
    }
}

// NCCL runs at most 2 channels here while 32 may be asked: per subspace, only its first probe may be a
// request NCCL runs as something else; no two asked configs run identically.
TEST(Search, NeverAsksTwoConfigsNcclRunsIdentically) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Landscape L = MakeLandscape(SizeClass::kMid, seed, false, 32);
    Search s(L.space, Options{});
    SearchSpace truth = L.space;
    std::map<Config, Config, bool (*)(const Config&, const Config&)> ran_of(
        +[](const Config& x, const Config& y) { return x.ToString() < y.ToString(); });
    std::map<std::pair<int, int>, int> aliased_asks;
    Noise noise(seed, 0.05);
    testing::DriveWith(
        s, [&](const Config& c, int64_t) { return noise(L.True(c)); },
        [&](const Config& c) {
          const Config ran = c.IsDefault() ? Config{L.subs[L.nccl_sub].algo, L.subs[L.nccl_sub].proto, 2, 0}
                                           : Config{c.algo, c.proto, std::min(c.channels, 2), 0};
          if (!c.IsDefault() && ran_of.emplace(c, ran).second && !(ran == c)) ++aliased_asks[{c.algo, c.proto}];
          return ran;
        },
        testing::DriveOptions{});
    ASSERT_EQ(s.state(), State::kConverged) << seed;
    for (const auto& [sub, n] : aliased_asks) EXPECT_LE(n, 1) << "seed " << seed << " subspace " << sub.first;
    std::set<std::string> ran_seen;
    for (const auto& [asked, ran] : ran_of)
      if (asked == ran) EXPECT_TRUE(ran_seen.insert(ran.ToString()).second) << ran.ToString();
    // What it converged to is what NCCL runs (never a request above the channels that exist).
    EXPECT_LE(s.incumbent().channels, 2) << seed;
  }
}

TEST(Search, KeepsTheDefaultOnAFlatLandscape) {
  int switched = 0;
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    Landscape L = MakeLandscape(SizeClass::kFlat, seed);
    Search s(L.space, Options{});
    Noise noise(seed, 0.05);
    ASSERT_TRUE(DriveLandscape(s, L, noise).converged);
    switched += s.incumbent().IsDefault() ? 0 : 1;
  }
  // Every config costs the same: a switch is a false positive of the significance test (one-sided at
  // kDecideZ standard errors, but of the best of several arms, tested as the samples come), at most a few
  // percent. 400 seeds: the rate is about 6% (24 of 400 with the decision's bound linear in the relative
  // time, 25 with it in log, as the noise is measured), which 100 seeds could not tell from 5%.
  EXPECT_LE(switched, 28);
}

struct ClassCase {
  SizeClass cls;
  double max_ratio;  // final true time / the optimum, median over seeds
  double worst_vs_default;
};

class SearchOnLandscapes : public ::testing::TestWithParam<ClassCase> {};

TEST_P(SearchOnLandscapes, FindsAGoodConfigAndNeverLosesToTheDefault) {
  const ClassCase cc = GetParam();
  std::vector<double> ratio;
  double worst_vs_default = 0;
  int64_t calls = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Landscape L = MakeLandscape(cc.cls, seed);
    Search s(L.space, Options{});
    Noise noise(seed, 0.05);
    const testing::DriveResult r = DriveLandscape(s, L, noise);
    ASSERT_TRUE(r.converged) << seed;
    calls += r.calls;
    ratio.push_back(L.True(r.incumbent) / L.Optimum());
    worst_vs_default = std::max(worst_vs_default, L.True(r.incumbent) / L.True(Config{}));
  }
  std::sort(ratio.begin(), ratio.end());
  EXPECT_LE(ratio[ratio.size() / 2], cc.max_ratio) << SizeClassName(cc.cls);
  EXPECT_LE(worst_vs_default, cc.worst_vs_default) << SizeClassName(cc.cls);
  EXPECT_LE(calls / 40, 110) << SizeClassName(cc.cls);  // 32 channels, 6 subspaces
  std::printf("[ search ] %-11s median ratio %.3f, p90 %.3f, worst vs default %.3f, mean calls %lld\n",
              SizeClassName(cc.cls), ratio[ratio.size() / 2], ratio[ratio.size() * 9 / 10], worst_vs_default,
              static_cast<long long>(calls / 40));
}

INSTANTIATE_TEST_SUITE_P(
    Classes, SearchOnLandscapes,
    ::testing::Values(ClassCase{SizeClass::kSmall, 1.03, 1.02}, ClassCase{SizeClass::kMid, 1.04, 1.02},
                      ClassCase{SizeClass::kLarge, 1.03, 1.02}, ClassCase{SizeClass::kDefaultBest, 1.01, 1.02}),
    [](const ::testing::TestParamInfo<ClassCase>& i) { return std::string(SizeClassName(i.param.cls)); });

TEST(Search, MonitoringDriftReopens) {
  Landscape L = MakeLandscape(SizeClass::kMid, 3);
  Options o;
  o.guard = false;  // with the guard, a drift of a config other than the default goes to it (below)
  Search s(L.space, o);
  Noise noise(3, 0.03);
  ASSERT_TRUE(DriveLandscape(s, L, noise).converged);
  const Config inc = s.incumbent();
  const double t = L.True(inc);
  // Two windows at the converged time: nothing happens; then two windows 40% slower: searching again.
  for (int i = 0; i < 2 * Options{}.monitor_window; ++i) s.AddSample(inc, t);
  EXPECT_EQ(s.state(), State::kConverged);
  for (int i = 0; i < 2 * Options{}.monitor_window; ++i) s.AddSample(inc, 1.4 * t);
  EXPECT_EQ(s.state(), State::kSearching);
  EXPECT_EQ(s.stats().reopened, 1);
  EXPECT_FALSE(s.Next(4).empty());
}

// The guard, driven the way the leader runs a converged workload: monitoring samples of the incumbent, and
// between them the probes of NCCL's default the search asks for (Next() while converged), answered at once.
// `inc` and `def` give the times at monitoring sample i; 5% noise.
int RunConverged(Search& s, int n, const std::function<double(int)>& inc, const std::function<double(int)>& def,
                 uint64_t seed) {
  Noise noise(seed, 0.05, 0);
  int probes = 0;
  for (int i = 0; i < n && s.state() == State::kConverged; ++i) {
    for (const Candidate& c : s.Next(1)) {
      EXPECT_TRUE(c.config.IsDefault());
      EXPECT_EQ(c.calls, 1);
      s.AddSample(Config{}, noise(def(i)));
      ++probes;
    }
    s.AddSample(s.incumbent(), noise(inc(i)), 0, false);
  }
  return probes;
}

const Config kAdopted{kAlgoRing, kProtoLL128, 12, 0};

// A config that reads 20% slower than the default beside it: re-opened within the first window (8 probes, one
// every 2 monitoring samples, and 16 samples of the config: the 9th probe's sample judges it).
TEST(Search, GuardReopensAConfigSlowerThanTheDefault) {
  Landscape L = MakeLandscape(SizeClass::kMid, 4);
  Search s(L.space, Options{});
  s.Adopt(kAdopted, 0);
  EXPECT_TRUE(s.checking());
  const int probes = RunConverged(
      s, 40, [](int) { return 120.0; }, [](int) { return 100.0; }, 1);
  EXPECT_EQ(s.state(), State::kSearching);
  EXPECT_EQ(s.stats().demoted, 1);
  EXPECT_EQ(s.stats().reopened, 1);
  EXPECT_EQ(probes, 9);
  EXPECT_FALSE(s.checking());
}

// A config 20% faster keeps running; the first window confirms it, the cadence may grow long again
// (checking() false) and the probes spread out: 9 in the first 18 monitoring samples, then one every 4, 8, ...
// 64. Off (Options::guard false), no probe at all.
TEST(Search, GuardKeepsAFasterConfigAndSpreadsItsProbes) {
  Landscape L = MakeLandscape(SizeClass::kMid, 4);
  for (const bool guard : {true, false}) {
    Options o;
    o.guard = guard;
    Search s(L.space, o);
    s.Adopt(kAdopted, 0);
    EXPECT_EQ(s.checking(), guard);
    const int first = RunConverged(
        s, 18, [](int) { return 80.0; }, [](int) { return 100.0; }, 2);
    EXPECT_FALSE(s.checking());
    const int later = RunConverged(
        s, 4000, [](int) { return 80.0; }, [](int) { return 100.0; }, 3);
    EXPECT_EQ(s.state(), State::kConverged);
    EXPECT_EQ(s.stats().reopened, 0);
    if (!guard) {
      EXPECT_EQ(first + later, 0);
      continue;
    }
    EXPECT_EQ(first, 9);
    // 8 each at spacings 4, 8, 16, 32 (480 samples), then one in 64: about 90 over 4000 samples.
    EXPECT_GE(later, 80);
    EXPECT_LE(later, 100);
  }
}

// The machine slows down by 40%, the default as much as the config: the drift monitoring hands the drift to
// the guard (a fresh first window), which keeps the config. Then the config alone slows by 40% (from 80 to
// 112 against the default's 100): re-opened.
TEST(Search, GuardJudgesADriftAgainstTheDefault) {
  Landscape L = MakeLandscape(SizeClass::kMid, 4);
  Search s(L.space, Options{});
  s.Adopt(kAdopted, 0);
  RunConverged(
      s, 64, [](int) { return 80.0; }, [](int) { return 100.0; }, 4);
  ASSERT_EQ(s.state(), State::kConverged);
  RunConverged(
      s, 64, [](int) { return 1.4 * 80; }, [](int) { return 1.4 * 100; }, 5);
  EXPECT_EQ(s.state(), State::kConverged);
  EXPECT_GE(s.stats().rechecks, 1);
  EXPECT_EQ(s.stats().reopened, 0);
  RunConverged(
      s, 400, [](int) { return 1.4 * 80; }, [](int) { return 100.0; }, 6);
  EXPECT_EQ(s.state(), State::kSearching);
  EXPECT_EQ(s.stats().demoted, 1);
}

// Converged on NCCL's default, the same hand-off: no probe while the default's time holds; when it drifts (the
// machine 40% slower, the closest config as much), the guard reads the default against the config that came
// closest to it in the search, for one to four windows of probes, and keeps the default (then no more probes). When the
// default alone slows by 40% more, its drift is checked the same way and the search re-opens. With the guard
// off, the first drift re-opens it.
TEST(Search, GuardJudgesADriftOfTheDefaultAgainstTheClosestConfig) {
  int cases = 0;
  for (uint64_t seed = 1; seed <= 40 && cases < 5; ++seed) {
    Landscape L = MakeLandscape(SizeClass::kDefaultBest, seed);
    for (const bool guard : {true, false}) {
      Options o;
      o.guard = guard;
      Search s(L.space, o);
      Noise noise(seed, 0.05);
      ASSERT_TRUE(DriveLandscape(s, L, noise).converged);
      if (!s.incumbent().IsDefault()) break;
      cases += guard;
      // Monitoring samples of the default, the probes asked for answered at once; `machine` scales every
      // config, `alone` the default's time only.
      Noise steady(seed + 100, 0.05, 0);
      std::set<std::string> probed;
      auto run = [&](int n, double machine, double alone) {
        int probes = 0;
        for (int i = 0; i < n && s.state() == State::kConverged; ++i) {
          for (const Candidate& c : s.Next(1)) {
            EXPECT_FALSE(c.config.IsDefault());
            probed.insert(c.config.ToString());
            s.AddSample(c.config, steady(machine * L.True(c.config)));
            ++probes;
          }
          s.AddSample(Config{}, steady(machine * alone * L.True(Config{})), 0, false);
        }
        return probes;
      };
      EXPECT_EQ(run(64, 1, 1), 0);
      EXPECT_FALSE(s.checking());
      const int slow = run(400, 1.4, 1);
      if (!guard) {
        EXPECT_EQ(s.state(), State::kSearching);
        EXPECT_EQ(s.stats().reopened, 1);
        continue;
      }
      EXPECT_EQ(s.state(), State::kConverged) << seed;
      EXPECT_GE(s.stats().rechecks, 1);
      EXPECT_GE(slow, 8);   // one judgement or more: 8 probes each,
      EXPECT_LE(slow, 32);  // 4 at most
      EXPECT_EQ(probed.size(), 1u);
      EXPECT_FALSE(s.checking());
      EXPECT_EQ(run(200, 1.4, 1), 0);  // held: the probes stopped
      run(400, 1.4, 1.4);
      EXPECT_EQ(s.state(), State::kSearching) << seed;
      EXPECT_EQ(s.stats().demoted + s.stats().shifted, 1) << seed;
    }
  }
  EXPECT_EQ(cases, 5);
}

TEST(Search, AdoptConvergesAtOnceAndDropPendingUnblocks) {
  Landscape L = MakeLandscape(SizeClass::kMid, 4);
  Search a(L.space, Options{});
  const Config imported{kAlgoRing, kProtoLL128, 12, 0};
  a.Adopt(imported, 42);
  EXPECT_EQ(a.state(), State::kConverged);
  EXPECT_EQ(a.incumbent(), imported);
  EXPECT_DOUBLE_EQ(a.stats().incumbent_us, 42);
  EXPECT_TRUE(a.Next(8).empty());

  Search b(L.space, Options{});
  int asked = 0;
  for (const Candidate& c : b.Next(64)) asked += c.calls;
  ASSERT_GT(asked, 0);
  EXPECT_TRUE(b.Next(64).empty() || b.pending() > asked);
  b.DropPending();  // the samples will never come: the same round is asked again
  EXPECT_EQ(b.pending(), 0);
  EXPECT_FALSE(b.Next(64).empty());
}

// Samples lost before a re-opening (a schedule replaced, calls no rank could time) are not paid back to the
// search that starts over: it runs within the budget of a new one (the lost count of Stats runs on across
// re-openings, and once let a re-opened search ask for as many entries more as had been lost before).
TEST(Search, SamplesLostBeforeAReopenLeaveTheNewSearchItsOwnBudget) {
  int at_budget = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const Landscape L = MakeLandscape(SizeClass::kFlat, seed);
    auto to_convergence = [&](Search& s) {
      Noise noise(seed, 0.25);  // the same samples for both
      return DriveLandscape(s, L, noise).converged;
    };
    Search fresh(L.space, Options{}), again(L.space, Options{});
    ASSERT_TRUE(to_convergence(fresh)) << seed;
    int lost = 0;
    for (const Candidate& c : again.Next(8)) {
      for (int k = 0; k < c.calls; ++k) again.NoteLost(c.config);
      lost += c.calls;
    }
    again.Next(8);
    again.DropPending();
    ASSERT_GT(again.stats().lost, lost) << seed;
    again.Reopen();
    ASSERT_TRUE(to_convergence(again)) << seed;
    EXPECT_EQ(again.stats().requested, fresh.stats().requested) << seed;
    EXPECT_EQ(again.incumbent(), fresh.incumbent()) << seed;
    at_budget += fresh.stats().requested == fresh.stats().budget ? 1 : 0;
  }
  // Heavy noise on a flat landscape runs most searches to their budget, where the lost count would show.
  EXPECT_GT(at_budget, 10);
}

// Options::race_budget sets the budget, race_budget + 3 entries per arm: heavy noise on a flat landscape runs most
// searches to it, and none asks for more. A low-stakes search (SetLowStakes) has low_stakes_budget in its place
// while no arm reads 10% faster than the default: on a flat landscape, mostly.
TEST(Search, TheRaceBudgetBoundsTheEntries) {
  struct Case {
    int race_budget;
    bool low_stakes;
  };
  const Case cases[3] = {{12, false}, {18, false}, {18, true}};
  double requested[3] = {0, 0, 0};
  for (int b = 0; b < 3; ++b) {
    Options options;
    options.race_budget = cases[b].race_budget;
    int at_budget = 0, at_low = 0;
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      const Landscape L = MakeLandscape(SizeClass::kFlat, seed);
      Search s(L.space, options);
      s.SetLowStakes(cases[b].low_stakes);
      Noise noise(seed, 0.25);
      ASSERT_TRUE(DriveLandscape(s, L, noise).converged) << seed;
      const Stats st = s.stats();
      EXPECT_EQ(st.low_stakes, cases[b].low_stakes);
      // The budget at the end: 3 per arm plus race_budget, or low stakes plus low_stakes_budget where the leader does
      // not read under 0.9 of the default then (and race_budget where it does).
      const int per_arm = 3 * st.arms;
      EXPECT_GT(st.arms, 0) << s.Describe();
      if (cases[b].low_stakes) {
        EXPECT_TRUE(st.budget == per_arm + options.low_stakes_budget || st.budget == per_arm + options.race_budget)
            << s.Describe();
      } else {
        EXPECT_EQ(st.budget, per_arm + options.race_budget) << s.Describe();
      }
      EXPECT_LE(st.requested, per_arm + options.race_budget) << s.Describe();
      // A low-stakes search's waiting samples count against its budget (Stats::waited); no other search's do.
      if (!cases[b].low_stakes) EXPECT_EQ(st.waited, 0) << s.Describe();
      at_budget += st.requested + st.waited >= st.budget ? 1 : 0;
      at_low += cases[b].low_stakes && st.budget == per_arm + options.low_stakes_budget ? 1 : 0;
      requested[b] += static_cast<double>(st.requested) / 40;
    }
    EXPECT_GT(at_budget, 10) << b;
    if (cases[b].low_stakes) EXPECT_GT(at_low, 30);
  }
  EXPECT_LT(requested[0], requested[1]);
  // Low stakes: 6 in place of 18, and 18 again while an arm reads 10% faster.
  EXPECT_LT(requested[2], requested[0]);
}

// A low-stakes search counts the samples of its waiting config (the calls run while what it asked for is on its way)
// against its budget: each of its samples is an entry it asked for or a waiting sample it counted (those that come
// after the budget is spent, while its last entries are on their way, are counted too, and ask for nothing). A search
// that is not low stakes takes its waiting samples beyond its entries.
// 40 flat landscapes at 25% noise, a sample arriving 10 calls after its call (the driver's latency).
TEST(Search, ALowStakesSearchCountsItsWaitingSamples) {
  int beyond_entries = 0, counted = 0;
  double calls[2] = {0, 0};
  const Options options;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const Landscape L = MakeLandscape(SizeClass::kFlat, seed);
    for (int low = 0; low < 2; ++low) {
      Search s(L.space, options);
      s.SetLowStakes(low == 1);
      Noise noise(seed, 0.25);
      const testing::DriveResult r = DriveLandscape(s, L, noise);
      ASSERT_TRUE(r.converged) << seed;
      const Stats st = s.stats();
      calls[low] += static_cast<double>(r.calls) / 40;
      if (low == 1) {
        EXPECT_LE(st.samples, st.requested + st.waited) << s.Describe();
        counted += st.waited > 0 ? 1 : 0;
      } else {
        EXPECT_EQ(st.waited, 0);
        beyond_entries += st.samples > st.requested ? 1 : 0;
      }
    }
  }
  EXPECT_GT(beyond_entries, 30);
  EXPECT_GT(counted, 30);
  EXPECT_LT(calls[1], calls[0]);
}

// Real NCCL on the one-GPU testbed (all-reduce 1 MiB): ring/simple/nc1 read 4.1x the default on its one
// screening sample and was dropped, while it was 1.15x faster than the default. A screening sample that
// slow next to a fast neighbour of its own subspace (here NCCL's default, ring/simple/nc2) is sampled
// again before the cut.
// ring/simple and tree/simple on a communicator of 2 channels (as on the one-GPU testbed), NCCL's pick
// ring/simple, channel truth on; what NCCL runs for a config there.
SearchSpace RingAndTreeOnTwoChannels() {
  SearchSpace space;
  space.subspaces.valid_mask =
      (1u << (kAlgoRing * kNumProtos + kProtoSimple)) | (1u << (kAlgoTree * kNumProtos + kProtoSimple));
  space.subspaces.nccl_algo = kAlgoRing;
  space.subspaces.nccl_proto = kProtoSimple;
  space.max_channels = 2;
  space.channel_truth = true;
  return space;
}
Config RunsOnTwoChannels(const Config& c) {
  return c.IsDefault() ? Config{kAlgoRing, kProtoSimple, 2, 0} : Config{c.algo, c.proto, std::min(c.channels, 2), 0};
}

// A low-stakes search whose leader reads 15% faster than the default keeps race_budget until the gain is significant:
// it ends on the faster config about as often as a search on the full budget, and more often than one on
// low_stakes_budget alone (on the simulated cluster, without that, all-gather 256 KiB stayed on NCCL's default at
// 1.456 of the oracle's time). Where nothing is faster, it asks for fewer. At 8% noise over 40 seeds: 40 seeds on the
// faster config with the full budget, 39 low stakes, 31 on a budget of 6; 21.4 entries asked for with the full budget
// where nothing is faster, 15.4 low stakes. (At 25% noise the fast arm was found in 15, 13 and 12 seeds; the leader's
// reading since it leads, not its best reading, decides the extension: on all of its samples, the luckiest of many
// arms on a flat landscape read 10% faster often enough to keep most searches on the full budget.)
struct StakesRun {
  int fast = 0;          // seeds ending on ring/simple/nc1
  double requested = 0;  // mean entries asked for
};
StakesRun RunStakes(const Options& options, bool low_stakes, double fast_relative, double sd) {
  const SearchSpace space = RingAndTreeOnTwoChannels();
  const Config fast{kAlgoRing, kProtoSimple, 1, 0};
  StakesRun out;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Search s(space, options);
    s.SetLowStakes(low_stakes);
    Noise noise(seed, sd);
    const testing::DriveResult r = testing::DriveWith(
        s,
        [&](const Config& c, int64_t) {
          if (c.IsDefault() || (c.algo == kAlgoRing && c.channels == 2)) return noise(1000.0);
          return noise(c == fast ? 1000.0 * fast_relative : 1400.0);
        },
        RunsOnTwoChannels, testing::DriveOptions{});
    EXPECT_TRUE(r.converged) << seed;
    out.fast += r.incumbent == fast ? 1 : 0;
    out.requested += static_cast<double>(s.stats().requested) / 40;
  }
  return out;
}

TEST(Search, ALowStakesSearchKeepsItsBudgetWhileAGainIsUnconfirmed) {
  Options full, low_only;
  low_only.race_budget = full.low_stakes_budget;
  // ring/simple/nc1 at 0.85 of the default, 8% noise.
  const StakesRun f = RunStakes(full, false, 0.85, 0.08), l = RunStakes(full, true, 0.85, 0.08),
                  o = RunStakes(low_only, false, 0.85, 0.08);
  EXPECT_GE(l.fast, f.fast - 2) << f.fast << " " << l.fast << " " << o.fast;
  EXPECT_GE(l.fast, o.fast + 5) << f.fast << " " << l.fast << " " << o.fast;
  // Nothing faster than the default: the low-stakes budget.
  const StakesRun fn = RunStakes(full, false, 1.0, 0.08), ln = RunStakes(full, true, 1.0, 0.08);
  EXPECT_LT(ln.requested, fn.requested - 4) << fn.requested << " " << ln.requested;
}

TEST(Search, OneSlowScreeningSampleDoesNotDropTheBestConfig) {
  const SearchSpace space = RingAndTreeOnTwoChannels();
  auto truth = [](const Config& c) {
    if (c.IsDefault() || (c.algo == kAlgoRing && c.channels == 2)) return 1000.0;
    if (c.algo == kAlgoRing) return 870.0;  // ring/simple/nc1
    return c.channels == 2 ? 1200.0 : 1500.0;
  };
  int kept = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Search s(space, Options{});
    Noise noise(seed, 0.03);
    bool first = true;
    testing::DriveWith(
        s,
        [&](const Config& c, int64_t) {
          double us = noise(truth(c));
          if (c.algo == kAlgoRing && c.channels == 1 && first) us *= 4.1, first = false;
          return us;
        },
        RunsOnTwoChannels, testing::DriveOptions{});
    ASSERT_EQ(s.state(), State::kConverged) << seed;
    kept += s.incumbent() == Config{kAlgoRing, kProtoSimple, 1, 0} ? 1 : 0;
  }
  // Without the second look: 0 of 20 (the outlier's config never comes back). With it, a seed can still
  // lose it when the second sample arrives after the cut (seed 2: 4.1x and 0.87x read 2.6x).
  EXPECT_GE(kept, 18);
}

// A suspect's two samples that disagree get a third only where the smaller of the two could still lead: the median of
// three is never below it. Here tree/simple/nc2 reads 950 us on screening (a suspect beside tree/simple/nc1 at 580
// us), then 1500 us on its second look; the race leads on tree/simple/nc1 at 0.58 of the default, so a third look
// could not make tree/simple/nc2 lead, and the race does not wait for one (real NCCL on the one-GPU testbed: five
// iterations of a loop of four calls each, all-gather 16 KiB per rank).
TEST(Search, ASuspectWhoseFasterReadingCannotLeadGetsNoThirdLook) {
  const Config tree2{kAlgoTree, kProtoSimple, 2, 0};
  const Config tree1{kAlgoTree, kProtoSimple, 1, 0};
  auto us_of = [&](const Config& c, int tree2_look) {
    if (c.IsDefault() || (c.algo == kAlgoRing && c.channels == 2)) return 1000.0;
    if (c.algo == kAlgoRing) return 700.0;
    if (c == tree1) return 580.0;
    return tree2_look == 1 ? 950.0 : 1500.0;
  };
  Search s(RingAndTreeOnTwoChannels(), Options{});
  // Rounds of entries, every sample back before the next round is asked for; tree/simple/nc2's last in its round, so
  // the others' samples are there when its readings are judged.
  int tree2_looks = 0;
  for (int round = 0; round < 16 && s.state() == State::kSearching; ++round) {
    std::vector<Config> asked;
    for (const Candidate& c : s.Next(32))
      for (int i = 0; i < c.calls; ++i) asked.push_back(c.config);
    std::stable_sort(asked.begin(), asked.end(), [&](const Config& a, const Config& b) {
      return !(RunsOnTwoChannels(a) == tree2) && RunsOnTwoChannels(b) == tree2;
    });
    for (const Config& c : asked) {
      const Config ran = RunsOnTwoChannels(c);
      s.NoteRan(c, ran);
      s.AddSample(c, us_of(ran, ran == tree2 ? ++tree2_looks : 0));
    }
  }
  ASSERT_EQ(s.state(), State::kConverged) << s.Describe();
  // Its screening sample and its second look (a suspect: 0.95 of the default, tree/simple/nc1 at 0.58), which
  // disagree; the smaller is 0.95 of the default against the leader's 0.58.
  EXPECT_EQ(tree2_looks, 2) << s.Describe();
  EXPECT_EQ(s.incumbent(), tree1) << s.Describe();
}

// Of 20 seeds on RingAndTreeOnTwoChannels (NCCL's default and ring/nc2 at 1000 us, tree at `tree_us`), how
// many end on ring/simple/nc1, whose n-th call (from 1) reads fast_us(n), at per-call noise `sd`.
int SeedsEndingOnRingNc1(double sd, double tree_us, const std::function<double(int)>& fast_us) {
  const SearchSpace space = RingAndTreeOnTwoChannels();
  const Config fast{kAlgoRing, kProtoSimple, 1, 0};
  int found = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Search s(space, Options{});
    Noise noise(seed, sd);
    int fast_calls = 0;
    testing::DriveWith(
        s,
        [&](const Config& c, int64_t) {
          if (c.IsDefault() || (c.algo == kAlgoRing && c.channels == 2)) return noise(1000.0);
          if (c == fast) return noise(fast_us(++fast_calls));
          return noise(tree_us);
        },
        RunsOnTwoChannels, testing::DriveOptions{});
    EXPECT_EQ(s.state(), State::kConverged) << seed;
    found += s.incumbent() == fast ? 1 : 0;
  }
  return found;
}

// The fast config is the race's leader after screening but read a little slower than the default on its
// only sample (1.05x; 0.85x after that), and every other arm is far slower: with the noise not yet
// measured, the leader gets a second look instead of the search ending on NCCL's default (the simulated
// training loop ended all-gather 1 MiB this way on 8 samples, its ring/simple/nc1 at 0.82 of the default).
TEST(Search, ALeaderSlightlySlowOnItsOnlySampleGetsASecondLook) {
  // Without the second look: 0 of 20.
  EXPECT_GE(SeedsEndingOnRingNc1(0.01, 1600.0, [](int n) { return n == 1 ? 1050.0 : 850.0; }), 18);
}

// The fast config leads after screening (0.80 of the default), and the first of its samples after that is
// a 1.6x outlier (real NCCL on the testbed, all-reduce 1 MiB: ring/simple/nc1 read 802 us on screening, then
// 1241 us on the first call of its waiting block, right after another config, and 754 us; the search kept
// the default on those two, at 12 of 39 entries, and the config's next 11 calls read 710-811 us). Two
// samples since the lead that disagree by the suspect ratio get a third before the default is kept.
TEST(Search, ALeadersTwoDisagreeingSamplesGetAThirdBeforeTheDefaultIsKept) {
  // Without the third: 0 of 20.
  EXPECT_GE(SeedsEndingOnRingNc1(0.03, 1500.0, [](int n) { return n == 2 ? 1600.0 : 800.0; }), 18);
}

// The fast config reads fast on its samples before it leads and slow on its first ones after (real NCCL on the
// testbed, reduce-scatter 1 MiB: ring/simple/nc1 read 366-400 us against the default's 404-443 us while other
// arms were still timed, then 414-493 us against 443-578 us once it led; the search kept the default after 15 of
// 33 entries, the config at 0.888 of it on 7 samples, where the oracle read it 1.14 times faster). Here tree/nc2
// reads 840 us on its first three calls and then 1300 us, so ring/simple/nc1 (870 us) takes the lead
// with samples behind it, and reads the default's 1000 us on its next `slow` calls: the default is not kept while
// the config's whole record still shows the gain.
int SeedsEndingOnRingNc1AfterASlowStretch(int slow) {
  const SearchSpace space = RingAndTreeOnTwoChannels();
  const Config fast{kAlgoRing, kProtoSimple, 1, 0};
  int found = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Search s(space, Options{});
    Noise noise(seed, 0.01);
    int tree_calls = 0, fast_after_tree = 0;
    testing::DriveWith(
        s,
        [&](const Config& c, int64_t) {
          if (c.IsDefault() || (c.algo == kAlgoRing && c.channels == 2)) return noise(1000.0);
          if (c == fast) {
            // The stretch starts with its first call after tree/nc2's first slow one.
            if (tree_calls > 3 && fast_after_tree++ < slow) return noise(1000.0);
            return noise(870.0);
          }
          if (c.algo == kAlgoTree && RunsOnTwoChannels(c).channels == 2)
            return noise(++tree_calls <= 3 ? 840.0 : 1300.0);
          return noise(1500.0);
        },
        RunsOnTwoChannels, testing::DriveOptions{});
    EXPECT_EQ(s.state(), State::kConverged) << seed;
    found += s.incumbent() == fast ? 1 : 0;
  }
  return found;
}

TEST(Search, ALeaderSlowJustAfterItTookTheLeadIsNotDroppedForTheDefault) {
  // Two slow calls: 19 of 20 (0 of 20 when the rule looked at the samples since the lead only). Three: 14 (0);
  // four: 1 (0); five or six: 0 (0), the slow calls outweighing the fast ones before them.
  EXPECT_GE(SeedsEndingOnRingNc1AfterASlowStretch(2), 18);
}

}  // namespace
// Real NCCL 2.28 on two NVLink H100s (tests/data/landscapes/nvlink2-h100, all-gather 64 KiB, ring/LL):
// NCCL runs fewer channels than asked for a small message without a ceiling: 5 runs as 4, 7 as 6, 9-15 as
// 8, 17-32 as 16, while 1-4, 6, 8 and 16 run as asked (NCCL's default runs 8). The search used to take
// 5 -> 4 for a ceiling of 4, count later requests above 4 as 4, and move all of 4's samples and awaited
// samples when 7's run (6) was reported: samples then came back that nothing awaited, the ones awaited
// never could, and the search waited for ever (17 and 11 of 1500 replayed runs of that landscape; here,
// at its per-call noise, some of these seeds).
TEST(Search, NcclRunningFewerChannelsForASmallMessageStrandsNoSample) {
  SearchSpace space;
  space.subspaces.valid_mask = 1u << (kAlgoRing * kNumProtos + kProtoLL);
  space.subspaces.nccl_algo = kAlgoRing;
  space.subspaces.nccl_proto = kProtoLL;
  space.max_channels = 32;
  space.channel_truth = true;
  auto ran = [](const Config& c) {
    if (c.IsDefault()) return Config{kAlgoRing, kProtoLL, 8, 0};
    const int n = c.channels <= 4 ? c.channels : c.channels < 6 ? 4 : c.channels < 8 ? 6 : c.channels < 16 ? 8 : 16;
    return Config{c.algo, c.proto, n, 0};
  };
  // The recorded medians (us) of what NCCL ran.
  const std::map<int, double> us = {{1, 15.12}, {2, 11.68}, {3, 10.59}, {4, 10.80},
                                    {6, 11.39}, {8, 12.30}, {16, 12.38}};
  int fast = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    Search s(space, Options{});
    Noise noise(seed, 0.15);
    testing::DriveWith(
        s, [&](const Config& c, int64_t) { return noise(us.at(ran(c).channels)); }, ran, testing::DriveOptions{});
    ASSERT_EQ(s.state(), State::kConverged) << seed << ": " << s.Describe();
    const Config inc = s.incumbent();
    EXPECT_LE(us.at(ran(inc).channels), 1.02 * us.at(8)) << seed << ": " << inc.ToString();
    fast += inc.channels == 3 || inc.channels == 4 ? 1 : 0;
  }
  // ring/LL on 3 or 4 channels (0.86-0.88 of the default) in 26 of 100 at this noise; the rest on other
  // channel counts or the default, none more than 2% slower than the default.
  EXPECT_GE(fast, 20);
}

}  // namespace ccltune::optimizer

namespace ccltune::optimizer {
namespace {

// Real NCCL 2.28.9 on four NVLink H100s, reduce-scatter 4 MiB (per rank 1 MiB; leader traces in
// docs/results/data/nvlink4-search/h100x4-s6-*): ring/LL and ring/LL128 at 16-24 channels all at about
// 0.74-0.83 of NCCL's default (ring/Simple, 24), near ties inside 12-18% noise with outliers, and the
// search kept the default in 5 of 8 runs (one with ring/ll128/nc16 at 0.741 on 30 samples). Here, on the
// curve's shape: the final choice took the pessimistic best, often an arm with few samples that could not
// clear the test, while one just behind it on many could; and it judged that arm at kDecideZ + kPickedZ
// standard errors of the difference, where the winner's curse is in the arm's own samples only.
TEST(Search, NearTiedFastArmsInHeavyNoiseDoNotEndOnTheDefault) {
  SearchSpace space;
  space.subspaces.valid_mask = (1u << (kAlgoRing * kNumProtos + kProtoLL)) |
                               (1u << (kAlgoRing * kNumProtos + kProtoLL128)) |
                               (1u << (kAlgoRing * kNumProtos + kProtoSimple));
  space.subspaces.nccl_algo = kAlgoRing;
  space.subspaces.nccl_proto = kProtoSimple;
  space.max_channels = 32;
  space.channel_truth = true;
  auto ran = [](const Config& c) {
    return c.IsDefault() ? Config{kAlgoRing, kProtoSimple, 24, 0}
                         : Config{c.algo, c.proto, std::min(c.channels, 24), 0};
  };
  // Relative to the default (ring/simple/nc24 = 1): the recorded curve's shape, flattened near the top.
  auto truth = [&](const Config& asked) {
    const Config c = ran(asked);
    const double n = c.channels;
    if (c.proto == kProtoSimple) return 1000.0 * std::max(1.0, 24.0 / n);
    const double top = c.proto == kProtoLL ? 790.0 : 800.0;
    return n >= 16 ? top + 3.0 * (24 - n) : top * 16.0 / n;
  };
  int fast = 0, slower = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Search s(space, Options{});
    Noise noise(seed, 0.13, 0.05);
    const testing::DriveResult r = testing::DriveWith(
        s, [&](const Config& c, int64_t) { return noise(truth(c)); }, ran, testing::DriveOptions{});
    ASSERT_TRUE(r.converged) << seed;
    const double rel = truth(r.incumbent) / 1000.0;
    fast += rel < 0.9 ? 1 : 0;
    slower += rel > 1.0 ? 1 : 0;
  }
  // Before: 27 of 40 (289 of 400 seeds); with that change 36 (352 of 400), and 35 at 654a33a and 990642a. The rest end
  // on the default where its own 13-16 samples leave the gain inside the error: more default samples cost the arms
  // theirs.
  EXPECT_GE(fast, 35);
  EXPECT_EQ(slower, 0);
}

}  // namespace
}  // namespace ccltune::optimizer

namespace ccltune::optimizer {
namespace {

// Of 40 seeds on RingAndTreeOnTwoChannels with per-call noise `sd` around `truth`, how many converged before the
// budget ran out (Stats::early); every one must converge on a config `good` accepts.
int SeedsDecidedEarly(const std::function<double(const Config&)>& truth, double sd,
                      const std::function<bool(const Config&)>& good) {
  const SearchSpace space = RingAndTreeOnTwoChannels();
  int early = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Search s(space, Options{});
    Noise noise(seed, sd);
    const testing::DriveResult r = testing::DriveWith(
        s, [&](const Config& c, int64_t) { return noise(truth(c)); }, RunsOnTwoChannels, testing::DriveOptions{});
    EXPECT_TRUE(r.converged) << seed;
    EXPECT_TRUE(good(r.incumbent)) << seed << ": " << r.incumbent.ToString();
    early += s.stats().early;
  }
  return early;
}

// Two arms of different subspaces equally fast (0.80 of NCCL's default) in mild noise: the lead moves between
// them, each change restarts the leader's samples since it leads, and the race ran to its budget on a difference
// the search does not care about (simulated testbed noise, all-reduce 256 KiB: tree/simple/nc2 at 0.829 and
// ring/simple/nc1 at 0.839 of the default on 20 samples each, 39 of 39 entries). A near tie at the top, both
// on kTieSamples and of two subspaces, is decided once the better of the two clears the decision on all of its
// samples.
TEST(Search, ANearTieAtTheTopIsDecidedBeforeTheBudget) {
  auto truth = [](const Config& c) {
    if (c.IsDefault() || (c.algo == kAlgoRing && c.channels == 2)) return 1000.0;
    if (c.algo == kAlgoRing) return 800.0;    // ring/simple/nc1
    return c.channels == 2 ? 800.0 : 1500.0;  // tree/simple/nc2, nc1
  };
  const int early = SeedsDecidedEarly(truth, 0.03, [&](const Config& c) { return truth(c) == 800.0; });
  // Decided before the budget ran out: 20 of 40 seeds without the rule (the rest at the budget, DecideNow), 39
  // with it (mean calls to converge 41.6 -> 39.1).
  EXPECT_GE(early, 34);
}

// A near tie between two channel counts of one subspace with none between them (tree/simple on 1 and 2 channels
// of a 2-channel communicator, 800 and 812 us): no refinement can split them, so the near-tie rule decides it as
// it decides one between subspaces. The simulated training loop (testbed landscape and noise) ended all-gather and
// reduce-scatter 64 KiB this way at the budget, pat/simple/nc1 against nc2 at 0.775 and 0.777 of the default.
TEST(Search, ANearTieOfAdjacentChannelCountsIsDecidedBeforeTheBudget) {
  auto truth = [](const Config& c) {
    if (c.IsDefault() || c.algo == kAlgoRing) return 1000.0;
    return c.channels == 2 ? 812.0 : 800.0;
  };
  const int early = SeedsDecidedEarly(truth, 0.06, [](const Config& c) { return c.algo == kAlgoTree; });
  // Decided before the budget ran out: 26 of 40 seeds without the rule (mean calls 40.0), 36 with it (38.6).
  EXPECT_GE(early, 33);
}

}  // namespace
}  // namespace ccltune::optimizer
