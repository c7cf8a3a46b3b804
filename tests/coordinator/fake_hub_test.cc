// Pins FakeHub: an all-reduce(MAX) across n endpoints; Issue never blocks, Wait blocks until every
// endpoint contributed or the timeout passes (DeadlineExceeded, and the caller may wait again).
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "coordinator/coordinator.hpp"

namespace ccltune::coordinator {
namespace {

Words Filled(uint64_t v, int at) {
  Words w{};
  w[at] = v;
  w[63] = v;
  return w;
}

TEST(FakeHub, ElementwiseMaxAcrossThreads) {
  constexpr int kRanks = 4;
  FakeHub hub(kRanks);
  std::vector<Words> got(kRanks);
  std::vector<std::thread> t;
  for (int r = 0; r < kRanks; ++r) {
    t.emplace_back([&, r] {
      auto ep = hub.Endpoint(r);
      for (uint64_t id = 0; id < 50; ++id) {
        ASSERT_TRUE(ep->Issue(id, Filled(10 * id + r, r), nullptr).ok());
      }
      for (uint64_t id = 0; id < 50; ++id) {
        Words w;
        ASSERT_TRUE(ep->Wait(id, &w, absl::Seconds(10)).ok());
        for (int i = 0; i < kRanks; ++i) ASSERT_EQ(w[i], 10 * id + i);
        ASSERT_EQ(w[63], 10 * id + kRanks - 1);
        if (id == 49) got[r] = w;
      }
    });
  }
  for (auto& th : t) th.join();
  for (int r = 1; r < kRanks; ++r) EXPECT_EQ(got[r], got[0]);
}

TEST(FakeHub, WaitTimesOutAndCanWaitAgain) {
  FakeHub hub(2);
  auto a = hub.Endpoint(0);
  auto b = hub.Endpoint(1);
  ASSERT_TRUE(a->Issue(0, Filled(1, 0), nullptr).ok());
  Words w;
  const absl::Time start = absl::Now();
  absl::Status s = a->Wait(0, &w, absl::Milliseconds(30));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(25));
  std::thread late([&] {
    absl::SleepFor(absl::Milliseconds(20));
    ASSERT_TRUE(b->Issue(0, Filled(2, 1), nullptr).ok());
  });
  EXPECT_TRUE(a->Wait(0, &w, absl::Seconds(10)).ok());
  late.join();
  EXPECT_EQ(w[0], 1u);
  EXPECT_EQ(w[1], 2u);
  EXPECT_TRUE(b->Wait(0, &w, absl::Seconds(1)).ok());
}

TEST(FakeHub, DroppedContributionNeverCompletesUntilSupplied) {
  FakeHub hub(2);
  hub.DropContribution(1, 3);
  auto a = hub.Endpoint(0);
  auto b = hub.Endpoint(1);
  ASSERT_TRUE(a->Issue(3, Filled(1, 0), nullptr).ok());
  ASSERT_TRUE(b->Issue(3, Filled(2, 1), nullptr).ok());  // lost
  Words w;
  EXPECT_TRUE(absl::IsDeadlineExceeded(a->Wait(3, &w, absl::Milliseconds(20))));
  ASSERT_TRUE(b->Issue(3, Filled(2, 1), nullptr).ok());  // the drop was one-shot
  EXPECT_TRUE(a->Wait(3, &w, absl::Seconds(1)).ok());
  EXPECT_EQ(w[1], 2u);
}

TEST(FakeHub, MisuseIsReported) {
  FakeHub hub(2);
  auto a = hub.Endpoint(0);
  ASSERT_TRUE(a->Issue(0, Words{}, nullptr).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(a->Issue(0, Words{}, nullptr)));
  auto bad = hub.Endpoint(5);
  EXPECT_TRUE(absl::IsInvalidArgument(bad->Issue(0, Words{}, nullptr)));
}

}  // namespace
}  // namespace ccltune::coordinator
