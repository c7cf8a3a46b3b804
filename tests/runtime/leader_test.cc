// The leader's packing of schedules into payloads, driven with a synthetic cost function: batches
// go out only when the previous one was applied and run, imports ship as converged entries, and
// every message fits the payload.
#include "src/leader.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace ccltune {
namespace {

SubspaceSet RingAndTree() {
  SubspaceSet s;
  for (int a : {kAlgoTree, kAlgoRing})
    for (int p = 0; p < kNumProtos; ++p) s.valid_mask |= 1u << (a * kNumProtos + p);
  s.nccl_algo = kAlgoRing;
  s.nccl_proto = kProtoSimple;
  return s;
}

// Ring/LL128 at 12 channels is best; NCCL's default costs 30% more.
double Cost(const Config& c) {
  if (c.IsDefault()) return 130;
  double base = (c.algo == kAlgoRing && c.proto == kProtoLL128) ? 100 : 140;
  return base * (1 + 0.01 * std::abs(c.channels - 12));
}

TEST(Leader, DrivesASearchToConvergenceThroughTheBook) {
  Leader::Options o;
  o.channel_budget = 24;
  Leader leader(o);
  coordinator::ScheduleBook book;
  const uint64_t w = 42;
  leader.OnUnit(w);
  leader.OnSpace(w, RingAndTree());
  int calls = 0;
  bool converged = false;
  for (int sync = 0; sync < 200 && !converged; ++sync) {
    coordinator::LeaderMessage m = leader.Build(book);
    auto words = coordinator::Encode(&m, sync, {});
    ASSERT_TRUE(words.ok()) << words.status();
    for (const auto& u : m.updates) {
      book.Apply(u);
      leader.OnApplied(u);
      converged = u.converged;
    }
    // Run the workload until its schedule is used up, timing every call like the leader does.
    while (!book.Exhausted(w)) {
      Config c = *book.Next(w);
      leader.OnSample(w, c, Cost(c), /*scheduled=*/true);
      ++calls;
    }
    // Nothing new may be sent while an update is outstanding.
    coordinator::LeaderMessage again = leader.Build(book);
    for (const auto& u : again.updates) {
      book.Apply(u);
      leader.OnApplied(u);
      converged = converged || u.converged;
    }
    while (!book.Exhausted(w)) {
      Config c = *book.Next(w);
      leader.OnSample(w, c, Cost(c), true);
      ++calls;
    }
  }
  ASSERT_TRUE(converged);
  Config best = *book.Incumbent(w);
  EXPECT_LE(Cost(best), 1.05 * 100) << best.ToString();
  EXPECT_LE(calls, 300);
}

TEST(Leader, ImportShipsConvergedFinalEntries) {
  Leader leader(Leader::Options{});
  coordinator::ScheduleBook book;
  config_table::ImportedWorkload imp;
  imp.key = WorkloadKey{{CallDesc{Coll::kAllReduce, 7, 0, 1 << 20}}, false};
  imp.config = Config{kAlgoRing, kProtoLL128, 16, 0};
  imp.tuned_us = 10;
  leader.AddImports({imp});
  coordinator::LeaderMessage m = leader.Build(book);
  ASSERT_EQ(m.updates.size(), 1u);
  EXPECT_TRUE(m.updates[0].converged);
  ASSERT_EQ(m.updates[0].entries.size(), 1u);
  EXPECT_EQ(m.updates[0].entries[0].config, imp.config);
  EXPECT_EQ(m.updates[0].entries[0].calls, 0u);
  EXPECT_TRUE(leader.imported(imp.key.Hash()));
  // Once the space is known the search adopts it: no batch follows.
  book.Apply(m.updates[0]);
  leader.OnApplied(m.updates[0]);
  leader.OnSpace(imp.key.Hash(), RingAndTree());
  EXPECT_TRUE(leader.Build(book).updates.empty());
}

TEST(Leader, ManyWorkloadsFitOnePayloadAtATime) {
  Leader::Options o;
  o.channel_budget = 24;
  Leader leader(o);
  coordinator::ScheduleBook book;
  for (uint64_t w = 1; w <= 20; ++w) {
    leader.OnUnit(w);
    leader.OnSpace(w, RingAndTree());
  }
  coordinator::LeaderMessage m = leader.Build(book);
  EXPECT_FALSE(m.updates.empty());
  EXPECT_LT(m.updates.size(), 20u);  // the rest waits for the next payload
  auto words = coordinator::Encode(&m, 0, {});
  EXPECT_TRUE(words.ok()) << words.status();
}

}  // namespace
}  // namespace ccltune
