// Pins ScheduleBook: candidates consumed call by call in order, then the final entry forever; capture
// reads the incumbent without consuming; an update replaces the workload's schedule, or with `append`
// comes after what is left; which calls every rank times (samples, not warm-ups; a converged final
// entry now and then).
#include <gtest/gtest.h>

#include "coordinator/coordinator.hpp"

namespace ccltune::coordinator {
namespace {

const Config kA{.algo = kAlgoTree, .proto = kProtoLL, .channels = 2};
const Config kB{.algo = kAlgoRing, .proto = kProtoLL128, .channels = 4, .chunk_bytes = 65536};
const Config kInc{.algo = kAlgoRing, .proto = kProtoSimple, .channels = 16};

std::optional<Config> NextConfig(ScheduleBook& b, uint64_t w) {
  std::optional<ScheduleBook::Call> c = b.Next(w);
  if (!c) return std::nullopt;
  return c->config;
}

TEST(ScheduleBook, UnknownWorkloadIsDefault) {
  ScheduleBook b;
  EXPECT_EQ(b.Next(1).has_value(), false);
  EXPECT_EQ(b.Incumbent(1), std::nullopt);
  EXPECT_TRUE(b.Exhausted(1));
  EXPECT_FALSE(b.Converged(1));
  EXPECT_EQ(b.PendingCalls(1), 0u);
  EXPECT_EQ(b.size(), 0u);
}

TEST(ScheduleBook, CandidatesInOrderThenFinalForever) {
  ScheduleBook b;
  b.Apply({.workload = 7, .entries = {{kA, 2}, {kB, 1}, {kInc, 0}}});
  EXPECT_FALSE(b.Exhausted(7));
  EXPECT_EQ(b.PendingCalls(7), 3u);
  EXPECT_EQ(b.Incumbent(7), kInc);
  EXPECT_EQ(NextConfig(b, 7), kA);
  EXPECT_EQ(b.Incumbent(7), kInc);  // capture does not consume
  EXPECT_EQ(NextConfig(b, 7), kA);
  EXPECT_EQ(NextConfig(b, 7), kB);
  EXPECT_TRUE(b.Exhausted(7));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(NextConfig(b, 7), kInc);
  EXPECT_FALSE(b.Converged(7));
  EXPECT_EQ(NextConfig(b, 8), std::nullopt);  // other workloads untouched
}

TEST(ScheduleBook, ApplyReplacesAndWorkloadsAreIndependent) {
  ScheduleBook b;
  b.Apply({.workload = 1, .entries = {{kA, 3}, {kInc, 0}}});
  b.Apply({.workload = 2, .entries = {{kB, 0}}, .converged = true});
  EXPECT_EQ(NextConfig(b, 1), kA);
  EXPECT_EQ(NextConfig(b, 2), kB);
  EXPECT_TRUE(b.Converged(2));
  EXPECT_TRUE(b.Exhausted(2));
  b.Apply({.workload = 1, .entries = {{kB, 1}, {kA, 0}}});  // the two kA calls left are dropped
  EXPECT_EQ(NextConfig(b, 1), kB);
  EXPECT_EQ(NextConfig(b, 1), kA);
  EXPECT_EQ(NextConfig(b, 1), kA);
  EXPECT_EQ(b.size(), 2u);
  b.Apply({.workload = 1, .entries = {}});  // no entries: back to NCCL's default
  EXPECT_EQ(NextConfig(b, 1), std::nullopt);
  b.Clear();
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(NextConfig(b, 2), std::nullopt);
}

TEST(ScheduleBook, AppendComesAfterWhatIsLeftAndReplacesTheFinal) {
  ScheduleBook b;
  b.Apply({.workload = 1, .entries = {{kA, 2}, {Config{}, 0}}});
  EXPECT_EQ(NextConfig(b, 1), kA);
  b.Apply({.workload = 1, .entries = {{kB, 1}, {kInc, 0}}, .append = true});
  EXPECT_EQ(b.PendingCalls(1), 2u);
  EXPECT_EQ(b.Incumbent(1), kInc);
  EXPECT_EQ(NextConfig(b, 1), kA);  // the one kA call left first
  EXPECT_EQ(NextConfig(b, 1), kB);
  EXPECT_EQ(NextConfig(b, 1), kInc);
  // Appending to a workload without a schedule starts one.
  b.Apply({.workload = 2, .entries = {{kB, 1}, {kA, 0}}, .append = true});
  EXPECT_EQ(NextConfig(b, 2), kB);
  EXPECT_EQ(NextConfig(b, 2), kA);
}

TEST(ScheduleBook, DefaultConfigAsFinalIsStillAScheduledWorkload) {
  ScheduleBook b;
  b.Apply({.workload = 3, .entries = {{kA, 1}, {Config{}, 0}}});
  EXPECT_EQ(NextConfig(b, 3), kA);
  EXPECT_EQ(NextConfig(b, 3), Config{});
  EXPECT_EQ(b.Incumbent(3), Config{});
}

// Scheduled calls are samples except an entry's first call when it is a warm-up; a searching workload's
// final entry is never timed; a converged one every kMonitorEvery-th call, starting with its first.
TEST(ScheduleBook, TimedCalls) {
  ScheduleBook b;
  b.Apply({.workload = 4, .entries = {{kA, 3, /*warmup=*/true}, {kB, 1}, {Config{}, 0}}});
  std::vector<bool> timed, scheduled;
  for (int i = 0; i < 6; ++i) {
    const ScheduleBook::Call c = *b.Next(4);
    timed.push_back(c.timed);
    scheduled.push_back(c.scheduled);
  }
  // The warm-up call is not a sample; the search's final entry, run while its schedule waits for
  // timings, is timed (a sample the search did not ask for).
  EXPECT_EQ(timed, (std::vector<bool>{false, true, true, true, true, true}));
  EXPECT_EQ(scheduled, (std::vector<bool>{true, true, true, true, false, false}));
  b.Apply({.workload = 4, .entries = {{kInc, 0}}, .converged = true});
  int n = 0;
  for (uint64_t i = 0; i < 3 * kMonitorEvery; ++i) {
    const ScheduleBook::Call c = *b.Next(4);
    EXPECT_EQ(c.config, kInc);
    if (c.timed) {
      EXPECT_EQ(i % kMonitorEvery, 0u) << i;
      ++n;
    }
  }
  EXPECT_EQ(n, 3);
}

// A held call (one that follows another workload's or a sync op, of a workload that runs back to back) runs the config
// the next call will run, untimed, so that the timed call after it follows its own config (as in a run of calls); it
// consumes no timed call of the entry, only its warm-up call where it has one (the held call was its first run: an
// entry's count includes its warm-up, and the entry then runs the timed calls it was asked for, no more). With nothing
// left, it runs the final entry untimed; a converged workload's monitoring count waits for the next call that is not
// held.
TEST(ScheduleBook, HeldCallsRunTheNextEntrysConfigAndConsumeOnlyItsWarmup) {
  ScheduleBook b;
  b.Apply({.workload = 5, .entries = {{kA, 1}, {kB, 2, /*warmup=*/true}, {kA, 1, /*warmup=*/true}, {kInc, 0}}});
  const ScheduleBook::Call held = *b.Next(5, /*hold=*/true);
  EXPECT_EQ(held.config, kA);
  EXPECT_FALSE(held.timed);
  EXPECT_FALSE(held.scheduled);
  EXPECT_EQ(b.PendingCalls(5), 4u);  // kA's one call is its sample: not consumed
  EXPECT_EQ(NextConfig(b, 5), kA);
  const ScheduleBook::Call held_b = *b.Next(5, true);
  EXPECT_EQ(held_b.config, kB);
  EXPECT_FALSE(held_b.timed);
  EXPECT_EQ(b.PendingCalls(5), 2u);              // kB's warm-up call was the held one
  const ScheduleBook::Call b_call = *b.Next(5);  // its one sample, timed
  EXPECT_EQ(b_call.config, kB);
  EXPECT_TRUE(b_call.timed);
  EXPECT_TRUE(b_call.scheduled);
  // An entry of its warm-up call alone is used up by the held call: the next call runs what follows it.
  EXPECT_EQ(b.Next(5, true)->config, kA);
  EXPECT_TRUE(b.Exhausted(5));
  const ScheduleBook::Call waiting = *b.Next(5, true);  // nothing left: the final entry, timed only when not held
  EXPECT_EQ(waiting.config, kInc);
  EXPECT_FALSE(waiting.timed);
  EXPECT_TRUE(b.Next(5)->timed);
  b.Apply({.workload = 5, .entries = {{kInc, 0}}, .converged = true});
  EXPECT_TRUE(b.Next(5)->timed);  // the monitoring's first call
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(b.Next(5, true)->timed);
  for (uint64_t i = 1; i < kMonitorEvery; ++i) EXPECT_FALSE(b.Next(5)->timed) << i;
  EXPECT_TRUE(b.Next(5)->timed);             // held calls did not count towards the next monitoring call
  EXPECT_EQ(b.Next(6, true), std::nullopt);  // no schedule: NCCL's default, held or not
}

// A call is held when it follows another workload's call and one of the workload's last kHoldWindow calls followed
// one of its own: a workload run four times per training iteration holds its first call of each iteration; one run
// once per iteration holds nothing; one that stopped running back to back holds nothing after kHoldWindow calls.
TEST(BackToBack, HoldsCallsAfterAnotherWorkloadsOfAWorkloadThatRunsBackToBack) {
  BackToBack four;
  std::vector<bool> held;
  for (uint64_t call = 1; call <= 12; ++call) held.push_back(four.Hold(call, call % 4 == 1));
  EXPECT_EQ(held,
            (std::vector<bool>{false, false, false, false, true, false, false, false, true, false, false, false}));
  BackToBack once;
  for (uint64_t call = 1; call <= 20; ++call) EXPECT_FALSE(once.Hold(call, true)) << call;
  BackToBack stopped;
  EXPECT_FALSE(stopped.Hold(1, true));
  EXPECT_FALSE(stopped.Hold(2, false));
  for (uint64_t call = 3; call <= 2 + kHoldWindow; ++call) EXPECT_TRUE(stopped.Hold(call, true)) << call;
  EXPECT_FALSE(stopped.Hold(3 + kHoldWindow, true));
}

// Between two sync points at most kMonitorPerInterval monitoring calls are timed, over all converged
// workloads together (a sync carries kSampleSlots timings); scheduled calls and a searching workload's final
// entry are timed regardless, and a new interval starts the allowance again.
TEST(ScheduleBook, MonitoringCallsPerIntervalAreBounded) {
  ScheduleBook b;
  b.Apply({.workload = 1, .entries = {{kInc, 0}}, .converged = true});
  b.Apply({.workload = 2, .entries = {{kB, 0}}, .converged = true});
  b.Apply({.workload = 3, .entries = {{kA, 0}}});  // searching: its final entry is timed while it waits
  const uint64_t calls = 4 * kMonitorEvery * kMonitorPerInterval;
  for (int interval = 0; interval < 3; ++interval) {
    b.NewInterval();
    int monitored = 0, waiting = 0;
    for (uint64_t i = 0; i < calls; ++i) {
      monitored += b.Next(1)->timed + b.Next(2)->timed;
      waiting += b.Next(3)->timed;
    }
    EXPECT_EQ(monitored, kMonitorPerInterval) << interval;
    EXPECT_EQ(waiting, static_cast<int>(calls)) << interval;
    // A scheduled sample is timed past the allowance.
    b.Apply({.workload = 1, .entries = {{kA, 1}, {kInc, 0}}, .converged = true});
    EXPECT_TRUE(b.Next(1)->timed) << interval;
  }
}

}  // namespace
}  // namespace ccltune::coordinator
