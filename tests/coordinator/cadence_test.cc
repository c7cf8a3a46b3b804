// Pins where sync points fall (SyncCadence), the leader's period detection and interval choice.
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "coordinator/coordinator.hpp"

namespace ccltune::coordinator {
namespace {

struct Event {
  uint64_t unit;
  std::optional<uint64_t> apply;
  uint64_t issue;
};

// Drives a cadence for `units` units; payload k delivers intervals[k] (when present in the map).
std::vector<Event> Drive(uint64_t units, const std::map<uint64_t, uint64_t>& intervals) {
  SyncCadence c;
  std::vector<Event> ev;
  for (uint64_t u = 1; u <= units; ++u) {
    SyncCadence::Actions a = c.OnUnitComplete(u);
    if (!a.issue) {
      EXPECT_FALSE(a.apply) << "apply without issue at unit " << u;
      continue;
    }
    if (a.apply) {
      auto it = intervals.find(*a.apply);
      if (it != intervals.end()) c.SetDeliveredInterval(*a.apply, it->second);
    }
    ev.push_back({u, a.apply, *a.issue});
  }
  return ev;
}

TEST(SyncCadence, FollowsTheDeliveredIntervals) {
  const std::map<uint64_t, uint64_t> intervals = {{0, 5}, {1, 1}, {2, 100}, {3, 7}, {4, 3}, {5, 2}, {6, 9}};
  // s_0 = 1, I_0 = I_1 = kInitialInterval, then I_{k+2} = intervals[k].
  std::vector<uint64_t> expected_units = {kFirstSyncUnit, kFirstSyncUnit + kInitialInterval,
                                          kFirstSyncUnit + 2 * kInitialInterval};
  for (uint64_t k = 0; k < intervals.size(); ++k) expected_units.push_back(expected_units.back() + intervals.at(k));
  const std::vector<Event> ev = Drive(expected_units.back(), intervals);
  ASSERT_EQ(ev.size(), expected_units.size());
  for (size_t j = 0; j < ev.size(); ++j) {
    EXPECT_EQ(ev[j].unit, expected_units[j]) << "sync " << j;
    EXPECT_EQ(ev[j].issue, j);
    if (j < static_cast<size_t>(kLag)) {
      EXPECT_FALSE(ev[j].apply);
    } else {
      EXPECT_EQ(ev[j].apply, j - kLag);
    }
  }
}

TEST(SyncCadence, MissingIntervalFallsBackToInitial) {
  // Payload 1 never delivers its interval: I_3 falls back to kInitialInterval, the rest follows.
  const std::vector<Event> ev = Drive(400, {{0, 10}, {2, 4}, {3, 4}});
  ASSERT_GE(ev.size(), 6u);
  const uint64_t s2 = kFirstSyncUnit + 2 * kInitialInterval;
  EXPECT_EQ(ev[2].unit, s2);
  EXPECT_EQ(ev[3].unit, s2 + 10);
  EXPECT_EQ(ev[4].unit, s2 + 10 + kInitialInterval);
  EXPECT_EQ(ev[5].unit, s2 + 10 + kInitialInterval + 4);
}

TEST(SyncCadence, NewWorkloadPullsInTheNextSyncsToOneIteration) {
  // Long delivered intervals (a converged communicator) with a known period of 3 units.
  SyncCadence c;
  std::vector<uint64_t> sync_units;
  for (uint64_t u = 1; u <= 2000; ++u) {
    if (u == 500) c.NoteNewWorkload();  // first sight of a workload at unit 500
    SyncCadence::Actions a = c.OnUnitComplete(u);
    if (!a.issue) continue;
    if (a.apply) {
      c.SetDeliveredInterval(*a.apply, 400);
      c.SetDeliveredPeriod(3);
    }
    sync_units.push_back(u);
  }
  // 1, 17, 33, then every 400 until the new workload at 500 pulls the pending sync point (833) in
  // to 503 and caps the next kLag + 1 intervals at the period: 506, 509, 512, then 400 again.
  const std::vector<uint64_t> expected = {1, 17, 33, 433, 503, 506, 509, 512, 912, 1312, 1712};
  EXPECT_EQ(sync_units, expected);
}

TEST(SyncCadence, NewWorkloadWithUnknownPeriodUsesTheInitialInterval) {
  SyncCadence c;
  std::vector<uint64_t> sync_units;
  for (uint64_t u = 1; u <= 700; ++u) {
    if (u == 100) c.NoteNewWorkload();
    SyncCadence::Actions a = c.OnUnitComplete(u);
    if (!a.issue) continue;
    if (a.apply) c.SetDeliveredInterval(*a.apply, 300);
    sync_units.push_back(u);
  }
  const uint64_t k = kInitialInterval;
  const std::vector<uint64_t> expected = {1,           1 + k,       1 + 2 * k,   100 + k,
                                          100 + 2 * k, 100 + 3 * k, 100 + 4 * k, 100 + 4 * k + 300};
  EXPECT_EQ(sync_units, expected);
}

TEST(SyncCadence, ReportsTheNextSyncPoint) {
  SyncCadence c;
  EXPECT_EQ(c.next_sync_unit(), kFirstSyncUnit);
  EXPECT_EQ(c.next_sync_id(), 0u);
  c.OnUnitComplete(1);
  EXPECT_EQ(c.next_sync_id(), 1u);
  c.OnUnitComplete(2);
  EXPECT_EQ(c.next_sync_unit(), kFirstSyncUnit + kInitialInterval);
}

// While no period is known the detector searches every 16th key, so it reports P between 3P and
// 3P + 15 keys.
constexpr uint64_t kSearchSlack = 15;

TEST(IterationDetector, FindsThePeriodAfterThreeRepeats) {
  for (uint64_t p : {1, 2, 5, 17, 100, 1365}) {
    IterationDetector d;
    uint64_t i = 0;
    for (; i < 3 * p - 1; ++i) {
      d.Observe(1000 + i % p);
      ASSERT_EQ(d.period(), 0u) << "p=" << p << " i=" << i;  // never before three repeats
    }
    for (; i < 3 * p + kSearchSlack; ++i) d.Observe(1000 + i % p);
    EXPECT_EQ(d.period(), p);
    for (; i < 10 * p; ++i) {
      d.Observe(1000 + i % p);
      ASSERT_EQ(d.period(), p) << i;
    }
  }
}

// Short periods (a benchmark's one workload, a small model's iteration) are found on the key that
// completes their third repeat, also after a new key broke the previous period: a late find keeps the
// intervals at kInitialInterval for several more of them.
TEST(IterationDetector, FindsAShortPeriodOnItsThirdRepeat) {
  for (uint64_t p : {1, 3, 16, 64}) {
    IterationDetector d;
    for (uint64_t i = 0; i < 37; ++i) d.Observe(7);  // a run of one workload, then a new pattern
    ASSERT_EQ(d.period(), 1u);
    for (uint64_t i = 0; i < 3 * p; ++i) {
      d.Observe(500 + i % p);
      if (p > 1 && i + 1 < 3 * p) ASSERT_EQ(d.period(), 0u) << "p=" << p << " i=" << i;
    }
    EXPECT_EQ(d.period(), p);
  }
}

TEST(IterationDetector, RepeatedKeysInsideAnIterationDoNotShrinkIt) {
  // Iteration: A A A B (three identical layers, then something else).
  IterationDetector d;
  const uint64_t it[] = {1, 1, 1, 2};
  for (int i = 0; i < 16; ++i) d.Observe(it[i % 4]);
  EXPECT_EQ(d.period(), 4u);
  for (int i = 16; i < 400; ++i) {
    d.Observe(it[i % 4]);
    ASSERT_EQ(d.period(), 4u) << i;
  }
}

// Iteration: A A A A B B B B C C (period 10). The shift reaches the last call of the run the sequence is in.
TEST(IterationDetector, ShiftToRunEndReachesTheLastCallOfARun) {
  const uint64_t it[] = {1, 1, 1, 1, 2, 2, 2, 2, 3, 3};
  IterationDetector d;
  for (int i = 0; i < 9; ++i) d.Observe(it[i % 10]);
  EXPECT_EQ(d.ShiftToRunEnd(), 0u);  // no period yet
  int i = 0;
  for (; i < 40; ++i) d.Observe(it[i % 10]);
  ASSERT_EQ(d.period(), 10u);
  for (int k = 0; k < 10; ++k, ++i) {
    // The last key observed is it[(i - 1) % 10]; the run it is in ends at the next index of 3, 7 or 9.
    const int last = (i - 1) % 10;
    const int end = last <= 3 ? 3 : last <= 7 ? 7 : 9;
    EXPECT_EQ(d.ShiftToRunEnd(), static_cast<uint64_t>(end - last)) << "after index " << last;
    // From a unit `ahead` further on (a sync point half an iteration later, or more than one iteration).
    for (int ahead = 1; ahead < 25; ++ahead) {
      const int at = (last + ahead) % 10;
      const int at_end = at <= 3 ? 3 : at <= 7 ? 7 : 9;
      EXPECT_EQ(d.ShiftToRunEnd(ahead), static_cast<uint64_t>(at_end - at)) << "after index " << last << " + " << ahead;
    }
    d.Observe(it[i % 10]);
  }
  // Every key differs from the next one: already at a run's end. One workload alone (period 1): no run ends.
  IterationDetector alternating, alone;
  for (int j = 0; j < 60; ++j) alternating.Observe(j % 3), alone.Observe(5);
  ASSERT_EQ(alternating.period(), 3u);
  ASSERT_EQ(alone.period(), 1u);
  EXPECT_EQ(alternating.ShiftToRunEnd(), 0u);
  EXPECT_EQ(alone.ShiftToRunEnd(), 0u);
}

TEST(IterationDetector, AperiodicAndBrokenSequences) {
  IterationDetector d;
  for (uint64_t i = 0; i < 1000; ++i) {
    d.Observe(i * 2654435761u % 1000003);
    ASSERT_EQ(d.period(), 0u);
  }
  // Becomes periodic (period 3), then the pattern changes to period 5.
  for (int i = 0; i < 9 + 15; ++i) d.Observe(10 + i % 3);
  EXPECT_EQ(d.period(), 3u);
  d.Observe(99);
  EXPECT_EQ(d.period(), 0u);
  for (int i = 0; i < 15 + 15; ++i) d.Observe(20 + i % 5);
  EXPECT_EQ(d.period(), 5u);
}

TEST(IterationDetector, BoundedByHistory) {
  IterationDetector d(/*history=*/30);
  for (int i = 0; i < 100; ++i) d.Observe(i % 11);  // 3 * 11 > 30: cannot be confirmed
  EXPECT_EQ(d.period(), 0u);
  IterationDetector e(/*history=*/30);
  for (int i = 0; i < 100; ++i) e.Observe(i % 10);
  EXPECT_EQ(e.period(), 10u);
}

TEST(IterationDetector, LongHistoryStaysCheap) {
  // 200k observations of an aperiodic sequence with a 4096-key history must finish quickly (the
  // search abandons each candidate at its first mismatch).
  IterationDetector d;
  for (uint64_t i = 0; i < 200000; ++i) d.Observe(i * 0x9E3779B97F4A7C15ull);
  EXPECT_EQ(d.period(), 0u);
}

TEST(IntervalPolicy, UnknownPeriod) {
  IntervalPolicy p({.min_units = 8, .max_units = 1000, .unknown_period_units = 64});
  EXPECT_EQ(p.Next(0, true), 64u);
  EXPECT_EQ(p.Next(0, true), 64u);
}

TEST(IntervalPolicy, AtLeastOneIterationMultipleOfPeriod) {
  IntervalPolicy p({.min_units = 8, .max_units = 1000});
  EXPECT_EQ(p.Next(3, true), 9u);    // max(8, 3) rounded up to a multiple of 3
  EXPECT_EQ(p.Next(12, true), 12u);  // min_units above half an iteration: one iteration
  EXPECT_EQ(p.Next(1, true), 8u);
  EXPECT_EQ(p.Next(2000, false), 2000u);  // one iteration beats max_units
  EXPECT_EQ(p.Next(2000, true), 1000u);   // half of one, searching: the floor, never capped by max_units
}

// While something is searched the intervals are half an iteration: each the complement of the one before it to a
// whole iteration (odd periods alternate), so that any two in a row, the span from a sync op to the host wait
// for it (kLag), cover at least one iteration. Converged, the doubling starts from a whole iteration again.
TEST(IntervalPolicy, HalfAnIterationWhileSearching) {
  static_assert(kLag == 2);
  IntervalPolicy p({.min_units = 1, .max_units = 1000});
  std::vector<uint64_t> got;
  for (int i = 0; i < 6; ++i) got.push_back(p.Next(5, true));
  EXPECT_EQ(got, (std::vector<uint64_t>{5, 2, 3, 2, 3, 2}));  // the first after none: a whole iteration
  EXPECT_EQ(p.Next(5, false), 5u);                            // converged: back to one iteration (2 x 2 < 5)
  EXPECT_EQ(p.Next(5, false), 10u);
  EXPECT_EQ(p.Next(5, true), 2u);  // after a long one: the half alone
  EXPECT_EQ(p.Next(5, true), 3u);
  EXPECT_EQ(p.Next(64, true), 61u);  // the period grew: the complement of 3 to 64
  EXPECT_EQ(p.Next(64, true), 32u);
  EXPECT_EQ(p.Next(64, true), 32u);
  EXPECT_EQ(p.Next(1, true), 1u);  // a period of one: no half
  IntervalPolicy floor({.min_units = 40, .max_units = 1000});
  EXPECT_EQ(floor.Next(64, true), 64u);  // min_units above half an iteration: whole iterations
  EXPECT_EQ(floor.Next(64, true), 64u);
}

TEST(IntervalPolicy, DoublesWhileConvergedAndResetsOnSearch) {
  IntervalPolicy p({.min_units = 8, .max_units = 200});
  EXPECT_EQ(p.Next(10, false), 10u);
  EXPECT_EQ(p.Next(10, false), 20u);
  EXPECT_EQ(p.Next(10, false), 40u);
  EXPECT_EQ(p.Next(10, false), 80u);
  EXPECT_EQ(p.Next(10, false), 160u);
  EXPECT_EQ(p.Next(10, false), 200u);  // capped (200 is a multiple of 10)
  EXPECT_EQ(p.Next(10, false), 200u);
  EXPECT_EQ(p.Next(10, true), 10u);  // something is searched again
  EXPECT_EQ(p.Next(10, false), 20u);
  EXPECT_EQ(p.Next(7, false), 42u);  // period changed: 40 rounded up to a multiple of 7
  EXPECT_EQ(p.Next(7, false), 84u);
  EXPECT_EQ(p.Next(7, false), 168u);
  EXPECT_EQ(p.Next(7, false), 196u);  // cap rounded down to a multiple of 7
}

// A converged workload's guard checking (Leader::checking): the doubling stops at the cap given, rounded down to
// a multiple of the period, and never below one iteration; without a cap it goes on to max_units.
TEST(IntervalPolicy, CapStopsTheDoubling) {
  IntervalPolicy p({.min_units = 8, .max_units = 1000});
  EXPECT_EQ(p.Next(10, false, 64), 10u);
  EXPECT_EQ(p.Next(10, false, 64), 20u);
  EXPECT_EQ(p.Next(10, false, 64), 40u);
  EXPECT_EQ(p.Next(10, false, 64), 60u);  // 80 capped at 64, rounded down to a multiple of 10
  EXPECT_EQ(p.Next(10, false, 64), 60u);
  EXPECT_EQ(p.Next(10, false), 120u);       // the cap lifted: doubling again
  EXPECT_EQ(p.Next(100, false, 64), 100u);  // one iteration beats the cap
  EXPECT_EQ(p.Next(10, true, 64), 10u);     // searching: the floor
}

}  // namespace
}  // namespace ccltune::coordinator
