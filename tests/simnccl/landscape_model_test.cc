// Unit tests of the recorded landscapes of the one-GPU testbed (tests/data/landscapes/testbed-*.txt) as the simulated
// NCCL's time model: the machine they were recorded on, their valid subspaces, every recorded config run as NCCL ran
// it (channel rule) at the table's median, NCCL's default as recorded, and the `# alias` lines.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "channels.hpp"
#include "landscape_files.hpp"
#include "model.hpp"
#include "noise_fit.hpp"
#include "noise_model.hpp"

namespace simnccl {
namespace {

const std::string kLandscapes = SIMNCCL_LANDSCAPES_DIR;

struct Expect {
  const char* name;
  int ranks, channels;
};

class TestbedLandscapeTest : public ::testing::TestWithParam<Expect> {
 protected:
  void SetUp() override {
    std::string err;
    model_ = LoadTableModel(kLandscapes + "/" + GetParam().name + ".txt", &err);
    ASSERT_NE(model_, nullptr) << err;
    ASSERT_TRUE(ReadRecordedSet(kLandscapes + "/" + GetParam().name + ".samples", &samples_, &err)) << err;
    table_ = ReadTable(kLandscapes + "/" + GetParam().name + ".txt");
    machine_ = model_->Machine();
  }
  std::unique_ptr<Model> model_;
  RecordedSet samples_;
  Table table_;
  RecordedMachine machine_;
};

TEST_P(TestbedLandscapeTest, KnowsTheMachineItWasRecordedOn) {
  EXPECT_EQ(machine_.ranks, GetParam().ranks);
  EXPECT_EQ(machine_.channels, GetParam().channels);
  // Each rank its own host: rings cross the network, NCCL gives Ring/Simple 256 threads.
  EXPECT_EQ(machine_.ringSimpleThreads, kRingSimpleThreadsPcie);
  EXPECT_EQ(samples_.ranks, GetParam().ranks);
}

TEST_P(TestbedLandscapeTest, ValidSubspacesAreTheRecordedOnes) {
  // All-reduce: Tree and Ring x LL and Simple; all-gather, reduce-scatter: Ring x LL and Simple, PAT x Simple. No
  // LL128 over sockets; PAT is algorithm 6.
  const std::set<std::pair<int, int>> allReduce{
      {kAlgoTree, kProtoLL}, {kAlgoTree, kProtoSimple}, {kAlgoRing, kProtoLL}, {kAlgoRing, kProtoSimple}};
  const std::set<std::pair<int, int>> gatherScatter{
      {kAlgoRing, kProtoLL}, {kAlgoRing, kProtoSimple}, {kAlgoPat, kProtoSimple}};
  for (int coll : {kAllReduce, kAllGather, kReduceScatter}) {
    const auto& want = coll == kAllReduce ? allReduce : gatherScatter;
    float cost[kNumAlgos][kNumProtos];
    model_->CostTable(coll, 1 << 20, machine_.ranks, machine_.channels, cost);
    for (int a = 0; a < kNumAlgos; a++)
      for (int p = 0; p < kNumProtos; p++) {
        const bool valid = want.count({a, p}) > 0;
        EXPECT_EQ(model_->Valid(coll, a, p), valid) << CollName(coll) << " a" << a << " p" << p;
        EXPECT_EQ(cost[a][p] >= 0, valid) << CollName(coll) << " a" << a << " p" << p;
      }
  }
}

TEST_P(TestbedLandscapeTest, BroadcastAndReduceRunOnRingWithTheRingsProtocols) {
  // Not recorded. NCCL runs them on Ring alone, with the protocols the machine's rings have (the testbed's NCCL
  // 2.28.9 trace, tests/fidelity/data/nccl2.28.9_testbed4.trace: valid=000/101/000/000/000/000/000 for both);
  // timed as the all-gather (reduce-scatter) that puts as many bytes on each link: (n-1) k bytes as n k.
  const int nranks = machine_.ranks, budget = machine_.channels;
  for (int coll : {kBroadcast, kReduce}) {
    const int standIn = coll == kBroadcast ? kAllGather : kReduceScatter;
    float cost[kNumAlgos][kNumProtos];
    model_->CostTable(coll, 1 << 20, nranks, budget, cost);
    for (int a = 0; a < kNumAlgos; a++)
      for (int p = 0; p < kNumProtos; p++) {
        const bool valid = a == kAlgoRing && p != kProtoLL128;
        EXPECT_EQ(model_->Valid(coll, a, p), valid) << CollName(coll) << " a" << a << " p" << p;
        EXPECT_EQ(cost[a][p] >= 0, valid) << CollName(coll) << " a" << a << " p" << p;
      }
    for (size_t k : {size_t{1} << 12, size_t{1} << 16, size_t{1} << 22})
      for (int p : {kProtoLL, kProtoSimple}) {
        const Config ring{kAlgoRing, p, budget, 0};
        const double us = model_->Duration(coll, (nranks - 1) * k, nranks, ring, budget);
        EXPECT_TRUE(std::isfinite(us) && us > 0) << CollName(coll) << " " << k << " p" << p;
        EXPECT_DOUBLE_EQ(us, model_->Duration(standIn, nranks * k, nranks, ring, budget))
            << CollName(coll) << " " << k << " p" << p;
      }
    // NCCL's default: the faster valid pair, on the channels NCCL gives it.
    for (size_t bytes : {size_t{1} << 12, size_t{1} << 20, size_t{1} << 26}) {
      const Config d = model_->DefaultConfig(coll, bytes, nranks, budget);
      EXPECT_EQ(d.algo, kAlgoRing) << CollName(coll) << " " << bytes;
      ASSERT_TRUE(d.proto == kProtoLL || d.proto == kProtoSimple) << CollName(coll) << " " << bytes;
      const int other = d.proto == kProtoLL ? kProtoSimple : kProtoLL;
      EXPECT_LE(model_->Duration(coll, bytes, nranks, Config{kAlgoRing, d.proto, budget, 0}, budget),
                model_->Duration(coll, bytes, nranks, Config{kAlgoRing, other, budget, 0}, budget))
          << CollName(coll) << " " << bytes;
      EXPECT_EQ(d.nc,
                ChannelsRun(coll, bytes / 4, 4, nranks, d.algo, d.proto, 0, budget, 22809, machine_.ringSimpleThreads))
          << CollName(coll) << " " << bytes;
      EXPECT_DOUBLE_EQ(model_->DefaultDuration(coll, bytes, nranks, budget),
                       model_->Duration(coll, bytes, nranks, Config{d.algo, d.proto, d.nc, 0}, budget))
          << CollName(coll) << " " << bytes;
    }
  }
}

TEST_P(TestbedLandscapeTest, EveryRecordedConfigRunsAsRecordedAtTheTableMedian) {
  // Every config the samples timed: the channel rule runs it as NCCL ran it, and the model's time there (noise off)
  // is the table's median. NCCL's default: the recorded pair, on the recorded channels, the cost table's argmin.
  std::set<std::tuple<std::string, uint64_t, std::string>> seen;
  int configs = 0, defaults = 0;
  for (const RecordedCall& c : samples_.calls) {
    if (!seen.insert({c.coll, c.bytes, c.config}).second) continue;
    const int coll = CollFromName(c.coll);
    const Ran ran = ParseRan(c.ran);
    const double tableUs = table_.us.at({c.coll, c.bytes, c.config});
    const std::string what = c.coll + " " + std::to_string(c.bytes) + " " + c.config + " (ran " + c.ran + ")";
    const int nranks = machine_.ranks, budget = machine_.channels;
    if (c.config == "default") {
      defaults++;
      const Config d = model_->DefaultConfig(coll, c.bytes, nranks, budget);
      EXPECT_EQ(d.algo, ran.algo) << what;
      EXPECT_EQ(d.proto, ran.proto) << what;
      EXPECT_EQ(d.nc, ran.nc) << what;
      EXPECT_EQ(ChannelsRun(coll, Count(coll, c.bytes, nranks), 4, nranks, ran.algo, ran.proto, 0, budget, 22809,
                            machine_.ringSimpleThreads),
                ran.nc)
          << what;
      EXPECT_DOUBLE_EQ(model_->DefaultDuration(coll, c.bytes, nranks, budget), tableUs) << what;
      float cost[kNumAlgos][kNumProtos];
      model_->CostTable(coll, c.bytes, nranks, budget, cost);
      for (int a = 0; a < kNumAlgos; a++)
        for (int p = 0; p < kNumProtos; p++)
          if (cost[a][p] >= 0 && (a != ran.algo || p != ran.proto))
            EXPECT_LT(cost[ran.algo][ran.proto], cost[a][p]) << what << ": argmin";
      continue;
    }
    configs++;
    int a = -1, p = -1, nc = 0;
    ASSERT_EQ(std::sscanf(c.config.c_str(), "a%d.p%d.nc%d", &a, &p, &nc), 3) << what;
    EXPECT_EQ(a, ran.algo) << what;
    EXPECT_EQ(p, ran.proto) << what;
    const int run =
        ChannelsRun(coll, Count(coll, c.bytes, nranks), 4, nranks, a, p, nc, budget, 22809, machine_.ringSimpleThreads);
    EXPECT_EQ(run, ran.nc) << what;
    EXPECT_DOUBLE_EQ(model_->Duration(coll, c.bytes, nranks, Config{a, p, run, 0}, budget), tableUs) << what;
  }
  EXPECT_EQ(defaults, 15);
  EXPECT_EQ(configs + defaults, static_cast<int>(table_.us.size()));
}

TEST_P(TestbedLandscapeTest, AliasesRunAsRecorded) {
  // A request NCCL ran identically to another: the channel rule runs both on the recorded channels, and the model
  // times it as the config it runs as.
  const int nranks = machine_.ranks, budget = machine_.channels;
  ASSERT_FALSE(table_.aliases.empty());
  for (const Alias& al : table_.aliases) {
    const int coll = CollFromName(al.coll);
    int a = -1, p = -1, nc = 0, ta = -1, tp = -1, tnc = 0;
    ASSERT_EQ(std::sscanf(al.config.c_str(), "a%d.p%d.nc%d", &a, &p, &nc), 3);
    ASSERT_EQ(std::sscanf(al.target.c_str(), "a%d.p%d.nc%d", &ta, &tp, &tnc), 3);
    const std::string what = al.coll + " " + std::to_string(al.bytes) + " " + al.config + " as " + al.target;
    EXPECT_EQ(a, al.ran.algo) << what;
    EXPECT_EQ(p, al.ran.proto) << what;
    const size_t count = Count(coll, al.bytes, nranks);
    const int run = ChannelsRun(coll, count, 4, nranks, a, p, nc, budget, 22809, machine_.ringSimpleThreads);
    EXPECT_EQ(run, al.ran.nc) << what;
    EXPECT_EQ(ChannelsRun(coll, count, 4, nranks, ta, tp, tnc, budget, 22809, machine_.ringSimpleThreads), al.ran.nc)
        << what;
    EXPECT_DOUBLE_EQ(model_->Duration(coll, al.bytes, nranks, Config{a, p, run, 0}, budget),
                     table_.us.at({al.coll, al.bytes, al.target}))
        << what;
  }
}

INSTANTIATE_TEST_SUITE_P(Recorded, TestbedLandscapeTest,
                         ::testing::Values(Expect{"testbed-4r", 4, 2}, Expect{"testbed-8r", 8, 2},
                                           Expect{"testbed-4r-min8", 4, 8}),
                         [](const ::testing::TestParamInfo<Expect>& info) {
                           std::string n = info.param.name;
                           n = n.substr(n.find('-') + 1);
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

TEST(TestbedLandscape, ReferenceTableKeepsTheSimulatedMachine) {
  // A table without ccltune-bench's header and alias lines (../shared/data) says nothing about its machine.
  std::string err;
  auto m = LoadTableModel(SIMNCCL_DATA_FILE, &err);
  if (!m) GTEST_SKIP() << err;
  const RecordedMachine r = m->Machine();
  EXPECT_EQ(r.ranks, 0);
  EXPECT_EQ(r.channels, 0);
  EXPECT_EQ(r.ringSimpleThreads, kRingSimpleThreadsNvlink);
}

TEST(TestbedLandscape, ReferenceTableOffersBroadcastAndReduceOnRingWithEveryProtocol) {
  // The H200 table records no broadcast or reduce either; its rings have LL, LL128 and Simple (NVLink), as the
  // 2xH200 trace's broadcasts and reduces do (valid=000/111/000/...).
  std::string err;
  auto m = LoadTableModel(SIMNCCL_DATA_FILE, &err);
  if (!m) GTEST_SKIP() << err;
  for (int coll : {kBroadcast, kReduce})
    for (int a = 0; a < kNumAlgos; a++)
      for (int p = 0; p < kNumProtos; p++) EXPECT_EQ(m->Valid(coll, a, p), a == kAlgoRing) << coll << a << p;
}

}  // namespace
}  // namespace simnccl
