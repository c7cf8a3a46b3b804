// Unit tests of the search's stages (optimizer/internal/stages.hpp) and of its sample store: what each
// stage proposes from given samples, and how samples are keyed by what NCCL really ran and read
// against the default measured next to them.
#include <gtest/gtest.h>

#include <cmath>

#include "optimizer/internal/samples.hpp"
#include "optimizer/internal/stages.hpp"

namespace ccltune::optimizer::internal {
namespace {

constexpr Config kDef{};
Config C(int algo, int proto, int ch, int64_t chunk = 0) { return Config{algo, proto, ch, chunk}; }

SearchSpace Space(int max_channels, std::initializer_list<std::pair<int, int>> subs, int nccl_algo = kAlgoRing,
                  int nccl_proto = kProtoSimple) {
  SearchSpace s;
  s.max_channels = max_channels;
  for (auto [a, p] : subs) s.subspaces.valid_mask |= 1u << (a * kNumProtos + p);
  s.subspaces.nccl_algo = nccl_algo;
  s.subspaces.nccl_proto = nccl_proto;
  return s;
}

TEST(Prior, CostTableOrdersSubspacesNcclsPickFirstOnTies) {
  SearchSpace s = Space(8, {{kAlgoTree, kProtoLL}, {kAlgoRing, kProtoLL}, {kAlgoRing, kProtoSimple}});
  // No estimates: NCCL's pick first, then index order.
  EXPECT_EQ(OrderSubspaces(s), (std::vector<std::pair<int, int>>{
                                   {kAlgoRing, kProtoSimple}, {kAlgoTree, kProtoLL}, {kAlgoRing, kProtoLL}}));
  s.cost[kAlgoTree * kNumProtos + kProtoLL] = 30;
  s.cost[kAlgoRing * kNumProtos + kProtoLL] = 10;
  s.cost[kAlgoRing * kNumProtos + kProtoSimple] = 20;
  EXPECT_EQ(OrderSubspaces(s), (std::vector<std::pair<int, int>>{
                                   {kAlgoRing, kProtoLL}, {kAlgoRing, kProtoSimple}, {kAlgoTree, kProtoLL}}));
}

TEST(Prior, DescribedRelativeToNcclsPickInThePriorsOrder) {
  SearchSpace s = Space(8, {{kAlgoTree, kProtoLL}, {kAlgoRing, kProtoLL}, {kAlgoRing, kProtoSimple}});
  s.cost[kAlgoTree * kNumProtos + kProtoLL] = 64;
  s.cost[kAlgoRing * kNumProtos + kProtoLL] = 10;
  s.cost[kAlgoRing * kNumProtos + kProtoSimple] = 20;
  EXPECT_EQ(DescribePrior(s), "ring/ll 0.50 ring/simple 1.00* tree/ll 3.20");
  Options three;
  three.screen_cost_ratio = 3;
  EXPECT_EQ(DescribePrior(s, three), "ring/ll 0.50 ring/simple 1.00* tree/ll 3.20 (not screened)");
  // An entry without an estimate comes last, marked; without an estimate for NCCL's pick, the estimates in µs.
  s.cost[kAlgoTree * kNumProtos + kProtoLL] = -1;
  EXPECT_EQ(DescribePrior(s), "ring/ll 0.50 ring/simple 1.00* tree/ll ?");
  s.cost[kAlgoRing * kNumProtos + kProtoSimple] = -1;
  EXPECT_EQ(DescribePrior(s), "ring/ll 10.0us ring/simple ?* tree/ll ?");
  EXPECT_EQ(DescribePrior(SearchSpace{}), "(no valid subspace)");
}

TEST(Screen, LogSpacedChannelPoints) {
  EXPECT_EQ(ScreenChannels(1), (std::vector<int>{1}));
  EXPECT_EQ(ScreenChannels(2), (std::vector<int>{1, 2}));
  EXPECT_EQ(ScreenChannels(8), (std::vector<int>{1, 3, 8}));
  EXPECT_EQ(ScreenChannels(24), (std::vector<int>{1, 3, 8, 24}));
  EXPECT_EQ(ScreenChannels(32), (std::vector<int>{1, 3, 10, 32}));
}

TEST(Screen, HintsFirstThenLargestPointOfEverySubspace) {
  SearchSpace s = Space(8, {{kAlgoTree, kProtoSimple}, {kAlgoRing, kProtoSimple}});
  Prior p;
  p.hints = {C(kAlgoTree, kProtoSimple, 3), C(kAlgoTree, kProtoSimple, 99)};  // the second clamps to 8
  SampleStore st;
  const std::vector<Config> set = ScreenSet(s, Options{}, p, st);
  // NCCL's pick (ring/simple) leads the subspaces; points already listed by a hint are not repeated.
  EXPECT_EQ(set, (std::vector<Config>{C(kAlgoTree, kProtoSimple, 3), C(kAlgoTree, kProtoSimple, 8),
                                      C(kAlgoRing, kProtoSimple, 8), C(kAlgoRing, kProtoSimple, 3),
                                      C(kAlgoRing, kProtoSimple, 1), C(kAlgoTree, kProtoSimple, 1)}));
  Options few;
  few.max_screen = 2;
  EXPECT_EQ(ScreenSet(s, few, p, st).size(), 2u);
}

// NCCL's pick's own estimate, what CostRuledOut and DescribePrior rate the others against; -1 where the pick has
// none or is not a valid subspace.
TEST(Prior, PickCostIsTheEstimateOfNcclsPick) {
  SearchSpace s = Space(2, {{kAlgoRing, kProtoSimple}, {kAlgoTree, kProtoLL}});
  s.cost[kAlgoRing * kNumProtos + kProtoSimple] = 120;
  s.cost[kAlgoTree * kNumProtos + kProtoLL] = 50;
  EXPECT_EQ(PickCost(s), 120.0f);
  s.cost[kAlgoRing * kNumProtos + kProtoSimple] = -1;
  EXPECT_LT(PickCost(s), 0.0f);
  s.cost[kAlgoRing * kNumProtos + kProtoSimple] = 120;
  s.subspaces.nccl_algo = kAlgoTree;
  s.subspaces.nccl_proto = kProtoSimple;  // not a valid subspace of this space
  EXPECT_LT(PickCost(s), 0.0f);
}

// CCLTUNE_SCREEN_COST_RATIO: a subspace NCCL's cost table rates more than the ratio times its own pick is not
// screened; NCCL's pick never is ruled out, nor a subspace (or a pick) without an estimate; a hint still is.
TEST(Screen, CostRatioRulesOutSubspacesNcclRatesFarSlower) {
  SearchSpace s = Space(2, {{kAlgoRing, kProtoSimple}, {kAlgoRing, kProtoLL}, {kAlgoTree, kProtoLL}});
  s.cost[kAlgoRing * kNumProtos + kProtoSimple] = 100;
  s.cost[kAlgoRing * kNumProtos + kProtoLL] = 300;  // exactly 3x: kept
  s.cost[kAlgoTree * kNumProtos + kProtoLL] = 301;
  Options three;
  three.screen_cost_ratio = 3;
  EXPECT_FALSE(CostRuledOut(s, three, kAlgoRing, kProtoLL));
  EXPECT_TRUE(CostRuledOut(s, three, kAlgoTree, kProtoLL));
  Options off;
  off.screen_cost_ratio = 0;
  EXPECT_FALSE(CostRuledOut(s, off, kAlgoTree, kProtoLL));
  // The default, 6: six times the pick is screened, more is not.
  EXPECT_EQ(Options{}.screen_cost_ratio, 6);
  s.cost[kAlgoTree * kNumProtos + kProtoLL] = 600;
  EXPECT_FALSE(CostRuledOut(s, Options{}, kAlgoTree, kProtoLL));
  s.cost[kAlgoTree * kNumProtos + kProtoLL] = 601;
  EXPECT_TRUE(CostRuledOut(s, Options{}, kAlgoTree, kProtoLL));
  s.cost[kAlgoTree * kNumProtos + kProtoLL] = 1e6;
  EXPECT_FALSE(CostRuledOut(s, off, kAlgoTree, kProtoLL));
  s.cost[kAlgoTree * kNumProtos + kProtoLL] = 301;
  SampleStore st;
  EXPECT_EQ(ScreenSet(s, three, Prior{}, st),
            (std::vector<Config>{C(kAlgoRing, kProtoSimple, 2), C(kAlgoRing, kProtoLL, 2),
                                 C(kAlgoRing, kProtoSimple, 1), C(kAlgoRing, kProtoLL, 1)}));
  EXPECT_EQ(ScreenSet(s, off, Prior{}, st).size(), 6u);
  Prior hinted;
  hinted.hints = {C(kAlgoTree, kProtoLL, 1)};
  EXPECT_EQ(ScreenSet(s, three, hinted, st).front(), C(kAlgoTree, kProtoLL, 1));
  EXPECT_EQ(ScreenSet(s, three, hinted, st).size(), 5u);
  // NCCL's pick far costlier than another subspace is still screened; so is all of it without an estimate.
  Options tight;
  tight.screen_cost_ratio = 1;
  s.cost[kAlgoRing * kNumProtos + kProtoLL] = 10;
  EXPECT_FALSE(CostRuledOut(s, tight, kAlgoRing, kProtoSimple));
  s.cost[kAlgoTree * kNumProtos + kProtoLL] = -1;
  EXPECT_FALSE(CostRuledOut(s, tight, kAlgoTree, kProtoLL));
  s.cost[kAlgoRing * kNumProtos + kProtoSimple] = -1;
  EXPECT_FALSE(CostRuledOut(s, tight, kAlgoRing, kProtoLL));
}

// With channel truth, a subspace's lower points wait until NCCL's run of its largest is known, and are
// then spread over the channels NCCL really uses; twins of the default are never screened. One channel
// does not wait once NCCL's default ran on two or more (the largest cannot run as one).
TEST(Screen, ChannelTruthGatesAndShrinksTheRange) {
  SearchSpace s = Space(8, {{kAlgoRing, kProtoSimple}, {kAlgoRing, kProtoLL}});
  s.channel_truth = true;
  SampleStore st;
  // Nothing known of the communicator: the largest points only.
  EXPECT_EQ(ScreenSet(s, Options{}, Prior{}, st),
            (std::vector<Config>{C(kAlgoRing, kProtoSimple, 8), C(kAlgoRing, kProtoLL, 8)}));
  st.NoteRan(kDef, C(kAlgoRing, kProtoSimple, 2));  // NCCL's default runs ring/simple on 2 channels
  EXPECT_EQ(ScreenSet(s, Options{}, Prior{}, st),
            (std::vector<Config>{C(kAlgoRing, kProtoSimple, 8), C(kAlgoRing, kProtoLL, 8),
                                 C(kAlgoRing, kProtoSimple, 1), C(kAlgoRing, kProtoLL, 1)}));
  st.NoteRan(C(kAlgoRing, kProtoSimple, 8), C(kAlgoRing, kProtoSimple, 2));  // only 2 channels exist
  // ring/simple/nc2 is the default's twin now: ring/simple has nc1 left; ring/LL is still unknown.
  EXPECT_EQ(ScreenSet(s, Options{}, Prior{}, st),
            (std::vector<Config>{C(kAlgoRing, kProtoLL, 8), C(kAlgoRing, kProtoSimple, 1), C(kAlgoRing, kProtoLL, 1)}));
  st.NoteRan(C(kAlgoRing, kProtoLL, 8), C(kAlgoRing, kProtoLL, 8));  // honoured: all 8 exist
  EXPECT_EQ(ScreenSet(s, Options{}, Prior{}, st),
            (std::vector<Config>{C(kAlgoRing, kProtoLL, 8), C(kAlgoRing, kProtoSimple, 1), C(kAlgoRing, kProtoLL, 3),
                                 C(kAlgoRing, kProtoLL, 1)}));
  // A default on one channel says nothing of the others: one channel could be what the largest runs as.
  SampleStore one;
  one.NoteRan(kDef, C(kAlgoRing, kProtoSimple, 1));
  EXPECT_EQ(ScreenSet(s, Options{}, Prior{}, one),
            (std::vector<Config>{C(kAlgoRing, kProtoSimple, 8), C(kAlgoRing, kProtoLL, 8)}));
}

TEST(Samples, ChannelTruthMergesAliasesAndLearnsCeilings) {
  SampleStore st;
  st.Add(C(kAlgoRing, kProtoLL, 8), 10);
  EXPECT_EQ(st.Count(C(kAlgoRing, kProtoLL, 8)), 1);
  st.NoteRan(C(kAlgoRing, kProtoLL, 8), C(kAlgoRing, kProtoLL, 2));
  // The sample moved to what NCCL ran, and every request above 2 now runs as 2.
  EXPECT_EQ(st.Count(C(kAlgoRing, kProtoLL, 8)), 0);
  EXPECT_EQ(st.Count(C(kAlgoRing, kProtoLL, 2)), 1);
  EXPECT_EQ(st.Ceiling(kAlgoRing, kProtoLL), 2);
  EXPECT_EQ(st.Effective(C(kAlgoRing, kProtoLL, 5)), C(kAlgoRing, kProtoLL, 2));
  EXPECT_EQ(st.Effective(C(kAlgoRing, kProtoLL, 1)), C(kAlgoRing, kProtoLL, 1));
  st.Add(C(kAlgoRing, kProtoLL, 6), 11);
  EXPECT_EQ(st.Count(C(kAlgoRing, kProtoLL, 2)), 2);
  EXPECT_EQ(st.Ceiling(kAlgoTree, kProtoLL), 0);  // other subspaces unknown
  EXPECT_FALSE(st.ChannelsKnown(kAlgoTree, kProtoLL, 4));
  st.NoteRan(C(kAlgoTree, kProtoLL, 4), C(kAlgoTree, kProtoLL, 4));
  EXPECT_TRUE(st.ChannelsKnown(kAlgoTree, kProtoLL, 3));
  EXPECT_FALSE(st.ChannelsKnown(kAlgoTree, kProtoLL, 5));
}

// Below the largest request, NCCL may run fewer channels than asked for a small message without running
// every larger request the same way (real NCCL, two NVLink GPUs, all-gather 64 KiB ring/LL: 5 ran as 4, 6
// as 6): only the largest request shows a ceiling. A report moves the samples of the request reported and
// no others, also where several requests were stored under one guess.
TEST(Samples, OnlyTheLargestRequestShowsACeilingAndAReportMovesOnlyItsSamples) {
  SampleStore st;
  st.set_max_channels(32);
  st.NoteRan(C(kAlgoRing, kProtoLL, 5), C(kAlgoRing, kProtoLL, 4));
  EXPECT_EQ(st.Ceiling(kAlgoRing, kProtoLL), 0);
  EXPECT_EQ(st.Effective(C(kAlgoRing, kProtoLL, 6)), C(kAlgoRing, kProtoLL, 6));
  EXPECT_EQ(st.Effective(C(kAlgoRing, kProtoLL, 5)), C(kAlgoRing, kProtoLL, 4));
  st.NoteRan(C(kAlgoRing, kProtoLL, 32), C(kAlgoRing, kProtoLL, 16));
  EXPECT_EQ(st.Ceiling(kAlgoRing, kProtoLL), 16);
  EXPECT_EQ(st.Effective(C(kAlgoRing, kProtoLL, 20)), C(kAlgoRing, kProtoLL, 16));
  // 20 and 24 are both guessed to run as 16, like 16 itself; then 20 is reported to run as 12.
  st.Add(C(kAlgoRing, kProtoLL, 16), 10);
  st.Add(C(kAlgoRing, kProtoLL, 24), 11);
  st.Add(C(kAlgoRing, kProtoLL, 20), 12);
  st.Add(C(kAlgoRing, kProtoLL, 20), 13);
  EXPECT_EQ(st.Count(C(kAlgoRing, kProtoLL, 16)), 4);
  st.NoteRan(C(kAlgoRing, kProtoLL, 20), C(kAlgoRing, kProtoLL, 12));
  EXPECT_EQ(st.Count(C(kAlgoRing, kProtoLL, 16)), 2);
  EXPECT_EQ(st.Count(C(kAlgoRing, kProtoLL, 12)), 2);
  EXPECT_GT(st.Absolute(C(kAlgoRing, kProtoLL, 12)), 11.9);  // 20's samples (12, 13), not 16's or 24's
}

TEST(Samples, TwinOfTheDefaultCountsAsTheDefault) {
  SampleStore st;
  st.NoteRan(kDef, C(kAlgoRing, kProtoSimple, 2));
  EXPECT_TRUE(st.TwinOfDefault(C(kAlgoRing, kProtoSimple, 2)));
  EXPECT_FALSE(st.TwinOfDefault(C(kAlgoRing, kProtoSimple, 1)));
  st.Add(C(kAlgoRing, kProtoSimple, 2), 5);
  st.Add(kDef, 6);
  EXPECT_EQ(st.Count(kDef), 2);
  EXPECT_EQ(st.Measured(), (std::vector<Config>{kDef}));
}

// A slow period that slows every config alike cancels out of the relative estimate.
TEST(Samples, RelativeToTheLocalDefaultCancelsCommonDrift) {
  SampleStore st;
  const Config a = C(kAlgoRing, kProtoLL, 4);
  for (int i = 0; i < 12; ++i) {
    const double drift = i < 6 ? 1.0 : 3.0;  // everything three times slower in the second half
    st.Add(kDef, 100 * drift);
    st.Add(a, 80 * drift);
  }
  EXPECT_NEAR(st.Relative(a), 0.8, 1e-9);
  EXPECT_DOUBLE_EQ(st.Relative(kDef), 1.0);
  EXPECT_GT(st.Absolute(a), 80 * 1.5);  // the raw estimate mixes both periods
  EXPECT_LT(st.Noise(), 1e-6);          // no spread left after normalising
}

TEST(Samples, StreamsAreNormalisedByTheirOwnDefault) {
  SampleStore st;
  const Config a = C(kAlgoRing, kProtoLL, 4);
  // Two workloads of one size class: stream 1 is twice as large (twice the time).
  for (int i = 0; i < 6; ++i) {
    st.Add(kDef, 100, 0);
    st.Add(kDef, 200, 1);
    st.Add(a, 90, 0);
    st.Add(a, 180, 1);
  }
  EXPECT_NEAR(st.Relative(a), 0.9, 1e-9);
}

// The leader is the best measured arm; its challenger the arm that may still beat it (lower confidence bound
// below the leader's estimate); samples on their way narrow an arm's bound; an arm far slower is out.
TEST(Race, LeaderChallengerAndOut) {
  SampleStore st;
  const Config a = C(0, 0, 1), b = C(0, 0, 2), c = C(0, 0, 3), d = C(0, 0, 4);
  for (int i = 0; i < 4; ++i) {
    st.Add(kDef, 100);
    st.Add(a, 90);
    st.Add(b, 80);
    st.Add(d, 200);  // more than kOutRatio times the leader
  }
  st.Add(c, 85);  // one sample: a wide bound
  const std::vector<Config> arms = {a, b, c, d};
  EXPECT_EQ(RaceLeader(arms, st), b);
  EXPECT_TRUE(OutOfRace(d, st.Relative(b), st));
  EXPECT_FALSE(OutOfRace(a, st.Relative(b), st));
  // a (0.90 on 4 samples) cannot be better than b (0.80); c (0.85 on one) can.
  EXPECT_GT(LowerBound(a, st), st.Relative(b));
  EXPECT_LT(LowerBound(c, st), st.Relative(b));
  EXPECT_EQ(Challenger(arms, b, st), c);
  // With 8 samples of c on their way its bound narrows above b's estimate: nothing left to challenge b.
  EXPECT_LT(RaceStdErr(c, st, 8), RaceStdErr(c, st));
  EXPECT_EQ(Challenger(arms, b, st, [&](const Config& x) { return x == c ? 8 : 0; }), std::nullopt);
  EXPECT_EQ(RaceLeader({C(1, 1, 1)}, st), Config{});  // unmeasured: no leader
}

TEST(Refine, HalvesTheChannelBracketThenTriesChunks) {
  SearchSpace s = Space(24, {{kAlgoRing, kProtoSimple}});
  SampleStore st;
  for (int c : {1, 3, 8, 24}) st.Add(C(kAlgoRing, kProtoSimple, c), 10);
  EXPECT_EQ(Neighbours(C(kAlgoRing, kProtoSimple, 8), s, st),
            (std::vector<Config>{C(kAlgoRing, kProtoSimple, 5), C(kAlgoRing, kProtoSimple, 16)}));
  EXPECT_EQ(Neighbours(C(kAlgoRing, kProtoSimple, 1), s, st), (std::vector<Config>{C(kAlgoRing, kProtoSimple, 2)}));
  // A closed bracket: nothing left on channels; with a chunk axis, a spread of chunk sizes follows.
  st.Add(C(kAlgoRing, kProtoSimple, 2), 10);
  EXPECT_TRUE(Neighbours(C(kAlgoRing, kProtoSimple, 1), s, st).empty());
  s.chunk_dim = true;
  s.chunk_grain[kProtoSimple] = 512;
  s.chunk_min[kProtoSimple] = 512 * 16;
  s.chunk_max[kProtoSimple] = 1 << 20;
  const std::vector<Config> chunks = Neighbours(C(kAlgoRing, kProtoSimple, 1), s, st);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks.front().chunk_bytes, 512 * 16);
  EXPECT_EQ(chunks.back().chunk_bytes, 1 << 20);
  // Channel truth: NCCL runs at most 2 channels here, so the bracket above 1 is closed at 2.
  SampleStore t;
  t.NoteRan(C(kAlgoRing, kProtoSimple, 24), C(kAlgoRing, kProtoSimple, 2));
  t.Add(C(kAlgoRing, kProtoSimple, 2), 10);
  t.Add(C(kAlgoRing, kProtoSimple, 1), 10);
  s.chunk_dim = false;
  EXPECT_TRUE(Neighbours(C(kAlgoRing, kProtoSimple, 2), s, t).empty());
}

// n samples each of NCCL's default and of `a` (`rel` times the default), alternating, each side
// `spread` above and below its level in turn.
SampleStore Alternating(const Config& a, double rel, double spread, int n) {
  SampleStore st;
  for (int i = 0; i < n; ++i) {
    const double e = (i % 2 ? 1 : -1) * spread;
    st.Add(kDef, 100 * (1 - e));
    st.Add(a, 100 * rel * (1 + e));
  }
  return st;
}

TEST(Decide, SwitchesOnlyOnASignificantGain) {
  const Config a = C(kAlgoRing, kProtoLL, 4);
  auto store = [&](double rel, double spread, int n) { return Alternating(a, rel, spread, n); };
  EXPECT_TRUE(Decide(a, store(0.80, 0.02, 8), 0.02).switch_to_winner);
  EXPECT_FALSE(Decide(a, store(0.99, 0.02, 8), 0.02).switch_to_winner);  // below min_gain
  EXPECT_FALSE(Decide(a, store(0.99, 0.02, 8), 0.02).undecided);
  const Verdict noisy = Decide(a, store(0.90, 0.25, 8), 0.02);  // a 10% gain under 25% noise
  EXPECT_FALSE(noisy.switch_to_winner);
  EXPECT_TRUE(noisy.undecided);
  EXPECT_FALSE(Decide(kDef, store(0.5, 0.02, 8), 0.02).switch_to_winner);  // the default is no switch
}

// The noise is a spread of log(time), so the bound is a ratio: exp(-z se), not 1 - z se. Under heavy noise
// (the simulated training loop's 64 KiB rows read 36-67%) they differ by far: a config at half the
// default's time on fourteen samples a side clears the first and not the second.
TEST(Decide, TheBoundIsARatioOfTheLogNoise) {
  const Config a = C(kAlgoRing, kProtoLL, 4);
  const SampleStore st = Alternating(a, 0.5, 0.2, 14);
  const double se = st.RelativeStdErr(a, 0.03);
  ASSERT_GT(kDecideZ * se, 0.4) << "heavy noise";
  const Verdict v = Decide(a, st, 0.02);
  EXPECT_DOUBLE_EQ(v.required, std::exp(-kDecideZ * se));
  EXPECT_GT(v.relative, 1 - kDecideZ * se);  // short of a linear bound
  EXPECT_TRUE(v.switch_to_winner) << v.relative << " vs " << v.required;
  // Near 1 the two agree: a small error leaves the bound where it was.
  const SampleStore quiet = Alternating(a, 0.9, 0.02, 8);
  const double qse = quiet.RelativeStdErr(a, 0.03);
  EXPECT_NEAR(Decide(a, quiet, 0.02).required, 1 - kDecideZ * qse, 0.005);
}

// The shift for an arm picked as the best of several is a factor exp(picked * its own standard error), on the log
// scale the noise is measured on: a config at 0.4 of the default under heavy noise clears the decision, which the
// same error added to the ratio (0.4 + error) would not; near 1 the two shifts agree.
TEST(Decide, ThePickedArmsShiftIsARatio) {
  const Config a = C(kAlgoRing, kProtoLL, 4);
  const SampleStore st = Alternating(a, 0.4, 0.15, 10);
  const double rel = st.Relative(a), own = st.OwnStdErr(a, 0.03);
  const Verdict v = Decide(a, st, 0.02, 0, kDecideZ, 0, 1.0);
  EXPECT_NEAR(v.relative, rel * std::exp(own), 1e-9);
  EXPECT_TRUE(v.switch_to_winner) << v.relative << " vs " << v.required;
  EXPECT_GT(rel + own, v.required) << "an added shift would keep the default";
  const SampleStore quiet = Alternating(a, 0.93, 0.03, 8);
  const double qrel = quiet.Relative(a), qown = quiet.OwnStdErr(a, 0.03);
  EXPECT_NEAR(Decide(a, quiet, 0.02, 0, kDecideZ, 0, 1.0).relative, qrel + qown, 0.003);
}

TEST(Decide, StopsWhenTheCapCouldNotDecideEither) {
  const Config a = C(kAlgoRing, kProtoLL, 4);
  auto store = [&](double rel, double spread, int n) { return Alternating(a, rel, spread, n); };
  // 8 samples a side under 15% noise: the standard error is about 0.28, a switch needs about exp(-0.67) = 0.51.
  const SampleStore small_gain = store(0.97, 0.15, 8), larger_gain = store(0.90, 0.15, 8);
  ASSERT_TRUE(Decide(a, small_gain, 0.02).undecided);  // no cap: sample on
  // At 16 samples the error would be about 0.20 and the switch need about exp(-0.48) = 0.62; 0.97 less 1.5
  // errors (a factor exp(-0.42)) is 0.64: futile. 0.90 less 1.5 errors is 0.59: worth sampling on.
  EXPECT_FALSE(Decide(a, small_gain, 0.02, 0, kDecideZ, 16).undecided);
  EXPECT_FALSE(Decide(a, small_gain, 0.02, 0, kDecideZ, 16).switch_to_winner);
  EXPECT_TRUE(Decide(a, larger_gain, 0.02, 0, kDecideZ, 16).undecided);
  // A cap far away leaves room for the small gain too.
  EXPECT_TRUE(Decide(a, small_gain, 0.02, 0, kDecideZ, 64).undecided);
}

}  // namespace
}  // namespace ccltune::optimizer::internal
