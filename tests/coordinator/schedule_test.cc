// Pins ScheduleBook: candidates consumed call by call in order, then the final entry forever; capture
// reads the incumbent without consuming; an update replaces the workload's schedule.
#include <gtest/gtest.h>

#include "coordinator/coordinator.hpp"

namespace ccltune::coordinator {
namespace {

const Config kA{.algo = kAlgoTree, .proto = kProtoLL, .channels = 2};
const Config kB{.algo = kAlgoRing, .proto = kProtoLL128, .channels = 4, .chunk_bytes = 65536};
const Config kInc{.algo = kAlgoRing, .proto = kProtoSimple, .channels = 16};

TEST(ScheduleBook, UnknownWorkloadIsDefault) {
  ScheduleBook b;
  EXPECT_EQ(b.Next(1), std::nullopt);
  EXPECT_EQ(b.Incumbent(1), std::nullopt);
  EXPECT_TRUE(b.Exhausted(1));
  EXPECT_FALSE(b.Converged(1));
  EXPECT_EQ(b.size(), 0u);
}

TEST(ScheduleBook, CandidatesInOrderThenFinalForever) {
  ScheduleBook b;
  b.Apply({.workload = 7, .entries = {{kA, 2}, {kB, 1}, {kInc, 0}}});
  EXPECT_FALSE(b.Exhausted(7));
  EXPECT_EQ(b.Incumbent(7), kInc);
  EXPECT_EQ(b.Next(7), kA);
  EXPECT_EQ(b.Incumbent(7), kInc);  // capture does not consume
  EXPECT_EQ(b.Next(7), kA);
  EXPECT_EQ(b.Next(7), kB);
  EXPECT_TRUE(b.Exhausted(7));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(b.Next(7), kInc);
  EXPECT_FALSE(b.Converged(7));
  EXPECT_EQ(b.Next(8), std::nullopt);  // other workloads untouched
}

TEST(ScheduleBook, ApplyReplacesAndWorkloadsAreIndependent) {
  ScheduleBook b;
  b.Apply({.workload = 1, .entries = {{kA, 3}, {kInc, 0}}});
  b.Apply({.workload = 2, .entries = {{kB, 0}}, .converged = true});
  EXPECT_EQ(b.Next(1), kA);
  EXPECT_EQ(b.Next(2), kB);
  EXPECT_TRUE(b.Converged(2));
  EXPECT_TRUE(b.Exhausted(2));
  b.Apply({.workload = 1, .entries = {{kB, 1}, {kA, 0}}});  // the two kA calls left are dropped
  EXPECT_EQ(b.Next(1), kB);
  EXPECT_EQ(b.Next(1), kA);
  EXPECT_EQ(b.Next(1), kA);
  EXPECT_EQ(b.size(), 2u);
  b.Apply({.workload = 1, .entries = {}});  // no entries: back to NCCL's default
  EXPECT_EQ(b.Next(1), std::nullopt);
  b.Clear();
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.Next(2), std::nullopt);
}

TEST(ScheduleBook, DefaultConfigAsFinalIsStillAScheduledWorkload) {
  ScheduleBook b;
  b.Apply({.workload = 3, .entries = {{kA, 1}, {Config{}, 0}}});
  EXPECT_EQ(b.Next(3), kA);
  EXPECT_EQ(b.Next(3), Config{});
  EXPECT_EQ(b.Incumbent(3), Config{});
}

}  // namespace
}  // namespace ccltune::coordinator
